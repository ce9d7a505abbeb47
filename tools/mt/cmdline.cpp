// mt's command-line scan. mt-st does not use getopt: it looks only at the
// words before the command, and of a word starting with '-' only at its
// second character ("-fxyz DEV" is -f, "-f/dev/x" takes the next word). This
// file reproduces that scan by hand, because a getopt-style parser (cxxopts)
// would accept and reject different command lines. The long options tapekit
// adds (--json, --fail-on, the remote options but --force-local and
// --streams, --file, --help) are words mt-st answers with its short usage,
// so recognising them breaks no mt-st command line.
#include "cmdline.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <sys/stat.h>

#include "../../lib/error.hpp"
#include "../common/option_table.hpp"
#include "../common/remote_options.hpp"
#include "../common/version.hpp"
#include "commands.hpp"

namespace tk::mt {
namespace {

[[noreturn]] void usage_exit(bool explain, Exit status, std::string before = {}) {
  throw tk::ExactExit(static_cast<int>(status), before + usage_text(explain));
}

// mt's options beside mt-st's -h and -v, in the order -h lists them. -f
// and -t take the next word; a long option takes "--NAME=VALUE" or
// "--NAME VALUE", its whole name only.
OptionTable option_table(Invocation& inv, bool& have_device) {
  auto device = [&inv, &have_device](const std::string& v) {
    inv.device = v;
    have_device = true;
  };
  OptionTable table = {
      {"json", '\0', "", "status, tell and health as one JSON object",
       [&inv](const std::string&) { inv.json = true; }},
      {"fail-on", '\0', "severity", "tapealert: exit 1 on a flag this severe (critical|warning)",
       [&inv](const std::string& v) { inv.fail_on = v; }},
      {"", 'f', "[user@]host:path", "a remote drive, through the rmt protocol", device},
      {"", 't', "device", "the same as -f device", device},
  };
  append(table, without(remote_options(inv.open_options), {"force-local", "streams"}));
  append(table, {
      {"file", '\0', "device", "the same as -f device", device},
      {"help", '\0', "", "this text, on standard output",
       [&inv](const std::string&) { inv.show_help = true; }},
  });
  return table;
}

// Applies the long option word names; false if it names none.
bool long_option(const OptionTable& table, int& argn, int argc, char** argv) {
  std::string_view word = argv[argn];
  if (word.size() < 3 || word.substr(0, 2) != "--") return false;
  std::string_view body = word.substr(2);
  for (const Option& option : table) {
    if (option.name.empty() || body.substr(0, option.name.size()) != option.name) continue;
    std::string_view rest = body.substr(option.name.size());
    if (rest.empty() && option.argument.empty()) {
      option.apply("true");
    } else if (rest.empty()) {
      if (argn + 1 >= argc) usage_exit(false, Exit::usage);
      option.apply(argv[++argn]);
    } else if (rest[0] == '=' && !option.argument.empty()) {
      option.apply(std::string(rest.substr(1)));
    } else {
      continue;
    }
    return true;
  }
  return false;
}

constexpr HelpLayout kLayout{21, 21, '='};

}  // namespace

std::string version_text() {
  return std::string("mt-st v. 1.7\ndefault tape device: ") + default_device + "\n" +
         tk::version_line("mt");
}

std::string option_lines() {
  Invocation unused;
  bool have_device = false;
  return help_lines(option_table(unused, have_device), kLayout);
}

Invocation parse_command_line(int argc, char** argv) {
  Invocation inv;
  bool have_device = false;
  const OptionTable table = option_table(inv, have_device);
  int argn = 1;
  for (; argn < argc && argv[argn][0] == '-'; ++argn) {
    std::string_view word = argv[argn];
    if (long_option(table, argn, argc, argv)) {
      if (inv.show_help) return inv;
      continue;
    }
    char letter = word.size() > 1 ? word[1] : '\0';
    auto entry = std::find_if(table.begin(), table.end(),
                              [&](const Option& option) { return letter != '\0' && option.letter == letter; });
    if (entry != table.end()) {
      if (++argn >= argc) usage_exit(false, Exit::usage);
      entry->apply(argv[argn]);
      continue;
    }
    switch (letter) {
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
