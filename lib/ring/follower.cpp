#include "follower.hpp"

#include <utility>

#include "../threads.hpp"

namespace tk {

RingFollower::RingFollower(Ring& ring, Process process)
    : ring_(ring), process_(std::move(process)), thread_(thread_without_signals([this] { run(); })) {}

RingFollower::~RingFollower() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void RingFollower::add(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  if (ring_.holds(bytes)) return push({bytes});
  drain();
  process_(bytes);
}

void RingFollower::release_block() { push({}); }

void RingFollower::push(Step step) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(step);
  }
  // No system call unless the thread waits (the condition variable knows).
  work_.notify_one();
}

void RingFollower::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void RingFollower::run() {
  std::vector<Step> steps;
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      idle_.notify_all();
      if (stop_) return;
      work_.wait(lock, [this] { return !queue_.empty() || stop_; });
      continue;
    }
    steps.swap(queue_);
    busy_ = true;
    lock.unlock();
    for (const Step& step : steps) {
      if (step.bytes.empty()) {
        ring_.release_taken();
        continue;
      }
      // After a failure the blocks are still released (the producer must
      // not wait for ever); what the processing built is no longer trusted.
      if (failure_) continue;
      try {
        process_(step.bytes);
      } catch (...) {
        failure_ = std::current_exception();
      }
    }
    steps.clear();
    lock.lock();
    busy_ = false;
  }
}

}  // namespace tk
