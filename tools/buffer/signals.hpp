// buffer's signals: what each process does on INT, TERM, HUP and QUIT, on
// its peer's death and on the other's requests (SIGUSR1, SIGUSR2).
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>

#include "run_state.hpp"

namespace tk::buffer {

// The run state the handlers note what reached their process in (docs/
// buffer.md, "Signals"). Called once, before the first handler is
// installed and before the fork.
void note_signals_in(RunState& run) noexcept;

inline constexpr auto kPollInterval = std::chrono::milliseconds(250);  // how soon a side notices the other's death
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
inline constexpr int kTerminatingSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The reader's handlers.
void on_reader_signal(int sig);
void on_child_exit(int);
void on_stop_input(int, siginfo_t* info, void*);
// The writer's handlers.
void on_writer_signal(int sig);
void on_abandon_request(int, siginfo_t* info, void*);
void on_reader_death(int);

// Without SA_RESTART: a blocked read or write must return.
void install_handler(int sig, void (*handler)(int));
void install_handler(int sig, void (*handler)(int, siginfo_t*, void*));

// "SIGTERM", or "a signal" for 0 (none recorded).
std::string signal_name(int sig);

// Every way a stop is said, in one place (signals.cpp): the reader's
// lines as a stop signal comes and goes, and the writer's reason for
// abandoning the queue.
enum class Stop {
  no_drain,         // the first signal under --no-drain: the queue goes
  draining,         // the first signal while reading: what was read goes out
  draining_at_end,  // the first signal after the input ended
  second_signal,    // a second signal: the queue goes
  written_out,      // the run ended after a drain
  // The writer's reasons (abandon_reason).
  writer_second_signal,
  writer_no_drain,
  writer_signal,
  writer_told,
};
// The words for `stop`, with the name of `sig` (the process's stop signal)
// and `queued` ("3 bytes still queued (1 block)") or `reached` (what
// reached the output) put in.
std::string stop_words(Stop stop, int sig, const std::string& queued = "",
                       const std::string& reached = "");

}  // namespace tk::buffer
