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
  // Where a side is in its own schedule.
  struct Cursor {
    std::size_t segment = 0;
    double at = 0;  // seconds into the segment
    double moved = 0;
  };

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

  bool done(const Cursor& c) const { return c.segment >= segments_.size(); }
  double total() const { return total_; }

  // Moves `c` on by up to `dt` of the side's own time, moving at most
  // `max_bytes`; returns the time used (less than dt when max_bytes held
  // it back) and the bytes moved in `bytes`.
  double advance(Cursor& c, double dt, double max_bytes, double& bytes) const {
    bytes = 0;
    double used = 0;
    while (c.segment < segments_.size() && dt - used > 1e-12) {
      const Segment& s = segments_[c.segment];
      double rate = s.bytes / s.seconds;
      double t = std::min(dt - used, s.seconds - c.at);
      bool held = rate > 0 && bytes + rate * t > max_bytes;
      if (held) t = std::max(0.0, (max_bytes - bytes) / rate);
      bytes = held ? max_bytes : bytes + rate * t;
      c.at += t;
      used += t;
      if (c.at >= s.seconds - 1e-12) {
        ++c.segment;
        c.at = 0;
      }
      if (held) break;
    }
    c.moved += bytes;
    return used;
  }

 private:
  struct Segment {
    double seconds;
    double bytes;
  };
  std::vector<Segment> segments_;
  double total_ = 0;
};

}  // namespace

ReplayResult replay_queue(std::span<const ObservedStep> observed, double queue_bytes,
                          double step_s) {
  const OwnPace input(observed, true), output(observed, false);
  OwnPace::Cursor in, out;
  ReplayResult r;
  double queued = 0, stretch = 0;
  auto end_stretch = [&] {
    if (stretch >= kMinWaitS) {
      ++r.waits;
      r.wait_s += stretch;
    }
    stretch = 0;
  };
  constexpr double unlimited = 1e300;
  // Without progress for this long, the sides wait for each other for
  // ever (a record whose output took more than its input gave).
  double stuck_s = 0;
  while (!output.done(out) && out.moved < input.total() - 0.5 && stuck_s < 60) {
    // Both sides move at once within a step, as a fluid: the output takes
    // what is queued and what arrives meanwhile, the input fills what is
    // free and what the output frees meanwhile.
    OwnPace::Cursor in_try = in, out_try = out;
    double offered = 0, wanted = 0;
    input.advance(in_try, step_s, unlimited, offered);
    output.advance(out_try, step_s, unlimited, wanted);
    double taken_max = std::min(wanted, queued + offered);
    double given_max = std::min(offered, queue_bytes - queued + taken_max);
    double taken = 0, given = 0;
    double used = output.advance(out, step_s, taken_max, taken);
    input.advance(in, step_s, given_max, given);
    queued = std::max(0.0, queued + given - taken);
    r.peak_bytes = std::max(r.peak_bytes, queued);
    stuck_s = taken + given > 0 ? 0 : stuck_s + step_s;
    bool more_to_come = in.moved > 0 && in.moved < input.total() - 0.5;
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
