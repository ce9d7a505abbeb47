// buffer's two processes. The parent reads and fills the ring, the child
// writes it out, as in buffer 1.19; the ring is an anonymous shared mapping
// made before the fork, so it vanishes with the last process, however it dies.
#include "buffer.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../common/run_main.hpp"
#include "../common/same_file.hpp"
#include "../common/version.hpp"
#include "../../lib/process.hpp"
#include "../../lib/ring/ring.hpp"
#include "../../lib/tape/remote_tape.hpp"
#include "../../lib/tape/simh_tape.hpp"
#include "../../lib/tape/tape.hpp"
#include "digest_channel.hpp"
#include "outputs.hpp"
#include "rate_limit.hpp"
#include "report.hpp"
#include "volume_change.hpp"
#include "watchdog.hpp"

namespace tk::buffer {
namespace {

using namespace std::chrono_literals;

// Signal flags: the only mutable globals (style.md §8). Handlers touch
// nothing else, and request_stop() makes blocking calls give up.
volatile std::sig_atomic_t g_signals = 0;     // INT, TERM, HUP, QUIT received
volatile std::sig_atomic_t g_peer_gone = 0;   // reader: writer exited; writer: reader died
volatile std::sig_atomic_t g_stop_input = 0;  // reader: the writer was signalled
volatile std::sig_atomic_t g_drain = 1;       // drain the queue on the first signal
volatile std::sig_atomic_t g_final_wait = 0;  // reader: waiting for the writer to finish
volatile std::sig_atomic_t g_writer_pid = 0;  // reader: which child is the writer
volatile std::sig_atomic_t g_writer_ready = 0;  // writer: output open, queue draining
volatile std::sig_atomic_t g_abandon = 0;  // writer: the reader asked it to abandon the queue
// Writer: an output is being read back (--verify), which one stop signal
// ends, since nothing is left to write; and whether a stop has come, after
// which nothing more is read back.
volatile std::sig_atomic_t g_verifying = 0;
volatile std::sig_atomic_t g_verify_stopped = 0;
// The signal that asked for the stop (the latest one), for the words that
// say why a run ended; the reader also learns the writer's, with SIGUSR2.
volatile std::sig_atomic_t g_stop_signal = 0;
// Set by the --timeout watchdog's thread before it interrupts its side.
std::atomic<bool> g_input_stalled{false};   // reader: a read took the whole timeout
std::atomic<bool> g_output_stalled{false};  // writer: a block write took the whole timeout

constexpr auto kPollInterval = 250ms;  // how soon a side notices the other's death
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr int kTerminatingSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void on_reader_signal(int sig) {
  g_signals = g_signals + 1;
  g_stop_signal = sig;
  request_stop();
}
// Other children (the remote shell of a host:path input) may end too; only
// the writer's end counts. WNOWAIT leaves it to be reaped by its owner.
void on_child_exit(int) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(g_writer_pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0)
    return;
  g_peer_gone = 1;
  if (!g_final_wait) request_stop();
}
// The writer queues the signal it received as SIGUSR2's value.
void on_stop_input(int, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_QUEUE) g_stop_signal = info->si_value.sival_int;
  g_stop_input = 1;
  request_stop();
}
// The writer keeps writing on the first signal and asks the reader to stop
// reading; a second signal (or --no-drain) stops it at once, and so does the
// first while the output is still being opened (a FIFO or a remote shell may
// never answer).
void on_writer_signal(int sig) {
  g_signals = g_signals + 1;
  g_stop_signal = sig;
  g_verify_stopped = 1;
  if (g_signals >= 2 || !g_drain || !g_writer_ready || g_verifying) {
    request_stop();
  } else {
    union sigval which {};
    which.sival_int = sig;
    ::sigqueue(::getppid(), SIGUSR2, which);
  }
}
// The reader's SIGUSR1: abandon the queue (a second signal reached the
// reader alone, or --no-drain). Stopping is not dying: the writer still
// closes its output as a tape and says what reached it.
// A SIGUSR1 the reader queues (sigqueue) instead carries the stop signal it
// received: it only ends a read-back (--verify) and skips any still to come.
void on_abandon_request(int, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_QUEUE) {
    g_stop_signal = info->si_value.sival_int;
    g_verify_stopped = 1;
    if (g_verifying) request_stop();
    return;
  }
  g_abandon = 1;
  request_stop();
}
void on_reader_death(int) {
  g_peer_gone = 1;
  request_stop();
}

