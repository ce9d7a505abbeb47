// What buffer's writer learns from its output drive: how full
// the cartridge is, for the progress reports' "time to the end of the
// tape", and the TapeAlert flags it raised, for the summary. Published in
// the run state, which the reader's reports read.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>

#include "run_state.hpp"
#include "../../lib/tape/tape.hpp"

namespace tk::buffer {

class DriveWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // Every half minute: often enough for a time to the end counted in
  // minutes, rarely enough that a drive's log pages cost nothing.
  static constexpr std::chrono::seconds kSampleEvery{30};

  // Only for a run that reports (--progress, --interval, --json): without
  // one, buffer is 1.19 and asks the drive nothing, which also leaves its
  // TapeAlert flags, which reading clears, to whoever reads them next
  // (tapeinfo, a backup program's alert script). `now`: the clock the
  // cadence is kept by (a test's own, to step through half minutes).
  DriveWatch(RunState& run, bool reports, std::function<Clock::time_point()> now = Clock::now)
      : run_(run), enabled_(reports), now_(std::move(now)) {}

  bool enabled() const noexcept { return enabled_; }
  // A volume was opened; `first`: the run's first, whose active flags were
  // raised before the run.
  void volume_started(Tape& output, std::uint64_t bytes_out, bool first);
  // Between blocks: true when a capacity sample is due.
  bool capacity_due() const;
  // Takes the sample, or with writes in flight lets this one go: a remote
  // tape would settle its pipeline to answer, and a failed write must reach
  // the writer from a write or the close, which know what to do with it.
  void sample_capacity(Tape& output, std::uint64_t bytes_out, bool writes_in_flight);
  // Before the output (or a volume of it) closes, with no write in flight:
  // the flags raised since.
  void before_close(Tape& output);

 private:
  void read_alerts(Tape& output, bool before_run);

  RunState& run_;
  bool enabled_;
  std::function<Clock::time_point()> now_;
  bool capacity_answers_ = true;  // until the drive or the server refuses
  bool alerts_answer_ = true;
  Clock::time_point next_sample_{};
};

}  // namespace tk::buffer
