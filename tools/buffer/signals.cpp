// buffer's signal handlers, which note what reached their process in the
// run state, and the words that say why a run stopped.
#include "signals.hpp"

#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/io.hpp"

namespace tk::buffer {

namespace {

// The one mutable global (docs/buffer.md, "Signals"): a handler is given
// nothing but its signal, so it finds the run state through a pointer. The
// state itself lives in the shared mapping, where each process notes what
// reached it in its own ProcessState. Set once, before the first handler
// is installed and before the fork, so no handler sees it change and both
// processes hold it (the mapping is at the same address in both).
RunState* g_run = nullptr;

}  // namespace

void note_signals_in(RunState& run) noexcept { g_run = &run; }

void on_reader_signal(int sig) {
  g_run->reader().take_signal(sig);
  request_stop();
}
// Other children (the remote shell of a host:path input) may end too; only
// the writer's end counts. WNOWAIT leaves it to be reaped by its owner.
void on_child_exit(int) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(g_run->writer_pid()), &info,
               WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0)
    return;
  ProcessState& reader = g_run->reader();
  reader.add(StopReason::peer_gone);
  if (reader.phase() != Phase::waiting_for_writer) request_stop();
}
// The writer queues the signal it received as SIGUSR2's value.
void on_stop_input(int, siginfo_t* info, void*) {
  ProcessState& reader = g_run->reader();
  if (info != nullptr && info->si_code == SI_QUEUE) reader.learn_signal(info->si_value.sival_int);
  reader.add(StopReason::stop_reading);
  request_stop();
}
// The writer keeps writing on the first signal and asks the reader to stop
// reading; a second signal (or --no-drain) stops it at once, and so does the
// first while the output is still being opened (a FIFO or a remote shell may
// never answer) or read back.
void on_writer_signal(int sig) {
  ProcessState& writer = g_run->writer();
  writer.take_signal(sig);
  writer.add(StopReason::end_read_back);
  Phase phase = writer.phase();
  if (writer.signals() >= 2 || !g_run->drain_on_signal() || phase == Phase::opening_output ||
      phase == Phase::reading_back) {
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
  ProcessState& writer = g_run->writer();
  if (info != nullptr && info->si_code == SI_QUEUE) {
    writer.learn_signal(info->si_value.sival_int);
    writer.add(StopReason::end_read_back);
    if (writer.phase() == Phase::reading_back) request_stop();
    return;
  }
  writer.add(StopReason::abandon_queue);
  request_stop();
}
void on_reader_death(int) {
  g_run->writer().add(StopReason::peer_gone);
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

std::string signal_name(int sig) {
  const char* abbreviation = sig > 0 ? ::sigabbrev_np(sig) : nullptr;
  return abbreviation ? std::string("SIG") + abbreviation : std::string("a signal");
}

std::string stop_words(Stop stop, int sig, const std::string& queued, const std::string& reached) {
  const std::string signal = signal_name(sig);
  switch (stop) {
    case Stop::no_drain:
      return "buffer: " + signal + ": stopping; --no-drain: the " + queued + " are abandoned\n";
    case Stop::draining:
      return "buffer: " + signal + ": stopping; reading has stopped, writing out the " + queued +
             "; a second signal abandons them\n";
    case Stop::draining_at_end:
      return "buffer: " + signal + ": stopping; the input has ended, writing out the " + queued +
             "; a second signal abandons them\n";
    case Stop::second_signal:
      return "buffer: a second " + signal + ": abandoning the " + queued + "\n";
    case Stop::written_out:
      return "buffer: stopped by " + signal + " after the queue was written out: " + reached +
             ", all that was read\n";
    case Stop::writer_second_signal:
      return "interrupted by a second " + signal;
    case Stop::writer_no_drain:
      return "interrupted by " + signal + " (--no-drain)";
    case Stop::writer_signal:
      return "interrupted by " + signal;
    case Stop::writer_told:
      return "told by the reader to abandon the queue";
  }
  return "";
}

}  // namespace tk::buffer