void install_handler(int sig, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked read or write must return
  ::sigaction(sig, &action, nullptr);
}
void install_handler(int sig, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction action {};
  action.sa_sigaction = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO;
  ::sigaction(sig, &action, nullptr);
}

// "SIGTERM", or "a signal" when none was recorded.
std::string stop_signal_name() {
  int sig = g_stop_signal;
  const char* abbreviation = sig > 0 ? ::sigabbrev_np(sig) : nullptr;
  return abbreviation ? std::string("SIG") + abbreviation : std::string("a signal");
}

bool is_char_device(int fd) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
}

// A 64 KiB pipe makes producer and consumer take turns in small steps. A
// pipe of 1 MiB (the default pipe-max-size), or two blocks if larger and
// allowed, lets each side move whole blocks per wake-up: through
// cat | buffer -s 256k | cat it was the most consistently fast size measured.
void enlarge_pipe(int fd, std::size_t block_size) {
  constexpr std::size_t kPreferred = std::size_t{1} << 20;
  if (fd < 0) return;
  if (grow_pipe(fd, std::max(kPreferred, block_size * 2)) < kPreferred) grow_pipe(fd, kPreferred);
}

// buffer 1.19's -Z: rewind a character device after each GiB, for old tape
// drivers with 2 GiB offset limits. Harmless on Linux st, so failures are ignored.
void rewind_offset_if_device(int fd) {
  if (is_char_device(fd)) ::lseek(fd, 0, SEEK_SET);
}

std::string strerror_text(int err) { return std::strerror(err); }

