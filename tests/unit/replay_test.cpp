// The ring model behind buffer's advice (lib/ring/replay.hpp): each side
// replayed on its own clock through queues of other sizes.
#include "../../lib/ring/replay.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

constexpr double MB = 1e6;

// A producer that sends `burst` bytes in one 0.1 s tick and then pauses for
// `pause_ticks` ticks, against an output that takes `rate` bytes a second
// steadily; neither waited for the other in the recording (an unbounded
// ring), so the steps are each side's own pace.
std::vector<tk::ObservedStep> bursty(double burst, int pause_ticks, double rate, int cycles) {
  std::vector<tk::ObservedStep> steps;
  for (int c = 0; c < cycles; ++c)
    for (int i = 0; i <= pause_ticks; ++i) steps.push_back({0.1, i == 0 ? burst : 0, rate * 0.1, 0, 0});
  return steps;
}

TEST(RingReplay, AnInputThatKeepsAheadNeverLeavesTheOutputWaiting) {
  std::vector<tk::ObservedStep> steps(50, {0.1, 12 * MB, 10 * MB, 0, 0});
  for (int i = 0; i < 10; ++i) steps.push_back({0.1, 0, 10 * MB, 0, 0});  // the rest drains
  tk::ReplayResult r = tk::replay_queue(steps, 1 * MB, 0.02);
  EXPECT_EQ(r.waits, 0u);
  EXPECT_EQ(r.wait_s, 0);
}

TEST(RingReplay, APauseLongerThanTheQueueCoversIsAWaitEachCycle) {
  // 50 MB bursts, then 0.4 s of nothing; the output takes 100 MB/s.
  auto steps = bursty(50 * MB, 4, 100 * MB, 6);
  tk::ReplayResult small = tk::replay_queue(steps, 10 * MB, 0.02);
  EXPECT_GE(small.waits, 5u);
  EXPECT_GT(small.wait_s, 1.0);
  tk::ReplayResult large = tk::replay_queue(steps, 60 * MB, 0.02);
  EXPECT_EQ(large.waits, 0u);
  EXPECT_LE(large.peak_bytes, 50 * MB);
}

TEST(RingReplay, TheSmallestQueueWithoutWaitsIsWhatThePauseDrains) {
  auto steps = bursty(50 * MB, 4, 100 * MB, 6);
  auto needed = tk::smallest_queue_without_waits(steps, 0.25 * MB, 1 * MB, 300 * MB, 0.02, 0.0);
  ASSERT_TRUE(needed.has_value());
  // The burst arrives over 0.1 s while 10 MB leave: at least 40 MB must wait
  // in the queue, and the whole burst of 50 MB always fits.
  EXPECT_GE(*needed, 38 * MB);
  EXPECT_LE(*needed, 50 * MB);
  EXPECT_EQ(tk::replay_queue(steps, *needed, 0.02).waits, 0u);
  EXPECT_GT(tk::replay_queue(steps, *needed - 2 * MB, 0.02).waits, 0u);
}

TEST(RingReplay, AnInputSlowerOnAverageThanTheOutputIsHelpedByNoQueue) {
  // 5 MB a tick in, an output that could take 10 MB a tick: it waited half
  // of every tick in the recording.
  std::vector<tk::ObservedStep> steps(40, {0.1, 5 * MB, 5 * MB, 0, 0.05});
  EXPECT_FALSE(tk::smallest_queue_without_waits(steps, 1 * MB, 1 * MB, 400 * MB, 0.02, 0.1));
}

TEST(RingReplay, TheTimeASideWaitedForTheOtherIsNotItsOwnPace) {
  // Recorded through a small ring: the input sat waiting for room most of
  // each tick, so it was fast whenever it could run; the output waited for
  // data after each burst. Replayed through a large ring, those waits go.
  std::vector<tk::ObservedStep> steps;
  for (int c = 0; c < 5; ++c) {
    steps.push_back({0.1, 10 * MB, 10 * MB, 0.09, 0});
    steps.push_back({0.1, 10 * MB, 10 * MB, 0.09, 0});
    steps.push_back({0.1, 0, 0, 0, 0.1});    // the input's own pause
    steps.push_back({0.1, 0, 0, 0.1, 0.1});  // (a moment it sat waiting for room)
  }
  EXPECT_GT(tk::replay_queue(steps, 2 * MB, 0.02).waits, 0u);
  EXPECT_EQ(tk::replay_queue(steps, 100 * MB, 0.02).waits, 0u);
}

TEST(RingReplay, IdlingAfterTheLastInputIsNoWait) {
  std::vector<tk::ObservedStep> steps{{0.1, 10 * MB, 1 * MB, 0, 0}, {0.1, 0, 9 * MB, 0, 0},
                                      {0.1, 0, 0, 0, 0}};
  EXPECT_EQ(tk::replay_queue(steps, 20 * MB, 0.02).waits, 0u);
}

}  // namespace
