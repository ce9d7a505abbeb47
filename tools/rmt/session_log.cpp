// rmt's session log (--log: syslog, a file or none) and debug log
// (--debug-log), and the lines told to the client's user on standard error.
#include "session.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <netdb.h>
#include <paths.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "../../lib/io.hpp"

namespace tk::rmt_server {

// Who is on the other end, for the session log (docs/rmt-protocol.md,
// "The server's rules").
std::string describe_peer(int fd) {
  if (const char* ssh = std::getenv("SSH_CONNECTION")) {
    std::string s = ssh;
    auto sp = s.find(' ');
    auto sp2 = sp == std::string::npos ? sp : s.find(' ', sp + 1);
    return "ssh:" + s.substr(0, sp) + (sp == std::string::npos ? "" : ":" + s.substr(sp + 1, sp2 - sp - 1));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, port,
                      sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) == 0)
      return std::string(host) + ":" + port;
    return "socket";
  }
  return "pipe";
}

// A log the command line names. One that cannot be opened is a bad command
// line (exit 1): status 3 is for a failed connection.
Fd open_log(const char* option, const std::string& path) {
  try {
    return open_file(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
  } catch (const Error& e) {
    throw UsageError(std::string(option) + " " + path + ": " + std::strerror(e.errnum()));
  }
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out + "\"";
}

// A request as the debug log shows it. A join's secret is left out: the log
// may be read by others than the session's user, and the secret is all a
// process of that user needs to join the session and take its data.
std::string describe_request(const rmt::Request& r) {
  std::string line(1, r.command);
  if (r.command == 's') line += r.sub;
  for (int i = 0; i < r.line_count; ++i) {
    std::string_view arg = r.lines[static_cast<std::size_t>(i)];
    std::string shown(arg.substr(0, 256));
    if (i == 1 && r.command == 'i' && rmt::parse_number(r.lines[0]) == rmt::tapekit_join_op) {
      // "<k>:<id>:<secret>": the index and the session id stay.
      auto first = arg.find(':');
      auto second = first == arg.npos ? arg.npos : arg.find(':', first + 1);
      shown = second == arg.npos ? "" : std::string(arg.substr(0, std::min<std::size_t>(second + 1, 256)));
      shown += "(secret not logged)";
    }
    line += " " + quoted(shown);
  }
  return line;
}

// Why syslog(3) would lose the session log, or "" when it works: glibc's
// syslog drops every line silently when nothing listens on /dev/log (a
// container without a log daemon). TAPEKIT_TEST_SYSLOG_SOCKET, for test
// suites only, names the socket checked instead; set and empty, none is
// checked, so that a suite's results do not depend on the host's daemon.
std::string syslog_problem() {
  std::string path = _PATH_LOG;
  if (const char* test = std::getenv("TAPEKIT_TEST_SYSLOG_SOCKET")) {
    if (*test == '\0') return {};
    path = test;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return path + ": " + std::strerror(ENAMETOOLONG);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int err = 0;
  // As glibc's openlog: a datagram socket, else a stream one.
  for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
    Fd sock(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!sock.valid()) return path + ": " + std::strerror(errno);
    if (retry_eintr(::connect, sock.get(), reinterpret_cast<const sockaddr*>(&addr),
                    socklen_t{sizeof addr}) == 0)
      return {};
    err = errno;
    // A stream socket whose backlog is full is there all the same.
    if (err == EAGAIN || err == EINPROGRESS) return {};
    if (err != EPROTOTYPE) break;
  }
  return path + ": " + std::strerror(err);
}

namespace {

// A server started with one socket for all three (rshd without a second
// channel, inetd) must not write text where its replies go.
bool stderr_is_reply_channel() {
  struct stat err {}, out {};
  return ::fstat(2, &err) == 0 && ::fstat(1, &out) == 0 && err.st_dev == out.st_dev &&
         err.st_ino == out.st_ino && !S_ISCHR(err.st_mode);
}

}  // namespace

void Session::note_open(const std::string& text, bool new_entry) {
  constexpr std::size_t max_log = 4096;
  if (opened_.size() >= max_log) return;
  if (new_entry && !opened_.empty()) opened_ += "; ";
  opened_ += text;
  if (opened_.size() >= max_log) opened_ += " ...";
}

void Session::debug(std::string_view line) {
  if (!debug_.valid()) return;
  std::string l(line);
  if (l.empty() || l.back() != '\n') l += '\n';
  try {
    write_all(debug_.get(), std::as_bytes(std::span(l.data(), l.size())), options_.debug_log);
  } catch (const Error&) {
    debug_ = Fd();  // a full disk must not stop the tape session
  }
}

void Session::tell_user(const std::string& text) {
  if (!stderr_is_reply_channel()) std::fputs(("rmt: " + text + "\n").c_str(), stderr);
}

void Session::log_session(const std::string& end) {
  if (options_.log == "none") return;
  std::string line = "session peer=" + peer_ + " user=" + user_;
  if (const char* cmd = std::getenv("SSH_ORIGINAL_COMMAND")) line += " command=" + quoted(cmd);
  if (!options_.login_command.empty()) line += " login-command=" + quoted(options_.login_command);
  line += " open=[" + opened_ + "] requests=" + std::to_string(requests_) +
          " in=" + std::to_string(bytes_in_) + " out=" + std::to_string(bytes_out_) +
          " end=" + quoted(end);
  if (!streams_.note().empty()) line += " streams=" + quoted(streams_.note());
  if (!sandbox_.empty()) line += " sandbox=" + quoted(sandbox_);
  log_line(line);
  if (options_.log == "syslog") ::closelog();
}

void Session::log_and_tell(const std::string& text) {
  log_line(text);
  tell_user(text);
}

void Session::log_line(const std::string& text) {
  if (options_.log == "none" || syslog_missing_) return;
  if (options_.log == "syslog") {
    ::syslog(LOG_INFO, "%s", text.c_str());
    return;
  }
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string line = std::string(stamp) + " rmt[" + std::to_string(::getpid()) + "]: " + text + "\n";
  try {
    write_all(log_.get(), std::as_bytes(std::span(line.data(), line.size())), options_.log);
  } catch (const Error&) {
    // Losing a log line must not change the session.
  }
}

}  // namespace tk::rmt_server
