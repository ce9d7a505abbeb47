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
#include <exception>
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

Writer::Writer(Ring& ring, RunState& run, std::vector<Output> outputs, const Options& options,
               Clock::time_point start, pid_t reader, DigestChannel* digest_channel)
    : ring_(ring),
      run_(run),
      outputs_(std::move(outputs)),
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
  if (primary().digest && digest_slower_than_copies(primary().digest->kind()))
    hasher_.emplace(ring, [this](std::span<const std::byte> reached) { primary().digest->add(reached); });
}

OutputDigest& Writer::settled_digest(Output& out) {
  if (hasher_ && is_primary(out)) hasher_->drain();
  return *out.digest;
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
  if (!ring_.input_failed() && run_.writer().signals() == 0) legacy_.finish(primary().written);
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
  // Past it, but still out of the reader's reach until every output
  // acknowledged it.
  ring_.take();
  ++blocks_taken_;
  if (primary().working()) write_block(primary(), block);
  // A failing tee is dealt with once every tee has the block, so that what
  // reached each is the same whichever fails.
  std::vector<std::pair<Output*, std::exception_ptr>> failed;
  for (Output& tee : std::span(outputs_).subspan(1)) {
    if (!tee.working()) continue;
    write_block(tee, block, true, [&](const Error&, std::size_t) {
      failed.emplace_back(&tee, std::current_exception());
      return false;
    });
  }
  for (auto& [tee, failure] : failed) {
    try {
      std::rethrow_exception(failure);
    } catch (const Error& e) {
      tee_failed(*tee, e, block.size());
    }
  }
  acknowledge_written();
  ring_.note_consumer_started();
  if (drive_watch_.capacity_due() && primary().working())
    drive_watch_.sample_capacity(*primary().tape, primary().written, in_flight().records > 0);
  if (options_.pause_us) pause_after_block();
  if (options_.seek_every_gib && primary().written >= next_gib_) {
    next_gib_ += kGiB;
    rewind_offset_if_device(primary().tape->poll_fd());
  }
}

void Writer::pause_after_block() {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(options_.pause_us);
  if (!sleep_until_or_stop(until, [this] { return stopping() || reader_gone(); })) {
    check_reader_alive();
    abandon(abandon_reason());
  }
}

void Writer::write_block(Output& out, std::span<const std::byte> bytes, bool ends_block) {
  write_block(out, bytes, ends_block, [&](const Error& e, std::size_t done) {
    return primary_failed(e, bytes.size(), done);
  });
}

Watchdog::Call Writer::watch(const Output& out) {
  hung_output_ = is_primary(out) ? out.name() : "a --tee output";
  return watchdog_.watch();
}

void Writer::tee_failed(Output& tee, const Error& e, std::size_t block_size) {
  settle_sent(tee, e);
  if (!drop_output(tee, e)) report_write_failure(tee, e, block_size, 0);
}

void Writer::write_block(Output& out, std::span<const std::byte> bytes, bool ends_block,
                         const OnFailure& failed) {
  std::size_t done = 0;
  for (;;) {
    try {
      {
        Watchdog::Call call = watch(out);
        // Long writes are -o's, the drive's (--record).
        std::optional<WriteTimer> timed;
        if (is_primary(out)) timed.emplace(run_, long_write_threshold(options_));
        out.tape->write(bytes.subspan(done));
      }
      out.sent.push_back({bytes.subspan(done), ends_block});
      return;
    } catch (const Interrupted& e) {
      if (e.bytes_done() > 0) out.sent.push_back({bytes.subspan(done, e.bytes_done()), false});
      done += e.bytes_done();
      after_interruption();
    } catch (const Error& e) {
      if (e.bytes_done() > 0) out.sent.push_back({bytes.subspan(done, e.bytes_done()), false});
      done += e.bytes_done();
      if (!failed(e, done)) return;
    }
  }
}

void Writer::count_written(Output& out, std::span<const std::byte> reached) {
  out.written += reached.size();
  out.per_volume.back() += reached.size();
  if (!reached.empty()) out.fresh_volume = false;
  if (hasher_ && is_primary(out))
    hasher_->add(reached);
  else if (out.digest)
    out.digest->add(reached);
}

void Writer::acknowledge_written() {
  std::uint64_t done = blocks_taken_;
  for (Output& out : outputs_) {
    if (!out.working()) continue;
    acknowledge(out);
    done = std::min(done, out.blocks_done);
  }
  while (blocks_released_ < done) {
    ++blocks_released_;
    release_block();
    // 1.19's -S/-t records, block by block as it wrote them.
    legacy_.after_block(primary().written);
  }
}

void Writer::acknowledge(Output& out) {
  const std::size_t pending = out.tape->unacknowledged().records;
  while (out.sent.size() > pending) acknowledge_oldest(out);
}

