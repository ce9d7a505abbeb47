// The single place where exceptions become diagnostics and exit statuses.
#include "run_main.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"

namespace tk {
namespace {
std::string& mutable_program_name() {
  static std::string name = "tapekit";
  return name;
}

void print_line(const std::string& text) {
  std::string line = mutable_program_name() + ": " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}
}  // namespace

const std::string& program_name() { return mutable_program_name(); }

int run_main(std::string_view program, const ExitPolicy& policy,
             const std::function<int()>& body) {
  mutable_program_name() = std::string(program);
  int status = 0;
  try {
    status = body();
    // The write that fails is cout's flush; errno must be cleared before
    // it, not after, or the reason (ENOSPC, EPIPE) is lost to EIO.
    errno = 0;
    std::cout.flush();
    if (std::fflush(stdout) != 0 || !std::cout)
      throw Error(errno ? errno : EIO, "write standard output");
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
