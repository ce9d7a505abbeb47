// queue-sim: the time a pipeline of two pacers (tests/helpers/pacer.cpp)
// takes through an ideal queue of a given size, for bench-buffer's
// smoothing: the best any causal queue can do on that schedule.
//   queue-sim --bytes N --chunk C --queue Q
//             --producer BURST[:MAX],PAUSE_MS[:MAX],SEED
//             --consumer RATE,BURST[:MAX],PAUSE_MS[:MAX],SEED
// The producer writes its bursts at once (it reads a page-cached file) and
// waits only for room; the consumer reads at most RATE bytes a second and
// waits only for data. Each draws its bursts and pauses as pacer does with
// the same seed. Prints "producer_alone consumer_alone through_queue" in
// seconds. A chunk enters the queue when the producer's write returns and
// leaves it when the consumer's read does, so Q counts whole chunks.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/size.hpp"
#include "seeded_draw.hpp"

namespace {

struct Pacing {
  std::uint64_t burst = 0, burst_max = 0;
  long pause = 0, pause_max = 0;
  std::uint64_t seed = 1;
  double rate = 0;  // bytes per second; 0: no limit
};

// The draws pacer makes, in its order: the first burst, then at each
// burst's end the next burst and the pause.
class Schedule {
 public:
  explicit Schedule(const Pacing& p) : p_(p), draw_(p.seed) { this_burst_ = draw_(p.burst, p.burst_max); }
  // After `n` more bytes: the pause (s) that follows them, 0 if none.
  double after(std::uint64_t n) {
    since_ += n;
    if (p_.burst == 0 || since_ < this_burst_) return 0;
    since_ = 0;
    this_burst_ = draw_(p_.burst, p_.burst_max);
    return static_cast<double>(draw_(p_.pause, p_.pause_max)) / 1000.0;
  }

 private:
  Pacing p_;
  tk::test::SeededDraw draw_;
  std::uint64_t this_burst_ = 0, since_ = 0;
};

// "N[:M]" into low and high with parse.
template <class T, class Parse>
void range(const std::string& text, Parse parse, T& low, T& high) {
  auto colon = text.find(':');
  low = parse(text.substr(0, colon));
  high = colon == std::string::npos ? low : parse(text.substr(colon + 1));
}

std::vector<std::string> fields(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// The pipeline's end time with a queue of `slots` chunks (0: unbounded).
double run(std::uint64_t bytes, std::uint64_t chunk, std::size_t slots, const Pacing& prod,
           const Pacing& cons) {
  Schedule ps(prod), cs(cons);
  std::vector<double> read_at;  // when the consumer read chunk k
  double producer_ready = 0, consumer_ready = 0, consumer_next = 0;
  for (std::uint64_t done = 0; done < bytes;) {
    std::uint64_t n = std::min(chunk, bytes - done);
    std::size_t k = read_at.size();
    // In the queue once there is room: chunk k - slots has been read.
    double in_queue = producer_ready;
    if (slots > 0 && k >= slots) in_queue = std::max(in_queue, read_at[k - slots]);
    if (prod.rate > 0) in_queue += static_cast<double>(n) / prod.rate;
    producer_ready = in_queue + ps.after(n);
    // pacer: read, write, pause after a burst, then the rate's sleep.
    double read = std::max(consumer_ready, in_queue);
    read_at.push_back(read);
    double now = read + cs.after(n);
    if (cons.rate > 0) {
      consumer_next = std::max(consumer_next, now) + static_cast<double>(n) / cons.rate;
      now = consumer_next;
    }
    consumer_ready = now;
    done += n;
  }
  return consumer_ready;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::uint64_t bytes = 0, chunk = 262144, queue = 0;
    Pacing prod, cons;
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string opt = argv[i], value = argv[i + 1];
      auto size = [&](const std::string& t) { return tk::parse_size(t, opt); };
      auto count = [&](const std::string& t) { return static_cast<long>(tk::parse_count(t, opt, 0)); };
      if (opt == "--bytes") bytes = size(value);
      else if (opt == "--chunk") chunk = size(value);
      else if (opt == "--queue") queue = size(value);
      else if (opt == "--producer" || opt == "--consumer") {
        auto f = fields(value);
        Pacing& p = opt == "--producer" ? prod : cons;
        std::size_t at = 0;
        if (opt == "--consumer") {
          if (f.size() != 4) throw tk::Error(EINVAL, opt + " RATE,BURST,PAUSE,SEED");
          p.rate = static_cast<double>(size(f[at++]));
        } else if (f.size() != 3) {
          throw tk::Error(EINVAL, opt + " BURST,PAUSE,SEED");
        }
        range(f[at++], size, p.burst, p.burst_max);
        range(f[at++], count, p.pause, p.pause_max);
        p.seed = static_cast<std::uint64_t>(count(f[at]));
      } else {
        throw tk::Error(EINVAL, "unknown option " + opt);
      }
    }
    if (bytes == 0 || chunk == 0) throw tk::Error(EINVAL, "--bytes and --chunk must be above 0");
    Pacing instant;  // a side alone: the other takes and gives at once
    double producer_alone = run(bytes, chunk, 0, prod, instant);
    double consumer_alone = run(bytes, chunk, 0, instant, cons);
    std::size_t slots = static_cast<std::size_t>(std::max<std::uint64_t>(queue / chunk, 1));
    double through = run(bytes, chunk, slots, prod, cons);
    std::printf("%.4f %.4f %.4f\n", producer_alone, consumer_alone, through);
    return 0;
  } catch (const tk::Error& e) {
    std::fprintf(stderr, "queue-sim: %s\n", e.what());
    return 2;
  }
}
