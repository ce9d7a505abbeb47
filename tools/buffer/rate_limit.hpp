// buffer's --input-rate and --output-rate: a token bucket on the steady
// clock, and the waiting it asks for.
#pragma once

#include <cstdint>
#include <functional>

#include "../../lib/token_bucket.hpp"

namespace tk::buffer {

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
