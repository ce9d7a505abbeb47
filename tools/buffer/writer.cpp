// buffer's writer: the child process that drains the ring to the output
// (and the tees), changes volumes, hashes and reads back.
#include "writer.hpp"

#include "buffer.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../common/run_main.hpp"
#include "../../lib/process.hpp"
#include "../../lib/ring/ring.hpp"
#include "../../lib/tape/remote_tape.hpp"
#include "../../lib/tape/tape.hpp"
#include "outputs.hpp"
#include "rate_limit.hpp"
#include "report.hpp"
#include "volume_change.hpp"
#include "watchdog.hpp"
#include "ends.hpp"
#include "signals.hpp"

namespace tk::buffer {
namespace {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------
// The writer (child process).

class Writer {
 public:
  Writer(Ring& ring, std::unique_ptr<Tape> output, TeeOutputs& tees, const Options& options,
         Clock::time_point start, pid_t reader, DigestChannel* digest_channel)
      : ring_(ring),
        output_(std::move(output)),
        tees_(tees),
        digest_channel_(digest_channel),
        options_(options),
        legacy_(options.report_requested ? options.report_every : 0, options.totals, start),
        reader_(reader),
        output_limit_(options.output_rate),
        watchdog_(std::chrono::seconds(options.timeout_seconds),
                  [main = ::pthread_self()] {
                    // The abandon request interrupts the write; the flag
                    // makes the writer say why.
                    g_output_stalled = true;
                    ::pthread_kill(main, SIGUSR1);
                  }) {
    note_volume_start();
    if (options.hash) digest_.emplace(*options.hash, writes_volumes(options));
  }

  int run() {
    if (options_.debug) print_stderr("\tW: Entering writer\n");
    std::size_t batch = options_.blocks * static_cast<std::size_t>(options_.percent) / 100;
    if (batch == 0) batch = 1;
    // Without -p the writer starts at the high mark and writes down to the
    // low one (1 and 0 blocks unless --high-water/--low-water say otherwise).
    std::size_t high = options_.blocks * static_cast<std::size_t>(options_.high_water) / 100;
    std::size_t low = options_.blocks * static_cast<std::size_t>(std::max(options_.low_water, 0)) / 100;
    high = std::max<std::size_t>(high, 1);
    low = std::min(low, high - 1);
    for (;;) {
      Ring::Wait waited = ring_.wait_filled(options_.percent ? batch : high, kPollInterval);
      if (waited == Ring::Wait::timed_out) {
        check_reader_alive();
        continue;
      }
      if (waited == Ring::Wait::finished) {
        if (ring_.abort_requested()) abandon(abandon_reason());
        break;
      }
      if (options_.percent) {
        // buffer 1.19 writes batches of exactly `batch` blocks with -p;
        // blocks arriving meanwhile count toward the next batch.
        std::size_t count = std::min(batch, ring_.filled());
        for (std::size_t i = 0; i < count; ++i) write_next_block();
      } else {
        // Down to the low mark, or to the end once the input has ended.
        while (ring_.filled() > low || (ring_.input_finished() && ring_.filled() > 0))
          write_next_block();
      }
    }
    close_output();
    finish_outputs();
    // 1.19 prints the final record and -t's line at a clean end only: after
    // a read error or a signal the last record stays as it was (§1.6).
    if (!ring_.input_failed() && !g_signals) legacy_.finish(written_);
    if (options_.debug) print_stderr("\tW: Exiting writer\n");
    return kExitOk;
  }

 private:
  // The queue is to be abandoned: a second signal, the reader's request, or
  // the first signal with --no-drain.
  static bool stopping() { return g_abandon || g_signals >= 2 || (g_signals && !g_drain); }

  // Why the queue is being abandoned, in the words of the stop itself.
  static std::string abandon_reason() {
    if (g_signals >= 2) return "interrupted by a second " + stop_signal_name();
    if (g_signals && !g_drain) return "interrupted by " + stop_signal_name() + " (--no-drain)";
    if (g_signals) return "interrupted by " + stop_signal_name();
    return "told by the reader to abandon the queue";
  }

