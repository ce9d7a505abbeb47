// buffer's one sampling thread, in the reader process: on each tick of the
// watchers it serves (--progress/--interval lines, the --record timeline)
// it reads the ring's and the run state's counters once and hands them to
// every watcher that is due.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "../../lib/ring/ring.hpp"
#include "report.hpp"
#include "run_state.hpp"

namespace tk::buffer {

class Sampler {
 public:
  struct Watcher {
    Clock::duration every;
    std::function<void(const RunStats&)> take;  // called from the sampler's thread
  };
  // Starts the thread when there is a watcher: each one's first tick is
  // `every` after `start`.
  Sampler(const Ring& ring, const RunState& run, Clock::time_point start,
          std::vector<Watcher> watchers);
  ~Sampler() { stop(); }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // No tick after this returns; a take() under way ends first.
  void stop();

 private:
  void loop();

  const Ring& ring_;
  const RunState& run_;
  Clock::time_point start_;
  std::vector<Watcher> watchers_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace tk::buffer
