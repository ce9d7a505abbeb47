// buffer's --input-rate and --output-rate: a token bucket on the steady
// clock, and the waiting it asks for.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "../../lib/token_bucket.hpp"

namespace tk::buffer {

// Sleeps until `until` in slices of at most 250 ms, asking should_stop()
// before each and at the end; false as soon as it says stop. The waits of
// the rate limits and of -u use it, so that no wait delays a stop or the
// notice of a death.
bool sleep_until_or_stop(std::chrono::steady_clock::time_point until,
                         const std::function<bool()>& should_stop);

class RateLimit {
 public:
  // bytes_per_second 0: no limit, pace() never waits.
  explicit RateLimit(std::uint64_t bytes_per_second);

  // Waits until `bytes` may move at the rate. Returns false, without
  // waiting out the rest, as soon as should_stop() is true; it is asked at
  // least every 250 ms, so a slow rate never delays a stop or a death.
  bool pace(std::uint64_t bytes, const std::function<bool()>& should_stop);

 private:
  std::uint64_t rate_;
  TokenBucket bucket_;
};

}  // namespace tk::buffer
