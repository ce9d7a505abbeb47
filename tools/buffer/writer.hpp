// buffer's writer: the child process that drains the ring to the output
// and the tees. Its volume changes and read-backs are in volume_change.cpp,
// the rest in writer.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/ring/follower.hpp"
#include "../../lib/ring/ring.hpp"
#include "../../lib/tape/tape.hpp"
#include "digest_channel.hpp"
#include "drive_watch.hpp"
#include "options.hpp"
#include "outputs.hpp"
#include "rate_limit.hpp"
#include "report.hpp"
#include "run_state.hpp"
#include "signals.hpp"
#include "watchdog.hpp"

namespace tk::buffer {

// The writer's life after the fork: opens the output and the tees, drains
// the ring into them until the reader's input ends, and returns its exit
// status. `reader` is the parent's pid, watched for its death.
int writer_process(Ring& ring, RunState& run, const Options& options, Clock::time_point start, pid_t reader,
                   DigestChannel* digest_channel);

// The writer process's state: its outputs (-o first, then the tees), the
// blocks they hold, the digest thread and the legacy -S/-t report.
class Writer {
 public:
  Writer(Ring& ring, RunState& run, std::vector<Output> outputs, const Options& options,
         Clock::time_point start, pid_t reader, DigestChannel* digest_channel);

  int run();

 private:
  // The queue is to be abandoned: a second signal, the reader's request, or
  // the first signal with --no-drain.
  bool stopping() const {
    const ProcessState& own = run_.writer();
    return own.has(StopReason::abandon_queue) || own.signals() >= 2 ||
           (own.signals() > 0 && !run_.drain_on_signal());
  }

  // Why the queue is being abandoned, in the words of the stop itself.
  std::string abandon_reason() const;

  Output& primary() noexcept { return outputs_.front(); }
  const Output& primary() const noexcept { return outputs_.front(); }
  bool is_primary(const Output& out) const noexcept { return &out == &outputs_.front(); }

  void write_next_block();

  // Takes the oldest block from the ring and writes it to each output in
  // turn, -o first. The block stays in the ring until every output has
  // acknowledged it.
  void write_oldest_block();

  // -u: 1.19's usleep after every block. Slept in slices, since a signal
  // does not cut a sleep short here: a second signal or the reader's death
  // ends the run at once, as 1.19's writer died of SIGHUP in its usleep,
  // instead of after a pause that may be long.
  void pause_after_block();

  // One block, or what is left of one, to an output. A full medium on -o
  // with --next-volume changes volumes and goes on with what did not fit;
  // nothing is dropped. A tape takes a block whole or not at all; a stream
  // may take part of it. Each write stays in out.sent until acknowledged.
  // A failure goes to `failed`, which returns whether to go on writing.
  using OnFailure = std::function<bool(const Error& e, std::size_t done)>;
  void write_block(Output& out, std::span<const std::byte> bytes, bool ends_block,
                   const OnFailure& failed);
  void write_block(Output& out, std::span<const std::byte> bytes, bool ends_block = true);

  // Bytes that reached an output: counted and hashed here, once
  // acknowledged, so the reader never waits for a digest.
  void count_written(Output& out, std::span<const std::byte> reached);

  // What the outputs acknowledged leaves their `sent`, counted; a block
  // every output has acknowledged goes back to the reader.
  void acknowledge_written();
  void acknowledge(Output& out);
  void acknowledge_oldest(Output& out);
  void release_block();

  // Before waiting for `wanted` blocks: waits for the outputs holding the
  // oldest block to acknowledge writes until the reader has room to fill
  // that many (the blocks held are out of its reach).
  void make_room_for(std::size_t wanted);

  // After an output failed with `e`: the writes it acknowledged counted,
  // those it lost (UnwrittenRecords) moved to out.unwritten.
  void settle_sent(Output& out, const Error& e);

  // -o failed: on a full medium with --next-volume the volume is changed
  // and what it lost is written there (true); with --keep-going and a tee
  // still working it is dropped (false); otherwise the run ends.
  // `block_size` and `done`: the block being written, for 1.19's lines.
  bool primary_failed(const Error& e, std::size_t block_size, std::size_t done);
  // A tee failed: dropped under --keep-going, else the run ends.
  void tee_failed(Output& tee, const Error& e, std::size_t block_size);
  // Watches a call to an output for --timeout, naming it for the message.
  Watchdog::Call watch(const Output& out);
  void write_unwritten(Output& out);

