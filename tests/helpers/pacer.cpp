// pacer: copies stdin to stdout at a limited pace, for tests and benchmarks
// that need a bursty producer or a slow, stalling consumer (a tape that
// stops to reposition).
//   pacer [--chunk N] [--rate BYTES_PER_S] [--burst N[:M] --pause MS[:MS2]]
//         [--seed S] [--partial 1]
// --rate is a top speed, like a drive's: time spent waiting for input is not
// made up for later. After every --burst bytes it sleeps --pause ms. A range
// N:M draws each burst (and MS:MS2 each pause) uniformly from it with a
// generator seeded by --seed (default 1), so that a run can be repeated.
// --partial 1 passes on what each read returns (at most --chunk) instead of
// waiting for a full chunk, for a stream of requests that each wait for a
// reply (an rmt client's); it ends only at the end of input.
// PACER_TRACE=FILE appends one line per chunk at exit, "read_start read_end
// write_end bytes" in CLOCK_MONOTONIC seconds, so that the two pacers of a
// pipeline can be laid side by side to see who waited for whom.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/size.hpp"
#include "seeded_draw.hpp"

int main(int argc, char** argv) {
  std::size_t chunk = 65536;
  double rate = 0;
  std::uint64_t burst = 0, burst_max = 0;
  long pause_ms = 0, pause_max = 0;
  std::uint64_t seed = 1;
  bool partial = false;
  // "N" or "N:M", each part read by `one`.
  auto range = [](const std::string& text, auto one, auto& low, auto& high) {
    auto colon = text.find(':');
    low = one(text.substr(0, colon));
    high = colon == std::string::npos ? low : one(text.substr(colon + 1));
    if (high < low) throw tk::Error(EINVAL, "empty range " + text);
  };
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string opt = argv[i];
    auto size = [&](const std::string& t) { return tk::parse_size(t, opt); };
    auto count = [&](const std::string& t) { return static_cast<long>(tk::parse_count(t, opt, 0)); };
    if (opt == "--chunk") chunk = tk::parse_size(argv[i + 1], opt);
    else if (opt == "--rate") rate = static_cast<double>(tk::parse_size(argv[i + 1], opt));
    else if (opt == "--burst") range(argv[i + 1], size, burst, burst_max);
    else if (opt == "--pause") range(argv[i + 1], count, pause_ms, pause_max);
    else if (opt == "--seed") seed = static_cast<std::uint64_t>(tk::parse_count(argv[i + 1], opt, 0));
    else if (opt == "--partial") partial = tk::parse_count(argv[i + 1], opt, 0) != 0;
    else {
      std::fprintf(stderr, "pacer: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::vector<std::byte> buf(chunk);
  tk::test::SeededDraw draw(seed);  // the same on every run with one seed
  std::uint64_t this_burst = draw(burst, burst_max);
  using Clock = std::chrono::steady_clock;
  Clock::time_point next = Clock::now();
  std::uint64_t since_pause = 0;
  const char* trace_path = std::getenv("PACER_TRACE");
  struct Step {
    double read_start, read_end, write_end;
    std::size_t bytes;
  };
  std::vector<Step> trace;
  auto now_s = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  auto save_trace = [&] {
    if (trace_path == nullptr) return;
    std::FILE* f = std::fopen(trace_path, "a");
    if (f == nullptr) return;
    for (const Step& s : trace)
      std::fprintf(f, "%.6f %.6f %.6f %zu\n", s.read_start, s.read_end, s.write_end, s.bytes);
    std::fclose(f);
  };
  try {
    for (;;) {
      double read_start = trace_path ? now_s() : 0;
      std::size_t n = partial ? tk::read_record(0, buf, "standard input")
                              : tk::read_full(0, buf, "standard input");
      double read_end = trace_path ? now_s() : 0;
      if (n == 0) break;
      tk::write_all(1, std::span(buf).first(n), "standard output");
      if (trace_path) trace.push_back({read_start, read_end, now_s(), n});
      since_pause += n;
      if (burst && since_pause >= this_burst) {
        since_pause = 0;
        this_burst = draw(burst, burst_max);
        std::this_thread::sleep_for(std::chrono::milliseconds(draw(pause_ms, pause_max)));
      }
      if (rate > 0) {
        next = std::max(next, Clock::now()) +
               std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double>(static_cast<double>(n) / rate));
        std::this_thread::sleep_until(next);
      }
      if (n < chunk && !partial) break;
    }
  } catch (const tk::Error& e) {
    save_trace();
    if (e.errnum() == EPIPE) return 0;
    std::fprintf(stderr, "pacer: %s\n", e.what());
    return 1;
  }
  save_trace();
  return 0;
}
