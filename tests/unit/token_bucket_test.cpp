// TokenBucket: the rate and the burst bound, on a clock the test moves.
#include "../../lib/token_bucket.hpp"

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;
using tk::TokenBucket;

TEST(TokenBucket, AFullBucketPassesItsBurstAtOnceThenWaitsAtTheRate) {
  TokenBucket bucket(1000, 100);  // 1 ms per byte
  EXPECT_EQ(bucket.take(100, 0ms), 0ns);
  EXPECT_EQ(bucket.take(1, 0ms), 1ms);
  // The caller waited; the next 10 bytes cost 10 ms more.
  EXPECT_EQ(bucket.take(10, 1ms), 10ms);
}

TEST(TokenBucket, ATransferLargerThanTheBurstPassesWholeAndLeavesADebt) {
  TokenBucket bucket(1000, 100);
  // 100 bytes were in the bucket; 400 more take 400 ms to earn.
  EXPECT_EQ(bucket.take(500, 0ms), 400ms);
  // Taken before the debt is paid off: the wait adds up.
  EXPECT_EQ(bucket.take(100, 100ms), 400ms);
}

TEST(TokenBucket, IdleTimeFillsTheBucketOnlyUpToTheBurst) {
  TokenBucket bucket(1000, 100);
  EXPECT_EQ(bucket.take(100, 0ms), 0ns);
  // An hour idle earns 100 bytes, not 3.6 million.
  EXPECT_EQ(bucket.take(100, 3600s), 0ns);
  EXPECT_EQ(bucket.take(100, 3600s), 100ms);
}

TEST(TokenBucket, PartlyRefilledBucketPaysTheRest) {
  TokenBucket bucket(1000, 100);
  EXPECT_EQ(bucket.take(100, 0ms), 0ns);
  // 30 ms earned 30 bytes: 50 bytes wait for 20 more.
  EXPECT_EQ(bucket.take(50, 30ms), 20ms);
}

TEST(TokenBucket, AverageOverManyBlocksNeverExceedsTheRate) {
  // 1 MiB/s in 64 KiB blocks with the default burst, waiting as told:
  // 16 MiB take 15.9 s at least (the first burst is free), and not more
  // than the rounding of 256 waits beyond that.
  constexpr std::uint64_t rate = 1 << 20;
  TokenBucket bucket(rate, TokenBucket::default_burst(rate));
  std::chrono::nanoseconds now = 5s;  // any epoch
  const std::chrono::nanoseconds start = now;
  for (int i = 0; i < 256; ++i) now += bucket.take(64 << 10, now);
  std::uint64_t free_bytes = TokenBucket::default_burst(rate);
  auto expected = std::chrono::nanoseconds(((std::uint64_t{16} << 20) - free_bytes) *
                                           1000000000ull / rate);
  EXPECT_GE(now - start, expected);
  EXPECT_LE(now - start, expected + 256ns);
}

TEST(TokenBucket, RoundsWaitsUpSoTheRateIsAnUpperBound) {
  TokenBucket bucket(3, 1);  // a byte every 333,333,333.3 ns
  EXPECT_EQ(bucket.take(1, 0ns), 0ns);
  EXPECT_EQ(bucket.take(1, 0ns), 333333334ns);
}

TEST(TokenBucket, DefaultBurstIsATenthOfASecondAndAtLeastOneByte) {
  EXPECT_EQ(TokenBucket::default_burst(10 << 20), (10u << 20) / 10);
  EXPECT_EQ(TokenBucket::default_burst(5), 1u);
  TokenBucket zero(0, 0);
  EXPECT_EQ(zero.bytes_per_second(), 1u);
  EXPECT_EQ(zero.burst_bytes(), 1u);
}

TEST(TokenBucket, HugeTransfersAtTheSlowestRateDoNotOverflow) {
  TokenBucket bucket(1, 1);
  auto wait = bucket.take(std::uint64_t{1} << 40, 0ns);
  EXPECT_GT(wait, 24h * 365 * 50);
}

}  // namespace
