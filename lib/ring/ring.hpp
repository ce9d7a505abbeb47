// tk::Ring: a single-producer single-consumer ring of fixed-size blocks in an
// anonymous shared mapping, shared by a reader and a writer process after fork.
//
// Nothing named is created, so nothing outlives the processes, whatever kills
// them. A queue larger than memory keeps its blocks in a file instead, one
// that has no name from the moment it is opened (see the constructor).
// Synchronisation is two counters in the mapping; a side only sleeps
// (futex) when it must wait, and is only woken when the other side has made
// the progress it waits for, so a steady stream costs no system calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace tk {

// Counters both processes can read at any time (for progress reports).
struct RingStats {
  std::uint64_t bytes_in = 0;      // published by the producer
  std::uint64_t bytes_out = 0;     // reported by the consumer
  std::uint64_t blocks_filled = 0; // blocks waiting to be written now
  std::uint64_t peak_filled = 0;
  // Consumer waits for a single block on an empty ring after it started: a
  // wait for more (buffer's -p, a high-water mark) is by design, not counted.
  std::uint64_t underruns = 0;
  // Time each side has slept waiting for the other (buffer --record): the
  // consumer for data once it started, the producer for room; a sleep still
  // under way counts up to now. Read with a clock, only on the wait paths.
  std::uint64_t consumer_wait_ns = 0;
  std::uint64_t producer_wait_ns = 0;
};

class Ring {
 public:
  // Maps header + blocks × block_size bytes, shared with children forked later.
  // With a queue_file the blocks are a shared mapping of a file there (a
  // directory: a file without a name in it, O_TMPFILE; else a new file of
  // that name, unlinked at once), its room reserved up front so a full disk
  // is an error now rather than SIGBUS later. The header with the counters
  // and futex words stays in memory either way. Throws Error naming the file.
  Ring(std::size_t block_size, std::size_t blocks, const std::string& queue_file = {});
  ~Ring();
  Ring(Ring&&) noexcept;
  Ring& operator=(Ring&&) noexcept;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  std::size_t block_size() const noexcept;
  std::size_t blocks() const noexcept;

  enum class Wait { ready, timed_out, finished };

  // Producer: waits until a block is free; then next_free_block() is where
  // to fill it, and no other thread touches that block until it is published.
  Wait wait_free(std::chrono::milliseconds timeout);
  std::span<std::byte> next_free_block() noexcept;
  // Publishes the block filled by the producer with `bytes` bytes.
  void publish(std::size_t bytes) noexcept;
  // No more blocks will be published; `cleanly` false when the input ended
  // in an error or a signal rather than at its end.
  void finish_input(bool cleanly = true) noexcept;
  // After the fork, in either process: a thread makes the ring's memory
  // resident for this side ahead of it on its first lap, up to kWarmLead
  // bytes ahead. Fresh memory costs a page fault on each page's first touch
  // by each process (dear on a virtual machine that shadows page tables;
  // bench/README.md, "Measurements behind the code"); taken
  // inside read(2) of the input, that time is taken from a bursty input,
  // and inside write(2) from a drive that is waiting. Ends with the first
  // lap, at finish_input(), or with the Ring. Rings on a queue file are
  // left alone: touching a page there dirties the file's page cache, so the
  // disk would take zeros before the data.
  enum class Side { producer, consumer };
  void warm_ahead(Side side);
  static constexpr std::size_t kWarmLead = std::size_t{64} << 20;

  // Consumer: waits until `count` blocks are filled (fewer at end of input:
  // then `finished` when none is left). The blocks stay owned by the consumer
  // until release().
  Wait wait_filled(std::size_t count, std::chrono::milliseconds timeout);
  // Filled blocks the consumer has not taken yet, and the oldest of them.
  std::size_t filled() const noexcept;
  std::span<const std::byte> oldest_filled_block() const noexcept;
  // The consumer is done with the oldest filled block: its bytes count as
  // out (RingStats::bytes_out), and the producer may fill it again.
  void release() noexcept;
  // release() in steps, for a consumer that keeps its blocks after moving
  // past them (buffer keeps each until its outputs acknowledge it, and
  // hands it to a thread that hashes it): take() moves the consumer past
  // the oldest filled block and counts its bytes out; the block stays out
  // of the producer's reach until release_taken(), which frees the oldest
  // taken block and may be called from another thread (one thread takes,
  // one releases). Unreleased taken blocks still count against the ring's
  // room.
  void take() noexcept;
  void release_taken() noexcept;
  // Whether `bytes` lie inside the ring's blocks.
  bool holds(std::span<const std::byte> bytes) const noexcept;
  // The consumer's corrected count of bytes that reached its output, where
  // it knows better than the blocks it released (buffered writes the output
  // lost, a run's end).
  void set_bytes_out(std::uint64_t bytes) noexcept;
  // The consumer came back from a call to its output (release() counts as
  // one): a side that sees this count move knows the consumer is not stuck.
  void note_consumer_step() noexcept;
  std::uint64_t consumer_steps() const noexcept;

  // Requests, visible to both sides.
  void request_abort() noexcept;  // stop now, queued data is discarded
  bool abort_requested() const noexcept;
  void note_consumer_started() noexcept;
  bool input_finished() const noexcept;
  // The input ended in an error or a signal (finish_input(false)).
  bool input_failed() const noexcept;

  RingStats stats() const noexcept;

 private:
  struct Shared;
  struct Mapping;
  struct Warmer;
  void claim_from_warmer(std::uint64_t block) noexcept;
  void warm_for_producer();
  void warm_for_consumer();
  void stop_warming() noexcept;
  std::unique_ptr<Mapping> mapping_;
  std::unique_ptr<Warmer> warmer_;  // this process's side's, while warming
  Shared* shared_ = nullptr;
  std::byte* data_ = nullptr;
  // Consumer-local (each process has its own Ring object): inside one stall,
  // so a long wait counts as one underrun however often it times out.
  bool in_underrun_ = false;
  // Consumer-local: blocks taken, ever (at least the shared `consumed`).
  std::uint64_t taken_ = 0;
};

}  // namespace tk
