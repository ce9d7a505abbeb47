// The meeting of parallel streams: an abstract Unix socket, SO_PEERCRED and
// a shared secret; the joiner's descriptors cross it with SCM_RIGHTS.
#include "join.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace tk::rmt_server {
namespace {

constexpr std::size_t id_bytes = 8;
constexpr std::size_t secret_bytes = 16;
// A joiner that connected must say who it is at once; one that does not is
// dropped, so it cannot hold the gathering.
constexpr int handshake_ms = 5000;

std::string random_hex(std::size_t bytes) {
  std::array<unsigned char, 32> raw{};
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = retry_eintr_always([&] { return ::getrandom(raw.data() + got, bytes - got, 0); });
    if (n == -1) throw_errno("getrandom");
    got += static_cast<std::size_t>(n);
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) {
    out += digits[raw[i] >> 4];
    out += digits[raw[i] & 0xf];
  }
  return out;
}

bool is_hex(std::string_view s, std::size_t length) {
  return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Constant time: how much of a wrong secret was right must not show.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff = static_cast<unsigned char>(diff | (static_cast<unsigned char>(a[i]) ^
                                              static_cast<unsigned char>(b[i])));
  return diff == 0;
}

// The random id alone names it: a joiner of another user finds the session
// and is refused there, where the refusal is logged.
sockaddr_un address(const std::string& id, socklen_t& length) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string name = "tapekit-rmt-" + id;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

ucred peer_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) throw_errno("SO_PEERCRED");
  return cred;
}

bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return retry_eintr(::poll, &p, nfds_t{1}, ms) > 0;
}

void send_text(int fd, std::string_view text) {
  // MSG_NOSIGNAL: a peer gone is an error here, not a SIGPIPE.
  [[maybe_unused]] ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
}

}  // namespace

JoinPoint::JoinPoint(int streams)
    : id_(random_hex(id_bytes)),
      secret_(random_hex(secret_bytes)),
      streams_(streams),
      taken_(static_cast<std::size_t>(streams), false) {
  token_ = id_ + ":" + secret_;
  listen_ = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_.valid()) throw_errno("join socket");
  socklen_t length = 0;
  sockaddr_un addr = address(id_, length);
  if (::bind(listen_.get(), reinterpret_cast<const sockaddr*>(&addr), length) == -1)
    throw_errno("join socket");
  if (::listen(listen_.get(), streams) == -1) throw_errno("join socket");
}

std::optional<JoinedStream> JoinPoint::accept_one(std::string& refusal) {
  refusal.clear();
  Fd conn(retry_eintr(::accept4, listen_.get(), static_cast<sockaddr*>(nullptr),
                      static_cast<socklen_t*>(nullptr), SOCK_CLOEXEC));
  if (!conn.valid()) return std::nullopt;  // it went away before we took it
  ucred who = peer_of(conn.get());
  std::string from = "uid " + std::to_string(who.uid) + " pid " + std::to_string(who.pid);
  auto refuse = [&](std::string why) {
    refusal = why + " (" + from + ")";
    send_text(conn.get(), "E\n");
    return std::nullopt;
  };
  if (who.uid != ::geteuid())
    return refuse("another user: the session is uid " + std::to_string(::geteuid()) + "'s");
  if (!readable_within(conn.get(), handshake_ms)) return refuse("no join message in time");
  char text[128];
  iovec io{text, sizeof text - 1};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = retry_eintr(::recvmsg, conn.get(), &msg, MSG_CMSG_CLOEXEC);
  // Whatever came with it is owned (and closed) here, join or not.
  std::vector<Fd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (n <= 0) return refuse("no join message");
  if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds.size() != 2)
    return refuse("a join without its two descriptors");
  std::string_view m(text, static_cast<std::size_t>(n));
  auto colon = m.find(':');
  int index = 0;
  auto [end, ec] = std::from_chars(m.data(), m.data() + (colon == m.npos ? 0 : colon), index);
  if (colon == m.npos || ec != std::errc() || end != m.data() + colon || index < 1 ||
      index >= streams_)
    return refuse("a malformed join message");
  if (!same_secret(m.substr(colon + 1), secret_)) return refuse("a wrong secret");
  if (taken_[static_cast<std::size_t>(index)])
    return refuse("stream " + std::to_string(index + 1) + " had joined already");
  taken_[static_cast<std::size_t>(index)] = true;
  ++joined_;
  send_text(conn.get(), "A\n");
  JoinedStream s;
  s.index = index;
  s.in = std::move(fds[0]);
  s.out = std::move(fds[1]);
  s.link = std::move(conn);
  return s;
}

Handover hand_over(std::string_view line, int in_fd, int out_fd) {
  // "<k>:<id>:<secret>"
  auto first = line.find(':');
  auto second = first == line.npos ? line.npos : line.find(':', first + 1);
  int index = 0;
  if (second != line.npos) {
    auto [end, ec] = std::from_chars(line.data(), line.data() + first, index);
    if (ec != std::errc() || end != line.data() + first) index = 0;
  }
  std::string_view id = second == line.npos ? "" : line.substr(first + 1, second - first - 1);
  std::string_view secret = second == line.npos ? "" : line.substr(second + 1);
  if (index < 1 || !is_hex(id, 2 * id_bytes) || !is_hex(secret, 2 * secret_bytes))
    throw Error(EINVAL, "join: malformed token");
  Fd link(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!link.valid()) throw_errno("join socket");
  socklen_t length = 0;
  sockaddr_un addr = address(std::string(id), length);
  if (retry_eintr(::connect, link.get(), reinterpret_cast<const sockaddr*>(&addr), length) == -1)
    throw Error(errno, "join: no session " + std::string(id) + " of this user is waiting for streams");
  // The secret goes only to a session of our own user: a name another user
  // took after the session ended would otherwise learn it, and our data.
  ucred owner = peer_of(link.get());
  if (owner.uid != ::geteuid())
    throw Error(EACCES, "join: session " + std::string(id) + " belongs to uid " +
                            std::to_string(owner.uid));
  std::string text = std::to_string(index) + ":" + std::string(secret);
  iovec io{text.data(), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  int fds[2] = {in_fd, out_fd};
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (retry_eintr(::sendmsg, link.get(), &msg, MSG_NOSIGNAL) == -1) throw_errno("join");
  char answer[2] = {};
  ssize_t n = readable_within(link.get(), 2 * handshake_ms)
                  ? retry_eintr(::recv, link.get(), static_cast<void*>(answer), sizeof answer, 0)
                  : 0;
  if (n <= 0 || answer[0] != 'A')
    throw Error(EACCES, "join: session " + std::string(id) + " refused stream " +
                            std::to_string(index + 1));
  return Handover{index, std::move(link)};
}

void wait_for_release(int link) {
  pollfd p{link, POLLIN, 0};
  // Returns on the session's end (end of file, an error) or a stop signal.
  retry_eintr(::poll, &p, nfds_t{1}, -1);
}

}  // namespace tk::rmt_server
