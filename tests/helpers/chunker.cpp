// chunker: copies standard input to standard output in writes of random
// sizes, as a producer or an ssh channel re-chunking a stream would.
// Usage: chunker SEED MIN MAX [PAUSE_US]. The sizes are uniform in [MIN, MAX]
// from a generator seeded with SEED; PAUSE_US sleeps between writes so that
// a reader sees the chunks one by one.
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/size.hpp"
#include "../../tools/common/run_main.hpp"

int main(int argc, char** argv) {
  tk::ExitPolicy policy;
  policy.usage_text = "usage: chunker seed min max [pause-us]\n";
  return tk::run_main("chunker", policy, [&] {
    if (argc < 4 || argc > 5) throw tk::UsageError("wrong number of operands");
    auto seed = static_cast<unsigned>(tk::parse_count(argv[1], "seed", 0, UINT32_MAX));
    auto min = static_cast<std::size_t>(tk::parse_size(argv[2], "min", 1u << 30));
    auto max = static_cast<std::size_t>(tk::parse_size(argv[3], "max", 1u << 30));
    auto pause = argc == 5 ? tk::parse_count(argv[4], "pause", 0, 1000000) : 0;
    if (min == 0 || max < min) throw tk::UsageError("need 0 < min <= max");
    std::mt19937 generator(seed);
    std::uniform_int_distribution<std::size_t> sizes(min, max);
    std::vector<std::byte> chunk(max);
    for (;;) {
      std::size_t n = tk::read_full(0, std::span(chunk).first(sizes(generator)), "standard input");
      if (n == 0) return 0;
      tk::write_all(1, std::span(chunk).first(n), "standard output");
      if (pause > 0) ::usleep(static_cast<useconds_t>(pause));
    }
  });
}