  void write_next_block() {
    // A write to a file or tape does not block, so a signal may not
    // interrupt one: look at the flags between blocks too.
    if (stopping()) abandon(abandon_reason());
    write_oldest_block();
  }

  void write_oldest_block() {
    std::span<const std::byte> block = ring_.oldest_filled_block();
    if (!output_limit_.pace(block.size(), [this] { return stopping() || reader_gone(); })) {
      check_reader_alive();
      abandon("interrupted");
    }
    if (options_.debug >= 2) print_stderr("W: writing " + std::to_string(block.size()) + "\n");
    if (!primary_failed_) write_block(block);
    if (!tees_.empty()) {
      hung_output_ = "a --tee output";
      Watchdog::Call call = watchdog_.watch();
      write_tees(block);
    }
    ring_.release(block.size());
    ring_.note_consumer_started();
    legacy_.after_block(written_);
    if (options_.pause_us) pause_after_block();
    if (options_.seek_every_gib && written_ >= next_gib_) {
      next_gib_ += kGiB;
      rewind_offset_if_device(output_->poll_fd());
    }
  }

  // -u: 1.19's usleep after every block. Slept in slices, since a signal
  // does not cut a sleep short here: a second signal or the reader's death
  // ends the run at once, as 1.19's writer died of SIGHUP in its usleep,
  // instead of after a pause that may be long.
  void pause_after_block() {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(options_.pause_us);
    if (!sleep_until_or_stop(until, [this] { return stopping() || reader_gone(); })) {
      check_reader_alive();
      abandon(abandon_reason());
    }
  }

  // Bytes the output accepted, on the current volume; hashed here, after
  // the write, so the reader never waits for a digest.
  void count_written(std::span<const std::byte> reached) {
    written_ += reached.size();
    per_volume_.back() += reached.size();
    if (!reached.empty()) fresh_volume_ = false;
    if (digest_) digest_->add(reached);
  }

  // One block to the output. A full medium with --next-volume changes
  // volumes and goes on with what did not fit; nothing is dropped. A tape
  // takes a block whole or not at all; a stream may take part of it.
  void write_block(std::span<const std::byte> block) {
    std::size_t done = 0;
    for (;;) {
      try {
        {
          hung_output_ = output_->name();
          Watchdog::Call call = watchdog_.watch();
          output_->write(block.subspan(done));
        }
        count_written(block.subspan(done));
        return;
      } catch (const Interrupted& e) {
        count_written(block.subspan(done, e.bytes_done()));
        done += e.bytes_done();
        after_interruption();
      } catch (const Error& e) {
        count_written(block.subspan(done, e.bytes_done()));
        done += e.bytes_done();
        if (const auto* unwritten = next_volume_takes(e)) {
          write_on_next_volume(*unwritten);
          continue;
        }
        if (e.errnum() == ENOSPC && writes_volumes(options_)) {
          // A volume that takes nothing at all would take nothing after any
          // number of changes (a command that freed no room, a block larger
          // than the medium): that ends the run instead of looping.
          if (fresh_volume_) refuse_volume(e, block.size(), block.size() - done);
          change_volume();
          continue;
        }
        if (drop_failed_output(e)) return;
        report_write_failure(e, block.size(), done);
      }
    }
  }

  // Records a pipelined output had taken before the medium filled, when
  // --next-volume is to carry them over; else null.
  const UnwrittenRecords* next_volume_takes(const Error& e) const {
    if (e.errnum() != ENOSPC || !writes_volumes(options_)) return nullptr;
    return dynamic_cast<const UnwrittenRecords*>(&e);
  }

  // They did not reach this volume: off its count, then first onto the next.
  void write_on_next_volume(const UnwrittenRecords& e) {
    take_back_lost(e);
    if (fresh_volume_ || (per_volume_.size() > 1 && per_volume_.back() == 0)) {
      std::size_t first = e.records().empty() ? 0 : e.records().front().size();
      refuse_volume(e, first, first);
    }
    change_volume();
    for (const auto& record : e.records()) write_block(record);
  }

  void after_interruption() {
    ring_.note_consumer_step();
    if (reader_gone()) abandon("the reader process died");
    if (stopping()) abandon(abandon_reason());
    clear_stop();  // first signal: keep draining
  }

