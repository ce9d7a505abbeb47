// rmt: remote magnetic tape server, a drop-in for /usr/sbin/rmt (GNU rmt and
// the rmt of dump/restore) that serves every client and takes no names or
// options from the connection. Reference: rmt-protocol.md; manual: rmt.8.
//
// Deviations from GNU rmt and rmt-dump:
//  - stays alive after C (as rmt-dump), exits 0 at end of input without the
//    unsolicited A0 GNU sends, and never takes a debug file from a bare
//    argument (bare arguments are ignored with a warning);
//  - S is one byte, a stray newline is skipped; L takes both argument orders;
//  - R counts above --max-record are read short, larger W records are
//    drained and refused, so memory stays bounded;
//  - numeric-only open flags are masked to the access mode, files are
//    created 0600 unless --create-mode says otherwise.
// Options are parsed with getopt_long rather than cxxopts: repeated --allow
// values must reach us whole, and cxxopts splits vector values at commas.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <getopt.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../common/run_main.hpp"
#include "../../lib/size.hpp"
#include "server.hpp"

namespace {

using tk::rmt_server::Exit;
using tk::rmt_server::ServerOptions;

constexpr const char* usage_text =
    "usage: rmt [-rw] [--allow path] [--read-only] [--write-once] [--create-mode mode]\n"
    "           [--max-record size] [--idle-timeout seconds] [--payload-timeout seconds]\n"
    "           [--allow-ioctl op] [--lseek-order auto|bsd|gnu] [--log syslog|none|file]\n"
    "           [--debug-log file] [--busy-poll microseconds] [--no-sandbox] [-c command]\n";

enum LongOnly : int {
  opt_allow = 256,
  opt_create_mode,
  opt_max_record,
  opt_idle_timeout,
  opt_payload_timeout,
  opt_allow_ioctl,
  opt_lseek_order,
  opt_log,
  opt_debug_log,
  opt_no_sandbox,
  opt_busy_poll,
  opt_help,
  opt_version,
};

int parse_seconds(const char* text, const char* what) {
  return static_cast<int>(tk::parse_count(text, what, 0, 86400 * 365));
}

ServerOptions parse_options(int argc, char** argv) {
  static const option long_options[] = {
      {"allow", required_argument, nullptr, opt_allow},
      {"read-only", no_argument, nullptr, 'r'},
      {"write-once", no_argument, nullptr, 'w'},
      {"create-mode", required_argument, nullptr, opt_create_mode},
      {"max-record", required_argument, nullptr, opt_max_record},
      {"idle-timeout", required_argument, nullptr, opt_idle_timeout},
      {"payload-timeout", required_argument, nullptr, opt_payload_timeout},
      {"allow-ioctl", required_argument, nullptr, opt_allow_ioctl},
      {"lseek-order", required_argument, nullptr, opt_lseek_order},
      {"log", required_argument, nullptr, opt_log},
      {"debug-log", required_argument, nullptr, opt_debug_log},
      {"no-sandbox", no_argument, nullptr, opt_no_sandbox},
      {"busy-poll", required_argument, nullptr, opt_busy_poll},
      {"help", no_argument, nullptr, opt_help},
      {"version", no_argument, nullptr, opt_version},
      {nullptr, 0, nullptr, 0},
  };
  ServerOptions o;
  std::vector<std::string> bare;
  opterr = 0;
  for (;;) {
    // Options count wherever they stand (a bare word does not end them), so
    // a restriction after one is never silently dropped; "+" keeps getopt
    // from permuting argv, and bare words are collected here instead.
    int c = getopt_long(argc, argv, "+rwc:", long_options, nullptr);
    if (c == -1) {
      if (optind >= argc) break;
      bare.emplace_back(argv[optind++]);
      continue;
    }
    switch (c) {
      case opt_allow: o.allow.emplace_back(optarg); break;
      case 'r': o.read_only = true; break;
      case 'w': o.write_once = true; break;
      case 'c': o.login_command = optarg; break;
      case opt_create_mode: {
        std::string m = optarg;
        if (m.empty() || m.size() > 4 || m.find_first_not_of("01234567") != std::string::npos)
          throw tk::UsageError("invalid --create-mode '" + m + "' (octal, e.g. 0600)");
        o.create_mode = static_cast<mode_t>(std::stoul(m, nullptr, 8));
        break;
      }
      case opt_max_record:
        o.max_record = static_cast<std::size_t>(
            tk::parse_size(optarg, "--max-record", std::uint64_t{1} << 30));
        if (o.max_record < 512) throw tk::UsageError("--max-record must be at least 512");
        break;
      case opt_idle_timeout: o.idle_timeout = parse_seconds(optarg, "--idle-timeout"); break;
      case opt_payload_timeout:
        o.payload_timeout = parse_seconds(optarg, "--payload-timeout");
        break;
      case opt_allow_ioctl: {
        std::string name = optarg;
        if (name == "all") {
          o.all_ioctls = true;
        } else {
          int op = tk::rmt_server::op_from_name(name);
          if (op < 0) throw tk::UsageError("unknown --allow-ioctl operation '" + name + "'");
          o.extra_ioctls.push_back(op);
        }
        break;
      }
      case opt_lseek_order: {
        std::string v = optarg;
        if (v == "auto")
          o.seek_order = tk::rmt::SeekOrder::automatic;
        else if (v == "bsd")
          o.seek_order = tk::rmt::SeekOrder::bsd;
        else if (v == "gnu")
          o.seek_order = tk::rmt::SeekOrder::gnu;
        else
          throw tk::UsageError("invalid --lseek-order '" + v + "' (auto, bsd or gnu)");
        break;
      }
      case opt_log: o.log = optarg; break;
      case opt_debug_log: o.debug_log = optarg; break;
      case opt_no_sandbox: o.sandbox = false; break;
      case opt_busy_poll:
        o.busy_poll = std::chrono::microseconds{tk::parse_count(optarg, "--busy-poll", 0, 1000000)};
        break;
      case opt_help: throw tk::UsageError("rmt serves tapes over the rmt protocol on stdin/stdout");
      case opt_version: o.show_version = true; break;
      default: {
        std::string bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        throw tk::UsageError("unknown or incomplete option '" + bad + "'");
      }
    }
  }
  // GNU rmt and rmt-dump open a bare argument as a debug file, which lets a
  // remote command line create files; we take nothing from it (§12.6.1).
  // Next to restrictions a bare word is a mistake, most likely an --allow
  // glob the shell expanded (sshd runs a forced command through one): a
  // server that might not be restricted as meant does not start.
  if (!bare.empty() && (!o.allow.empty() || o.read_only || o.write_once))
    throw tk::UsageError("unexpected argument '" + bare.front() +
                         "' beside restrictions (quote --allow globs: the shell expanded one?)");
  for (const std::string& word : bare) {
    std::string msg = "rmt: ignoring argument '" + word + "'\n";
    [[maybe_unused]] auto n = ::write(2, msg.data(), msg.size());
  }
  return o;
}

extern "C" void on_stop_signal(int) { tk::request_stop(); }

void install_signals() {
  std::signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read must return and end the session
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  tk::ExitPolicy policy;
  policy.usage = static_cast<int>(Exit::usage);
  policy.failure = static_cast<int>(Exit::connection);
  policy.usage_text = usage_text;
  return tk::run_main("rmt", policy, [&] {
    ServerOptions options = parse_options(argc, argv);
    if (options.show_version) {
      std::fputs("rmt (tapekit) 0.2\n", stdout);
      return 0;
    }
    install_signals();
    // Room for a whole large record in the pipes from and to the client, so
    // that tar -b 512 hands over a record in one write and we take it in one
    // read; sockets (sshd may use them) simply keep their size.
    tk::grow_pipe(0, std::size_t{1} << 20);
    tk::grow_pipe(1, std::size_t{1} << 20);
    return tk::rmt_server::serve(options, 0, 1);
  });
}
