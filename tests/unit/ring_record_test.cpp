// Ring: what buffer --record reads of the other process through the shared
// header: each side's sleeps, timed only when it sleeps, and the consumer's
// long writes, counted and kept in a log of the last kLongWriteLog.
#include "../../lib/ring/ring.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

TEST(RingRecord, AProducerThatSleepsOnAFullRingHasItsSleepCounted) {
  tk::Ring ring(512, 2);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(ring.wait_free(1s), tk::Ring::Wait::ready);
    ring.publish(512);
  }
  EXPECT_EQ(ring.stats().producer_wait_ns, 0u);  // no sleep yet, no time
  ASSERT_EQ(ring.wait_free(20ms), tk::Ring::Wait::timed_out);
  EXPECT_GT(ring.stats().producer_wait_ns, 0u);
  EXPECT_EQ(ring.stats().consumer_wait_ns, 0u);
}

TEST(RingRecord, TheConsumersWaitForItsFirstBlockIsNotAWait) {
  tk::Ring ring(512, 2);
  ASSERT_EQ(ring.wait_filled(1, 20ms), tk::Ring::Wait::timed_out);
  EXPECT_EQ(ring.stats().consumer_wait_ns, 0u);
  ring.note_consumer_started();
  ASSERT_EQ(ring.wait_filled(1, 20ms), tk::Ring::Wait::timed_out);
  EXPECT_GT(ring.stats().consumer_wait_ns, 0u);
}

TEST(RingRecord, LongWritesOfTheConsumerProcessReachTheProducerProcess) {
  tk::Ring ring(512, 2);
  pid_t pid = ::fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    for (std::int64_t i = 0; i < 3; ++i) ring.note_long_write(1000 + i, 2'000'000'000 + i);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  tk::RingStats s = ring.stats();
  EXPECT_EQ(s.long_writes, 3u);
  EXPECT_EQ(s.long_write_ns, 6'000'000'003u);
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto w = ring.long_write(i);
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(w->start_ns, 1000 + static_cast<std::int64_t>(i));
    EXPECT_EQ(w->duration_ns, 2'000'000'000 + static_cast<std::int64_t>(i));
  }
  EXPECT_FALSE(ring.long_write(3).has_value());  // not written yet
}

TEST(RingRecord, OnlyTheLastLogFullOfLongWritesKeepTheirTimes) {
  tk::Ring ring(512, 2);
  const std::uint64_t n = tk::Ring::kLongWriteLog + 5;
  for (std::uint64_t i = 0; i < n; ++i) ring.note_long_write(static_cast<std::int64_t>(i), 1);
  EXPECT_EQ(ring.stats().long_writes, n);
  EXPECT_FALSE(ring.long_write(4).has_value());  // overwritten
  ASSERT_TRUE(ring.long_write(5).has_value());
  EXPECT_EQ(ring.long_write(5)->start_ns, 5);
  EXPECT_EQ(ring.long_write(n - 1)->start_ns, static_cast<std::int64_t>(n - 1));
}

}  // namespace
