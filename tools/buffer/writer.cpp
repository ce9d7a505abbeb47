// buffer's writer: the child process that drains the ring to the output
// (and the tees) and hashes what reached them. Volume changes and
// read-backs: volume_change.cpp.
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
#include "../../lib/tape/tape.hpp"
#include "outputs.hpp"
#include "rate_limit.hpp"
#include "record.hpp"
#include "report.hpp"
#include "volume_change.hpp"
#include "watchdog.hpp"
#include "ends.hpp"
#include "signals.hpp"

namespace tk::buffer {

using namespace std::chrono_literals;

Writer::Writer(Ring& ring, RunState& run, std::unique_ptr<Tape> output, TeeOutputs& tees, const Options& options,
       Clock::time_point start, pid_t reader, DigestChannel* digest_channel)
    : ring_(ring),
      run_(run),
      output_(std::move(output)),
      tees_(tees),
      digest_channel_(digest_channel),
      options_(options),
      legacy_(options.report_requested ? options.report_every : 0, options.totals, start),
      reader_(reader),
      output_limit_(options.output_rate),
      drive_watch_(run, reports_progress(options)),
      watchdog_(std::chrono::seconds(options.timeout_seconds),
                [main = ::pthread_self(), &own = run.writer()] {
                  // The abandon request interrupts the write; the reason
                  // makes the writer say why. A remote output's reply due
                  // is not coming: the stop does not wait for it.
                  own.add(StopReason::stalled);
                  request_stop_at_once();
                  ::pthread_kill(main, SIGUSR1);
                }) {
  note_volume_start();
  if (options.hash) {
    digest_.emplace(*options.hash, writes_volumes(options));
    if (digest_slower_than_copies(*options.hash))
      hasher_.emplace(ring, [this](std::span<const std::byte> reached) { digest_->add(reached); });
  }
}

OutputDigest& Writer::settled_digest() {
  if (hasher_) hasher_->drain();
  return *digest_;
}

int Writer::run() {
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
    const std::size_t wanted = options_.percent ? batch : high;
    make_room_for(wanted);
    Ring::Wait waited = ring_.wait_filled(wanted, kPollInterval);
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
  // a read error or a signal the last record stays as it was.
  if (!ring_.input_failed() && run_.writer().signals() == 0) legacy_.finish(written_);
  if (options_.debug) print_stderr("\tW: Exiting writer\n");
  return kExitOk;
}

std::string Writer::abandon_reason() const {
  const ProcessState& own = run_.writer();
  const int sig = own.stop_signal();
  if (own.signals() >= 2) return stop_words(Stop::writer_second_signal, sig);
  if (own.signals() > 0 && !run_.drain_on_signal()) return stop_words(Stop::writer_no_drain, sig);
  if (own.signals() > 0) return stop_words(Stop::writer_signal, sig);
  return stop_words(Stop::writer_told, sig);
}

void Writer::write_next_block() {
  // A write to a file or tape does not block, so a signal may not
  // interrupt one: look at the flags between blocks too.
  if (stopping()) abandon(abandon_reason());
  write_oldest_block();
}

void Writer::write_oldest_block() {
  std::span<const std::byte> block = ring_.oldest_filled_block();
  if (!output_limit_.pace(block.size(), [this] { return stopping() || reader_gone(); })) {
    check_reader_alive();
    abandon("interrupted");
  }
  if (options_.debug >= 2) print_stderr("W: writing " + std::to_string(block.size()) + "\n");
  // Past it, but still out of the reader's reach until -o acknowledges it.
  ring_.take();
  ++held_blocks_;
  if (!primary_failed_) write_block(block);
  // Without -o (dropped under --keep-going) the block goes back once the
  // tees have it.
  if (primary_failed_) sent_.push_back({{}, true});
  if (!tees_.empty()) {
    hung_output_ = "a --tee output";
    Watchdog::Call call = watchdog_.watch();
    write_tees(block);
  }
  acknowledge_written();
  ring_.note_consumer_started();
  if (drive_watch_.capacity_due() && !primary_failed_)
    drive_watch_.sample_capacity(*output_, written_, in_flight().records > 0);
  if (options_.pause_us) pause_after_block();
  if (options_.seek_every_gib && written_ >= next_gib_) {
    next_gib_ += kGiB;
    rewind_offset_if_device(output_->poll_fd());
  }
}

void Writer::acknowledge_written() {
  const std::size_t pending = primary_failed_ ? 0 : output_->unacknowledged().records;
  while (sent_.size() > pending) acknowledge_oldest();
}

void Writer::acknowledge_oldest() {
  const SentWrite sent = sent_.front();
  sent_.pop_front();
  count_written(sent.bytes);
  if (!sent.ends_block) return;
  release_block();
  // 1.19's -S/-t records, block by block as it wrote them.
  legacy_.after_block(written_);
}

void Writer::release_block() {
  --held_blocks_;
  // A block being hashed goes back to the reader once it is.
  if (hasher_)
    hasher_->release_block();
  else
    ring_.release_taken();
}

void Writer::make_room_for(std::size_t wanted) {
  while (held_blocks_ > 0 && held_blocks_ + wanted > ring_.blocks()) {
    const std::size_t to_write = sent_.empty() ? 0 : sent_.front().bytes.size();
    // As many answers as blocks the reader needs back, not all: the rest
    // stay in flight and the link stays busy.
    const std::size_t needed = held_blocks_ + wanted - ring_.blocks();
    const std::size_t pending = output_->unacknowledged().records;
    try {
      hung_output_ = output_->name();
      Watchdog::Call call = watchdog_.watch();
      output_->settle_writes(pending > needed ? pending - needed : 0);
    } catch (const Interrupted&) {
      after_interruption();
    } catch (const Error& e) {
      recover_output(e, to_write, 0);
    }
    acknowledge_written();
  }
}

void Writer::pause_after_block() {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(options_.pause_us);
  if (!sleep_until_or_stop(until, [this] { return stopping() || reader_gone(); })) {
    check_reader_alive();
    abandon(abandon_reason());
  }
}

void Writer::count_written(std::span<const std::byte> reached) {
  written_ += reached.size();
  per_volume_.back() += reached.size();
  ring_.count_out(reached.size());
  if (!reached.empty()) fresh_volume_ = false;
  if (hasher_)
    hasher_->add(reached);
  else if (digest_)
    digest_->add(reached);
}

void Writer::write_block(std::span<const std::byte> bytes, bool ends_block) {
  std::size_t done = 0;
  for (;;) {
    try {
      {
        hung_output_ = output_->name();
        Watchdog::Call call = watchdog_.watch();
        WriteTimer timed(run_, long_write_threshold(options_));
        output_->write(bytes.subspan(done));
      }
      sent_.push_back({bytes.subspan(done), ends_block});
      return;
    } catch (const Interrupted& e) {
      if (e.bytes_done() > 0) sent_.push_back({bytes.subspan(done, e.bytes_done()), false});
      done += e.bytes_done();
      after_interruption();
    } catch (const Error& e) {
      if (e.bytes_done() > 0) sent_.push_back({bytes.subspan(done, e.bytes_done()), false});
      done += e.bytes_done();
      if (!recover_output(e, bytes.size(), done)) return;
    }
  }
}

void Writer::settle_sent(const Error& e) {
  // sent_ is, in order: what -o acknowledged, what it lost, and what it
  // still has not answered (a lost link's unconfirmed writes).
  const auto* unwritten = dynamic_cast<const UnwrittenRecords*>(&e);
  std::size_t lost = unwritten ? std::min<std::size_t>(unwritten->records_lost(), sent_.size()) : 0;
  std::size_t pending = std::min(output_->unacknowledged().records, sent_.size() - lost);
  for (std::size_t acknowledged = sent_.size() - lost - pending; acknowledged > 0; --acknowledged)
    acknowledge_oldest();
  if (lost == 0) return;
  // The first write lost may have reached the medium in part.
  std::uint64_t sent_bytes = 0;
  for (std::size_t i = 0; i < lost; ++i) sent_bytes += sent_[i].bytes.size();
  std::uint64_t reached = sent_bytes - std::min<std::uint64_t>(unwritten->bytes_lost(), sent_bytes);
  for (; lost > 0; --lost) {
    SentWrite w = sent_.front();
    sent_.pop_front();
    const std::size_t part = static_cast<std::size_t>(std::min<std::uint64_t>(reached, w.bytes.size()));
    reached -= part;
    count_written(w.bytes.first(part));
    w.bytes = w.bytes.subspan(part);
    unwritten_.push_back(w);
  }
}

bool Writer::recover_output(const Error& e, std::size_t block_size, std::size_t done) {
  settle_sent(e);
  if (medium_full(e.errnum()) && writes_volumes(options_)) {
    // A volume that takes nothing at all would take nothing after any
    // number of changes (a command that freed no room, a block larger
    // than the medium): that ends the run instead of looping.
    if (fresh_volume_) {
      if (!unwritten_.empty())
        refuse_volume(e, unwritten_.front().bytes.size(), unwritten_.front().bytes.size());
      refuse_volume(e, block_size, block_size - done);
    }
    change_volume();
    write_unwritten();
    return !primary_failed_;
  }
  if (drop_failed_output(e)) return false;
  report_write_failure(e, block_size, done);
}

void Writer::write_unwritten() {
  // They did not reach the last volume: first onto this one, in order.
  for (const SentWrite& w : std::exchange(unwritten_, {})) {
    if (primary_failed_ || w.bytes.empty()) {
      // Dropped on the way (--keep-going): the block goes back uncounted.
      if (w.ends_block) sent_.push_back({{}, true});
    } else {
      write_block(w.bytes, w.ends_block);
    }
  }
}

void Writer::after_interruption() {
  ring_.note_consumer_step();
  if (reader_gone()) abandon("the reader process died");
  if (stopping()) abandon(abandon_reason());
  clear_stop();  // first signal: keep draining
}

void Writer::check_reader_alive() {
  if (reader_gone()) abandon("the reader process died");
  if (ring_.abort_requested()) abandon(abandon_reason());
}

void Writer::abandon(std::string why) {
  if (run_.writer().has(StopReason::stalled))
    why = "the output hung: no block reached " + hung_output_ + " in " +
          seconds_text(std::chrono::seconds(options_.timeout_seconds)) + " (--timeout)";
  run_.set_writer_reported();
  ring_.note_consumer_step();
  std::string closing = close_after_stop();
  throw ExactExit(kExitRuntime, closing + "buffer (writer): " + why + "; " + reached_text());
}

Writer::InFlight Writer::in_flight() const {
  if (primary_failed_) return {};
  Tape::Unacknowledged sent = output_->unacknowledged();
  return {sent.bytes, sent.records};
}

std::string Writer::reached_text() const {
  InFlight doubt = in_flight();
  std::string text = std::to_string(written_) + " bytes reached " + output_->name();
  if (doubt.records > 0)
    text += ", up to " + std::to_string(doubt.bytes) + " more may have (" +
            std::to_string(doubt.records) +
            (doubt.records == 1 ? " record was" : " records were") +
            " in flight, not acknowledged)";
  if (per_volume_.size() > 1) {
    for (std::size_t i = 0; i < per_volume_.size(); ++i)
      text += (i == 0 ? " (volume " : ", volume ") + std::to_string(i + 1) + ": " +
              std::to_string(per_volume_[i]);
    text += ")";
  }
  return text + tees_.reached_text() + ", " +
         std::to_string(ring_.stats().bytes_in - written_) + " queued bytes were not written\n";
}

std::string Writer::lost_link_text() const {
  std::string reason = output_->link_loss().reason;
  if (reason.empty()) return "";
  // 1.19's line has strerror's words only; this names the host and how its
  // remote shell ended (an rmt killed, an ssh cut).
  return "buffer (writer): " + output_->name() + ": " + reason + "\n";
}

std::string Writer::loss_text(const Error& e) {
  const auto* lost = dynamic_cast<const LostWrites*>(&e);
  if (lost == nullptr) return "";
  // A lost stream's line already said what the tape holds.
  if (lost->bytes_lost() == 0 && dynamic_cast<const StreamLost*>(&e) != nullptr) return "";
  if (dynamic_cast<const UnwrittenRecords*>(&e) == nullptr) {
    std::uint64_t bytes = std::min<std::uint64_t>(lost->bytes_lost(), per_volume_.back());
    written_ -= bytes;
    per_volume_.back() -= bytes;
    ring_.set_bytes_out(written_);
  }
  // A remote output's lost connection may leave writes that were sent but
  // never answered: not known to be lost (they may all be there), so they
  // are said as such; those a read-back did not find are lost among the rest.
  std::string text;
  std::uint64_t not_found = 0;
  Tape::LinkLoss sent = output_->link_loss();
  if (sent.unconfirmed_records > 0) {
    text = "buffer (writer): " + output_->name() + ": " + std::to_string(sent.unconfirmed_bytes) +
           " more bytes were sent; the server did not confirm them";
    if (sent.bytes_there) {
      not_found = sent.unconfirmed_bytes - *sent.bytes_there;
      text += *sent.bytes_there == sent.unconfirmed_bytes
                  ? "; a read-back found them all"
                  : "; a read-back found " + std::to_string(*sent.bytes_there) + " of them";
    }
    text += "\n";
  }
  const std::uint64_t refused = lost->bytes_lost() - std::min(not_found, lost->bytes_lost());
  if (refused > 0)
    text += "buffer (writer): " + output_->name() + " lost the last " + std::to_string(refused) +
            " bytes it had accepted: " + strerror_text(lost->cause()) + "\n";
  return text;
}

std::string Writer::close_after_stop() {
  clear_stop();  // a stop still pending would make the close give up at once
  std::string text;
  try {
    // What the drive says about a failed write is worth having; a remote
    // pipeline that is not settled is left for the close to report.
    // A hung drive (--timeout) is asked nothing more; a volume already
    // closed (a stop during a volume change) is not closed again.
    if (output_open_ && !primary_failed_ && !run_.writer().has(StopReason::stalled) &&
        in_flight().records == 0)
      drive_watch_.before_close(*output_);
    if (output_open_ && !primary_failed_) output_->close();
    if (output_open_ && !primary_failed_) acknowledge_written();
  } catch (const Error& e) {
    settle_sent(e);
    text = "buffer (writer): close of " + output_->name() + " failed: " +
           strerror_text(e.errnum()) + "\n" + loss_text(e);
  }
  text += tees_.close_all();
  ring_.note_consumer_step();
  ring_.set_bytes_out(written_);
  return text;
}

void Writer::read_alerts_before_close() {
  if (primary_failed_ || !drive_watch_.enabled()) return;
  if (!output_->settle_before_close()) return;  // close() reports why
  drive_watch_.before_close(*output_);
}

void Writer::close_output() {
  if (primary_failed_) return;
  read_alerts_before_close();
  try {
    output_->close();
  } catch (const LostWrites& e) {
    settle_sent(e);
    if (!unwritten_.empty() && medium_full(e.errnum()) && writes_volumes(options_)) {
      // Closing settled writes the medium had no room for: they go to the
      // next volume, as a full medium met while writing sends them.
      if (fresh_volume_)
        refuse_volume(e, unwritten_.front().bytes.size(), unwritten_.front().bytes.size());
      change_volume();
      write_unwritten();
      return close_output();
    }
    run_.set_writer_reported();
    std::string loss = loss_text(e);
    throw ExactExit(kExitRuntime, "buffer (writer): close of " + output_->name() + " failed: " +
                                      strerror_text(e.errnum()) + "\n" + loss +
                                      "buffer (writer): " + reached_text());
  }
  acknowledge_written();
  output_open_ = false;
  ring_.note_consumer_step();
  ring_.set_bytes_out(written_);
}

void Writer::report_write_failure(const Error& e, std::size_t to_write, std::size_t done) {
  run_.set_writer_reported();
  if (e.errnum() == EPIPE) throw e;  // a reader that went away: quiet, as 1.19
  std::string loss = stream_lost_text(e) + lost_link_text() + loss_text(e);
  // What -o took, as 1.19 counted write()'s returns: writes in flight too.
  char kilobytes[32];
  std::snprintf(kilobytes, sizeof kilobytes, "%10lluK",
                static_cast<unsigned long long>((written_ + in_flight().bytes) / 1024));
  // 1.19 printed write()'s return: -1 when none of the block went.
  std::string written_text = done == 0 ? "-1" : std::to_string(done);
  std::string text = "buffer (writer): write of data failed: " + output_->name() + ": " +
                     strerror_text(e.errnum()) + "\nbytes to write=" + std::to_string(to_write) +
                     ", bytes written=" + written_text + ", total written " + kilobytes + "\n" +
                     loss;
  // The tape still gets closed as a tape before the count is final.
  text += close_after_stop();
  throw ExactExit(kExitRuntime, text + "buffer (writer): " + reached_text());
}

void Writer::write_tees(std::span<const std::byte> block) {
  auto failures = tees_.write(block, [this] { after_interruption(); });
  for (const auto& failure : failures) {
    std::string line = "buffer (writer): write of data failed: " + failure.tee->tape->name() +
                       ": " + failure.error;
    if (!options_.keep_going) {
      run_.set_writer_reported();
      std::string closing = close_after_stop();
      throw ExactExit(kExitRuntime, line + "\n" + closing + "buffer (writer): " + reached_text());
    }
    outputs_failed_ = true;
    print_stderr(line + "; " + std::to_string(failure.tee->written) +
                 " bytes reached it; the other outputs go on (--keep-going)\n");
  }
  if (primary_failed_ && !tees_.any_working()) no_output_left();
}

bool Writer::drop_failed_output(const Error& e) {
  if (!options_.keep_going || !tees_.any_working()) return false;
  outputs_failed_ = true;
  std::string loss = loss_text(e);
  std::string closing;
  try {
    output_->close();
    acknowledge_written();
  } catch (const Error& closed) {
    settle_sent(closed);
    closing = "buffer (writer): close of " + output_->name() + " failed: " +
              strerror_text(closed.errnum()) + "\n" + loss_text(closed);
  }
  primary_failed_ = true;
  // What -o never took or never answered goes back to the reader uncounted,
  // block by block, once the tees have it.
  std::deque<SentWrite> blocks;
  for (const SentWrite& w : unwritten_)
    if (w.ends_block) blocks.push_back({{}, true});
  for (const SentWrite& w : sent_)
    if (w.ends_block) blocks.push_back({{}, true});
  unwritten_.clear();
  sent_ = std::move(blocks);
  print_stderr("buffer (writer): write of data failed: " + output_->name() + ": " +
               strerror_text(e.errnum()) + "; " + std::to_string(written_) +
               " bytes reached it; the other outputs go on (--keep-going)\n" + loss + closing);
  return true;
}

void Writer::no_output_left() {
  run_.set_writer_reported();
  std::string closing = close_after_stop();
  throw ExactExit(kExitRuntime, closing + "buffer (writer): every output failed; " +
                                    reached_text());
}

void Writer::finish_outputs() {
  std::string failed_closes = tees_.close_all();
  if (!failed_closes.empty()) {
    run_.set_writer_reported();
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
    digests = json ? settled_digest().summary_json(output_->name())
                   : settled_digest().summary(output_->name());
  digests += tees_.digest_summary(json);
  std::string verdict = mismatches;
  if (options_.verify && mismatches.empty())
    verdict = "buffer (writer): every output read back matches\n";
  if (json)
    print_stderr_as_is(digests + json_message_lines(verdict));
  else
    print_stderr(digests + verdict);
  if (digest_channel_ != nullptr && options_.hash)
    digest_channel_->send(digest_message(*options_.hash, primary_failed_ ? nullptr : &settled_digest(),
                                         tees_));
  if (!mismatches.empty() || outputs_failed_) {
    run_.set_writer_reported();
    throw ExactExit(kExitRuntime, "");
  }
}

int writer_process(Ring& ring, RunState& run, const Options& options, Clock::time_point start, pid_t reader,
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
  if (::getppid() != reader) run.writer().add(StopReason::peer_gone);
  ring.warm_ahead(Ring::Side::consumer);
  ExitPolicy policy{kExitRuntime, kExitRuntime, ""};
  return run_main("buffer (writer)", policy, [&] {
    return with_json_diagnostics(options.json, "buffer (writer)", kExitRuntime, [&] {
      // The writer alone opens and owns the output, so no other process can
      // close it (a .tap would get a filemark, a remote tape a close request).
      // Failures here are still set-up failures: status 255, as in 1.19.
      std::unique_ptr<Tape> output = open_output(options);
      // Every output is open before the reader takes any input.
      TeeOutputs tees(options.tees, options.hash,
                      [&](const std::string& name) { return open_output(options, name); });
      run.set_writer_ready();
      Writer writer(ring, run, std::move(output), tees, options, start, reader, digest_channel);
      return writer.run();
    });
  });
}

}  // namespace tk::buffer