// For a host:path name, "cannot open" is followed by what the remote backend
// saw (how the remote shell ended; the error itself is on the line before).
// The way out for a local file whose name has a colon (backup-10:00.tar) is
// offered only when such a file could exist here: its directory does.
std::string remote_detail(const std::string& name, const Error& e, const Options& o) {
  OpenOptions how;
  how.force_local = o.force_local;
  if (!opens_remote(name, how)) return "";
  std::string text = "buffer: " + e.context();
  std::size_t slash = name.rfind('/');
  std::string directory = slash == std::string::npos ? "." : name.substr(0, slash + 1);
  struct stat st {};
  if (::stat(directory.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    text += " (--force-local makes " + name + " a local file)";
  // The remote rmt's own error ("open h:/x") adds nothing to 1.19's lines.
  else if (e.context() == "open " + name)
    return "";
  return text + "\n";
}

// Which of a remote tape's streams was lost, how, and what the tape holds:
// the line after 1.19's, which has only strerror's words.
std::string stream_lost_text(const Error& e, const char* role = "writer") {
  if (dynamic_cast<const StreamLost*>(&e) == nullptr) return "";
  return std::string("buffer (") + role + "): " + e.context() + "\n";
}

OpenOptions open_options(const Options& o) {
  OpenOptions oo;
  oo.rsh_command = o.rsh_command;
  oo.rmt_command = o.rmt_command;
  oo.force_local = o.force_local;
  oo.connect_timeout = o.connect_timeout;
  oo.plain_remote = o.plain_remote;
  // A digest cannot take back records a pipelined tape turns out not to
  // have taken, which --next-volume then writes again on the next volume.
  oo.pipelined_writes = !(o.hash && o.next_volume);
  oo.streams = o.streams;
  // --streams auto aims at no more than --output-rate lets through.
  oo.stream_rate = o.output_rate;
  oo.warn = [](const std::string& text) { print_stderr("buffer: warning: " + text + "\n"); };
  return oo;
}

// Opens one end: `name` (empty: the inherited descriptor `fd`) with `flags`;
// `role` is "input" or "output", as in buffer 1.19's messages.
std::unique_ptr<Tape> open_end(const std::string& name, int fd, int flags, const char* role,
                               const Options& o) {
  if (name.empty()) {
    try {
      return tape_from_fd(fd, fd == 0 ? "standard input" : "standard output");
    } catch (const Error& e) {
      throw ExactExit(kExitSetup, std::string("buffer: can't stat ") + role +
                                      " file: " + strerror_text(e.errnum()) + "\n");
    }
  }
  try {
    return open_tape(name, flags, open_options(o));
  } catch (const Interrupted&) {
    throw;  // a signal while opening: quiet, as any stop
  } catch (const Error& e) {
    // 1.19's two lines, then why where the tape layer knows more: a file
    // named *.tap that is no image, the remote shell that ended.
    const auto* damaged = dynamic_cast<const DamagedImage*>(&e);
    std::string detail = damaged ? "buffer: " + name + ": " + damaged->damage() + "\n"
                                 : remote_detail(name, e, o);
    throw ExactExit(kExitSetup, std::string("buffer: cannot open ") + role + " file: " +
                                    strerror_text(e.errnum()) + "\nfilename: " + name + "\n" +
                                    detail);
  }
}

void refuse_output_as_input(const Options& o, const std::string& output, const char* option) {
  if (output_is_input(o.input, output, open_options(o)))
    throw ExactExit(kExitSetup, output_is_input_text("buffer", option, output));
}

// --verify reads each output back by opening it again. A FIFO's second
// open waits for a writer that never comes, and a socket cannot be opened
// at all: refused before anything is opened or read. A name that does not
// exist yet becomes a file; a remote one is the rmt server's to open.
void refuse_unverifiable(const Options& o, const std::string& output, const char* option) {
  if (!o.verify || output.empty() || output == "-") return;
  OpenOptions how;
  how.force_local = o.force_local;
  if (opens_remote(output, how)) return;
  struct stat st {};
  if (::stat(output.c_str(), &st) != 0) return;
  const char* what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : nullptr;
  if (what == nullptr) return;
  throw ExactExit(kExitSetup, std::string("buffer: --verify cannot read back ") + option + " " +
                                  output + ": it is " + what + "\n");
}

std::unique_ptr<Tape> open_input(const Options& o) {
  return open_end(o.input, 0, O_RDONLY, "input", o);
}

std::unique_ptr<Tape> open_output(const Options& o) {
  return open_end(o.output, 1, O_WRONLY | O_CREAT | O_TRUNC, "output", o);
}

// Under --json a stop's last words are "message" objects too: run_main
// prints what reaches it as text, so what body throws is turned into an
// ExactExit of JSON lines first. Without --json, body runs as it is.
int with_json_diagnostics(bool json, const std::string& program, int failure,
                          const std::function<int()>& body) {
  if (!json) return body();
  try {
    return body();
  } catch (const ExactExit& e) {
    throw ExactExit(e.status(), json_message_lines(e.what()));
  } catch (const UsageError& e) {
    throw ExactExit(failure, json_message_lines(program + ": " + e.what() + "\n" + kUsageText));
  } catch (const Interrupted&) {
    throw;  // quiet, as any stop
  } catch (const Error& e) {
    if (e.errnum() == EPIPE) throw;
    throw ExactExit(failure, json_message_lines(program + ": " + e.what() + "\n"));
  } catch (const std::exception& e) {
    throw ExactExit(failure, json_message_lines(program + ": internal error: " + e.what() + "\n"));
  }
}

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

// ---------------------------------------------------------------------------
// Live status (a thread in the reader process).

class StatusThread {
 public:
  StatusThread(const Ring& ring, const Options& options, Clock::time_point start,
               std::optional<std::uint64_t> total_bytes)
      : ring_(ring), options_(options), start_(start), total_bytes_(total_bytes) {
    live_ = options.progress && ::isatty(2);
    if (!live_ && options.interval_seconds <= 0) return;
    // Signals must reach the main thread, whose blocking calls they interrupt.
    sigset_t all, previous;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous);
    thread_ = std::thread([this] { loop(); });
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }
  ~StatusThread() { stop(); }
  StatusThread(const StatusThread&) = delete;
  StatusThread& operator=(const StatusThread&) = delete;

  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (live_) print_stderr("\n");
  }

 private:
  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  void loop() {
    auto every = live_ ? std::chrono::duration<double>(0.5)
                       : std::chrono::duration<double>(options_.interval_seconds);
    auto tick = std::chrono::duration_cast<Clock::duration>(every);
    Clock::time_point next = start_ + tick;
    Interval period;
    period.ring_blocks = ring_.blocks();
    period.total_bytes = total_bytes_;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_until(lock, next, [this] { return stopping_; })) {
      next += tick;
      period.now = ring_.stats();
      period.to_s = seconds_since_start();
      if (live_)
        print_stderr(progress_line(period));
      else
        if (options_.json)
        print_stderr_as_is(interval_json(period));
      else
        print_stderr(interval_line(period));
      period.from_s = period.to_s;
      period.before = period.now;
    }
  }

  const Ring& ring_;
  const Options& options_;
  Clock::time_point start_;
  std::optional<std::uint64_t> total_bytes_;
  bool live_ = false;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

