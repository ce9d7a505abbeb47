// reblock-nonblock: runs a command with O_NONBLOCK set on its standard input
// and output, as ssh leaves them. Usage: reblock-nonblock COMMAND [ARG...]
#include <cstdio>
#include <fcntl.h>
#include <initializer_list>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("usage: reblock-nonblock command [arg ...]\n", stderr);
    return 2;
  }
  for (int fd : {0, 1}) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags == -1 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1) {
      std::perror("reblock-nonblock: fcntl");
      return 1;
    }
  }
  ::execvp(argv[1], argv + 1);
  std::perror("reblock-nonblock: exec");
  return 127;
}
