// buffer's live status: --progress and --interval lines, from the reader
// process's sampler (sampler.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unistd.h>

#include "options.hpp"
#include "report.hpp"

namespace tk::buffer {

class StatusLines {
 public:
  StatusLines(std::size_t ring_blocks, const Options& options, Clock::time_point start,
              std::optional<std::uint64_t> total_bytes)
      : options_(options), start_(start), total_bytes_(total_bytes) {
    live_ = options.progress && ::isatty(2);
    period_.ring_blocks = ring_blocks;
  }

  // Whether the run prints any (--progress on a terminal, --interval).
  bool wanted() const { return live_ || options_.interval_seconds > 0; }
  // A live line twice a second, else one every --interval.
  Clock::duration every() const {
    auto every = live_ ? std::chrono::duration<double>(0.5)
                       : std::chrono::duration<double>(options_.interval_seconds);
    return std::chrono::duration_cast<Clock::duration>(every);
  }

  // The input's length, once it is known: the reader opens an input given
  // after -o only once the output is open.
  void set_total_bytes(std::optional<std::uint64_t> total_bytes) {
    std::lock_guard lock(mutex_);
    total_bytes_ = total_bytes;
  }

  // One line for the period that ends with `now`.
  void take(const RunStats& now) {
    {
      std::lock_guard lock(mutex_);
      period_.total_bytes = total_bytes_;
    }
    period_.now = now;
    period_.to_s = std::chrono::duration<double>(Clock::now() - start_).count();
    if (live_)
      print_stderr(progress_line(period_));
    else if (options_.json)
      print_stderr_as_is(interval_json(period_));
    else
      print_stderr(interval_line(period_));
    period_.from_s = period_.to_s;
    period_.before = period_.now;
  }

  // After the sampler stopped: a live line is ended.
  void finish() {
    if (live_) print_stderr("\n");
  }

 private:
  const Options& options_;
  Clock::time_point start_;
  std::mutex mutex_;  // total_bytes_ is set from the reader's main thread
  std::optional<std::uint64_t> total_bytes_;
  bool live_ = false;
  Interval period_;
};

}  // namespace tk::buffer
