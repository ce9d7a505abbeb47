// The single place where exceptions become diagnostics and exit statuses.
#include "run_main.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <iostream>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"

namespace tk {
namespace {
std::string& mutable_program_name() {
  static std::string name = "tapekit";
  return name;
}

// A closed standard error (2>&-, a daemon's child) becomes /dev/null. Left
// closed, the next descriptor opened would be 2 -- buffer's -o output, the
// file rmt serves, reblock's output -- and every message, -S record or -d
// line would go into the data (buffer 1.19 did that). Standard input and
// output are left as they are: a program reports them closed as it can.
void keep_stderr_open() {
  if (::fcntl(2, F_GETFD) != -1 || errno != EBADF) return;
  int fd = ::open("/dev/null", O_WRONLY);  // inherited by the commands we run
  if (fd == -1 || fd == 2) return;
  ::dup2(fd, 2);
  ::close(fd);
}

void print_line(const std::string& text) {
  std::string line = mutable_program_name() + ": " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}
}  // namespace

const std::string& program_name() { return mutable_program_name(); }

int run_main(std::string_view program, const ExitPolicy& policy,
             const std::function<int()>& body) {
  keep_stderr_open();
  mutable_program_name() = std::string(program);
  int status = 0;
  try {
    status = body();
    // std::cout is synced with stdio, so its flush is stdout's and the first
    // to fail: its errno (ENOSPC, EBADF) is the one to report, a second
    // fflush has no write left to fail. EIO only when a write failed earlier.
    errno = 0;
    std::cout.flush();
    int err = errno;
    bool failed = !std::cout;
    if (std::fflush(stdout) != 0) {
      failed = true;
      if (err == 0) err = errno;
    }
    if (failed || std::ferror(stdout)) throw Error(err ? err : EIO, "write standard output");
  } catch (const ExactExit& e) {
    std::fputs(e.what(), stderr);
    status = e.status();
  } catch (const UsageError& e) {
    print_line(e.what());
    if (!policy.usage_text.empty()) std::fputs(policy.usage_text.c_str(), stderr);
    status = policy.usage;
  } catch (const Interrupted&) {
    // Only a signal the program asked to stop on gets here; "Interrupted
    // system call" would be noise after the user's own Ctrl-C.
    status = policy.failure;
  } catch (const Error& e) {
    if (e.errnum() != EPIPE) print_line(e.what());
    status = policy.failure;
  } catch (const std::exception& e) {
    print_line(std::string("internal error: ") + e.what());
    status = policy.failure;
  }
  return status;
}

}  // namespace tk
