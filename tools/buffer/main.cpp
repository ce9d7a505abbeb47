// buffer: drop-in replacement for Lee McLoughlin's buffer 1.19 (Debian 1.19-12).
// Reference: ../shared/docs/buffer-reference.md and man/buffer.1.
// Deviations from buffer 1.19 (each listed in the man page):
//  - sizes are 64-bit and strictly parsed (g/t suffixes added, "1.5k" refused);
//  - no 2048-block or 512 KiB block ceilings; K totals count bytes, not blocks;
//  - -o is opened only after every option has been checked;
//  - nothing named is created, so nothing leaks after kill -9 of either side,
//    and each side notices the other's death;
//  - non-blocking descriptors and partial writes just work;
//  - queued data is written out on SIGINT/SIGTERM unless a second one comes;
//  - write errors name the output and say how many bytes reached it.
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include "../common/run_main.hpp"
#include "buffer.hpp"

namespace {

// A closed standard error (2>&-, a daemon's child) becomes /dev/null. Left
// closed, the next descriptor opened would be 2 -- in the writer, the -o
// output -- and every -S record, -d line and message would go into the data
// (1.19 did that). Standard input and output are left as they are: a closed
// one is 1.19's "can't stat" error, and an -i or -o opened on it is harmless.
void keep_stderr_open() {
  if (::fcntl(2, F_GETFD) != -1 || errno != EBADF) return;
  int fd = ::open("/dev/null", O_WRONLY);  // inherited by --next-volume's command
  if (fd == -1 || fd == 2) return;
  ::dup2(fd, 2);
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  keep_stderr_open();
  tk::ExitPolicy policy{tk::buffer::kExitSetup, tk::buffer::kExitSetup,
                        tk::buffer::kUsageText};
  return tk::run_main("buffer", policy, [&] {
    return tk::buffer::run(tk::buffer::parse_options(argc, argv));
  });
}
