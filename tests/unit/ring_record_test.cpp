// Ring: what buffer --record reads of the other process through the shared
// header: each side's sleeps, timed only when it sleeps.
#include "../../lib/ring/ring.hpp"

#include <gtest/gtest.h>

#include <chrono>

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

}  // namespace
