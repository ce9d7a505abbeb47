// The ring model behind buffer's advice: each side replayed on its own clock.
#include "replay.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tk {

namespace {

// Idling of the output shorter than this, in one stretch, is no wait.
constexpr double kMinWaitS = 1e-3;

// One side's own pace: the recorded intervals less the time it waited for
// the other side.
class OwnPace {
 public:
  OwnPace(std::span<const ObservedStep> observed, bool input) {
    segments_.reserve(observed.size());
    for (const ObservedStep& o : observed) {
      double bytes = input ? o.bytes_in : o.bytes_out;
      double waited = input ? o.in_wait_s : o.out_wait_s;
      double own = std::max(0.0, o.seconds - waited);
      // Bytes moved in an interval spent (nearly) all waiting: moved in the
      // sliver of it that was not, which a clock's rounding may hide.
      if (bytes > 0) own = std::max(own, 0.02 * o.seconds);
      if (own <= 0 && bytes <= 0) continue;
      segments_.push_back({std::max(own, 1e-9), bytes});
      total_ += bytes;
    }
  }

  bool done() const { return at_segment_ >= segments_.size(); }
  double total() const { return total_; }
  double moved() const { return moved_; }

  // Moves on by up to `dt` of its own time, moving at most `max_bytes`;
  // returns the time used (less than dt when max_bytes held it back).
  double advance(double dt, double max_bytes, double& bytes) {
    bytes = 0;
    double used = 0;
    while (at_segment_ < segments_.size() && dt - used > 1e-12) {
      const Segment& s = segments_[at_segment_];
      double rate = s.bytes / s.seconds;
      double t = std::min(dt - used, s.seconds - at_);
      if (rate > 0 && bytes + rate * t > max_bytes) {
        t = std::max(0.0, (max_bytes - bytes) / rate);
        bytes = max_bytes;
        at_ += t;
        used += t;
        if (at_ >= s.seconds - 1e-12) next();
        break;
      }
      bytes += rate * t;
      at_ += t;
      used += t;
      if (at_ >= s.seconds - 1e-12) next();
    }
    moved_ += bytes;
    return used;
  }

 private:
  struct Segment {
    double seconds;
    double bytes;
  };
  void next() {
    ++at_segment_;
    at_ = 0;
  }
  std::vector<Segment> segments_;
  std::size_t at_segment_ = 0;
  double at_ = 0;
  double total_ = 0;
  double moved_ = 0;
};

}  // namespace

ReplayResult replay_queue(std::span<const ObservedStep> observed, double queue_bytes,
                          double step_s) {
  OwnPace input(observed, true), output(observed, false);
  ReplayResult r;
  double queued = 0, stretch = 0;
  auto end_stretch = [&] {
    if (stretch >= kMinWaitS) {
      ++r.waits;
      r.wait_s += stretch;
    }
    stretch = 0;
  };
  // Without progress for this long, the sides wait for each other for
  // ever (a record whose output took more than its input gave).
  double stuck_s = 0;
  while (!output.done() && output.moved() < input.total() - 0.5 && stuck_s < 60) {
    double taken = 0, given = 0;
    double used = output.advance(step_s, queued, taken);
    queued -= taken;
    input.advance(step_s, std::max(0.0, queue_bytes - queued), given);
    queued += given;
    r.peak_bytes = std::max(r.peak_bytes, queued);
    r.seconds += step_s;
    stuck_s = taken + given > 0 ? 0 : stuck_s + step_s;
    bool more_to_come = input.moved() > 0 && input.moved() < input.total() - 0.5;
    double idle = step_s - used;
    if (more_to_come && idle > 1e-9)
      stretch += idle;
    else
      end_stretch();
  }
  end_stretch();
  return r;
}

std::optional<double> smallest_queue_without_waits(std::span<const ObservedStep> observed,
                                                   double granule, double from, double to,
                                                   double step_s, double tolerance_s) {
  auto busy = [&](double units) {
    return replay_queue(observed, units * granule, step_s).wait_s <= tolerance_s;
  };
  granule = std::max(granule, 1.0);
  auto units = [&](double bytes) { return std::ceil(bytes / granule); };
  double lo = std::max(1.0, units(from)), hi = std::max(lo, units(to));
  if (!busy(hi)) return std::nullopt;
  if (busy(lo)) return lo * granule;
  // replay(lo) waits, replay(hi) does not.
  while (hi - lo > 1) {
    double mid = std::floor((lo + hi) / 2);
    if (busy(mid))
      hi = mid;
    else
      lo = mid;
  }
  return hi * granule;
}

}  // namespace tk
