// The WAN emulator's link bookkeeping (tests/helpers/wan_link.hpp) on a
// made-up clock: the token bucket's rate and depth, and a connection's
// bytes in flight released half a round trip after delivery.
#include "../helpers/wan_link.hpp"

#include <gtest/gtest.h>

namespace {

using tk::wan::FlightWindow;
using tk::wan::Nanos;
using tk::wan::never;
using WanBucket = tk::wan::TokenBucket;

constexpr Nanos ms = 1'000'000;

TEST(WanTokenBucket, LetsABurstUpToItsDepthPassAtOnce) {
  WanBucket link(1'000'000, 64 * 1024, 0);
  EXPECT_EQ(link.pass(64 * 1024, 0), 0);
}

TEST(WanTokenBucket, QueuesWhatExceedsItsDepthAtTheRate) {
  // 1 MB/s, an empty bucket: 1000 bytes take 1 ms, and each transfer waits
  // behind the ones before it, as at a bottleneck.
  WanBucket link(1'000'000, 0, 0);
  EXPECT_EQ(link.pass(1000, 0), 1 * ms);
  EXPECT_EQ(link.pass(1000, 0), 2 * ms);
  EXPECT_EQ(link.pass(3000, 0), 5 * ms);
}

TEST(WanTokenBucket, RefillsWhileIdleButNoDeeperThanItsDepth) {
  WanBucket link(1'000'000, 2000, 0);
  EXPECT_EQ(link.pass(2000, 0), 0);
  // After 10 ms idle only 2000 bytes (the depth) pass at once, not 10000.
  EXPECT_EQ(link.pass(2000, 10 * ms), 10 * ms);
  EXPECT_EQ(link.pass(1000, 10 * ms), 11 * ms);
}

TEST(WanTokenBucket, AverageRateIsTheRateWhateverTheTransferSizes) {
  WanBucket link(125'000'000, 125'000, 0);  // 1 Gbit/s, 1 ms deep
  Nanos done = 0;
  std::uint64_t sent = 0;
  for (int i = 0; sent < 125'000'000; ++i) {
    std::uint64_t bytes = 1000 + static_cast<std::uint64_t>(i % 7) * 40'000;
    done = link.pass(bytes, 0);
    sent += bytes;
  }
  // One second of traffic, less the one free millisecond of depth.
  Nanos expected = static_cast<Nanos>((sent - 125'000) * 8);
  EXPECT_NEAR(static_cast<double>(done), static_cast<double>(expected), 1000.0);
}

TEST(WanTokenBucket, RateZeroIsNoLimit) {
  WanBucket link(0, 0, 0);
  EXPECT_EQ(link.pass(1u << 30, 7 * ms), 7 * ms);
}

TEST(FlightWindow, HasTheWholeWindowAtFirst) {
  FlightWindow flight(6u << 20, 25 * ms);
  EXPECT_EQ(flight.room(), 6u << 20);
  EXPECT_EQ(flight.next_ack(), never);
}

TEST(FlightWindow, BytesSentTakeRoomUntilAcknowledged) {
  FlightWindow flight(100, 25 * ms);
  flight.sent(60);
  EXPECT_EQ(flight.room(), 40u);
  flight.sent(40);
  EXPECT_EQ(flight.room(), 0u);
  // Delivered at 10 ms: still in flight until the acknowledgement is back.
  flight.delivered(60, 10 * ms);
  EXPECT_EQ(flight.next_ack(), 35 * ms);
  EXPECT_FALSE(flight.acknowledge(35 * ms - 1));
  EXPECT_EQ(flight.room(), 0u);
  EXPECT_TRUE(flight.acknowledge(35 * ms));
  EXPECT_EQ(flight.room(), 60u);
  EXPECT_EQ(flight.next_ack(), never);
}

TEST(FlightWindow, ReleasesAcknowledgementsInTheOrderOfDelivery) {
  FlightWindow flight(1000, 5 * ms);
  flight.sent(300);
  flight.delivered(100, 1 * ms);
  flight.delivered(100, 1 * ms);  // the same moment: one acknowledgement
  flight.delivered(100, 2 * ms);
  EXPECT_EQ(flight.in_flight(), 300u);
  flight.acknowledge(6 * ms);
  EXPECT_EQ(flight.in_flight(), 100u);
  EXPECT_EQ(flight.next_ack(), 7 * ms);
  flight.acknowledge(100 * ms);
  EXPECT_EQ(flight.in_flight(), 0u);
}

TEST(FlightWindow, AWindowPerRoundTripIsTheStreamRate) {
  // A sender that always fills the window, over a link with no rate limit:
  // a window leaves, arrives half a round trip later, and its
  // acknowledgement is back a round trip after it left.
  const Nanos rtt = 50 * ms;
  FlightWindow flight(6u << 20, rtt / 2);
  std::uint64_t sent = 0;
  Nanos now = 0;
  for (int round = 0; round < 10; ++round) {
    std::uint64_t bytes = flight.room();
    flight.sent(bytes);
    sent += bytes;
    flight.delivered(bytes, now + rtt / 2);
    now = flight.next_ack();
    flight.acknowledge(now);
  }
  EXPECT_EQ(now, 10 * rtt);
  EXPECT_EQ(sent, 10 * (6u << 20));
}

}  // namespace
