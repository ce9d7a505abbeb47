// nonblock: sets O_NONBLOCK on stdin and stdout, as ssh and node leave them,
// then runs the command.   nonblock COMMAND [ARGS...]
#include <cstdio>
#include <fcntl.h>
#include <initializer_list>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  for (int fd : {0, 1}) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags != -1) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  }
  ::execvp(argv[1], argv + 1);
  std::perror(argv[1]);
  return 127;
}
