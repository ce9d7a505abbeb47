// buffer's live status: --progress and --interval lines from a thread of
// the reader process.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

#include "../../lib/ring/ring.hpp"
#include "../../lib/threads.hpp"
#include "options.hpp"
#include "report.hpp"

namespace tk::buffer {

// ---------------------------------------------------------------------------
// Live status (a thread in the reader process).

class StatusThread {
 public:
  StatusThread(const Ring& ring, const Options& options, Clock::time_point start,
               std::optional<std::uint64_t> total_bytes)
      : ring_(ring), options_(options), start_(start), total_bytes_(total_bytes) {
    live_ = options.progress && ::isatty(2);
    if (!live_ && options.interval_seconds <= 0) return;
    thread_ = thread_without_signals([this] { loop(); });
  }
  ~StatusThread() { stop(); }
  StatusThread(const StatusThread&) = delete;
  StatusThread& operator=(const StatusThread&) = delete;

  // The input's length, once it is known: the reader opens an input given
  // after -o only once the output is open.
  void set_total_bytes(std::optional<std::uint64_t> total_bytes) {
    std::lock_guard lock(mutex_);
    total_bytes_ = total_bytes;
  }

  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (live_) print_stderr("\n");
  }

 private:
  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  void loop() {
    auto every = live_ ? std::chrono::duration<double>(0.5)
                       : std::chrono::duration<double>(options_.interval_seconds);
    auto tick = std::chrono::duration_cast<Clock::duration>(every);
    Clock::time_point next = start_ + tick;
    Interval period;
    period.ring_blocks = ring_.blocks();
    std::unique_lock lock(mutex_);
    while (!wake_.wait_until(lock, next, [this] { return stopping_; })) {
      next += tick;
      period.total_bytes = total_bytes_;
      period.now = ring_.stats();
      period.to_s = seconds_since_start();
      if (live_)
        print_stderr(progress_line(period));
      else if (options_.json)
        print_stderr_as_is(interval_json(period));
      else
        print_stderr(interval_line(period));
      period.from_s = period.to_s;
      period.before = period.now;
    }
  }

  const Ring& ring_;
  const Options& options_;
  Clock::time_point start_;
  std::optional<std::uint64_t> total_bytes_;
  bool live_ = false;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace tk::buffer
