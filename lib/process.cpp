// fork/exec and reaping, kept in one place.
#include "process.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
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
  // As terminate(): a child ignoring SIGTERM must not hang its owner's
  // unwinding, which is how a failing run ends.
  try {
    terminate();
  } catch (const Error&) {
    // waitpid failed: the child is not ours to wait for any more.
  }
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

namespace {
// Every process below `root`, from /proc (no other interface lists them; a
// process table that cannot be read yields none, and only the child itself
// is signalled). Taken before the child dies, since its children are then
// handed to init and no longer look like ours.
std::vector<pid_t> descendants_of(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, ppid)
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return {};
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ...": comm may hold blanks and parentheses.
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid) parent_of.emplace_back(static_cast<pid_t>(pid), static_cast<pid_t>(ppid));
  }
  ::closedir(proc);
  std::vector<pid_t> found{root};
  for (std::size_t i = 0; i < found.size(); ++i)
    for (const auto& [pid, ppid] : parent_of)
      if (ppid == found[i]) found.push_back(pid);
  found.erase(found.begin());
  return found;
}
}  // namespace

int Child::terminate() {
  const std::vector<pid_t> below = descendants_of(pid_);
  auto signal_all = [&](int sig) {
    ::kill(pid_, sig);
    for (pid_t p : below) ::kill(p, sig);
  };
  signal_all(SIGTERM);
  // A stopped process (a server someone suspended, the hung end of a link)
  // acts on SIGTERM only once continued: as kill(1) users and init systems
  // do, continue it, so the grace period is not spent waiting in vain.
  signal_all(SIGCONT);
  int status = wait_up_to(kill_grace_seconds);
  if (status != -1) return status;
  signal_all(SIGKILL);
  return wait();
}

namespace {
struct Pipe {
  Fd read_end, write_end;
};

// Both ends above 2: with a standard descriptor closed (`<&-`), pipe2 would
// hand out 0 or 1, and the child's dup2 onto its own 0 and 1 would then
// overwrite one end with the other, or leave it close-on-exec.
Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) == -1) throw_errno("pipe");
  return {above_stdio(Fd(fds[0])), above_stdio(Fd(fds[1]))};
}

// In a child before exec: fd becomes `target`, open across exec. dup2 onto
// itself would keep fd's close-on-exec flag.
bool place(int fd, int target) {
  if (fd == target) return ::fcntl(fd, F_SETFD, 0) != -1;
  return ::dup2(fd, target) != -1;
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

// An ignored signal stays ignored across exec: the commands we start get
// the default actions back for the two the tools ignore, so a pipeline or
// ulimit -f ends them as it ends any program.
void restore_default_signals() {
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGXFSZ, SIG_DFL);
}

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

PipedChild spawn_piped(const std::vector<std::string>& argv, int stderr_fd) {
  ExecArgs args(argv);
  Pipe down = make_pipe();  // we write, child reads
  Pipe up = make_pipe();    // child writes, we read
  pid_t pid = ::fork();
  if (pid == -1) throw_errno("fork");
  if (pid == 0) {
    restore_default_signals();
    if (!place(down.read_end.get(), 0) || !place(up.write_end.get(), 1) ||
        (stderr_fd >= 0 && !place(stderr_fd, 2)))
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
    restore_default_signals();
    if (stdin_fd >= 0 && !place(stdin_fd, 0)) ::_exit(127);
    if (stdout_fd >= 0 && !place(stdout_fd, 1)) ::_exit(127);
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
