// Child processes: spawning a command with pipes (the rsh/ssh link to an rmt
// server) and running a shell command (buffer's --next-volume), reaped by RAII.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "io.hpp"

namespace tk {

// Owns a child process; the destructor kills (SIGTERM) and reaps it if it
// was not waited for, so no zombie outlives its owner.
class Child {
 public:
  Child() noexcept = default;
  explicit Child(pid_t pid) noexcept : pid_(pid) {}
  Child(Child&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const noexcept { return pid_; }
  // Waits for exit; returns the raw wait status.
  int wait();
  // Waits up to `seconds` for exit, then ends it as terminate() does.
  int wait_or_terminate(int seconds);
  // Sends SIGTERM (and SIGCONT, so a stopped child acts on it), gives the
  // child kill_grace_seconds to exit, then SIGKILL;
  // returns the wait status. A child ignoring SIGTERM cannot hang the caller.
  // The child's own children get the same signals: ssh leaves a ProxyCommand
  // (or a ProxyJump ssh) running when it is killed before it connected.
  int terminate();
  static constexpr int kill_grace_seconds = 5;

 private:
  // The wait status if the child exits within `seconds`, else -1.
  int wait_up_to(int seconds);

  pid_t pid_ = -1;
};

// A child with its standard input and output connected to us through pipes.
struct PipedChild {
  Child process;
  Fd to_child;    // the child's stdin
  Fd from_child;  // the child's stdout
};

// Runs argv[0] (searched in PATH) with stdin/stdout on fresh pipes; stderr is
// inherited so the remote shell's own diagnostics reach the user, or goes to
// stderr_fd where one is given.
PipedChild spawn_piped(const std::vector<std::string>& argv, int stderr_fd = -1);

// Runs "/bin/sh -c command" with our stdio replaced as given (-1 = inherit)
// and returns its wait status.
int run_shell(const std::string& command, int stdin_fd = -1, int stdout_fd = -1);

// "exit status 3", "killed by signal 9": for diagnostics.
std::string describe_wait_status(int status);

}  // namespace tk