// ---------------------------------------------------------------------------
// The reader (parent process).

class Reader {
 public:
  Reader(Ring& ring, std::unique_ptr<Tape> input, const Options& options, Child& writer,
         Clock::time_point& input_ended)
      : ring_(ring),
        input_(std::move(input)),
        options_(options),
        writer_(writer),
        input_ended_(input_ended),
        input_limit_(options.input_rate),
        watchdog_(std::chrono::seconds(options.timeout_seconds), [main = ::pthread_self()] {
          // The input's stop request interrupts the read; the flag says why.
          g_input_stalled = true;
          ::pthread_kill(main, SIGUSR2);
        }) {
    size_bounce();
  }

  int run() {
    if (!wait_for_writer_ready()) return writer_setup_failed();
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
    if (g_input_stalled)
      print_stderr("buffer (reader): the input hung: no data came from " + input_->name() +
                   " in " + seconds_text(std::chrono::seconds(options_.timeout_seconds)) +
                   " (--timeout); " +
                   (g_drain ? "what was read is written out\n" : "the queue is abandoned\n"));
    input_ended_ = Clock::now();
    if (g_peer_gone) return writer_gone();
    bool stopped = g_signals || g_stop_input;
    // A stop from the --timeout watchdog has said why above; the words for a
    // stop signal are for signals.
    bool signalled = stopped && !g_input_stalled;
    const int signals_announced = signalled ? static_cast<int>(g_signals) : 0;
    if (stopped && !g_drain) {
      if (signalled)
        print_stderr("buffer: " + stop_signal_name() + ": stopping; --no-drain: the " +
                     queued_text() + " are abandoned\n");
      abandon_queue();
      return finish_writer(kExitRuntime, std::max(signals_announced, 1), /*abandoned=*/true);
    }
    if (signalled) {
      print_stderr("buffer: " + stop_signal_name() + ": stopping; reading has stopped, writing out " +
                   "the " + queued_text() + "; a second signal abandons them\n");
      stop_read_back();
    }
    ring_.finish_input(read_error.empty() && !stopped);
    if (options_.debug) print_stderr("R: Exiting reader\n");
    int status = finish_writer(stopped ? kExitRuntime : kExitOk, signals_announced);
    if ((signalled || late_stop_announced_) && writer_drained_)
      print_stderr("buffer: stopped by " + stop_signal_name() + " after the queue was written out: " +
                   std::to_string(ring_.stats().bytes_out) + " bytes reached " + output_name() +
                   ", all that was read\n");
    if (!read_error.empty()) {
      print_stderr(read_error);
      status = kExitRuntime;
    }
    return status;
  }

 private:
  // Nothing is read before the output is open, so a failed open loses no input.
  bool wait_for_writer_ready() {
    while (!ring_.consumer_ready()) {
      if (g_peer_gone) return false;
      if (g_signals || g_stop_input) {
        // The writer may be blocked opening the output; it gives up on SIGTERM.
        ::kill(writer_.pid(), SIGTERM);
        print_stderr("buffer: stopped by " + stop_signal_name() + " while " + output_name() +
                     " was still being opened; nothing was read\n");
        return false;
      }
      std::this_thread::sleep_for(1ms);
    }
    return true;
  }

  // The writer could not open the output: its status (255) is ours; after a
  // signal, the runtime status.
  int writer_setup_failed() {
    g_final_wait = 1;
    clear_stop();
    int status = writer_.wait();
    if (g_signals || g_stop_input) return kExitRuntime;
    return WIFEXITED(status) ? WEXITSTATUS(status) : kExitRuntime;
  }

  // False when reading must stop (signal, or the writer is gone).
  bool wait_for_free_block() {
    for (;;) {
      if (g_peer_gone || g_signals || g_stop_input) return false;
      Ring::Wait waited = ring_.wait_free(kPollInterval);
      if (waited == Ring::Wait::ready) return true;
      if (waited == Ring::Wait::finished) return false;
    }
  }

