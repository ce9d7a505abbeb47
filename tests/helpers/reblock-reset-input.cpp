// reblock-reset-input: runs a command whose standard input is a Unix socket
// that carries this helper's standard input and then fails with ECONNRESET,
// to show what a program does with a read error in mid-stream.
// Usage: reblock-reset-input COMMAND [ARG...]; exits with the command's status.
//
// Linux resets the peer of an AF_UNIX stream socket closed with unread data,
// after the peer has read what was already queued for it.
#include <cstdio>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("usage: reblock-reset-input command [arg ...]\n", stderr);
    return 2;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1) {
    std::perror("reblock-reset-input: socketpair");
    return 1;
  }
  // The byte left unread on our side is what makes our close a reset.
  if (::write(sv[0], "x", 1) != 1) {
    std::perror("reblock-reset-input: write");
    return 1;
  }
  pid_t child = ::fork();
  if (child == 0) {
    ::dup2(sv[0], 0);
    ::close(sv[0]);
    ::close(sv[1]);
    ::execvp(argv[1], argv + 1);
    std::perror("reblock-reset-input: exec");
    _exit(127);
  }
  ::close(sv[0]);
  std::array<char, 65536> chunk;
  for (;;) {
    ssize_t n = ::read(0, chunk.data(), chunk.size());
    if (n <= 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(sv[1], chunk.data() + done, static_cast<std::size_t>(n - done));
      if (w <= 0) {
        std::perror("reblock-reset-input: write");
        return 1;
      }
      done += w;
    }
  }
  ::close(sv[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
