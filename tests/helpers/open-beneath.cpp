// open-beneath: opens a name beneath a directory with tk::open_beneath many
// times and counts where the opens led, so tests can attack lib/io's
// confinement directly, the component walk included (kernels without
// openat2 use it, this one would not).
//
// usage: open-beneath auto|walk ROOT PATH COUNT
// Each open reads up to 64 bytes; a file whose content starts with OUTSIDE
// is outside ROOT. Prints "inside I outside O refused R" (R: opens that
// failed) and exits 0.
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../../lib/size.hpp"
#include "../../tools/common/run_main.hpp"

int main(int argc, char** argv) {
  return tk::run_main("open-beneath", tk::ExitPolicy{}, [&] {
    if (argc != 5) throw tk::UsageError("usage: open-beneath auto|walk ROOT PATH COUNT");
    std::string mode = argv[1];
    if (mode != "auto" && mode != "walk") throw tk::UsageError("mode must be auto or walk");
    tk::Beneath how = mode == "walk" ? tk::Beneath::walk : tk::Beneath::automatic;
    tk::Fd root = tk::open_file(argv[2], O_PATH | O_DIRECTORY);
    auto count = tk::parse_count(argv[4], "COUNT", 1, 100000000);
    long inside = 0, outside = 0, refused = 0;
    for (long i = 0; i < count; ++i) {
      try {
        tk::Fd fd = tk::open_beneath(root.get(), argv[3], O_RDONLY | O_NOFOLLOW, 0, how);
        char buf[64] = {};
        ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
        if (n >= 7 && std::strncmp(buf, "OUTSIDE", 7) == 0)
          ++outside;
        else
          ++inside;
      } catch (const tk::Error&) {
        ++refused;
      }
    }
    std::printf("inside %ld outside %ld refused %ld\n", inside, outside, refused);
    return 0;
  });
}
