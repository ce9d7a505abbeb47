// tk::TokenBucket: a byte-rate limit with a bounded burst, as pure arithmetic
// on times the caller supplies, so tests drive the clock and sleeping stays
// with the caller.
#pragma once

#include <chrono>
#include <cstdint>

namespace tk {

// Tokens (bytes) accrue at bytes_per_second up to burst_bytes; a transfer
// takes its size in tokens. A transfer larger than what the bucket holds
// still goes through whole (a tape record cannot be split) and leaves the
// bucket in debt, which the next transfers wait off, so over any stretch the
// average stays at or below the rate, and after a pause no more than
// burst_bytes plus one transfer pass at full speed. The bucket starts full.
class TokenBucket {
 public:
  using Duration = std::chrono::nanoseconds;
  // A time on the caller's monotonic clock (any epoch, may be negative).
  using Time = std::chrono::nanoseconds;

  // bytes_per_second and burst_bytes must be at least 1 (0 is taken as 1).
  TokenBucket(std::uint64_t bytes_per_second, std::uint64_t burst_bytes);

  // Takes `bytes` at time `now` (which never goes back between calls) and
  // returns how long the caller must wait before moving them: zero while
  // the bucket holds enough.
  Duration take(std::uint64_t bytes, Time now) noexcept;

  std::uint64_t bytes_per_second() const noexcept { return rate_; }
  std::uint64_t burst_bytes() const noexcept { return burst_; }

  // A tenth of a second at the rate, at least one byte: the burst buffer
  // allows by default, short enough that a link shared with others sees an
  // even stream.
  static std::uint64_t default_burst(std::uint64_t bytes_per_second) noexcept;

 private:
  // Time needed to earn `bytes` tokens, rounded up so the rate is never
  // exceeded; saturates far beyond any real wait.
  Duration time_for(std::uint64_t bytes) const noexcept;

  std::uint64_t rate_;
  std::uint64_t burst_;
  Duration fill_time_;  // time to fill an empty bucket
  // When the bucket will hold zero tokens if nothing more is taken: before
  // now it holds tokens, after now it owes. Never earlier than now minus
  // fill_time_ (a full bucket); the minimum means "full" before the first take.
  Time empty_at_ = Time::min();
};

}  // namespace tk
