// Sleeping for the rate limits, in slices short enough to notice a stop.
#include "rate_limit.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace tk::buffer {

using namespace std::chrono_literals;

RateLimit::RateLimit(std::uint64_t bytes_per_second)
    : rate_(bytes_per_second),
      bucket_(bytes_per_second, TokenBucket::default_burst(bytes_per_second)) {}

bool sleep_until_or_stop(std::chrono::steady_clock::time_point until,
                         const std::function<bool()>& should_stop) {
  using Steady = std::chrono::steady_clock;
  for (Steady::time_point now = Steady::now(); now < until; now = Steady::now()) {
    if (should_stop()) return false;
    std::this_thread::sleep_for(std::min<Steady::duration>(until - now, 250ms));
  }
  return !should_stop();
}

bool RateLimit::pace(std::uint64_t bytes, const std::function<bool()>& should_stop) {
  if (rate_ == 0) return true;
  auto now = std::chrono::steady_clock::now();
  return sleep_until_or_stop(now + bucket_.take(bytes, now.time_since_epoch()), should_stop);
}

}  // namespace tk::buffer
