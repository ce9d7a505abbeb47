// fork/exec and reaping, kept in one place.
#include "process.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tk {

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    Child dying(pid_);
    pid_ = other.pid_;
    other.pid_ = -1;
  }
  return *this;
}

Child::~Child() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  retry_eintr([&] { return ::waitpid(pid_, &status, 0); });
}

int Child::wait() {
  int status = 0;
  pid_t got = retry_eintr([&] { return ::waitpid(pid_, &status, 0); });
  if (got == -1) throw_syscall_error("waitpid " + std::to_string(pid_));
  pid_ = -1;
  return status;
}

int Child::wait_up_to(int seconds) {
  using namespace std::chrono;
  auto deadline = steady_clock::now() + std::chrono::seconds(seconds);
  auto pause = milliseconds(1);  // most children are gone within a millisecond or two
  for (;;) {
    int status = 0;
    pid_t got = retry_eintr([&] { return ::waitpid(pid_, &status, WNOHANG); });
    if (got == -1) throw_syscall_error("waitpid " + std::to_string(pid_));
    if (got == pid_) {
      pid_ = -1;
      return status;
    }
    if (steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(50));
  }
}

int Child::wait_or_terminate(int seconds) {
  int status = wait_up_to(seconds);
  return status != -1 ? status : terminate();
}

int Child::terminate() {
  ::kill(pid_, SIGTERM);
  int status = wait_up_to(kill_grace_seconds);
  if (status != -1) return status;
  ::kill(pid_, SIGKILL);
  return wait();
}

namespace {
struct Pipe {
  Fd read_end, write_end;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) == -1) throw_errno("pipe");
  return {Fd(fds[0]), Fd(fds[1])};
}

// argv for execvp, built before fork: the child may only make
// async-signal-safe calls until exec, so it must not allocate.
struct ExecArgs {
  explicit ExecArgs(const std::vector<std::string>& args) {
    pointers.reserve(args.size() + 1);
    for (const auto& a : args) pointers.push_back(const_cast<char*>(a.c_str()));
    pointers.push_back(nullptr);
  }
  std::vector<char*> pointers;
};

void write_stderr(const char* text) {
  [[maybe_unused]] auto ignored = ::write(2, text, std::strlen(text));
}

[[noreturn]] void exec_or_die(const ExecArgs& args) {
  ::execvp(args.pointers[0], args.pointers.data());
  int err = errno;
  // Named like the parent's own messages: the child still carries its name.
  write_stderr(program_invocation_short_name);
  write_stderr(": cannot run ");
  write_stderr(args.pointers[0]);
  write_stderr(": ");
  write_stderr(std::strerror(err));
  write_stderr("\n");
  ::_exit(127);
}
}  // namespace

PipedChild spawn_piped(const std::vector<std::string>& argv) {
  ExecArgs args(argv);
  Pipe down = make_pipe();  // we write, child reads
  Pipe up = make_pipe();    // child writes, we read
  pid_t pid = ::fork();
  if (pid == -1) throw_errno("fork");
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    if (::dup2(down.read_end.get(), 0) == -1 || ::dup2(up.write_end.get(), 1) == -1)
      ::_exit(127);
    exec_or_die(args);
  }
  return {Child(pid), std::move(down.write_end), std::move(up.read_end)};
}

int run_shell(const std::string& command, int stdin_fd, int stdout_fd) {
  std::vector<std::string> argv{"/bin/sh", "-c", command};
  ExecArgs args(argv);
  pid_t pid = ::fork();
  if (pid == -1) throw_errno("fork");
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    if (stdin_fd >= 0 && ::dup2(stdin_fd, 0) == -1) ::_exit(127);
    if (stdout_fd >= 0 && ::dup2(stdout_fd, 1) == -1) ::_exit(127);
    exec_or_die(args);
  }
  return Child(pid).wait();
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace tk
