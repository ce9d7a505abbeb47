#include "threads.hpp"

#include <csignal>
#include <pthread.h>
#include <utility>

namespace tk {

namespace {

// Blocks every signal in this thread for its lifetime; a thread created
// meanwhile inherits the mask.
class AllSignalsBlocked {
 public:
  AllSignalsBlocked() noexcept {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &previous_);
  }
  ~AllSignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace

std::thread thread_without_signals(std::function<void()> body) {
  AllSignalsBlocked blocked;
  return std::thread(std::move(body));
}

}  // namespace tk
