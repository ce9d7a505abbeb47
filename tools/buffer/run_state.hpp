// What buffer's two processes know of their run besides the queue: each
// one's phase, the signals it took and why it is stopping; the writer's
// output drive (volume, tape file, capacity, TapeAlert flags), its long
// writes, and whether it has reported. Kept in a shared mapping of its own,
// made before the fork like the ring's, so that the ring stays a plain
// queue of blocks that knows nothing of tapes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sys/types.h>

#include "../../lib/ring/ring.hpp"

namespace tk::buffer {

// The writer's output as the reader's reports see it.
struct OutputStats {
  std::uint64_t volume = 1;     // the output volume being written, from 1
  std::int64_t tape_file = -1;  // the tape file it writes, -1 = not known
  // The output drive's main partition as the writer last sampled it (LOG
  // SENSE page 0x31), with the ring's bytes_out at that moment: the progress
  // reports count what went out since. tape_maximum_mib 0: no drive, or it
  // cannot say.
  std::uint32_t tape_remaining_mib = 0;
  std::uint32_t tape_maximum_mib = 0;
  std::uint64_t tape_sampled_at = 0;
  // TapeAlert flags (bit n-1 for flag n) the output drive reported: already
  // active when the run began, and raised during it. alerts_known: it answered.
  bool alerts_known = false;
  std::uint64_t alerts_before = 0;
  std::uint64_t alerts_during = 0;
  // Writes that took --long-write's threshold or longer (--record).
  std::uint64_t long_writes = 0;
  std::uint64_t long_write_ns = 0;
};

// The ring's counters and the output's, taken together for a report.
struct RunStats : RingStats, OutputStats {};

// One long write, in steady_clock nanoseconds (the same clock in both processes).
struct LongWrite {
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
};

// Where one process is in its run: what a stop signal does depends on it.
enum class Phase : std::uint8_t {
  opening_output,      // writer: opening the output and the tees; a signal stops it at once
  copying,             // reader: from its start until it waits for the writer;
                       // writer: writing the queue out
  reading_back,        // writer: a --verify read-back, which one signal ends
  waiting_for_writer,  // reader: reading is over; the writer's end is awaited
};

// Why a process stops, besides the stop signals it took itself. Several
// may come together, so each is a bit of its own.
enum class StopReason : std::uint8_t {
  peer_gone = 1 << 0,      // reader: the writer exited; writer: the reader died
  stop_reading = 1 << 1,   // reader: SIGUSR2, from a signalled writer or the --timeout watchdog
  abandon_queue = 1 << 2,  // writer: SIGUSR1, the reader asks it to abandon the queue
  stalled = 1 << 3,        // --timeout: the side's read (reader) or write (writer) hung
  end_read_back = 1 << 4,  // writer: a stop signal came, its own or the reader's: no more
                           // --verify read-back
};

// One process's own account of its run. Each process's handlers note only
// what reached that process, so the reader and the writer each have one,
// side by side in the run state, and read the other's where they need it.
// Lock-free atomics only, so every member is async-signal-safe: for the
// handlers (signals.cpp) and the watchdogs' threads.
class ProcessState {
 public:
  // One of INT, TERM, HUP and QUIT: counted, and the stop's signal now.
  void take_signal(int sig) noexcept {
    signals_.fetch_add(1);
    stop_signal_.store(sig);
  }
  // The signal the other process took and passed on (sigqueue's value):
  // the stop's signal, not counted as one taken.
  void learn_signal(int sig) noexcept { stop_signal_.store(sig); }
  void add(StopReason reason) noexcept { reasons_.fetch_or(static_cast<std::uint8_t>(reason)); }
  void set_phase(Phase phase) noexcept { phase_.store(phase); }

  int signals() const noexcept { return signals_.load(); }
  // The latest signal that asked for the stop, 0 before any.
  int stop_signal() const noexcept { return stop_signal_.load(); }
  bool has(StopReason reason) const noexcept {
    return (reasons_.load() & static_cast<std::uint8_t>(reason)) != 0;
  }
  Phase phase() const noexcept { return phase_.load(); }

 private:
  friend class RunState;
  explicit ProcessState(Phase first) noexcept : phase_(first) {}

  std::atomic<int> signals_{0};
  std::atomic<int> stop_signal_{0};
  std::atomic<std::uint8_t> reasons_{0};
  std::atomic<Phase> phase_;
};

class RunState {
 public:
  RunState();  // maps it, shared with children forked later
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // Each process's own state; the reader starts copying, the writer
  // opening its outputs.
  ProcessState& reader() noexcept;
  ProcessState& writer() noexcept;
  const ProcessState& reader() const noexcept;
  const ProcessState& writer() const noexcept;

  // Set by the reader before the fork (the first) and after it (the pid),
  // read by either side's handlers.
  // --no-drain clears it: the first signal abandons the queue.
  void set_drain_on_signal(bool drain) noexcept;
  bool drain_on_signal() const noexcept;
  void set_writer_pid(pid_t pid) noexcept;
  pid_t writer_pid() const noexcept;

  // The writer's side.
  void set_volume(std::uint64_t volume) noexcept;
  void set_tape_file(std::int64_t file) noexcept;
  void set_output_capacity(std::uint32_t remaining_mib, std::uint32_t maximum_mib,
                           std::uint64_t at_bytes_out) noexcept;
  void add_output_alerts(std::uint64_t flags, bool before_run) noexcept;
  // One write took `duration_ns` from `start_ns` (steady_clock): counted,
  // and kept in a log of the last kLongWriteLog for the reader's side to
  // read each one; no system call, a few stores.
  void note_long_write(std::int64_t start_ns, std::int64_t duration_ns) noexcept;
  static constexpr std::size_t kLongWriteLog = 1024;
  // Every output is open: the reader may take input (the writer's phase
  // goes from opening_output to copying).
  void set_writer_ready() noexcept;
  // The writer said itself what reached the output: the reader adds nothing.
  void set_writer_reported() noexcept;

  // The reader's side.
  bool writer_ready() const noexcept;
  bool writer_reported() const noexcept;
  OutputStats output_stats() const noexcept;
  RunStats stats(const Ring& ring) const noexcept;
  // Long write number `index` (from 0, below long_writes); only the last
  // kLongWriteLog are kept, nullopt for older ones.
  std::optional<LongWrite> long_write(std::uint64_t index) const noexcept;

 private:
  struct Shared;
  Shared* shared_ = nullptr;
};

}  // namespace tk::buffer
