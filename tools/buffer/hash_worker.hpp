// buffer's hashing thread: --hash of a block runs beside the write(2) of
// that same block instead of after it, so the writer's pace is the slower of
// the two rather than their sum (one SHA-256 chain on one core is slower
// than a pipe).
#pragma once

#include <condition_variable>
#include <exception>
#include <cstddef>
#include <mutex>
#include <span>
#include <thread>
#include <utility>

#include "outputs.hpp"

namespace tk::buffer {

class HashWorker {
 public:
  // Starts the thread, with every signal blocked in it: signals must reach
  // the writer's main thread, whose blocking calls they interrupt.
  HashWorker();
  ~HashWorker();
  HashWorker(const HashWorker&) = delete;
  HashWorker& operator=(const HashWorker&) = delete;

  // Adds `data` to `digest` on the thread. Until wait() returns, neither
  // may be touched by anyone else.
  void start(OutputDigest& digest, std::span<const std::byte> data);
  // Waits for the add() start() asked for; rethrows what it threw.
  void wait();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  OutputDigest* digest_ = nullptr;  // the job, while one is pending or running
  std::span<const std::byte> data_;
  bool busy_ = false;
  bool quit_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace tk::buffer
