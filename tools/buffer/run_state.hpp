// What buffer's two processes tell each other besides the queue: the
// writer's output drive (volume, tape file, capacity, TapeAlert flags), its
// long writes, and whether it is ready and has reported. Kept in a shared
// mapping of its own, made before the fork like the ring's, so that the
// ring stays a plain queue of blocks that knows nothing of tapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

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

class RunState {
 public:
  RunState();  // maps it, shared with children forked later
  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

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
  // Every output is open: the reader may take input.
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
