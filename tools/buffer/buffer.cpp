// buffer's two processes. The parent reads and fills the ring, the child
// writes it out, as in buffer 1.19; the ring is an anonymous shared mapping
// made before the fork, so it vanishes with the last process, however it dies.
#include "buffer.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../common/run_main.hpp"
#include "../common/stop_signals.hpp"
#include "../common/version.hpp"
#include "../../lib/process.hpp"
#include "../../lib/ring/ring.hpp"
#include "../../lib/tape/tape.hpp"
#include "report.hpp"
#include "run_state.hpp"
#include "digest_channel.hpp"
#include "ends.hpp"
#include "picture.hpp"
#include "reader.hpp"
#include "record.hpp"
#include "signals.hpp"
#include "sampler.hpp"
#include "status_lines.hpp"
#include "writer.hpp"

namespace tk::buffer {
namespace {

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
    std::fputs(help_text().c_str(), stdout);
    return kExitOk;
  }
  if (options.version) {
    std::fputs(version_line("buffer").c_str(), stdout);
    return kExitOk;
  }
  refuse_one_file_twice(options);
  refuse_unwritable_side_files(options);
  if (!options.plot_from.empty()) return draw_record(options);
  if (options.next_volume && options.output.empty() && options.input.empty())
    throw UsageError(
        "--next-volume needs -o, or -i to read volumes: standard output and input cannot be "
        "reopened");
  // Every option has been checked before anything is opened (1.19 truncated
  // -o while still parsing). The reader opens the input, the writer the output.
  refuse_unverifiable(options, options.output, "-o");
  for (const std::string& output : options.tees) refuse_unverifiable(options, output, "--tee");
  // A line buffer 1.19 never printed: for the person at a terminal (or a
  // --json reader, as an event of its own), never for cron mail or a script
  // that parses -S/-z records.
  if (!options.short_queue_note.empty() && (options.json || ::isatty(STDERR_FILENO) == 1))
    print_stderr(options.short_queue_note);
  // Before anything is written (the queue file, an image's drive state, the
  // output in the writer, which inherits it).
  ignore_file_size_signal();
  // 1.19 opened -i and -o as it met them on the command line. With -o
  // first, the reader opens the input only once the writer has the output,
  // since a FIFO's peer may open the two in that order; otherwise the input
  // is opened here, before the fork. An input that is not there at all
  // fails here, before the output is emptied (1.19 emptied it).
  std::unique_ptr<Tape> input;
  // What opening the input opened (the device or image, a remote shell's
  // pipes), which the writer must not hold: see writer_process.
  std::vector<int> input_fds;
  if (!options.output_before_input || input_is_missing(options)) {
    std::vector<int> before_input = open_descriptors();
    input = open_input(options);
    std::ranges::set_difference(open_descriptors(), before_input, std::back_inserter(input_fds));
  }
  if (options.debug) print_debug_geometry(options);

  std::unique_ptr<Ring> ring;
  std::optional<RunState> run_state;
  try {
    ring = std::make_unique<Ring>(options.block_size, options.blocks, options.queue_file);
    run_state.emplace();
  } catch (const Error& e) {
    if (!options.queue_file.empty())
      throw ExactExit(kExitSetup, std::string("buffer: ") + e.what() + "\n");
    throw ExactExit(kExitSetup, "buffer: couldn't create shared memory segment: " +
                                    strerror_text(e.errnum()) + "\n");
  }

  run_state->set_drain_on_signal(options.drain_on_signal);
  // Before any handler: both processes' handlers note into the run state.
  note_signals_in(*run_state);
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
    ::_exit(writer_process(*ring, *run_state, options, start, reader,
                           digest_channel ? &*digest_channel : nullptr));
  }
  if (digest_channel) digest_channel->keep_read_end();
  run_state->set_writer_pid(pid);
  ::sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
  Child writer(pid);
  // Only here, after the fork: a thread would not survive it.
  ring->warm_ahead(Ring::Side::producer);
  StatusLines status_lines(ring->blocks(), options, start,
                           input ? input_size(options, *input) : options.size);
  Recorder recorder(*ring, *run_state, options, start);
  // The recorder first: its file never blocks, and its tick is stamped
  // with the time the counters were read. A status line can block (a
  // stderr nobody drains, Ctrl-S on a terminal); the record's ticks then
  // resume as one longer tick, none of their bytes lost.
  std::vector<Sampler::Watcher> watchers;
  if (recorder.active())
    watchers.push_back({recorder.every(), [&](const RunStats& now) { recorder.take(now); }});
  if (status_lines.wanted())
    watchers.push_back({status_lines.every(), [&](const RunStats& now) { status_lines.take(now); }});
  Sampler sampler(*ring, *run_state, start, std::move(watchers));
  Clock::time_point input_ended = Clock::now();
  ExitPolicy policy{kExitRuntime, kExitRuntime, ""};
  int status = run_main("buffer (reader)", policy, [&] {
    return with_json_diagnostics(options.json, "buffer (reader)", kExitRuntime, [&] {
      return read_input(*ring, *run_state, std::move(input), options, writer, input_ended,
                        [&](const Tape& opened) {
                          status_lines.set_total_bytes(input_size(options, opened));
                        });
    });
  });
  sampler.stop();
  status_lines.finish();
  recorder.finish(run_state->stats(*ring));
  if (reports_progress(options)) {
    Summary summary;
    summary.stats = run_state->stats(*ring);
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
  if (recorder.active()) finish_recorded_run(recorder.record(), options);
  return status;
}

}  // namespace

int run(const Options& options) {
  set_json_stderr(options.json);
  return with_json_diagnostics(options.json, "buffer", kExitSetup,
                               [&] { return run_options(options); });
}

}  // namespace tk::buffer
