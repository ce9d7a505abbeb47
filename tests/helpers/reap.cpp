// reap: runs a command as a child subreaper and reports how every descendant
// that ends under it ended, so a test can see the exit status of an orphaned
// process (buffer's writer after its reader was killed).
//   reap COMMAND [ARGS...]   prints "PID STATUS" per reaped process on fd 3
//   STATUS is "exit N" or "signal N"; the exit status is the command's own.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reap COMMAND [ARGS...]\n");
    return 2;
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t command = ::fork();
  if (command == 0) {
    ::execvp(argv[1], argv + 1);
    std::perror(argv[1]);
    ::_exit(127);
  }
  int command_status = 0;
  FILE* report = ::fdopen(3, "w");
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid == -1) {
      if (errno == EINTR) continue;
      break;
    }
    if (pid == command) command_status = status;
    if (report) {
      if (WIFEXITED(status)) std::fprintf(report, "%d exit %d\n", pid, WEXITSTATUS(status));
      else std::fprintf(report, "%d signal %d\n", pid, WTERMSIG(status));
      std::fflush(report);
    }
  }
  if (WIFEXITED(command_status)) return WEXITSTATUS(command_status);
  return 128 + WTERMSIG(command_status);
}