  bool reader_gone() const { return g_peer_gone || ::getppid() != reader_; }

  void check_reader_alive() {
    if (reader_gone()) abandon("the reader process died");
    if (ring_.abort_requested()) abandon(abandon_reason());
  }

  // Takes no more blocks, closes the output as at a normal end (a tape gets
  // its filemark, a tape image writes out the records it still holds) and
  // says what reached it. Never a kill: a killed writer would lose what the
  // output buffers and leave a tape image ending in a cut record.
  [[noreturn]] void abandon(std::string why) {
    if (g_output_stalled)
      why = "the output hung: no block reached " + hung_output_ + " in " +
            seconds_text(std::chrono::seconds(options_.timeout_seconds)) + " (--timeout)";
    ring_.set_consumer_reported();
    ring_.note_consumer_step();
    std::string closing = close_after_stop();
    throw ExactExit(kExitRuntime, closing + "buffer (writer): " + why + "; " + reached_text());
  }

  // Pipelined writes to a remote output that write() returned for but the
  // server has not acknowledged: counted in written_, not known to have
  // reached it. Zero for any other output, and once the output settled.
  struct InFlight {
    std::uint64_t bytes = 0;
    std::size_t records = 0;
  };
  InFlight in_flight() const {
    const auto* remote = dynamic_cast<const RemoteTape*>(output_.get());
    if (remote == nullptr || primary_failed_) return {};
    return {std::min(remote->bytes_in_flight(), per_volume_.back()), remote->writes_in_flight()};
  }

  // Bytes known to have reached -o: the writes in flight are not.
  std::uint64_t reached_bytes() const { return written_ - in_flight().bytes; }

  // "N bytes reached OUTPUT (volume 1: A, volume 2: B), M queued bytes were
  // not written"; with writes in flight, "up to W more may have (R records
  // in flight)" after N.
  std::string reached_text() const {
    InFlight doubt = in_flight();
    std::string text = std::to_string(written_ - doubt.bytes) + " bytes reached " + output_->name();
    if (doubt.records > 0)
      text += ", up to " + std::to_string(doubt.bytes) + " more may have (" +
              std::to_string(doubt.records) +
              (doubt.records == 1 ? " record was" : " records were") +
              " in flight, not acknowledged)";
    if (per_volume_.size() > 1) {
      for (std::size_t i = 0; i < per_volume_.size(); ++i)
        text += (i == 0 ? " (volume " : ", volume ") + std::to_string(i + 1) + ": " +
                std::to_string(per_volume_[i] - (i + 1 == per_volume_.size() ? doubt.bytes : 0));
      text += ")";
    }
    return text + tees_.reached_text() + ", " +
           std::to_string(ring_.stats().bytes_in - written_) + " queued bytes were not written\n";
  }

  // Bytes the output had accepted but then lost (a tape image's buffered
  // records, LostWrites) did not reach it after all: they come off written_
  // and off the ring's count, and the returned line (empty for any other
  // failure) says so.
  std::string take_back_lost(const Error& e) {
    const auto* lost = dynamic_cast<const LostWrites*>(&e);
    if (lost == nullptr) return "";
    // A lost stream's line already said what the tape holds.
    if (lost->bytes_lost() == 0 && dynamic_cast<const StreamLost*>(&e) != nullptr) return "";
    std::uint64_t bytes = std::min<std::uint64_t>(lost->bytes_lost(), per_volume_.back());
    written_ -= bytes;
    per_volume_.back() -= bytes;
    ring_.set_bytes_out(written_);
    return "buffer (writer): " + output_->name() + " lost the last " +
           std::to_string(lost->bytes_lost()) + " bytes it had accepted: " +
           strerror_text(lost->cause()) + "\n";
  }

  // Closes the output after a stop or a failure; returns what went wrong
  // (empty when nothing did) with any loss already taken off the counts.
  std::string close_after_stop() {
    clear_stop();  // a stop still pending would make the close give up at once
    std::string text;
    try {
      if (!primary_failed_) output_->close();
    } catch (const Error& e) {
      text = "buffer (writer): close of " + output_->name() + " failed: " +
             strerror_text(e.errnum()) + "\n" + take_back_lost(e);
    }
    text += tees_.close_all();
    ring_.note_consumer_step();
    ring_.set_bytes_out(reached_bytes());
    return text;
  }