void Writer::acknowledge_oldest(Output& out) {
  const Output::Sent sent = out.sent.front();
  out.sent.pop_front();
  count_written(out, sent.bytes);
  if (sent.ends_block) ++out.blocks_done;
}

void Writer::release_block() {
  // A block being hashed goes back to the reader once it is.
  if (hasher_)
    hasher_->release_block();
  else
    ring_.release_taken();
}

void Writer::make_room_for(std::size_t wanted) {
  for (;;) {
    const std::uint64_t held = blocks_taken_ - blocks_released_;
    if (held == 0 || held + wanted <= ring_.blocks()) return;
    // As many answers as blocks the reader needs back, not all: the rest
    // stay in flight and the link stays busy. Only the outputs holding the
    // oldest block can give it back.
    const std::uint64_t needed = held + wanted - ring_.blocks();
    for (Output& out : outputs_) {
      if (!out.working() || out.blocks_done > blocks_released_) continue;
      // The writes that end the `needed` oldest blocks it holds (a block
      // written in two parts is two writes).
      std::size_t writes = 0;
      for (std::uint64_t blocks = 0; writes < out.sent.size() && blocks < needed; ++writes)
        if (out.sent[writes].ends_block) ++blocks;
      const std::size_t pending = out.tape->unacknowledged().records;
      const std::size_t to_write = out.sent.empty() ? 0 : out.sent.front().bytes.size();
      try {
        Watchdog::Call call = watch(out);
        out.tape->settle_writes(pending > writes ? pending - writes : 0);
      } catch (const Interrupted&) {
        after_interruption();
      } catch (const Error& e) {
        if (is_primary(out))
          primary_failed(e, to_write, 0);
        else
          tee_failed(out, e, to_write);
      }
    }
    const std::uint64_t before = blocks_released_;
    acknowledge_written();
    // A tape that says it holds writes must answer for them; one that does
    // not leaves the wait below to time out and look again.
    if (blocks_released_ == before) return;
  }
}

void Writer::settle_sent(Output& out, const Error& e) {
  // out.sent is, in order: what the output acknowledged, what it lost, and
  // what it still has not answered (a lost link's unconfirmed writes).
  const auto* unwritten = dynamic_cast<const UnwrittenRecords*>(&e);
  std::size_t lost = unwritten ? std::min<std::size_t>(unwritten->records_lost(), out.sent.size()) : 0;
  std::size_t pending = std::min(out.tape->unacknowledged().records, out.sent.size() - lost);
  for (std::size_t acknowledged = out.sent.size() - lost - pending; acknowledged > 0; --acknowledged)
    acknowledge_oldest(out);
  if (lost == 0) return;
  // The first write lost may have reached the medium in part.
  std::uint64_t sent_bytes = 0;
  for (std::size_t i = 0; i < lost; ++i) sent_bytes += out.sent[i].bytes.size();
  std::uint64_t reached = sent_bytes - std::min<std::uint64_t>(unwritten->bytes_lost(), sent_bytes);
  for (; lost > 0; --lost) {
    Output::Sent w = out.sent.front();
    out.sent.pop_front();
    const std::size_t part = static_cast<std::size_t>(std::min<std::uint64_t>(reached, w.bytes.size()));
    reached -= part;
    count_written(out, w.bytes.first(part));
    w.bytes = w.bytes.subspan(part);
    out.unwritten.push_back(w);
  }
}

bool Writer::primary_failed(const Error& e, std::size_t block_size, std::size_t done) {
  Output& out = primary();
  settle_sent(out, e);
  if (medium_full(e.errnum()) && writes_volumes(options_)) {
    // A volume that takes nothing at all would take nothing after any
    // number of changes (a command that freed no room, a block larger
    // than the medium): that ends the run instead of looping.
    if (out.fresh_volume) {
      if (!out.unwritten.empty())
        refuse_volume(e, out.unwritten.front().bytes.size(), out.unwritten.front().bytes.size());
      refuse_volume(e, block_size, block_size - done);
    }
    change_volume();
    write_unwritten(out);
    return out.working();
  }
  if (drop_output(out, e)) return false;
  report_write_failure(out, e, block_size, done);
}

