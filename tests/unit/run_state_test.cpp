// buffer's RunState: what buffer --record reads of the writer through the
// shared mapping: its long writes, counted and kept in a log of the last
// kLongWriteLog; and each process's own phase, signals and stop reasons,
// kept apart and seen by the other process.
#include "../../tools/buffer/run_state.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using tk::buffer::Phase;
using tk::buffer::StopReason;

// Runs `child` in a forked process, as buffer's writer runs after the fork.
template <typename F>
void in_child(F child) {
  pid_t pid = ::fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    child();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(RunState, EachProcessStartsInItsOwnPhaseWithNoStop) {
  tk::buffer::RunState run;
  EXPECT_EQ(run.reader().phase(), Phase::copying);
  EXPECT_EQ(run.writer().phase(), Phase::opening_output);
  EXPECT_FALSE(run.writer_ready());
  EXPECT_TRUE(run.drain_on_signal());
  for (const tk::buffer::ProcessState* side : {&run.reader(), &run.writer()}) {
    EXPECT_EQ(side->signals(), 0);
    EXPECT_EQ(side->stop_signal(), 0);
    EXPECT_FALSE(side->has(StopReason::peer_gone));
  }
}

TEST(RunState, SignalsTheWriterTakesReachTheReaderButAreNotItsOwn) {
  tk::buffer::RunState run;
  in_child([&] {
    run.writer().take_signal(SIGINT);
    run.writer().take_signal(SIGTERM);
  });
  EXPECT_EQ(run.writer().signals(), 2);
  EXPECT_EQ(run.writer().stop_signal(), SIGTERM);  // the latest
  EXPECT_EQ(run.reader().signals(), 0);
  EXPECT_EQ(run.reader().stop_signal(), 0);
}

TEST(RunState, ASignalLearnedFromThePeerIsTheStopsButNotCountedAsTaken) {
  tk::buffer::RunState run;
  run.reader().learn_signal(SIGHUP);
  EXPECT_EQ(run.reader().stop_signal(), SIGHUP);
  EXPECT_EQ(run.reader().signals(), 0);
}

TEST(RunState, StopReasonsAddUpAndStayWithTheirProcess) {
  tk::buffer::RunState run;
  run.writer().add(StopReason::abandon_queue);
  run.writer().add(StopReason::stalled);
  EXPECT_TRUE(run.writer().has(StopReason::abandon_queue));
  EXPECT_TRUE(run.writer().has(StopReason::stalled));
  EXPECT_FALSE(run.writer().has(StopReason::peer_gone));
  EXPECT_FALSE(run.writer().has(StopReason::end_read_back));
  EXPECT_FALSE(run.reader().has(StopReason::abandon_queue));
  EXPECT_FALSE(run.reader().has(StopReason::stalled));
}

TEST(RunState, TheWriterIsReadyFromItsFirstCopyThroughItsReadBacks) {
  tk::buffer::RunState run;
  in_child([&] { run.set_writer_ready(); });
  EXPECT_TRUE(run.writer_ready());
  EXPECT_EQ(run.writer().phase(), Phase::copying);
  run.writer().set_phase(Phase::reading_back);
  EXPECT_TRUE(run.writer_ready());
  EXPECT_EQ(run.reader().phase(), Phase::copying);
}

TEST(RunState, TheWriterSeesTheDrainChoiceAndTheReaderItsPid) {
  tk::buffer::RunState run;
  run.set_drain_on_signal(false);
  in_child([&] {
    if (run.drain_on_signal()) ::_exit(1);
  });
  in_child([&] { run.set_writer_pid(::getpid()); });
  EXPECT_NE(run.writer_pid(), 0);
  EXPECT_NE(run.writer_pid(), ::getpid());
}

TEST(RunState, LongWritesOfTheWriterProcessReachTheReaderProcess) {
  tk::buffer::RunState run;
  pid_t pid = ::fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    for (std::int64_t i = 0; i < 3; ++i) run.note_long_write(1000 + i, 2'000'000'000 + i);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  tk::buffer::OutputStats s = run.output_stats();
  EXPECT_EQ(s.long_writes, 3u);
  EXPECT_EQ(s.long_write_ns, 6'000'000'003u);
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto w = run.long_write(i);
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(w->start_ns, 1000 + static_cast<std::int64_t>(i));
    EXPECT_EQ(w->duration_ns, 2'000'000'000 + static_cast<std::int64_t>(i));
  }
  EXPECT_FALSE(run.long_write(3).has_value());  // not written yet
}

TEST(RunState, OnlyTheLastLogFullOfLongWritesKeepTheirTimes) {
  tk::buffer::RunState run;
  const std::uint64_t n = tk::buffer::RunState::kLongWriteLog + 5;
  for (std::uint64_t i = 0; i < n; ++i) run.note_long_write(static_cast<std::int64_t>(i), 1);
  EXPECT_EQ(run.output_stats().long_writes, n);
  EXPECT_FALSE(run.long_write(4).has_value());  // overwritten
  ASSERT_TRUE(run.long_write(5).has_value());
  EXPECT_EQ(run.long_write(5)->start_ns, 5);
  EXPECT_EQ(run.long_write(n - 1)->start_ns, static_cast<std::int64_t>(n - 1));
}

}  // namespace
