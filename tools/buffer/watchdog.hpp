// buffer's --timeout: a thread that notices when a read from the input or a
// write to the output has lasted too long, and says so once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tk::buffer {

class Watchdog {
 public:
  // A timeout of zero watches nothing and starts no thread. on_expiry runs
  // once, on the watchdog's thread, when one watched call has lasted the
  // timeout; that thread blocks every signal, so signals still reach (and
  // interrupt) the thread making the call.
  Watchdog(std::chrono::seconds timeout, std::function<void()> on_expiry);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Marks a call to the watched side (a read, a block write) as in progress
  // while it lives. Waits on the queue, on the rate limit or on the volume
  // change command are not watched: they are no side's hang.
  class Call {
   public:
    explicit Call(Watchdog& watchdog) noexcept;
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    Watchdog* watchdog_;
  };
  Call watch() noexcept { return Call(*this); }

  void stop();

 private:
  static std::int64_t now_ns() noexcept;
  void loop();

  std::chrono::seconds timeout_;
  std::function<void()> on_expiry_;
  static constexpr std::int64_t kIdle = INT64_MIN;
  std::atomic<std::int64_t> call_started_ns_{kIdle};
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

// "1 second", "5 seconds": for the watchdog's messages.
std::string seconds_text(std::chrono::seconds seconds);

}  // namespace tk::buffer
