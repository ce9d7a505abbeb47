// buffer: drop-in replacement for Lee McLoughlin's buffer 1.19 (Debian 1.19-12).
// How it is built: docs/buffer.md; what it does: man/buffer.1.
// Deviations from buffer 1.19 (each listed in the man page):
//  - sizes are 64-bit and strictly parsed (g/t suffixes added, "1.5k" refused);
//  - no 2048-block or 512 KiB block ceilings; K totals count bytes, not blocks;
//  - -o is opened only after every option has been checked;
//  - nothing named is created, so nothing leaks after kill -9 of either side,
//    and each side notices the other's death;
//  - non-blocking descriptors and partial writes just work;
//  - queued data is written out on SIGINT/SIGTERM unless a second one comes;
//  - write errors name the output and say how many bytes reached it.
#include "../common/run_main.hpp"
#include "buffer.hpp"

int main(int argc, char** argv) {
  tk::ExitPolicy policy{tk::buffer::kExitSetup, tk::buffer::kExitSetup,
                        tk::buffer::kUsageText};
  return tk::run_main("buffer", policy, [&] {
    return tk::buffer::run(tk::buffer::parse_options(argc, argv));
  });
}
