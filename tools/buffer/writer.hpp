// buffer's writer: the child process that drains the ring to the output
// and the tees. Its volume changes and read-backs are in volume_change.cpp,
// the rest in writer.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
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

// The writer process's state: the output and tees, what reached them
// (per volume), the digests and the legacy -S/-t report.
class Writer {
 public:
  Writer(Ring& ring, RunState& run, std::unique_ptr<Tape> output, TeeOutputs& tees, const Options& options,
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

  void write_next_block();

  // Takes the oldest block from the ring and writes it to -o and the tees.
  // The block stays in the ring until -o acknowledged it.
  void write_oldest_block();

  // -u: 1.19's usleep after every block. Slept in slices, since a signal
  // does not cut a sleep short here: a second signal or the reader's death
  // ends the run at once, as 1.19's writer died of SIGHUP in its usleep,
  // instead of after a pause that may be long.
  void pause_after_block();

  // Bytes that reached the output, on the current volume: counted and
  // hashed here, once acknowledged, so the reader never waits for a digest.
  void count_written(std::span<const std::byte> reached);

  // One block, or what is left of one, to the output. A full medium with
  // --next-volume changes volumes and goes on with what did not fit;
  // nothing is dropped. A tape takes a block whole or not at all; a stream
  // may take part of it. Each write stays in sent_ until acknowledged.
  void write_block(std::span<const std::byte> bytes, bool ends_block = true);

  // What -o acknowledged leaves sent_: counted, and its blocks released.
  void acknowledge_written();
  void acknowledge_oldest();

  // Before waiting for `wanted` blocks: waits for -o to acknowledge writes
  // until the reader has room to fill that many (the blocks sent_ holds
  // are out of its reach).
  void make_room_for(std::size_t wanted);

  // After -o failed with `e`: the writes it acknowledged counted, those it
  // lost (UnwrittenRecords) moved to unwritten_. On a full medium with
  // --next-volume, the volume is changed and they are written there: true.
  // With --keep-going and a tee still working, -o is dropped: false.
  // Otherwise the run ends. `block_size` and `done`: the block being
  // written, for 1.19's lines.
  bool recover_output(const Error& e, std::size_t block_size, std::size_t done);
  void settle_sent(const Error& e);
  void write_unwritten();
  void release_block();

  void after_interruption();

  bool reader_gone() const {
    return run_.writer().has(StopReason::peer_gone) || ::getppid() != reader_;
  }

  void check_reader_alive();

  // Takes no more blocks, closes the output as at a normal end (a tape gets
  // its filemark, a tape image writes out the records it still holds) and
  // says what reached it. Never a kill: a killed writer would lose what the
  // output buffers and leave a tape image ending in a cut record.
  [[noreturn]] void abandon(std::string why);

  // Writes to -o that it has not acknowledged (a pipelined remote tape's):
  // not counted in written_, not known to have reached it. Zero for any
  // other output, and once the output settled.
  struct InFlight {
    std::uint64_t bytes = 0;
    std::size_t records = 0;
  };
  InFlight in_flight() const;

  // "N bytes reached OUTPUT (volume 1: A, volume 2: B), M queued bytes were
  // not written"; with writes in flight, "up to W more may have (R records
  // in flight)" after N.
  std::string reached_text() const;

  // What -o lost that it had taken (LostWrites): a tape image's buffered
  // records, which had been counted, come off written_; writes it never
  // acknowledged (UnwrittenRecords) were never counted. The returned lines
  // (empty for any other failure) say what was lost.
  std::string loss_text(const Error& e);
  // The line naming a remote output's lost connection ("" otherwise).
  std::string lost_link_text() const;

  // Closes the output after a stop or a failure; returns what went wrong
  // (empty when nothing did) with any loss already taken off the counts.
  std::string close_after_stop();

  // The output may still be writing buffered records when it closes (a tape
  // image); records it loses there did not reach it.
  void close_output();

  // The TapeAlert flags the drive raised, read before it closes: with no
  // write in flight, so a failed write still reaches close().
  void read_alerts_before_close();

  [[noreturn]] void report_write_failure(const Error& e, std::size_t to_write, std::size_t done);

  // The volume just loaded took none of what was left of the block.
  [[noreturn]] void refuse_volume(const Error& e, std::size_t block_size, std::size_t left);

  void change_volume();

  // The tape file this volume is written as: where --verify reads it back
  // from, and what the progress line and the summary name. Asking a remote
  // tape where it is costs a round trip a status field, so only then.
  void note_volume_start();

  // --tee, --keep-going, --hash, --verify.

  // Each block goes to the tees after -o. A failing tee stops the run
  // (closing every output, as any stop) unless --keep-going drops it.
  void write_tees(std::span<const std::byte> block);

  // With --keep-going and a tee still working, a failed -o is dropped
  // instead of ending the run. True when it was.
  bool drop_failed_output(const Error& e);

  [[noreturn]] void no_output_left();

  // -o's current volume read back and compared (--verify): "" when it
  // matches, else what differs.
  std::string verify_primary();

  // Runs one read-back, which a stop signal ends (or skips, when it came
  // before): a read-back may wait on the output for ever (a drive, a host
  // that stopped answering), and there is nothing left to write out.
  std::string read_back(const std::string& label, const std::function<std::string()>& verify);

  // After a clean end of input: the tees closed, everything read back that
  // is to be, the digests printed, and a nonzero status if an output was
  // dropped on the way.
  void finish_outputs();

  // The digest of what reached -o, once everything written is in it.
  OutputDigest& settled_digest();

  Ring& ring_;
  RunState& run_;
  std::unique_ptr<Tape> output_;
  TeeOutputs& tees_;
  DigestChannel* digest_channel_;       // to the reader's summary (--hash); null without
  std::optional<OutputDigest> digest_;  // --hash, of what reached -o
  // Feeds a slow digest_ in a thread of its own, behind the writes (a fast
  // one is fed inline); digest_ is read only through settled_digest().
  std::optional<RingFollower> hasher_;
  std::int64_t volume_start_ = -1;      // where -o's current volume starts (--verify)
  bool primary_failed_ = false;         // -o failed and was dropped (--keep-going)
  bool outputs_failed_ = false;         // an output was dropped: the run fails at its end
  const Options& options_;
  LegacyReport legacy_;
  pid_t reader_;
  // Writes -o took but has not acknowledged, oldest first, each with
  // whether it ends its block: the block goes back to the reader once every
  // write of it is acknowledged. held_blocks_ counts those blocks.
  struct SentWrite {
    std::span<const std::byte> bytes;
    bool ends_block = true;
  };
  std::deque<SentWrite> sent_;
  std::size_t held_blocks_ = 0;
  // Writes -o lost (UnwrittenRecords), to be written again on the next volume.
  std::vector<SentWrite> unwritten_;
  std::uint64_t written_ = 0;            // bytes that reached the output, all volumes
  std::vector<std::uint64_t> per_volume_{0};  // of which on each volume
  bool fresh_volume_ = false;            // a volume just loaded has taken nothing yet
  bool output_open_ = true;              // false from a volume's close to the next's open
  std::uint64_t next_gib_ = kGiB;
  RateLimit output_limit_;
  std::string hung_output_;  // the output a watched write goes to, for --timeout's message
  DriveWatch drive_watch_;   // the output drive's capacity and TapeAlert flags, for the reports
  Watchdog watchdog_;
};

}  // namespace tk::buffer
