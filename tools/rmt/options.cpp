// rmt's options, parsed with getopt_long rather than cxxopts: repeated
// --allow values must reach us whole, and cxxopts splits vector values at
// commas.
#include "options.hpp"

#include <cstdio>
#include <cstdint>
#include <getopt.h>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/size.hpp"
#include "../common/run_main.hpp"

namespace tk::rmt_server {

const char* const kUsageText =
    "usage: rmt [-rw] [--allow path] [--read-only] [--write-once] [--create-mode mode]\n"
    "           [--allow-hard-links] [--max-record size] [--idle-timeout seconds]\n"
    "           [--payload-timeout seconds] [--virtual-tapes pattern]\n"
    "           [--allow-ioctl op] [--lseek-order auto|bsd|gnu] [--log syslog|none|file]\n"
    "           [--debug-log file] [--busy-poll microseconds] [--no-sandbox] [-c command]\n";

const char* const kOptionsText =
    "\n"
    "  --allow path        serve only path (a directory, file, device or glob); repeatable\n"
    "  --virtual-tapes pattern     serve names it matches as virtual tapes, new ones\n"
    "                      included (\"*.tap\", \"/srv/tapes/*\"); repeatable\n"
    "  -r, --read-only     refuse every open for writing\n"
    "  -w, --write-once    create new files only; an existing one opens read-only\n"
    "  --allow-hard-links  under --allow, write files that have other hard links\n"
    "  --create-mode mode  octal mode of files created (default 0600)\n"
    "  --max-record size   largest record served (default 16m)\n"
    "  --idle-timeout seconds     end a session silent this long (default 0: never)\n"
    "  --payload-timeout seconds  end a session whose W data stalls (default 120)\n"
    "  --allow-ioctl op    allow one more tape operation when restricted, or all\n"
    "  --lseek-order auto|bsd|gnu  how L's two lines are read\n"
    "  --log syslog|none|file      where the line per session goes (default syslog)\n"
    "  --debug-log file    append every request and reply to file\n"
    "  --busy-poll microseconds    watch for the next request before sleeping\n"
    "  --no-sandbox        no Landlock confinement under --allow\n"
    "  -c command          the command of a login shell (logged only)\n"
    "  -h, --help          print this text and exit\n"
    "  --version           print the version and exit\n"
    "rmt serves tapes over the rmt protocol on standard input and output.\n";

namespace {

enum LongOnly : int {
  opt_allow = 256,
  opt_virtual_tapes,
  opt_allow_hard_links,
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

// The longest timeout taken: a year.
constexpr std::int64_t kMaxTimeoutSeconds = std::int64_t{86400} * 365;

int parse_seconds(const char* text, const char* what) {
  return static_cast<int>(parse_count(text, what, 0, kMaxTimeoutSeconds));
}

}  // namespace

ServerOptions parse_options(int argc, char** argv) {
  static const option long_options[] = {
      {"allow", required_argument, nullptr, opt_allow},
      {"virtual-tapes", required_argument, nullptr, opt_virtual_tapes},
      {"read-only", no_argument, nullptr, 'r'},
      {"write-once", no_argument, nullptr, 'w'},
      {"allow-hard-links", no_argument, nullptr, opt_allow_hard_links},
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
    int before = optind;
    int c = getopt_long(argc, argv, "+rwc:h", long_options, nullptr);
    if (c == -1) {
      // After "--" glibc keeps moving optind back to the first word behind
      // it, so stepping over one word at a time would never end: the rest
      // are bare words, taken at once.
      if (before < argc && std::string_view(argv[before]) == "--") {
        for (int i = before + 1; i < argc; ++i) bare.emplace_back(argv[i]);
        break;
      }
      if (optind >= argc) break;
      bare.emplace_back(argv[optind++]);
      continue;
    }
    switch (c) {
      case opt_allow:
        // An empty entry (an unset variable in a wrapper script) would allow
        // the working directory, which is "/" under some service managers.
        if (*optarg == '\0') throw UsageError("invalid --allow '': a directory, file or pattern");
        o.allow.emplace_back(optarg);
        break;
      case opt_virtual_tapes:
        // As for --allow: an empty value is an unset variable in a wrapper,
        // and would say nothing the operator meant.
        if (*optarg == '\0') throw UsageError("invalid --virtual-tapes '': a pattern, e.g. '*.tap'");
        if (!o.virtual_tapes) o.virtual_tapes.emplace();
        o.virtual_tapes->emplace_back(optarg);
        break;
      case 'r': o.read_only = true; break;
      case 'w': o.write_once = true; break;
      case opt_allow_hard_links: o.allow_hard_links = true; break;
      case 'c': o.login_command = optarg; break;
      case opt_create_mode: {
        std::string m = optarg;
        if (m.empty() || m.size() > 4 || m.find_first_not_of("01234567") != std::string::npos)
          throw UsageError("invalid --create-mode '" + m + "' (octal, e.g. 0600)");
        o.create_mode = static_cast<mode_t>(std::stoul(m, nullptr, 8));
        break;
      }
      case opt_max_record:
        o.max_record = static_cast<std::size_t>(
            parse_size(optarg, "--max-record", std::uint64_t{1} << 30));
        if (o.max_record < 512) throw UsageError("--max-record must be at least 512");
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
          int op = op_from_name(name);
          if (op < 0) throw UsageError("unknown --allow-ioctl operation '" + name + "'");
          o.extra_ioctls.push_back(op);
        }
        break;
      }
      case opt_lseek_order: {
        std::string v = optarg;
        if (v == "auto")
          o.seek_order = rmt::SeekOrder::automatic;
        else if (v == "bsd")
          o.seek_order = rmt::SeekOrder::bsd;
        else if (v == "gnu")
          o.seek_order = rmt::SeekOrder::gnu;
        else
          throw UsageError("invalid --lseek-order '" + v + "' (auto, bsd or gnu)");
        break;
      }
      case opt_log:
        o.log = optarg;
        o.log_given = true;
        break;
      case opt_debug_log:
        if (*optarg == '\0') throw UsageError("invalid --debug-log '': a file name");
        o.debug_log = optarg;
        break;
      case opt_no_sandbox: o.sandbox = false; break;
      case opt_busy_poll:
        o.busy_poll = std::chrono::microseconds{parse_count(optarg, "--busy-poll", 0, 1000000)};
        break;
      // As mt -h. -h means nothing else to the servers replaced: GNU rmt
      // refuses it, dump's would open a debug file of that name.
      case 'h':
      case opt_help: o.show_help = true; break;
      case opt_version: o.show_version = true; break;
      default: {
        std::string bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        throw UsageError("unknown or incomplete option '" + bad + "'");
      }
    }
  }
  // GNU rmt and rmt-dump open a bare argument as a debug file, which lets a
  // remote command line create files; we take nothing from it
  // (docs/rmt-protocol.md, "The server's rules"). Next to restrictions a bare
  // word is a mistake, most likely an --allow glob the shell expanded (sshd
  // runs a forced command through one): a server that might not be restricted
  // as meant does not start.
  if (!bare.empty() && (!o.allow.empty() || o.read_only || o.write_once))
    throw UsageError("unexpected argument '" + bare.front() +
                         "' beside restrictions (quote --allow globs: the shell expanded one?)");
  for (const std::string& word : bare) {
    std::string msg = program_name() + ": ignoring argument '" + word + "'\n";
    std::fputs(msg.c_str(), stderr);
  }
  return o;
}

}  // namespace tk::rmt_server
