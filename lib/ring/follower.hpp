// tk::RingFollower: a thread of the ring's consumer that processes, in
// order, what the consumer took from the ring, and releases each block to
// the producer once it is done with it.
//
// buffer hashes what reached its output. Hashed inline, one SHA-256 chain
// (slower than a pipe on one core) and the write's copy take turns on the
// writer; followed by this thread, the hash runs beside the writes and the
// producer's reads, and a block is only filled again once it is hashed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "ring.hpp"

namespace tk {

class RingFollower {
 public:
  using Process = std::function<void(std::span<const std::byte>)>;

  // Starts the thread (thread_without_signals: signals are for the
  // consumer's thread, whose blocking writes they interrupt).
  RingFollower(Ring& ring, Process process);
  // Processes what is left, then ends the thread.
  ~RingFollower();
  RingFollower(const RingFollower&) = delete;
  RingFollower& operator=(const RingFollower&) = delete;

  // Bytes to process after everything added before. Bytes inside the
  // ring's blocks are processed by the thread, later: the consumer must not
  // release their block but through release_block(). Bytes elsewhere (a
  // copy the consumer owns) are processed now, after what is queued.
  void add(std::span<const std::byte> bytes);
  // The ring's oldest taken block (Ring::take) is released once everything
  // added before is processed.
  void release_block();
  // Returns once everything added has been processed, so the consumer may
  // look at what the processing built. Rethrows what the processing threw.
  void drain();

 private:
  struct Step {
    std::span<const std::byte> bytes;  // empty: release a block
  };
  void push(Step step);
  void run();

  Ring& ring_;
  Process process_;
  std::mutex mutex_;
  std::condition_variable work_;   // the thread waits for steps
  std::condition_variable idle_;   // drain() waits for the thread
  std::vector<Step> queue_;
  bool busy_ = false;              // the thread holds steps taken from the queue
  bool stop_ = false;
  std::exception_ptr failure_;     // the first thing process_ threw
  std::thread thread_;
};

}  // namespace tk
