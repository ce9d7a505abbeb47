// The --timeout watchdog's thread.
#include "watchdog.hpp"

#include <algorithm>

#include "../../lib/threads.hpp"

namespace tk::buffer {

using namespace std::chrono_literals;

Watchdog::Watchdog(std::chrono::seconds timeout, std::function<void()> on_expiry)
    : timeout_(timeout), on_expiry_(std::move(on_expiry)) {
  if (timeout_ <= 0s) return;
  thread_ = thread_without_signals([this] { loop(); });
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Watchdog::Call::Call(Watchdog& watchdog) noexcept
    : watchdog_(watchdog.thread_.joinable() ? &watchdog : nullptr) {
  if (watchdog_) watchdog_->call_started_ns_.store(now_ns(), std::memory_order_relaxed);
}

Watchdog::Call::~Call() {
  if (watchdog_) watchdog_->call_started_ns_.store(kIdle, std::memory_order_relaxed);
}

std::int64_t Watchdog::now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Watchdog::loop() {
  // A hang is noticed within a quarter of the timeout after it reaches it.
  auto period = std::min<std::chrono::steady_clock::duration>(timeout_ / 4, 250ms);
  auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_).count();
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    std::int64_t started = call_started_ns_.load(std::memory_order_relaxed);
    if (started != kIdle && now_ns() - started >= limit) {
      on_expiry_();
      return;
    }
  }
}

std::string seconds_text(std::chrono::seconds seconds) {
  return std::to_string(seconds.count()) + (seconds == 1s ? " second" : " seconds");
}

}  // namespace tk::buffer