void Writer::write_unwritten(Output& out) {
  // They did not reach the last volume: first onto this one, in order.
  for (const Output::Sent& w : std::exchange(out.unwritten, {})) {
    if (!out.working()) return;  // dropped on the way (--keep-going)
    if (w.bytes.empty())
      out.sent.push_back(w);
    else
      write_block(out, w.bytes, w.ends_block);
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

Tape::Unacknowledged Writer::in_flight() const {
  // None once -o was dropped (its writes then count for nothing).
  if (primary().sent.empty()) return {};
  return primary().tape->unacknowledged();
}

std::string Writer::reached_text() const {
  const Output& out = primary();
  Tape::Unacknowledged doubt = in_flight();
  std::string text = std::to_string(out.written) + " bytes reached " + out.name();
  if (doubt.records > 0)
    text += ", up to " + std::to_string(doubt.bytes) + " more may have (" +
            std::to_string(doubt.records) +
            (doubt.records == 1 ? " record was" : " records were") +
            " in flight, not acknowledged)";
  if (out.per_volume.size() > 1) {
    for (std::size_t i = 0; i < out.per_volume.size(); ++i)
      text += (i == 0 ? " (volume " : ", volume ") + std::to_string(i + 1) + ": " +
              std::to_string(out.per_volume[i]);
    text += ")";
  }
  for (const Output& tee : std::span(outputs_).subspan(1))
    text += ", " + std::to_string(tee.written) + " bytes reached " + tee.name();
  return text + ", " + std::to_string(ring_.stats().bytes_in - out.written) +
         " queued bytes were not written\n";
}

std::string Writer::lost_link_text(const Output& out) const {
  std::string reason = out.tape->link_loss().reason;
  if (reason.empty()) return "";
  // 1.19's line has strerror's words only; this names the host and how its
  // remote shell ended (an rmt killed, an ssh cut).
  return "buffer (writer): " + out.name() + ": " + reason + "\n";
}

std::string Writer::loss_text(Output& out, const Error& e) {
  const auto* lost = dynamic_cast<const LostWrites*>(&e);
  if (lost == nullptr) return "";
  // A lost stream's line already said what the tape holds.
  if (lost->bytes_lost() == 0 && dynamic_cast<const StreamLost*>(&e) != nullptr) return "";
  if (dynamic_cast<const UnwrittenRecords*>(&e) == nullptr) {
    std::uint64_t bytes = std::min<std::uint64_t>(lost->bytes_lost(), out.per_volume.back());
    out.written -= bytes;
    out.per_volume.back() -= bytes;
    if (is_primary(out)) ring_.set_bytes_out(out.written);
    // Its digest no longer describes what is there.
    if (!is_primary(out)) out.digest.reset();
  }
  // A remote output's lost connection may leave writes that were sent but
  // never answered: not known to be lost (they may all be there), so they
  // are said as such; those a read-back did not find are lost among the rest.
  std::string text;
  std::uint64_t not_found = 0;
  Tape::LinkLoss sent = out.tape->link_loss();
  if (sent.unconfirmed_records > 0) {
    text = "buffer (writer): " + out.name() + ": " + std::to_string(sent.unconfirmed_bytes) +
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
    text += "buffer (writer): " + out.name() + " lost the last " + std::to_string(refused) +
            " bytes it had accepted: " + strerror_text(lost->cause()) + "\n";
  return text;
}

std::string Writer::close(Output& out) {
  if (!out.open) return "";
  out.open = false;  // a failed close is not tried again
  try {
    out.tape->close();
    acknowledge(out);
  } catch (const Error& e) {
    settle_sent(out, e);
    if (out.working()) out.failure = strerror_text(e.errnum());
    return "buffer (writer): close of " + out.name() + " failed: " + strerror_text(e.errnum()) +
           "\n" + loss_text(out, e);
  }
  return "";
}

std::string Writer::close_after_stop() {
  clear_stop();  // a stop still pending would make the close give up at once
  std::string text;
  // What the drive says about a failed write is worth having; a remote
  // pipeline that is not settled is left for the close to report. A hung
  // drive (--timeout) is asked nothing more; a volume already closed (a
  // stop during a volume change) is not closed again.
  Output& out = primary();
  if (out.open && out.working() && !run_.writer().has(StopReason::stalled) && in_flight().records == 0) {
    try {
      drive_watch_.before_close(*out.tape);
    } catch (const Error& e) {
      text = "buffer (writer): close of " + out.name() + " failed: " + strerror_text(e.errnum()) + "\n";
      out.open = false;
    }
  }
  for (Output& each : outputs_)
    if (each.working() || !is_primary(each)) text += close(each);
  ring_.note_consumer_step();
  ring_.set_bytes_out(out.written);
  return text;
}

void Writer::read_alerts_before_close() {
  if (!primary().working() || !drive_watch_.enabled()) return;
  if (!primary().tape->settle_before_close()) return;  // close() reports why
  drive_watch_.before_close(*primary().tape);
}

void Writer::close_output() {
  Output& out = primary();
  if (!out.working()) return;
  read_alerts_before_close();
  try {
    out.tape->close();
  } catch (const LostWrites& e) {
    settle_sent(out, e);
    if (!out.unwritten.empty() && medium_full(e.errnum()) && writes_volumes(options_)) {
      // Closing settled writes the medium had no room for: they go to the
      // next volume, as a full medium met while writing sends them.
      if (out.fresh_volume)
        refuse_volume(e, out.unwritten.front().bytes.size(), out.unwritten.front().bytes.size());
      change_volume();
      write_unwritten(out);
      return close_output();
    }
    run_.set_writer_reported();
    std::string loss = loss_text(out, e);
    throw ExactExit(kExitRuntime, "buffer (writer): close of " + out.name() + " failed: " +
                                      strerror_text(e.errnum()) + "\n" + loss +
                                      "buffer (writer): " + reached_text());
  }
  acknowledge_written();
  out.open = false;
  ring_.note_consumer_step();
  ring_.set_bytes_out(out.written);
}

void Writer::report_write_failure(Output& out, const Error& e, std::size_t to_write, std::size_t done) {
  run_.set_writer_reported();
  if (is_primary(out) && e.errnum() == EPIPE) throw e;  // a reader that went away: quiet, as 1.19
  // First, as it takes what the output lost off its count.
  const std::string loss = stream_lost_text(e) + lost_link_text(out) + loss_text(out, e);
  std::string text = "buffer (writer): write of data failed: " + out.name() + ": " +
                     strerror_text(e.errnum()) + "\n";
  if (is_primary(out)) {
    // What -o took, as 1.19 counted write()'s returns: writes in flight
    // too; and write()'s return, -1 when none of the block went.
    char kilobytes[32];
    std::snprintf(kilobytes, sizeof kilobytes, "%10lluK",
                  static_cast<unsigned long long>((out.written + in_flight().bytes) / 1024));
    text += "bytes to write=" + std::to_string(to_write) +
            ", bytes written=" + (done == 0 ? std::string("-1") : std::to_string(done)) +
            ", total written " + kilobytes + "\n";
  }
  text += loss;
  // The tape still gets closed as a tape before the count is final.
  text += close_after_stop();
  throw ExactExit(kExitRuntime, text + "buffer (writer): " + reached_text());
}

bool Writer::drop_output(Output& out, const Error& e) {
  if (!options_.keep_going) return false;
  auto other_working = [&] {
    for (const Output& other : outputs_)
      if (&other != &out && other.working()) return true;
    return false;
  };
  // -o fails as 1.19's does when nothing else would go on.
  if (is_primary(out) && !other_working()) return false;
  outputs_failed_ = true;
  std::string loss = loss_text(out, e);
  std::string closing = close(out);
  out.failure = strerror_text(e.errnum());
  // What it never took or never answered goes back to the reader uncounted,
  // once the others have it.
  out.sent.clear();
  out.unwritten.clear();
  print_stderr("buffer (writer): write of data failed: " + out.name() + ": " + out.failure + "; " +
               std::to_string(out.written) +
               " bytes reached it; the other outputs go on (--keep-going)\n" + loss + closing);
  if (!other_working()) no_output_left();
  return true;
}

void Writer::no_output_left() {
  run_.set_writer_reported();
  std::string closing = close_after_stop();
  throw ExactExit(kExitRuntime, closing + "buffer (writer): every output failed; " +
                                    reached_text());
}

void Writer::finish_outputs() {
  std::string failed_closes;
  for (Output& tee : std::span(outputs_).subspan(1)) failed_closes += close(tee);
  if (!failed_closes.empty()) {
    run_.set_writer_reported();
    throw ExactExit(kExitRuntime, failed_closes + "buffer (writer): " + reached_text());
  }
  std::string mismatches;
  if (options_.verify) mismatches = verify_primary() + verify_tees();
  // Under --json the digests are objects of their own, never a text line
  // a crafted output name could forge.
  bool json = options_.json;
  std::string digests;
  for (Output& out : outputs_) {
    if (!out.working() || !out.digest) continue;
    OutputDigest& digest = settled_digest(out);
    digests += json ? digest.summary_json(out.name()) : digest.summary(out.name());
  }
  std::string verdict = mismatches;
  if (options_.verify && mismatches.empty())
    verdict = "buffer (writer): every output read back matches\n";
  if (json)
    print_stderr_as_is(digests + json_message_lines(verdict));
  else
    print_stderr(digests + verdict);
  if (digest_channel_ != nullptr && options_.hash) {
    if (primary().working() && primary().digest) settled_digest(primary());
    digest_channel_->send(digest_message(*options_.hash, outputs_));
  }
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
      std::vector<Output> outputs;
      outputs.reserve(1 + options.tees.size());
      outputs.emplace_back(open_output(options), options.hash, writes_volumes(options));
      // Every output is open before the reader takes any input.
      for (const std::string& name : options.tees) {
        outputs.emplace_back(open_output(options, name), options.hash, false);
        outputs.back().start = volume_start(*outputs.back().tape);
      }
      run.set_writer_ready();
      Writer writer(ring, run, std::move(outputs), options, start, reader, digest_channel);
      return writer.run();
    });
  });
}

}  // namespace tk::buffer
