// buffer: drop-in replacement for Lee McLoughlin's buffer 1.19 (Debian 1.19-12).
// How it is built: docs/buffer.md; what it does: man/buffer.1.
// Deviations from buffer 1.19: buffer(1), DIFFERENCES FROM BUFFER 1.19.
#include "../common/run_main.hpp"
#include "buffer.hpp"

int main(int argc, char** argv) {
  tk::ExitPolicy policy{tk::buffer::kExitSetup, tk::buffer::kExitSetup,
                        tk::buffer::kUsageText};
  return tk::run_main("buffer", policy, [&] {
    return tk::buffer::run(tk::buffer::parse_options(argc, argv));
  });
}
