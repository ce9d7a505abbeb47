// The token bucket's arithmetic, in whole nanoseconds.
#include "token_bucket.hpp"

#include <algorithm>
#include <limits>

namespace tk {
namespace {

// Far longer than any wait, short enough that adding it to a time cannot
// overflow (about 73 years).
constexpr std::int64_t kLongestNs = std::numeric_limits<std::int64_t>::max() / 4;

__extension__ typedef unsigned __int128 Wide;

}  // namespace

TokenBucket::TokenBucket(std::uint64_t bytes_per_second, std::uint64_t burst_bytes)
    : rate_(std::max<std::uint64_t>(bytes_per_second, 1)),
      burst_(std::max<std::uint64_t>(burst_bytes, 1)),
      fill_time_(time_for(burst_)) {}

TokenBucket::Duration TokenBucket::time_for(std::uint64_t bytes) const noexcept {
  Wide ns = (Wide{bytes} * 1000000000u + rate_ - 1) / rate_;
  return Duration(static_cast<std::int64_t>(std::min<Wide>(ns, kLongestNs)));
}

TokenBucket::Duration TokenBucket::take(std::uint64_t bytes, Time now) noexcept {
  // Tokens earned while idle stop accruing once the bucket is full.
  Time full_since = now - fill_time_;
  Time base = empty_at_ == Time::min() ? full_since : std::max(empty_at_, full_since);
  empty_at_ = base + time_for(bytes);
  return std::max(empty_at_ - now, Duration::zero());
}

std::uint64_t TokenBucket::default_burst(std::uint64_t bytes_per_second) noexcept {
  return std::max<std::uint64_t>(bytes_per_second / 10, 1);
}

}  // namespace tk
