// buffer's reader: the parent process that fills the ring from the input,
// changes input volumes and stops the run on signals.
#include "reader.hpp"

#include "buffer.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <optional>
#include <pthread.h>
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
// The reader (parent process).

class Reader {
 public:
  Reader(Ring& ring, RunState& run, std::unique_ptr<Tape> input, const Options& options,
         Child& writer, Clock::time_point& input_ended,
         const std::function<void(const Tape&)>& opened)
      : ring_(ring),
        run_(run),
        input_(std::move(input)),
        options_(options),
        writer_(writer),
        input_ended_(input_ended),
        opened_(opened),
        input_limit_(options.input_rate),
        watchdog_(std::chrono::seconds(options.timeout_seconds),
                  [main = ::pthread_self(), &own = run.reader()] {
          // The input's stop request interrupts the read; the reason says
          // why. A remote input's reply due is not coming: the stop does
          // not wait for it.
          own.add(StopReason::stalled);
          request_stop_at_once();
          ::pthread_kill(main, SIGUSR2);
        }) {
    if (input_) size_bounce();
  }

  int run();

 private:
  // The reader's own state: its signals, phase and stop reasons.
  ProcessState& own() const { return run_.reader(); }
  // A stop signal came: the reader's own, or the writer's (SIGUSR2).
  bool stop_asked() const { return own().signals() > 0 || own().has(StopReason::stop_reading); }

  // Nothing is read before the output is open, so a failed open loses no input.
  bool wait_for_writer_ready();

  void say_stopped_while_opening(const std::string& name) const;

  // With -o before -i, as 1.19 opened them in that order: the output is
  // open. An input that cannot be opened ends the run with 1.19's message
  // and status 255, the output closed unwritten (1.19 had emptied it too);
  // a stop while the open waits (a FIFO no one writes to) reads nothing.
  // The run's status when it ends here.
  std::optional<int> open_input_after_output();

  // The writer could not open the output: its status (255) is ours; after a
  // signal, the runtime status.
  int writer_setup_failed();

  // False when reading must stop (signal, or the writer is gone).
  bool wait_for_free_block();

  // Fills block from the input; `got` counts the bytes so far even when a
  // signal interrupts. Returns false at end of input.
  bool fill(std::span<std::byte> block, std::size_t& got);

  // A record larger than the reader takes at once: the words reblock uses,
  // then the -s that reads it (when the tape can tell the record's size).
  std::string record_too_large_text(const Error& e) const;

  // One read from the input, watched by --timeout.
  std::size_t read_input(std::span<std::byte> buffer);

  // --input-rate: waits off the last read before the next one, so a stop
  // while waiting never leaves read data behind. False when reading must stop.
  bool pay_for_last_read();

  void size_bounce();

  // End of data on the current volume: a read that returns nothing, which on
  // a tape is the filemark ending the file being read (what closing a volume
  // written with --next-volume leaves) or the end of recorded data, and on a
  // file or pipe the end of the file. With --next-volume and no -o, runs the
  // command and goes on with the next volume; returns false at the end of
  // the input: without --next-volume, when a volume has no data at all, or
  // (with volume_error_ set) when the change failed.
  bool next_input_volume();

  void publish(std::span<std::byte> block, std::size_t got);

  int writer_gone();

  // A first signal that only the reader received still ends the writer's
  // read-back (--verify), if it is reading back or comes to it; it goes on
  // writing out the queue.
  void stop_read_back();

  // The writer stops taking blocks, closes its output (as a tape: filemark,
  // buffered records written out) and says what reached it.
  void abandon_queue();

  // Waits for the writer to drain the ring. A further signal abandons the
  // queue; after that, a signal kills the writer only if it has made no
  // progress since the signal before (stuck in the kernel on a dead device
  // or mount): a writer that is still closing its output is never killed.
  // A first signal that comes only now, the input already read, is said as
  // one during reading is: a stop must never be silent.
  int finish_writer(int status, int signals_announced, bool abandoned = false);

  // "102400 bytes still queued (10 blocks)"
  std::string queued_text() const;

  std::string output_name() const;

