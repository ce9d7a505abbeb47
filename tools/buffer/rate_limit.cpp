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

bool RateLimit::pace(std::uint64_t bytes, const std::function<bool()>& should_stop) {
  if (rate_ == 0) return true;
  using Clock = std::chrono::steady_clock;
  Clock::time_point now = Clock::now();
  Clock::time_point until = now + bucket_.take(bytes, now.time_since_epoch());
  while (now < until) {
    if (should_stop()) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - now, 250ms));
    now = Clock::now();
  }
  return !should_stop();
}

}  // namespace tk::buffer
