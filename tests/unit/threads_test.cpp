// thread_without_signals: the thread has every signal blocked, the caller's
// mask is left as it was.
#include "../../lib/threads.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <pthread.h>

namespace {

sigset_t current_mask() {
  sigset_t mask;
  sigemptyset(&mask);
  ::pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return mask;
}

TEST(ThreadWithoutSignals, TheThreadBlocksEverySignalAndTheCallerNone) {
  sigset_t before = current_mask();
  ASSERT_FALSE(sigismember(&before, SIGTERM));
  sigset_t inside;
  std::thread thread = tk::thread_without_signals([&] { inside = current_mask(); });
  thread.join();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD})
    EXPECT_TRUE(sigismember(&inside, sig)) << "signal " << sig << " open in the helper";
  sigset_t after = current_mask();
  for (int sig = 1; sig < NSIG; ++sig)
    EXPECT_EQ(sigismember(&after, sig), sigismember(&before, sig)) << "signal " << sig;
}

}  // namespace
