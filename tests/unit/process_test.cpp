// lib/process: a Child going out of scope must not hang its owner, whatever
// the child does with SIGTERM.
#include "../../lib/process.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

bool running(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(Child, DestroyedWhileItIgnoresSigtermIsKilledAfterTheGrace) {
  using Clock = std::chrono::steady_clock;
  pid_t pid = -1;
  Clock::time_point start;
  {
    // The shell says it is ready once its SIGTERM is ignored, then sleeps
    // far longer than any test runs.
    tk::PipedChild child =
        tk::spawn_piped({"/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 600"});
    char ready[6] = {};
    ASSERT_EQ(::read(child.from_child.get(), ready, sizeof ready), 6);
    pid = child.process.pid();
    start = Clock::now();
  }
  auto took = Clock::now() - start;
  EXPECT_FALSE(running(pid));
  EXPECT_GE(took, std::chrono::seconds(tk::Child::kill_grace_seconds - 1));
  EXPECT_LT(took, std::chrono::seconds(60));
}

TEST(Child, DestroyedWhileRunningEndsAtOnceOnSigterm) {
  pid_t pid = -1;
  {
    tk::PipedChild child = tk::spawn_piped({"/bin/sh", "-c", "echo ready; exec sleep 600"});
    char ready[6] = {};
    ASSERT_EQ(::read(child.from_child.get(), ready, sizeof ready), 6);
    pid = child.process.pid();
  }
  EXPECT_FALSE(running(pid));
}

// A server someone suspended (SIGSTOP) acts on SIGTERM once continued:
// terminate() continues it, so it ends by SIGTERM, not by the SIGKILL that
// comes after the grace period.
TEST(Child, TerminatedWhileStoppedEndsBySigterm) {
  tk::PipedChild child = tk::spawn_piped({"/bin/sh", "-c", "echo ready; exec sleep 600"});
  char ready[6] = {};
  ASSERT_EQ(::read(child.from_child.get(), ready, sizeof ready), 6);
  ASSERT_EQ(::kill(child.process.pid(), SIGSTOP), 0);
  siginfo_t stopped{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child.process.pid()), &stopped, WSTOPPED | WNOWAIT), 0);
  int status = child.process.terminate();
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
