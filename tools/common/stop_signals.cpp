#include "stop_signals.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "../../lib/io.hpp"

namespace tk {
namespace {

volatile std::sig_atomic_t last_stop_signal = 0;

extern "C" void on_stop_signal(int signal_number) {
  last_stop_signal = signal_number;
  request_stop();
}

}  // namespace

void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal_number, &action, nullptr);
}

void ignore_file_size_signal() { std::signal(SIGXFSZ, SIG_IGN); }

void die_of_broken_pipe() {
  std::fflush(nullptr);
  std::signal(SIGPIPE, SIG_DFL);
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::sigprocmask(SIG_UNBLOCK, &pipe_signal, nullptr);
  std::raise(SIGPIPE);
  std::_Exit(128 + SIGPIPE);  // not reached
}

void die_by_stop_signal() {
  int signal_number = last_stop_signal;
  if (signal_number == 0) return;
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

}  // namespace tk
