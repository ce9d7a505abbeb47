// pacer: copies stdin to stdout at a limited pace, for tests and benchmarks
// that need a bursty producer or a slow, stalling consumer (a tape that
// stops to reposition).
//   pacer [--chunk N] [--rate BYTES_PER_S] [--burst N --pause MS]
// --rate is a top speed, like a drive's: time spent waiting for input is not
// made up for later. After every --burst bytes it sleeps --pause ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/size.hpp"

int main(int argc, char** argv) {
  std::size_t chunk = 65536;
  double rate = 0;
  std::uint64_t burst = 0;
  long pause_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string opt = argv[i];
    if (opt == "--chunk") chunk = tk::parse_size(argv[i + 1], opt);
    else if (opt == "--rate") rate = static_cast<double>(tk::parse_size(argv[i + 1], opt));
    else if (opt == "--burst") burst = tk::parse_size(argv[i + 1], opt);
    else if (opt == "--pause") pause_ms = static_cast<long>(tk::parse_count(argv[i + 1], opt, 0));
    else {
      std::fprintf(stderr, "pacer: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::vector<std::byte> buf(chunk);
  using Clock = std::chrono::steady_clock;
  Clock::time_point next = Clock::now();
  std::uint64_t since_pause = 0;
  try {
    for (;;) {
      std::size_t n = tk::read_full(0, buf, "standard input");
      if (n == 0) break;
      tk::write_all(1, std::span(buf).first(n), "standard output");
      since_pause += n;
      if (burst && since_pause >= burst) {
        since_pause = 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      }
      if (rate > 0) {
        next = std::max(next, Clock::now()) +
               std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(static_cast<double>(n) / rate));
        std::this_thread::sleep_until(next);
      }
      if (n < chunk) break;
    }
  } catch (const tk::Error& e) {
    if (e.errnum() == EPIPE) return 0;
    std::fprintf(stderr, "pacer: %s\n", e.what());
    return 1;
  }
  return 0;
}