  // The output may still be writing buffered records when it closes (a tape
  // image); records it loses there did not reach it.
  void close_output() {
    if (primary_failed_) return;
    try {
      output_->close();
    } catch (const LostWrites& e) {
      if (const auto* unwritten = next_volume_takes(e)) {
        write_on_next_volume(*unwritten);
        return close_output();
      }
      ring_.set_consumer_reported();
      std::string loss = take_back_lost(e);
      throw ExactExit(kExitRuntime, "buffer (writer): close of " + output_->name() + " failed: " +
                                        strerror_text(e.errnum()) + "\n" + loss +
                                        "buffer (writer): " + reached_text());
    }
    ring_.note_consumer_step();
    ring_.set_bytes_out(written_);
  }

  [[noreturn]] void report_write_failure(const Error& e, std::size_t to_write, std::size_t done) {
    ring_.set_consumer_reported();
    if (e.errnum() == EPIPE) throw e;  // a reader that went away: quiet, as 1.19
    std::string loss = stream_lost_text(e) + take_back_lost(e);
    char kilobytes[32];
    std::snprintf(kilobytes, sizeof kilobytes, "%10lluK",
                  static_cast<unsigned long long>(written_ / 1024));
    std::string text = "buffer (writer): write of data failed: " + output_->name() + ": " +
                       strerror_text(e.errnum()) + "\nbytes to write=" + std::to_string(to_write) +
                       ", bytes written=" + std::to_string(done) + ", total written " +
                       kilobytes + "\n" + loss;
    // The tape still gets closed as a tape before the count is final.
    text += close_after_stop();
    throw ExactExit(kExitRuntime, text + "buffer (writer): " + reached_text());
  }

  // The volume just loaded took none of what was left of the block.
  [[noreturn]] void refuse_volume(const Error& e, std::size_t block_size, std::size_t left) {
    ring_.set_consumer_reported();
    std::string what = left == block_size
                           ? "a block of " + std::to_string(block_size) + " bytes"
                           : "the last " + std::to_string(left) + " bytes of a block";
    std::string text = "buffer (writer): volume " + std::to_string(per_volume_.size()) + " of " +
                       output_->name() + " took no data: " + what + " did not fit: " +
                       strerror_text(e.errnum()) + "\n";
    text += close_after_stop();
    throw ExactExit(kExitRuntime, text + "buffer (writer): " + reached_text());
  }

  void change_volume() {
    // Closed first, so the count below is what reached this volume; read
    // back while it is still in the drive.
    close_output();
    if (std::string mismatch = verify_primary(); !mismatch.empty()) {
      ring_.set_consumer_reported();
      throw ExactExit(kExitRuntime, mismatch);
    }
    if (digest_) digest_->end_volume();
    print_stderr("buffer (writer): end of medium on " + output_->name() + " after " +
                 std::to_string(written_) + " bytes; running the volume change command\n");
    per_volume_.push_back(0);
    ring_.set_consumer_volume(per_volume_.size());
    int status = run_volume_command(*options_.next_volume, per_volume_.size(), written_,
                                    "BUFFER_OUTPUT", options_.output);
    ring_.note_consumer_step();
    if (status != 0) {
      ring_.set_consumer_reported();
      throw ExactExit(kExitRuntime, "buffer (writer): volume change command failed (" +
                                        describe_wait_status(status) + "); " +
                                        std::to_string(written_) + " bytes were written\n");
    }
    output_ = open_tape(options_.output, O_WRONLY | O_CREAT | O_TRUNC, open_options(options_));
    note_volume_start();
    fresh_volume_ = true;
    print_stderr("buffer (writer): continuing on volume " + std::to_string(per_volume_.size()) +
                 "\n");
  }