  Ring& ring_;
  RunState& run_;
  std::unique_ptr<Tape> input_;
  const Options& options_;
  Child& writer_;
  Clock::time_point& input_ended_;
  std::function<void(const Tape&)> opened_;  // told of an input opened late
  std::vector<std::byte> bounce_;
  std::size_t carry_ = 0;
  std::size_t carry_end_ = 0;
  std::uint64_t bytes_read_ = 0;
  std::uint64_t next_gib_ = kGiB;
  bool writer_drained_ = false;  // the writer wrote out the whole queue and ended well
  bool late_stop_announced_ = false;  // a first signal came after the input had ended
  std::size_t volume_ = 1;          // the input volume being read
  std::uint64_t volume_bytes_ = 0;  // bytes read from it
  std::string volume_error_;        // why changing input volumes failed
  std::uint64_t unpaid_ = 0;        // bytes read, not yet waited off for --input-rate
  RateLimit input_limit_;
  Watchdog watchdog_;
};

int Reader::run() {
  if (!wait_for_writer_ready()) return writer_setup_failed();
  if (!input_) {
    if (std::optional<int> status = open_input_after_output()) return *status;
  }
  if (options_.debug) print_stderr("R: Entering reader\n");
  bool more = true;
  std::string read_error;
  while (more) {
    if (!wait_for_free_block()) break;
    std::span<std::byte> block = ring_.next_free_block();
    std::size_t got = 0;
    try {
      more = fill(block, got);
    } catch (const Interrupted&) {
      more = false;
    } catch (const Error& e) {
      // Drain what was accepted, then report: the data already read reaches
      // the output (1.19 discarded it). 1.19's line comes first; a damaged
      // tape image also says what is damaged and where, as reblock and mt do.
      read_error = "buffer (reader): failed to read input: " + strerror_text(e.errnum()) + "\n";
      if (e.errnum() == ENOMEM) read_error += record_too_large_text(e);
      read_error += stream_lost_text(e, "reader");
      if (const auto* damaged = dynamic_cast<const DamagedImage*>(&e))
        read_error += "buffer (reader): " + input_->name() + ": " + damaged->damage() +
                      (damaged->is_damage() ? " (mt verify shows the first damage)" : "") + "\n";
      more = false;
    }
    if (got > 0) publish(block, got);
    if (!volume_error_.empty()) read_error = volume_error_;
    if (options_.seek_every_gib && bytes_read_ >= next_gib_) {
      next_gib_ += kGiB;
      rewind_offset_if_device(input_->poll_fd());
    }
  }
  watchdog_.stop();
  if (own().has(StopReason::stalled))
    print_stderr("buffer (reader): the input hung: no data came from " + input_->name() +
                 " in " + seconds_text(std::chrono::seconds(options_.timeout_seconds)) +
                 " (--timeout); " +
                 (run_.drain_on_signal() ? "what was read is written out\n"
                                         : "the queue is abandoned\n"));
  input_ended_ = Clock::now();
  if (own().has(StopReason::peer_gone)) return writer_gone();
  bool stopped = stop_asked();
  // A stop from the --timeout watchdog has said why above; the words for a
  // stop signal are for signals.
  bool signalled = stopped && !own().has(StopReason::stalled);
  const int signals_announced = signalled ? own().signals() : 0;
  if (stopped && !run_.drain_on_signal()) {
    if (signalled)
      print_stderr(stop_words(Stop::no_drain, own().stop_signal(), queued_text()));
    abandon_queue();
    return finish_writer(kExitRuntime, std::max(signals_announced, 1), /*abandoned=*/true);
  }
  if (signalled) {
    print_stderr(stop_words(Stop::draining, own().stop_signal(), queued_text()));
    stop_read_back();
  }
  ring_.finish_input(read_error.empty() && !stopped);
  if (options_.debug) print_stderr("R: Exiting reader\n");
  int status = finish_writer(stopped ? kExitRuntime : kExitOk, signals_announced);
  if ((signalled || late_stop_announced_) && writer_drained_)
    print_stderr(stop_words(Stop::written_out, own().stop_signal(), "",
                            std::to_string(ring_.stats().bytes_out) + " bytes reached " +
                                output_name()));
  if (!read_error.empty()) {
    print_stderr(read_error);
    status = kExitRuntime;
  }
  return status;
}

