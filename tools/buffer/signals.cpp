// The signal flags buffer's two processes share with their handlers, and
// the handlers themselves.
#include "signals.hpp"

#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/io.hpp"

namespace tk::buffer {

// Signal flags: the only mutable globals, since a handler may touch nothing
// else safely (docs/buffer.md, "Signals"); request_stop() makes blocking
// calls give up.
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

std::string stop_words(Stop stop, const std::string& queued, const std::string& reached) {
  const std::string signal = stop_signal_name();
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
