// A model of the ring for buffer's advice: a recorded run's input
// and output replayed through a queue of another size, to say what size
// would have kept the output from waiting for data.
//
// Each side is replayed on its own clock: the recorded run with the time it
// spent waiting for the other side taken out. What is left is the side's
// own pace (a burst, a pause, a drive stopped to reposition), which a
// queue of another size only shifts in time: the input runs its own
// schedule whenever the queue has room, the output whenever it has data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace tk {

// One recorded interval (a tick of buffer --record).
struct ObservedStep {
  double seconds = 0;      // its length
  double bytes_in = 0;     // what the input delivered in it
  double bytes_out = 0;    // what the output took in it
  double in_wait_s = 0;    // how long the input slept waiting for room in it
  double out_wait_s = 0;   // how long the output slept waiting for data in it
};

struct ReplayResult {
  std::uint64_t waits = 0;  // stretches of time the output idled for want of data
  double wait_s = 0;        // their time, in all
  double peak_bytes = 0;    // the queue's highest fill
};

// Replays the run through a queue of `queue_bytes`, in steps of `step_s`
// (a fraction of a tick). Idling counts as a wait only once the input has
// started and while more of it is to come; idling shorter than a
// millisecond in all is not a wait.
ReplayResult replay_queue(std::span<const ObservedStep> observed, double queue_bytes,
                          double step_s);

// The smallest queue, a multiple of `granule` bytes from `from` up to `to`,
// at which the replay's waits come to `tolerance_s` or less in all (what
// the record cannot resolve: a tick, say); nullopt when `to` still waits
// more. (A larger queue never makes the output wait more, so a bisection
// finds it.)
std::optional<double> smallest_queue_without_waits(std::span<const ObservedStep> observed,
                                                   double granule, double from, double to,
                                                   double step_s, double tolerance_s);

}  // namespace tk