  // Fills block from the input; `got` counts the bytes so far even when a
  // signal interrupts. Returns false at end of input.
  bool fill(std::span<std::byte> block, std::size_t& got) {
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

  // A record larger than the reader takes at once: the words reblock uses,
  // then the -s that reads it (when the tape can tell the record's size).
  std::string record_too_large_text(const Error& e) const {
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

  // One read from the input, watched by --timeout.
  std::size_t read_input(std::span<std::byte> buffer) {
    std::size_t n;
    {
      Watchdog::Call call = watchdog_.watch();
      n = input_->read(buffer);
    }
    unpaid_ += n;
    return n;
  }

  // --input-rate: waits off the last read before the next one, so a stop
  // while waiting never leaves read data behind. False when reading must stop.
  bool pay_for_last_read() {
    std::uint64_t bytes = unpaid_;
    unpaid_ = 0;
    return input_limit_.pace(bytes, [] { return g_signals || g_stop_input || g_peer_gone; });
  }

  void size_bounce() {
    if (input_->keeps_records() && bounce_.empty())
      bounce_.resize(std::max<std::size_t>(options_.block_size, std::size_t{1} << 20));
  }

  // End of data on the current volume: a read that returns nothing, which on
  // a tape is the filemark ending the file being read (what closing a volume
  // written with --next-volume leaves) or the end of recorded data, and on a
  // file or pipe the end of the file. With --next-volume and no -o, runs the
  // command and goes on with the next volume; returns false at the end of
  // the input: without --next-volume, when a volume has no data at all, or
  // (with volume_error_ set) when the change failed.
  bool next_input_volume() {
    if (!reads_volumes(options_)) return false;
    if (volume_bytes_ == 0) {
      if (volume_ > 1)
        print_stderr("buffer (reader): volume " + std::to_string(volume_) + " of " +
                     input_->name() + " has no data: end of input\n");
      return false;
    }
    input_->close();
    print_stderr("buffer (reader): end of data on " + input_->name() + " after " +
                 std::to_string(bytes_read_) + " bytes; running the volume change command\n");
    int status = run_volume_command(*options_.next_volume, volume_ + 1, bytes_read_,
                                    "BUFFER_INPUT", options_.input);
    if (status != 0) {
      volume_error_ = "buffer (reader): volume change command failed (" +
                      describe_wait_status(status) + "); " + std::to_string(bytes_read_) +
                      " bytes were read\n";
      return false;
    }
    try {
      input_ = open_tape(options_.input, O_RDONLY, open_options(options_));
    } catch (const Interrupted&) {
      throw;
    } catch (const Error& e) {
      volume_error_ = "buffer (reader): cannot open volume " + std::to_string(volume_ + 1) +
                      ": " + e.what() + "\n";
      return false;
    }
    ++volume_;
    volume_bytes_ = 0;
    carry_ = carry_end_ = 0;
    size_bounce();
    print_stderr("buffer (reader): reading volume " + std::to_string(volume_) + "\n");
    return true;
  }

  void publish(std::span<std::byte> block, std::size_t got) {
    if (got < block.size() && options_.pad_last_block) {
      std::memset(block.data() + got, 0, block.size() - got);
      got = block.size();
    }
    ring_.publish(got);
  }

  int writer_gone() {
    g_final_wait = 1;
    clear_stop();
    int status = writer_.wait();
    if (!ring_.consumer_reported())
      print_stderr("buffer (reader): the writer process ended (" + describe_wait_status(status) +
                   "); " + std::to_string(ring_.stats().bytes_out) + " bytes were written\n");
    return kExitRuntime;
  }

  // A first signal that only the reader received still ends the writer's
  // read-back (--verify), if it is reading back or comes to it; it goes on
  // writing out the queue.
  void stop_read_back() {
    if (!options_.verify) return;
    union sigval which {};
    which.sival_int = g_stop_signal;
    ::sigqueue(writer_.pid(), SIGUSR1, which);
  }

  // The writer stops taking blocks, closes its output (as a tape: filemark,
  // buffered records written out) and says what reached it.
  void abandon_queue() {
    ring_.request_abort();
    ::kill(writer_.pid(), SIGUSR1);
  }

  // Waits for the writer to drain the ring. A further signal abandons the
  // queue; after that, a signal kills the writer only if it has made no
  // progress since the signal before (stuck in the kernel on a dead device
  // or mount): a writer that is still closing its output is never killed.
  // A first signal that comes only now, the input already read, is said as
  // one during reading is: a stop must never be silent.
  int finish_writer(int status, int signals_announced, bool abandoned = false) {
    g_final_wait = 1;
    int signals_seen = signals_announced;
    bool abandoning = abandoned;
    bool killed = false;
    std::uint64_t steps = 0;
    auto take_new_signals = [&](bool writer_done) {
      if (g_signals <= signals_seen) return;
      if (signals_seen == 0 && g_signals == 1) {
        if (g_drain || writer_done) {
          print_stderr("buffer: " + stop_signal_name() + ": stopping; the input has ended, writing out " +
                       "the " + queued_text() + "; a second signal abandons them\n");
          late_stop_announced_ = true;
          stop_read_back();
        } else {
          abandoning = true;
          print_stderr("buffer: " + stop_signal_name() + ": stopping; --no-drain: the " +
                       queued_text() + " are abandoned\n");
          abandon_queue();
        }
      } else if (writer_done) {
        // Nothing is left to abandon or to kill.
      } else if (!abandoning) {
        abandoning = true;
        print_stderr("buffer: a second " + stop_signal_name() + ": abandoning the " +
                     queued_text() + "\n");
        abandon_queue();
      } else if (ring_.consumer_steps() == steps) {
        ring_.set_consumer_reported();
        ::kill(writer_.pid(), SIGKILL);
        killed = true;
      } else {
        ::kill(writer_.pid(), SIGUSR1);
      }
      steps = ring_.consumer_steps();
      signals_seen = g_signals;
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
          if (!ring_.consumer_reported() && !(WIFEXITED(writer_status)))
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

  // "102400 bytes still queued (10 blocks)"
  std::string queued_text() const {
    RingStats stats = ring_.stats();
    return std::to_string(stats.bytes_in - stats.bytes_out) + " bytes still queued (" +
           std::to_string(stats.blocks_filled) + (stats.blocks_filled == 1 ? " block)" : " blocks)");
  }

  std::string output_name() const {
    return options_.output.empty() ? std::string("standard output") : options_.output;
  }

  Ring& ring_;
  std::unique_ptr<Tape> input_;
  const Options& options_;
  Child& writer_;
  Clock::time_point& input_ended_;
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

// What is left to read, when known: --size, or the rest of a regular file.
std::optional<std::uint64_t> input_size(const Options& o, const Tape& input) {
  if (o.size) return o.size;
  struct stat st {};
  int fd = input.poll_fd();
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  off_t at = ::lseek(fd, 0, SEEK_CUR);
  if (at < 0 || at > st.st_size) at = 0;
  return static_cast<std::uint64_t>(st.st_size - at);
}

void print_debug_geometry(const Options& o) {
  print_stderr("debugging turned on\nbuffer: blocks = " + std::to_string(o.blocks) +
               ", blocksize = " + std::to_string(o.block_size) + ", percent = " +
               std::to_string(o.percent) + "\nbuffer: buffer_size is " +
               std::to_string(o.blocks * o.block_size) + " [" + std::to_string(o.blocks) + " x " +
               std::to_string(o.block_size) + "]\n");
}

// The run itself; run() adds what --json needs around it.
int run_options(const Options& options) {
  if (options.help) {
    std::fputs(kUsageText, stdout);
    std::fputs(kHelpText, stdout);
    return kExitOk;
  }
  if (options.version) {
    std::fputs(version_line("buffer").c_str(), stdout);
    return kExitOk;
  }
  if (options.next_volume && options.output.empty() && options.input.empty())
    throw UsageError(
        "--next-volume needs -o, or -i to read volumes: standard output and input cannot be "
        "reopened");
  // Every option has been checked before anything is opened (1.19 truncated
  // -o while still parsing). The reader opens the input, the writer the output.
  // buffer 1.19 emptied such an output silently; nothing is opened yet.
  for (const std::string& output : options.tees)
    refuse_output_as_input(options, output, "--tee");
  refuse_output_as_input(options, options.output, "-o");
  refuse_unverifiable(options, options.output, "-o");
  for (const std::string& output : options.tees) refuse_unverifiable(options, output, "--tee");
  if (!options.short_queue_note.empty()) print_stderr(options.short_queue_note);
  std::vector<int> before_input = open_descriptors();
  std::unique_ptr<Tape> input = open_input(options);
  // What opening the input opened (the device or image, a remote shell's
  // pipes), which the writer must not hold: see writer_process.
  std::vector<int> input_fds;
  std::ranges::set_difference(open_descriptors(), before_input, std::back_inserter(input_fds));
  input->expect_sequential_reads();
  enlarge_pipe(input->poll_fd(), options.block_size);
  if (options.debug) print_debug_geometry(options);

  std::unique_ptr<Ring> ring;
  try {
    ring = std::make_unique<Ring>(options.block_size, options.blocks, options.queue_file);
  } catch (const Error& e) {
    if (!options.queue_file.empty())
      throw ExactExit(kExitSetup, std::string("buffer: ") + e.what() + "\n");
    throw ExactExit(kExitSetup, "buffer: couldn't create shared memory segment: " +
                                    strerror_text(e.errnum()) + "\n");
  }

  g_drain = options.drain_on_signal ? 1 : 0;
  ::signal(SIGPIPE, SIG_IGN);
  install_handler(SIGCHLD, on_child_exit);
  install_handler(SIGUSR2, on_stop_input);
  for (int sig : kTerminatingSignals) install_handler(sig, on_reader_signal);

  // The writer hashes; the reader prints the summary.
  std::optional<DigestChannel> digest_channel;
  if (options.hash) digest_channel.emplace();

  // SIGCHLD waits until the writer's pid is known to its handler, and the
  // writer's SIGUSR1 (abandon the queue) until it has its handler.
  sigset_t child_signal, previous_mask;
  sigemptyset(&child_signal);
  sigaddset(&child_signal, SIGCHLD);
  sigaddset(&child_signal, SIGUSR1);
  ::sigprocmask(SIG_BLOCK, &child_signal, &previous_mask);
  std::fflush(nullptr);
  Clock::time_point start = Clock::now();
  pid_t reader = ::getpid();
  pid_t pid = ::fork();
  if (pid == -1) throw ExactExit(kExitSetup, "buffer: unable to fork: " + strerror_text(errno) + "\n");
  if (pid == 0) {
    // The input stays untouched here: _exit runs no destructor, so the
    // reader's Tape is never closed from this side. Only the copies of its
    // descriptors are closed: a drive or an image lock is free again only
    // when the last copy goes, and the reader reopens the input for each
    // volume (as a volume change command may open it, mt offline).
    close_copies(input_fds);
    if (digest_channel) digest_channel->keep_write_end();
    ::_exit(writer_process(*ring, options, start, reader,
                           digest_channel ? &*digest_channel : nullptr));
  }
  if (digest_channel) digest_channel->keep_read_end();
  g_writer_pid = pid;
  ::sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
  Child writer(pid);
  // Only here, after the fork: a thread would not survive it.
  ring->warm_ahead(Ring::Side::producer);
  StatusThread status_thread(*ring, options, start, input_size(options, *input));
  Clock::time_point input_ended = Clock::now();
  ExitPolicy policy{kExitRuntime, kExitRuntime, ""};
  int status = run_main("buffer (reader)", policy, [&] {
    return with_json_diagnostics(options.json, "buffer (reader)", kExitRuntime, [&] {
      Reader reader_loop(*ring, std::move(input), options, writer, input_ended);
      return reader_loop.run();
    });
  });
  status_thread.stop();
  if (reports_progress(options)) {
    Summary summary;
    summary.stats = ring->stats();
    summary.ring_blocks = ring->blocks();
    summary.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    summary.input_s = std::chrono::duration<double>(input_ended - start).count();
    // What the writer computed, if it got as far as its end.
    if (digest_channel)
      summary.digest = read_digest_message(digest_channel->receive(), options.tees);
    if (options.json)
      print_stderr_as_is(summary_json(summary));
    else
      print_stderr(summary_line(summary));
  }
  return status;
}

}  // namespace

int run(const Options& options) {
  set_json_stderr(options.json);
  return with_json_diagnostics(options.json, "buffer", kExitSetup,
                               [&] { return run_options(options); });
}

}  // namespace tk::buffer