  // With --keep-going an output that failed is dropped (true): closed, said,
  // and the other outputs go on; -o only while a tee still works.
  bool drop_output(Output& out, const Error& e);

  // The run ends on an output's failure: 1.19's lines for -o.
  [[noreturn]] void report_write_failure(Output& out, const Error& e, std::size_t to_write,
                                         std::size_t done);

  void after_interruption();

  bool reader_gone() const {
    return run_.writer().has(StopReason::peer_gone) || ::getppid() != reader_;
  }

  void check_reader_alive();

  // Takes no more blocks, closes the outputs as at a normal end (a tape gets
  // its filemark, a tape image writes out the records it still holds) and
  // says what reached them. Never a kill: a killed writer would lose what
  // an output buffers and leave a tape image ending in a cut record.
  [[noreturn]] void abandon(std::string why);

  // Writes -o has not acknowledged (a pipelined remote tape's): not counted
  // in its written, not known to have reached it. Zero for any other
  // output, and once the output settled.
  Tape::Unacknowledged in_flight() const;

  // "N bytes reached OUTPUT (volume 1: A, volume 2: B), M bytes reached
  // TEE, Q queued bytes were not written"; with writes in flight, "up to W
  // more may have (R records in flight)" after N.
  std::string reached_text() const;

  // What an output lost that it had taken (LostWrites): a tape image's
  // buffered records, which had been counted, come off its count; writes it
  // never acknowledged (UnwrittenRecords) were never counted. The returned
  // lines (empty for any other failure) say what was lost.
  std::string loss_text(Output& out, const Error& e);
  // The line naming a remote output's lost connection ("" otherwise).
  std::string lost_link_text(const Output& out) const;

  // Closes an output (its current volume); returns what went wrong (empty
  // when nothing did), having taken any loss off its counts.
  std::string close(Output& out);

  // Closes every output after a stop or a failure; returns what went wrong.
  std::string close_after_stop();

  // Closes -o's volume at its end or before the next: records the medium
  // turns out not to have taken go to the next volume with --next-volume;
  // any other loss ends the run.
  void close_output();

  // The TapeAlert flags the drive raised, read before it closes: with no
  // write in flight, so a failed write still reaches close().
  void read_alerts_before_close();

  // The volume just loaded took none of what was left of the block.
  [[noreturn]] void refuse_volume(const Error& e, std::size_t block_size, std::size_t left);

  void change_volume();

  // The tape file this volume is written as: where --verify reads it back
  // from, and what the progress line and the summary name. Asking a remote
  // tape where it is costs a round trip a status field, so only then.
  void note_volume_start();

  [[noreturn]] void no_output_left();

  // -o's current volume read back and compared (--verify): "" when it
  // matches, else what differs.
  std::string verify_primary();
  // Each tee still working, read back (--verify).
  std::string verify_tees();

  // Runs one read-back, which a stop signal ends (or skips, when it came
  // before): a read-back may wait on the output for ever (a drive, a host
  // that stopped answering), and there is nothing left to write out.
  std::string read_back(const std::string& label, const std::function<std::string()>& verify);

  // After a clean end of input: the tees closed, everything read back that
  // is to be, the digests printed, and a nonzero status if an output was
  // dropped on the way.
  void finish_outputs();

  // The digest of what reached an output, once everything written is in it.
  OutputDigest& settled_digest(Output& out);

  Ring& ring_;
  RunState& run_;
  std::vector<Output> outputs_;  // -o, then each --tee
  DigestChannel* digest_channel_;  // to the reader's summary (--hash); null without
  // Feeds -o's slow digest in a thread of its own, behind the writes (a
  // fast one is fed inline); read only through settled_digest().
  std::optional<RingFollower> hasher_;
  bool outputs_failed_ = false;  // an output was dropped: the run fails at its end
  const Options& options_;
  LegacyReport legacy_;
  pid_t reader_;
  std::uint64_t blocks_taken_ = 0;     // from the ring
  std::uint64_t blocks_released_ = 0;  // back to the reader
  std::uint64_t next_gib_ = kGiB;
  RateLimit output_limit_;
  std::string hung_output_;  // the output a watched write goes to, for --timeout's message
  DriveWatch drive_watch_;   // -o's drive's capacity and TapeAlert flags, for the reports
  Watchdog watchdog_;
};

}  // namespace tk::buffer