bool Reader::wait_for_writer_ready() {
  while (!run_.writer_ready()) {
    if (own().has(StopReason::peer_gone)) return false;
    if (stop_asked()) {
      // The writer may be blocked opening the output; it gives up on SIGTERM.
      ::kill(writer_.pid(), SIGTERM);
      say_stopped_while_opening(output_name());
      return false;
    }
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

void Reader::say_stopped_while_opening(const std::string& name) const {
  print_stderr("buffer: stopped by " + signal_name(own().stop_signal()) + " while " + name +
               " was still being opened; nothing was read\n");
}

std::optional<int> Reader::open_input_after_output() {
  try {
    input_ = open_input(options_);
  } catch (const Interrupted&) {
    if (own().has(StopReason::peer_gone)) return writer_gone();
    say_stopped_while_opening(options_.input);
    ring_.finish_input(false);
    return finish_writer(kExitRuntime, own().signals());
  } catch (...) {
    ring_.finish_input(false);
    finish_writer(kExitSetup, 0);
    throw;
  }
  size_bounce();
  opened_(*input_);
  return std::nullopt;
}

int Reader::writer_setup_failed() {
  own().set_phase(Phase::waiting_for_writer);
  clear_stop();
  int status = writer_.wait();
  if (stop_asked()) return kExitRuntime;
  return WIFEXITED(status) ? WEXITSTATUS(status) : kExitRuntime;
}

bool Reader::wait_for_free_block() {
  for (;;) {
    if (own().has(StopReason::peer_gone) || stop_asked()) return false;
    Ring::Wait waited = ring_.wait_free(kPollInterval);
    if (waited == Ring::Wait::ready) return true;
    if (waited == Ring::Wait::finished) return false;
  }
}

bool Reader::fill(std::span<std::byte> block, std::size_t& got) {
  while (got < block.size()) {
    std::size_t n;
    if (input_->keeps_records()) {
      // A tape read takes a whole record: read into a record-sized buffer
      // and carry what does not fit into the next block, so no record is
      // ever cut (1.19 lost records when -s was not a multiple).
      if (carry_ == carry_end_) {
        if (!pay_for_last_read()) return false;
        carry_ = 0;
        carry_end_ = read_input(bounce_);
        if (carry_end_ == 0) {
          if (next_input_volume()) continue;
          return false;
        }
      }
      n = std::min(block.size() - got, carry_end_ - carry_);
      std::memcpy(block.data() + got, bounce_.data() + carry_, n);
      carry_ += n;
    } else {
      if (!pay_for_last_read()) return false;
      n = read_input(block.subspan(got));
      if (n == 0) {
        if (next_input_volume()) continue;
        return false;
      }
    }
    got += n;
    bytes_read_ += n;
    volume_bytes_ += n;
    if (options_.debug >= 2) print_stderr("R: got " + std::to_string(n) + " bytes\n");
  }
  return true;
}

std::string Reader::record_too_large_text(const Error& e) const {
  std::string limit = bounce_.size() == options_.block_size
                          ? "-s " + std::to_string(bounce_.size()) + " bytes"
                          : std::to_string(bounce_.size()) + " bytes (the larger of -s and 1 MiB)";
  std::string text = "buffer (reader): " + e.context() + ": " +
                     record_larger_than(input_->name(), limit);
  const auto* sized = dynamic_cast<const RecordTooLarge*>(&e);
  if (sized == nullptr || sized->record_bytes() == 0)
    return text + "; an -s as large as the record reads it\n";
  std::uint64_t needed = sized->record_bytes();
  text += "; -s " + std::to_string(needed);
  if (kLegacyQueueHeader + needed > options_.max_shmem)
    text += " -m " + std::to_string(kLegacyQueueHeader + needed) + " (or more)";
  return text + " reads it\n";
}

std::size_t Reader::read_input(std::span<std::byte> buffer) {
  std::size_t n;
  {
    Watchdog::Call call = watchdog_.watch();
    n = input_->read(buffer);
  }
  unpaid_ += n;
  return n;
}

bool Reader::pay_for_last_read() {
  std::uint64_t bytes = unpaid_;
  unpaid_ = 0;
  return input_limit_.pace(bytes,
                           [this] { return stop_asked() || own().has(StopReason::peer_gone); });
}

void Reader::size_bounce() {
  if (input_->keeps_records() && bounce_.empty())
    bounce_.resize(std::max<std::size_t>(options_.block_size, std::size_t{1} << 20));
}

bool Reader::next_input_volume() {
  if (!reads_volumes(options_)) return false;
  if (volume_bytes_ == 0) {
    if (volume_ > 1)
      print_stderr("buffer (reader): volume " + std::to_string(volume_) + " of " +
                   input_->name() + " has no data: end of input\n");
    return false;
  }
  input_->close();
  try {
    input_ = open_next_volume(options_, VolumeSide::input, volume_ + 1, bytes_read_,
                              input_->name());
  } catch (const ExactExit& e) {
    volume_error_ = e.what();
    return false;
  }
  ++volume_;
  volume_bytes_ = 0;
  carry_ = carry_end_ = 0;
  size_bounce();
  return true;
}

void Reader::publish(std::span<std::byte> block, std::size_t got) {
  if (got < block.size() && options_.pad_last_block) {
    std::memset(block.data() + got, 0, block.size() - got);
    got = block.size();
  }
  ring_.publish(got);
}

int Reader::writer_gone() {
  own().set_phase(Phase::waiting_for_writer);
  clear_stop();
  int status = writer_.wait();
  if (!run_.writer_reported())
    print_stderr("buffer (reader): the writer process ended (" + describe_wait_status(status) +
                 "); " + std::to_string(ring_.stats().bytes_out) + " bytes were written\n");
  return kExitRuntime;
}

void Reader::stop_read_back() {
  if (!options_.verify) return;
  union sigval which {};
  which.sival_int = own().stop_signal();
  ::sigqueue(writer_.pid(), SIGUSR1, which);
}

void Reader::abandon_queue() {
  ring_.request_abort();
  ::kill(writer_.pid(), SIGUSR1);
}

int Reader::finish_writer(int status, int signals_announced, bool abandoned) {
  own().set_phase(Phase::waiting_for_writer);
  int signals_seen = signals_announced;
  bool abandoning = abandoned;
  bool killed = false;
  std::uint64_t steps = 0;
  auto take_new_signals = [&](bool writer_done) {
    const int signals = own().signals();
    if (signals <= signals_seen) return;
    if (signals_seen == 0 && signals == 1) {
      if (run_.drain_on_signal() || writer_done) {
        print_stderr(stop_words(Stop::draining_at_end, own().stop_signal(), queued_text()));
        late_stop_announced_ = true;
        stop_read_back();
      } else {
        abandoning = true;
        print_stderr(stop_words(Stop::no_drain, own().stop_signal(), queued_text()));
        abandon_queue();
      }
    } else if (writer_done) {
      // Nothing is left to abandon or to kill.
    } else if (!abandoning) {
      abandoning = true;
      print_stderr(stop_words(Stop::second_signal, own().stop_signal(), queued_text()));
      abandon_queue();
    } else if (ring_.consumer_steps() == steps) {
      run_.set_writer_reported();
      ::kill(writer_.pid(), SIGKILL);
      killed = true;
    } else {
      ::kill(writer_.pid(), SIGUSR1);
    }
    steps = ring_.consumer_steps();
    signals_seen = own().signals();
    status = kExitRuntime;
  };
  for (;;) {
    clear_stop();
    take_new_signals(false);
    try {
      int writer_status = writer_.wait();
      // A signal just before the wait began did not interrupt it.
      take_new_signals(true);
      if (killed) {
        // What it had handed to the output is an upper bound: an output
        // that buffers (a tape image) lost what it had not yet stored.
        print_stderr("buffer (reader): the writer made no progress after it was told to stop "
                     "and was killed; at most " +
                     std::to_string(ring_.stats().bytes_out) + " bytes reached " +
                     output_name() + "\n");
        return kExitRuntime;
      }
      writer_drained_ = writer_status == 0 && !abandoning;
      if (writer_status != 0) {
        if (!run_.writer_reported() && !(WIFEXITED(writer_status)))
          print_stderr("buffer (reader): the writer process ended (" +
                       describe_wait_status(writer_status) + ")\n");
        return kExitRuntime;
      }
      return status;
    } catch (const Interrupted&) {
      // Taken at the top of the loop.
    }
  }
}

std::string Reader::queued_text() const {
  RingStats stats = ring_.stats();
  return std::to_string(stats.bytes_in - stats.bytes_out) + " bytes still queued (" +
         std::to_string(stats.blocks_filled) + (stats.blocks_filled == 1 ? " block)" : " blocks)");
}

std::string Reader::output_name() const {
  return options_.output.empty() ? std::string("standard output") : options_.output;
}


}  // namespace

int read_input(Ring& ring, RunState& run, std::unique_ptr<Tape> input, const Options& options, Child& writer,
               Clock::time_point& input_ended,
               const std::function<void(const Tape&)>& opened) {
  Reader reader(ring, run, std::move(input), options, writer, input_ended, opened);
  return reader.run();
}

}  // namespace tk::buffer