  // The tape file this volume is written as: where --verify reads it back
  // from, and what the progress line and the summary name. Asking a remote
  // tape where it is costs a round trip a status field, so only then.
  void note_volume_start() {
    if (!options_.verify && !reports_progress(options_)) return;
    volume_start_ = volume_start(*output_);
    ring_.set_consumer_tape_file(volume_start_);
  }

  // --tee, --keep-going, --hash, --verify.

  // Each block goes to the tees after -o. A failing tee stops the run
  // (closing every output, as any stop) unless --keep-going drops it.
  void write_tees(std::span<const std::byte> block) {
    auto failures = tees_.write(block, [this] { after_interruption(); });
    for (const auto& failure : failures) {
      std::string line = "buffer (writer): write of data failed: " + failure.tee->tape->name() +
                         ": " + failure.error;
      if (!options_.keep_going) {
        ring_.set_consumer_reported();
        std::string closing = close_after_stop();
        throw ExactExit(kExitRuntime, line + "\n" + closing + "buffer (writer): " + reached_text());
      }
      outputs_failed_ = true;
      print_stderr(line + "; " + std::to_string(failure.tee->written) +
                   " bytes reached it; the other outputs go on (--keep-going)\n");
    }
    if (primary_failed_ && !tees_.any_working()) no_output_left();
  }

  // With --keep-going and a tee still working, a failed -o is dropped
  // instead of ending the run. True when it was.
  bool drop_failed_output(const Error& e) {
    if (!options_.keep_going || !tees_.any_working()) return false;
    outputs_failed_ = true;
    primary_failed_ = true;
    std::string loss = take_back_lost(e);
    std::string closing;
    try {
      output_->close();
    } catch (const Error& closed) {
      closing = "buffer (writer): close of " + output_->name() + " failed: " +
                strerror_text(closed.errnum()) + "\n" + take_back_lost(closed);
    }
    print_stderr("buffer (writer): write of data failed: " + output_->name() + ": " +
                 strerror_text(e.errnum()) + "; " + std::to_string(written_) +
                 " bytes reached it; the other outputs go on (--keep-going)\n" + loss + closing);
    return true;
  }

  [[noreturn]] void no_output_left() {
    ring_.set_consumer_reported();
    std::string closing = close_after_stop();
    throw ExactExit(kExitRuntime, closing + "buffer (writer): every output failed; " +
                                      reached_text());
  }

  // -o's current volume read back and compared (--verify): "" when it
  // matches, else what differs.
  std::string verify_primary() {
    if (!options_.verify || primary_failed_ || !digest_) return "";
    std::string label = output_->name();
    if (options_.next_volume) label += ", volume " + std::to_string(per_volume_.size());
    return read_back(label, [&] {
      return verify_volume(output_->name(), label, volume_start_, options_.block_size, *digest_,
                           open_options(options_));
    });
  }

  // Runs one read-back, which a stop signal ends (or skips, when it came
  // before): a read-back may wait on the output for ever (a drive, a host
  // that stopped answering), and there is nothing left to write out.
  std::string read_back(const std::string& label, const std::function<std::string()>& verify) {
    g_verifying = 1;
    if (g_verify_stopped) {
      g_verifying = 0;
      return "buffer (writer): no read-back of " + label + ": stopped by " + stop_signal_name() +
             "\n";
    }
    try {
      std::string mismatch = verify();
      g_verifying = 0;
      return mismatch;
    } catch (const Interrupted&) {
      g_verifying = 0;
      clear_stop();
      return "buffer (writer): read-back of " + label + " stopped by " + stop_signal_name() +
             "\n";
    }
  }

