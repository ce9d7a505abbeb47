// buffer's signal handlers (tools/buffer/signals.cpp): each notes what
// reached its process in that process's side of the run state, as the
// writer's and the reader's code then read it; and the stop's words name
// the signal they are given.
#include "../../tools/buffer/signals.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/io.hpp"

namespace {

using tk::buffer::Phase;
using tk::buffer::RunState;
using tk::buffer::StopReason;

// Runs `child` in a forked process with the handlers noting into `run`, as
// buffer's processes run; the exit status says whether a stop was requested.
template <typename F>
bool child_requested_stop(RunState& run, F child) {
  pid_t pid = ::fork();
  if (pid == 0) {
    tk::clear_stop();  // one an earlier test left in this process
    tk::buffer::note_signals_in(run);
    child();
    ::_exit(tk::stop_requested() ? 1 : 0);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  return WEXITSTATUS(status) == 1;
}

void queue_to_self(int sig, int value) {
  union sigval which {};
  which.sival_int = value;
  ::sigqueue(::getpid(), sig, which);
}

TEST(BufferSignals, AWriterStillOpeningItsOutputStopsAtTheFirstSignal) {
  RunState run;
  // A writer that went on would tell its parent, this test, to stop reading.
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGUSR2, &ignore, &before);
  EXPECT_TRUE(child_requested_stop(run, [] {
    tk::buffer::install_handler(SIGTERM, tk::buffer::on_writer_signal);
    ::raise(SIGTERM);
  }));
  ::sigaction(SIGUSR2, &before, nullptr);
  EXPECT_EQ(run.writer().signals(), 1);
  EXPECT_EQ(run.writer().stop_signal(), SIGTERM);
  EXPECT_TRUE(run.writer().has(StopReason::end_read_back));
  EXPECT_EQ(run.reader().signals(), 0);
}

TEST(BufferSignals, TheWritersSignalQueuedToTheReaderStopsItsReading) {
  RunState run;
  EXPECT_TRUE(child_requested_stop(run, [] {
    tk::buffer::install_handler(SIGUSR2, tk::buffer::on_stop_input);
    queue_to_self(SIGUSR2, SIGQUIT);
  }));
  EXPECT_TRUE(run.reader().has(StopReason::stop_reading));
  EXPECT_EQ(run.reader().stop_signal(), SIGQUIT);
  EXPECT_EQ(run.reader().signals(), 0);  // not one the reader took
}

TEST(BufferSignals, TheReadersQueuedSignalEndsAReadBackAndAbandonsNothing) {
  RunState run;
  run.writer().set_phase(Phase::reading_back);
  EXPECT_TRUE(child_requested_stop(run, [] {
    tk::buffer::install_handler(SIGUSR1, tk::buffer::on_abandon_request);
    queue_to_self(SIGUSR1, SIGINT);
  }));
  EXPECT_TRUE(run.writer().has(StopReason::end_read_back));
  EXPECT_FALSE(run.writer().has(StopReason::abandon_queue));
  EXPECT_EQ(run.writer().stop_signal(), SIGINT);
}

TEST(BufferSignals, TheReadersQueuedSignalOnlyMarksTheReadBacksToComeWhileCopying) {
  RunState run;
  run.set_writer_ready();
  EXPECT_FALSE(child_requested_stop(run, [] {
    tk::buffer::install_handler(SIGUSR1, tk::buffer::on_abandon_request);
    queue_to_self(SIGUSR1, SIGINT);
  }));
  EXPECT_TRUE(run.writer().has(StopReason::end_read_back));
}

TEST(BufferSignals, ThePlainSigusr1AbandonsTheQueue) {
  RunState run;
  run.set_writer_ready();
  EXPECT_TRUE(child_requested_stop(run, [] {
    tk::buffer::install_handler(SIGUSR1, tk::buffer::on_abandon_request);
    ::raise(SIGUSR1);
  }));
  EXPECT_TRUE(run.writer().has(StopReason::abandon_queue));
  EXPECT_FALSE(run.writer().has(StopReason::end_read_back));
}

TEST(BufferSignals, TheStopsWordsNameTheSignalGiven) {
  EXPECT_EQ(tk::buffer::stop_words(tk::buffer::Stop::writer_signal, SIGHUP),
            "interrupted by SIGHUP");
  EXPECT_EQ(tk::buffer::signal_name(0), "a signal");
}

}  // namespace
