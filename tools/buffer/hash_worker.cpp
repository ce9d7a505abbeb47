// The --hash thread of buffer's writer.
#include "hash_worker.hpp"

#include <csignal>
#include <pthread.h>

namespace tk::buffer {

HashWorker::HashWorker() {
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  thread_ = std::thread([this] { loop(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

HashWorker::~HashWorker() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void HashWorker::start(OutputDigest& digest, std::span<const std::byte> data) {
  {
    std::lock_guard lock(mutex_);
    digest_ = &digest;
    data_ = data;
    busy_ = true;
  }
  wake_.notify_all();
}

void HashWorker::wait() {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [this] { return !busy_; });
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

void HashWorker::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return quit_ || busy_; });
    if (quit_) return;
    OutputDigest* digest = digest_;
    std::span<const std::byte> data = data_;
    lock.unlock();
    std::exception_ptr failure;
    try {
      digest->add(data);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    failure_ = failure;
    busy_ = false;
    wake_.notify_all();
  }
}

}  // namespace tk::buffer
