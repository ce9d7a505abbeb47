// log-socket: runs a command while a datagram socket is bound at a path, as
// a log daemon binds /dev/log, so that a test can show what rmt does when
// its syslog check finds a socket there (TAPEKIT_TEST_SYSLOG_SOCKET).
//   log-socket PATH COMMAND [ARGS...]   the exit status is the command's own
// The socket is bound before the command starts and removed after it ended;
// nothing is read from it.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: log-socket PATH COMMAND [ARGS...]\n");
    return 2;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(argv[1]) >= sizeof addr.sun_path) {
    std::fprintf(stderr, "log-socket: %s: path too long\n", argv[1]);
    return 2;
  }
  std::strcpy(addr.sun_path, argv[1]);
  int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock == -1 || ::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == -1) {
    std::perror(argv[1]);
    return 2;
  }
  pid_t child = ::fork();
  if (child == 0) {
    ::execvp(argv[2], argv + 2);
    std::perror(argv[2]);
    ::_exit(127);
  }
  int status = 0;
  pid_t waited = -1;
  while (child > 0 && (waited = ::waitpid(child, &status, 0)) == -1 && errno == EINTR) {
  }
  ::unlink(argv[1]);
  if (waited == -1) return 2;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}
