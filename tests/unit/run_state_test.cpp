// buffer's RunState: what buffer --record reads of the writer through the
// shared mapping: its long writes, counted and kept in a log of the last
// kLongWriteLog.
#include "../../tools/buffer/run_state.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

namespace {

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
