#include "sampler.hpp"

#include <algorithm>

#include "../../lib/threads.hpp"

namespace tk::buffer {

Sampler::Sampler(const Ring& ring, const RunState& run, Clock::time_point start,
                 std::vector<Watcher> watchers)
    : ring_(ring), run_(run), start_(start), watchers_(std::move(watchers)) {
  if (watchers_.empty()) return;
  thread_ = thread_without_signals([this] { loop(); });
}

void Sampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Sampler::loop() {
  std::vector<Clock::time_point> next;
  for (const Watcher& w : watchers_) next.push_back(start_ + w.every);
  std::unique_lock lock(mutex_);
  for (;;) {
    Clock::time_point soonest = *std::min_element(next.begin(), next.end());
    if (wake_.wait_until(lock, soonest, [this] { return stopping_; })) return;
    const RunStats now = run_.stats(ring_);
    const Clock::time_point at = Clock::now();
    for (std::size_t i = 0; i < watchers_.size(); ++i) {
      if (next[i] > at) continue;
      next[i] += watchers_[i].every;
      // A tick that came late (a loaded machine) is one longer tick, not a
      // burst of short ones.
      if (at > next[i]) next[i] = at + watchers_[i].every;
      watchers_[i].take(now);
    }
  }
}

}  // namespace tk::buffer
