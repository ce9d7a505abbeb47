// buffer --record: a timeline of the run, one JSON object a line (the
// format is in buffer(1), RECORD FORMAT), taken by a thread of the reader
// process from the ring's shared counters; and the same record read back
// for --plot-from.
#pragma once

#include <chrono>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/ring/ring.hpp"
#include "options.hpp"
#include "report.hpp"

namespace tk::buffer {

// The header line: what the run was asked to do.
struct RecordHeader {
  int version = 1;
  double tick_s = 0.1;
  double long_write_s = 1;
  std::uint64_t block_size = 0;
  std::uint64_t blocks = 0;
  int percent = 0;
  int high_water = 0;
  int low_water = -1;
  std::uint64_t output_rate = 0;  // --output-rate, bytes a second (0: none)
  std::string input;   // "-": standard input
  std::string output;  // "-": standard output
};

// One tick. A long run's ticks are merged in pairs in memory (never in the
// file), so fill_lo/fill_hi keep the range a merged tick went through.
struct Tick {
  double t = 0;             // seconds from the start to the tick's end
  double span = 0;          // its length in seconds
  std::uint64_t fill = 0;   // blocks queued at its end
  std::uint64_t fill_lo = 0, fill_hi = 0;
  std::uint64_t bytes_in = 0, bytes_out = 0;
  double out_wait_s = 0;    // the output slept waiting for data
  double in_wait_s = 0;     // the input slept waiting for room
  std::uint64_t underruns = 0;  // new waits of the output on an empty ring
};

struct RunEvent {
  enum class Kind { long_write, volume, signal, end };
  Kind kind = Kind::end;
  double t = 0;             // seconds from the start (a long write's start)
  double seconds = 0;       // long_write: how long it blocked
  std::uint64_t volume = 0; // volume: the output's new volume
  std::string signal;       // signal: its name
};

struct RunRecord {
  RecordHeader header;
  std::vector<Tick> ticks;
  std::vector<RunEvent> events;  // never merged nor dropped
  std::uint64_t long_writes_lost = 0;  // counted, but their times were overwritten

  // Appends a tick. Past kMaxTicks, neighbours are merged in pairs (and
  // later ticks by as many), so a run of days keeps a bounded picture of
  // itself: 2^18 ticks are 25 hours of 100 ms ones.
  void add(const Tick& tick);
  static constexpr std::size_t kMaxTicks = std::size_t{1} << 18;

 private:
  std::size_t ticks_per_entry_ = 1;
  std::size_t in_last_entry_ = 0;
};

// The record format's lines.
std::string record_header_line(const RecordHeader& header);
std::string record_tick_line(const Tick& tick);
std::string record_event_line(const RunEvent& event);

// Reads a record written by --record. Throws ExactExit (status 255) naming
// `name` and the line for anything that is not one.
RunRecord parse_record(std::istream& in, const std::string& name);

// --record, --record-tick, --long-write, --plot, --plot-from; false for
// any other key. Throws ExactExit on a malformed value.
bool parse_record_option(const std::string& key, const std::string& value, Options& o);
// What these options need of each other and of the rest.
void check_record_options(const Options& o);

// The threshold a writer's write must reach to be recorded as long; zero
// (no clock read at all) when the run is not recorded.
inline std::chrono::nanoseconds long_write_threshold(const Options& o) {
  return records_run(o) ? std::chrono::nanoseconds(o.long_write) : std::chrono::nanoseconds(0);
}

// Times one write of the writer process: a write that blocks for the
// threshold or longer (a drive repositioning) goes to the run state's log.
class WriteTimer {
 public:
  WriteTimer(RunState& run, std::chrono::nanoseconds threshold) noexcept
      : run_(run), threshold_(threshold) {
    if (threshold_.count() > 0) start_ = Clock::now();
  }
  ~WriteTimer() {
    if (threshold_.count() <= 0) return;
    auto took = Clock::now() - start_;
    if (took >= threshold_)
      run_.note_long_write(
          std::chrono::duration_cast<std::chrono::nanoseconds>(start_.time_since_epoch()).count(),
          std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
  }
  WriteTimer(const WriteTimer&) = delete;
  WriteTimer& operator=(const WriteTimer&) = delete;

 private:
  RunState& run_;
  std::chrono::nanoseconds threshold_;
  Clock::time_point start_{};
};

// Takes the record in the reader process: a tick every --record-tick (from
// the sampler's thread, sampler.hpp), into memory (for --plot and the
// advice) and into --record's file. The file is written once a tick from
// that thread, never from the reader's; a file that cannot be opened or
// written is said once and dropped, the run goes on.
class Recorder {
 public:
  Recorder(const Ring& ring, const RunState& run, const Options& options, Clock::time_point start);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  bool active() const { return active_; }
  Clock::duration every() const {
    return std::chrono::duration_cast<Clock::duration>(options_.record_tick);
  }
  // One tick, ending with `now`.
  void take(const RunStats& now);
  // After the sampler stopped: the last tick and the end event are taken,
  // the file written out.
  void finish(const RunStats& now);
  // The run so far (all of it after finish()).
  const RunRecord& record() const { return record_; }

 private:
  void take_tick(const RunStats& now, bool last);
  void emit(const std::string& line);
  void flush();
  void drop_file(const std::string& why);

  const RunState& run_;
  const Options& options_;
  Clock::time_point start_;
  bool active_ = false;
  RunRecord record_;
  RunStats before_;
  double before_t_ = 0;
  std::uint64_t long_writes_seen_ = 0;
  int signals_seen_ = 0;
  bool stop_input_seen_ = false;
  Fd file_;
  std::string pending_;    // lines not yet written to the file
};

}  // namespace tk::buffer
