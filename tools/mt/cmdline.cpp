// mt's command-line scan. mt-st does not use getopt: it looks only at the
// words before the command, and of a word starting with '-' only at its
// second character ("-fxyz DEV" is -f, "-f/dev/x" takes the next word). This
// file reproduces that scan by hand, because a getopt-style parser (cxxopts)
// would accept and reject different command lines. The long options tapekit
// adds (--json, --fail-on, --rsh-command, --rmt-command, --connect-timeout,
// --plain-remote, --file, --help) are words mt-st answers with its short
// usage, so recognising them breaks no mt-st command line.
#include "cmdline.hpp"

#include <cstdlib>
#include <string_view>
#include <sys/stat.h>

#include "../../lib/error.hpp"
#include "../../lib/size.hpp"
#include "../common/version.hpp"
#include "commands.hpp"

namespace tk::mt {
namespace {

[[noreturn]] void usage_exit(bool explain, Exit status, std::string before = {}) {
  throw tk::ExactExit(static_cast<int>(status), before + usage_text(explain));
}

// Takes the value of "--NAME=VALUE" or "--NAME VALUE"; true if word is --NAME.
bool long_option(std::string_view word, std::string_view name, int& argn, int argc, char** argv,
                 std::string& value) {
  if (word == name) {
    if (argn + 1 >= argc) usage_exit(false, Exit::usage);
    value = argv[++argn];
    return true;
  }
  if (word.size() > name.size() && word.substr(0, name.size()) == name &&
      word[name.size()] == '=') {
    value = std::string(word.substr(name.size() + 1));
    return true;
  }
  return false;
}

}  // namespace

std::string version_text() {
  return std::string("mt-st v. 1.7\ndefault tape device: ") + default_device + "\n" +
         tk::version_line("mt");
}

Invocation parse_command_line(int argc, char** argv) {
  Invocation inv;
  bool have_device = false;
  int argn = 1;
  for (; argn < argc && argv[argn][0] == '-'; ++argn) {
    std::string_view word = argv[argn];
    if (word == "--help") {
      inv.show_help = true;
      return inv;
    }
    if (word == "--json") {
      inv.json = true;
      continue;
    }
    if (word == "--plain-remote") {
      inv.open_options.plain_remote = true;
      continue;
    }
    std::string value;
    if (long_option(word, "--rsh-command", argn, argc, argv, inv.open_options.rsh_command) ||
        long_option(word, "--rmt-command", argn, argc, argv, inv.open_options.rmt_command))
      continue;
    if (long_option(word, "--connect-timeout", argn, argc, argv, value)) {
      inv.open_options.connect_timeout =
          static_cast<int>(tk::parse_count(value, "--connect-timeout", 0, tk::max_connect_timeout));
      continue;
    }
    if (long_option(word, "--open-timeout", argn, argc, argv, value)) {
      inv.open_options.open_timeout =
          static_cast<int>(tk::parse_count(value, "--open-timeout", 0, tk::max_connect_timeout));
      continue;
    }
    if (long_option(word, "--fail-on", argn, argc, argv, value)) {
      inv.fail_on = value;
      continue;
    }
    if (long_option(word, "--file", argn, argc, argv, value)) {
      inv.device = value;
      have_device = true;
      continue;
    }
    switch (word.size() > 1 ? word[1] : '\0') {
      case 'f':
      case 't':
        if (++argn >= argc) usage_exit(false, Exit::usage);
        inv.device = argv[argn];
        have_device = true;
        break;
      case 'h':
        throw tk::ExactExit(static_cast<int>(Exit::ok), help_text());
      case 'v':
        inv.show_version = true;
        return inv;
      case '-':
        if (word.size() > 2 && word[2] == 'v') {
          inv.show_version = true;
          return inv;
        }
        usage_exit(false, Exit::usage);
      default:
        usage_exit(false, Exit::usage);
    }
  }

  if (!have_device) {
    if (const char* env = std::getenv("TAPE")) {
      inv.device = env;
    } else {
      inv.device = default_device;
      struct stat st {};
      if (::stat(default_device, &st) == 0 && !S_ISCHR(st.st_mode))
        usage_exit(true, Exit::usage,
                   std::string("The default '") + default_device +
                       "' is not a character device.\n\n");
    }
  }

  if (argn >= argc) usage_exit(false, Exit::usage);
  inv.command = argv[argn++];
  for (; argn < argc; ++argn) inv.args.emplace_back(argv[argn]);
  return inv;
}

}  // namespace tk::mt