  // After a clean end of input: the tees closed, everything read back that
  // is to be, the digests printed, and a nonzero status if an output was
  // dropped on the way.
  void finish_outputs() {
    std::string failed_closes = tees_.close_all();
    if (!failed_closes.empty()) {
      ring_.set_consumer_reported();
      throw ExactExit(kExitRuntime, failed_closes + "buffer (writer): " + reached_text());
    }
    std::string mismatches;
    if (options_.verify) {
      mismatches = verify_primary();
      if (!tees_.empty())
        mismatches += read_back("the --tee outputs", [&] {
          return tees_.verify_all(options_.block_size, open_options(options_));
        });
    }
    // Under --json the digests are objects of their own, never a text line
    // a crafted output name could forge.
    bool json = options_.json;
    std::string digests;
    if (digest_ && !primary_failed_)
      digests = json ? digest_->summary_json(output_->name()) : digest_->summary(output_->name());
    digests += tees_.digest_summary(json);
    std::string verdict = mismatches;
    if (options_.verify && mismatches.empty())
      verdict = "buffer (writer): every output read back matches\n";
    if (json)
      print_stderr_as_is(digests + json_message_lines(verdict));
    else
      print_stderr(digests + verdict);
    if (digest_channel_ != nullptr && options_.hash)
      digest_channel_->send(digest_message(*options_.hash, primary_failed_ ? nullptr : &*digest_,
                                           tees_));
    if (!mismatches.empty() || outputs_failed_) {
      ring_.set_consumer_reported();
      throw ExactExit(kExitRuntime, "");
    }
  }

  Ring& ring_;
  std::unique_ptr<Tape> output_;
  TeeOutputs& tees_;
  DigestChannel* digest_channel_;       // to the reader's summary (--hash); null without
  std::optional<OutputDigest> digest_;  // --hash, of what reached -o
  std::int64_t volume_start_ = -1;      // where -o's current volume starts (--verify)
  bool primary_failed_ = false;         // -o failed and was dropped (--keep-going)
  bool outputs_failed_ = false;         // an output was dropped: the run fails at its end
  const Options& options_;
  LegacyReport legacy_;
  pid_t reader_;
  std::uint64_t written_ = 0;            // bytes that reached the output, all volumes
  std::vector<std::uint64_t> per_volume_{0};  // of which on each volume
  bool fresh_volume_ = false;            // a volume just loaded has taken nothing yet
  std::uint64_t next_gib_ = kGiB;
  RateLimit output_limit_;
  std::string hung_output_;  // the output a watched write goes to, for --timeout's message
  Watchdog watchdog_;
};

}  // namespace

int writer_process(Ring& ring, const Options& options, Clock::time_point start, pid_t reader,
                   DigestChannel* digest_channel) {
  // Learn of the reader's death even while blocked in write(2).
  ::prctl(PR_SET_PDEATHSIG, SIGUSR2);
  install_handler(SIGUSR2, on_reader_death);
  install_handler(SIGUSR1, on_abandon_request);
  for (int sig : kTerminatingSignals) install_handler(sig, on_writer_signal);
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGCHLD, SIG_DFL);
  // Both were blocked across the fork: a request to abandon that came before
  // the handler was in place is delivered now.
  sigset_t blocked_at_fork;
  sigemptyset(&blocked_at_fork);
  sigaddset(&blocked_at_fork, SIGCHLD);
  sigaddset(&blocked_at_fork, SIGUSR1);
  ::sigprocmask(SIG_UNBLOCK, &blocked_at_fork, nullptr);
  if (::getppid() != reader) g_peer_gone = 1;
  ring.warm_ahead(Ring::Side::consumer);
  ExitPolicy policy{kExitRuntime, kExitRuntime, ""};
  return run_main("buffer (writer)", policy, [&] {
    return with_json_diagnostics(options.json, "buffer (writer)", kExitRuntime, [&] {
      // The writer alone opens and owns the output, so no other process can
      // close it (a .tap would get a filemark, a remote tape a close request).
      // Failures here are still set-up failures: status 255, as in 1.19.
      std::unique_ptr<Tape> output = open_output(options);
      enlarge_pipe(output->poll_fd(), options.block_size);
      // Every output is open before the reader takes any input.
      TeeOutputs tees(options.tees, options.hash, [&](const std::string& name) {
        std::unique_ptr<Tape> tee =
            open_end(name, 1, O_WRONLY | O_CREAT | O_TRUNC, "output", options);
        enlarge_pipe(tee->poll_fd(), options.block_size);
        return tee;
      });
      g_writer_ready = 1;
      ring.set_consumer_ready();
      Writer writer(ring, std::move(output), tees, options, start, reader, digest_channel);
      return writer.run();
    });
  });
}

}  // namespace tk::buffer
