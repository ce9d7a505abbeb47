// rmt: remote magnetic tape server, a drop-in for /usr/sbin/rmt (GNU rmt and
// the rmt of dump/restore) that serves every client and takes no names or
// options from the connection. Reference: docs/rmt-protocol.md; manual:
// man/rmt.8.
//
// Deviations from GNU rmt and rmt-dump: rmt(8), DESCRIPTION, PROTOCOL and COMPATIBILITY.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "../../lib/io.hpp"
#include "../common/run_main.hpp"
#include "../common/stop_signals.hpp"
#include "../common/version.hpp"
#include "options.hpp"
#include "server.hpp"

namespace {

// Room for a whole large record in the pipes from and to the client, so that
// tar -b 512 hands over a record in one write and we take it in one read;
// sockets (sshd may use them) simply keep their size.
constexpr std::size_t kPipeTarget = std::size_t{1} << 20;

}  // namespace

int main(int argc, char** argv) {
  using tk::rmt_server::Exit;
  tk::ExitPolicy policy;
  policy.usage = static_cast<int>(Exit::usage);
  policy.failure = static_cast<int>(Exit::connection);
  policy.usage_text = tk::rmt_server::kUsageText;
  return tk::run_main("rmt", policy, [&] {
    tk::rmt_server::ServerOptions options = tk::rmt_server::parse_options(argc, argv);
    if (options.show_help) {
      std::fputs(tk::rmt_server::kUsageText, stdout);
      std::fputs(tk::rmt_server::kOptionsText, stdout);
      return static_cast<int>(Exit::ok);
    }
    if (options.show_version) {
      std::fputs(tk::version_line("rmt").c_str(), stdout);
      return static_cast<int>(Exit::ok);
    }
    std::signal(SIGPIPE, SIG_IGN);
    // A file served that reaches the size limit answers EFBIG, as a full
    // disk answers ENOSPC, and the session goes on.
    tk::ignore_file_size_signal();
    // A blocked read must return and end the session.
    tk::catch_stop_signals();
    tk::grow_pipe(0, kPipeTarget);
    tk::grow_pipe(1, kPipeTarget);
    return tk::rmt_server::serve(options, 0, 1);
  });
}
