#include "remote_options.hpp"

#include <cstdint>
#include <string>

#include "../../lib/error.hpp"
#include "../../lib/rmt/protocol.hpp"
#include "../../lib/size.hpp"

namespace tk {
namespace {

// Leading blanks are skipped (a value quoted from a padded variable), as
// buffer 1.19 skipped them in its numbers.
std::string unpadded(const std::string& text) {
  std::size_t start = text.find_first_not_of(" \t");
  return start == std::string::npos ? text : text.substr(start);
}

int seconds(const std::string& text, const std::string& option) {
  std::int64_t n = parse_count(unpadded(text), option);
  if (n < 0 || n > max_connect_timeout)
    throw UsageError("invalid " + option + " '" + text + "': seconds from 0 to " +
                     std::to_string(max_connect_timeout));
  return static_cast<int>(n);
}

// A count of remote shells, or "auto" (0).
int streams(const std::string& text) {
  if (text == "auto") return 0;
  auto refuse = [&] {
    throw UsageError("invalid --streams '" + text + "': 1 to " + std::to_string(rmt::max_streams) +
                     ", or auto");
  };
  std::int64_t n = 0;
  try {
    n = parse_count(unpadded(text), "--streams");
  } catch (const UsageError&) {
    refuse();
  }
  if (n < 1 || n > rmt::max_streams) refuse();
  return static_cast<int>(n);
}

}  // namespace

OptionTable remote_options(OpenOptions& remote) {
  return {
      {"rsh-command", '\0', "command", "the remote shell for host:path (default $RSH, else ssh)",
       [&](const std::string& v) { remote.rsh_command = v; }},
      {"rmt-command", '\0', "command", "the program it starts there (default $RMT, else /etc/rmt)",
       [&](const std::string& v) { remote.rmt_command = v; }},
      {"force-local", '\0', "", "a name with a colon is a local file, not host:path",
       [&](const std::string&) { remote.force_local = true; }},
      {"connect-timeout", '\0', "seconds", "give up on a silent host:path (default 30; 0: wait)",
       [&](const std::string& v) { remote.connect_timeout = seconds(v, "--connect-timeout"); }},
      {"open-timeout", '\0', "seconds", "give up on a device that does not open (0: wait)",
       [&](const std::string& v) { remote.open_timeout = seconds(v, "--open-timeout"); }},
      {"plain-remote", '\0', "", "host:x.tap may be a plain file where rmt is not tapekit's",
       [&](const std::string&) { remote.plain_remote = true; }},
      {"streams", '\0', "count|auto", "remote shells joined into one session to a host:path",
       [&](const std::string& v) { remote.streams = streams(v); }},
  };
}

}  // namespace tk
