// wanrelay: a loopback TCP relay that behaves like a long fat network, for
// tests and benchmarks where netem is not available.
//
//   wanrelay [--rtt MS] [--rate BITS] [--window BYTES] [--port-file FILE]
//            LISTEN_PORT TARGET_PORT
//
// Listens on 127.0.0.1:LISTEN_PORT (0: a free port) and forwards each
// connection to 127.0.0.1:TARGET_PORT. Prints the port it listens on (and
// writes it to FILE, atomically) once it accepts connections. The link:
// - every byte reaches the other side RTT/2 after the relay took it;
// - each direction has one token bucket at RATE bits per second (k, m, g:
//   powers of 1000; 0: no limit), shared by all connections;
// - each direction of each connection has at most WINDOW bytes in flight:
//   bytes count from when the relay reads them until RTT/2 after it has
//   delivered them, when a TCP acknowledgement would be back;
// - a connection opens RTT after the client connected (the handshake), so
//   neither side's first byte arrives sooner than over a real link;
// - an end of input is passed on in order, as a half-close (shutdown), and a
//   reset as a reset.
// Defaults: --rtt 50 --rate 1g --window 6m. SIGTERM or SIGINT ends it.
// One thread, one epoll set, timers in a heap: it sleeps until a socket or
// the next due time wakes it.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fcntl.h>
#include <memory>
#include <netinet/tcp.h>
#include <queue>
#include <string>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/size.hpp"
#include "../../tools/common/run_main.hpp"
#include "loopback.hpp"
#include "wan_link.hpp"

namespace {

using tk::wan::FlightWindow;
using tk::wan::Nanos;
using tk::wan::never;
using tk::wan::TokenBucket;

constexpr std::size_t read_size = 256 * 1024;

Nanos clock_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Nanos>(ts.tv_sec) * tk::wan::nanos_per_second + ts.tv_nsec;
}

struct Settings {
  Nanos rtt = 50'000'000;
  std::uint64_t rate_bits = 1'000'000'000;
  std::uint64_t window = 6u << 20;
  std::string port_file;
  int listen_port = 0;
  int target_port = 0;
};

// A rate in bits per second: digits, then k, m or g (powers of 1000, as
// link rates are counted).
std::uint64_t parse_rate(std::string_view text) {
  std::uint64_t unit = 1;
  std::string_view digits = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k': case 'K': unit = 1'000; break;
      case 'm': case 'M': unit = 1'000'000; break;
      case 'g': case 'G': unit = 1'000'000'000; break;
      default: break;
    }
    if (unit != 1) digits.remove_suffix(1);
  }
  if (digits.empty()) throw tk::UsageError("--rate: not a rate: '" + std::string(text) + "'");
  return static_cast<std::uint64_t>(tk::parse_count(digits, "--rate", 0, 100'000'000'000)) * unit;
}

Settings parse_settings(int argc, char** argv) {
  Settings settings;
  std::vector<std::string_view> operands;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg.substr(0, 2) != "--") {
      operands.push_back(arg);
      continue;
    }
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name != "--rtt" && name != "--rate" && name != "--window" && name != "--port-file") {
      throw tk::UsageError("unknown option " + std::string(name));
    }
    if (!has_value) {
      if (++i == argc) throw tk::UsageError(std::string(name) + " needs a value");
      value = argv[i];
    }
    if (name == "--rtt") {
      settings.rtt = tk::parse_count(value, "--rtt", 0, 60'000) * 1'000'000;
    } else if (name == "--rate") {
      settings.rate_bits = parse_rate(value);
    } else if (name == "--window") {
      settings.window = tk::parse_size(value, "--window", 1u << 30);
      if (settings.window == 0) throw tk::UsageError("--window: must be at least one byte");
    } else {
      settings.port_file = std::string(value);
    }
  }
  if (operands.size() != 2) throw tk::UsageError("need LISTEN_PORT and TARGET_PORT");
  settings.listen_port = static_cast<int>(tk::parse_count(operands[0], "listen port", 0, 65535));
  settings.target_port = static_cast<int>(tk::parse_count(operands[1], "target port", 1, 65535));
  return settings;
}

// Bytes on their way through one direction of the link, or the end of the
// sender's input (fin) or its reset, which travel in order behind them.
struct Segment {
  enum class Kind { data, fin, reset };
  Kind kind = Kind::data;
  Nanos arrives = 0;
  std::unique_ptr<std::byte[]> bytes;
  std::size_t size = 0;
  std::size_t delivered = 0;
};

// One direction of one connection: reads src, delays, writes dst.
struct Direction {
  Direction(TokenBucket& link_, std::uint64_t window, Nanos ack_delay)
      : link(link_), flight(window, ack_delay) {}
  TokenBucket& link;
  int src = -1;
  int dst = -1;
  FlightWindow flight;
  std::deque<Segment> segments;
  // Edge-triggered readiness, as last reported by epoll.
  bool src_readable = false;
  bool dst_writable = true;
  bool input_ended = false;  // src gave end of input or an error
  bool failed = false;       // dst went away: what src sends is dropped
  bool finished = false;     // the fin was delivered, or failed and src ended
  bool reset = false;        // a reset reached dst: the connection ends
};

struct Connection {
  Connection(std::uint64_t id_, tk::Fd client_fd, const Settings& settings, Nanos now,
             TokenBucket& up_link, TokenBucket& down_link)
      : id(id_),
        client(std::move(client_fd)),
        opens_at(now + settings.rtt),
        up(up_link, settings.window, settings.rtt / 2),
        down(down_link, settings.window, settings.rtt / 2) {}
  std::uint64_t id;
  tk::Fd client;
  tk::Fd server;
  bool open = false;
  Nanos opens_at;
  Nanos armed = never;
  Direction up;    // client to server
  Direction down;  // server to client
};

class Relay {
 public:
  explicit Relay(const Settings& settings)
      : settings_(settings),
        // Depth: a millisecond of the link, at least 64 KiB, so one small
        // burst passes at once as it would through a switch's buffer.
        up_link_(settings.rate_bits / 8, std::max<std::uint64_t>(64 * 1024, settings.rate_bits / 8000), clock_now()),
        down_link_(settings.rate_bits / 8, std::max<std::uint64_t>(64 * 1024, settings.rate_bits / 8000), clock_now()) {}

  int run();

 private:
  // epoll tags: the listener, the signals, then 2 * id + side.
  static constexpr std::uint64_t listener_tag = 0;
  static constexpr std::uint64_t signal_tag = 1;

  void setup();
  void accept_all(Nanos now);
  void open_connection(Connection& c);
  void service(Connection& c, Nanos now);
  void deliver(Direction& d, Nanos now);
  void take_input(Direction& d, Nanos now);
  void arm(Connection& c, Nanos now);
  void watch(int fd, std::uint64_t tag);
  Nanos next_due(const Connection& c) const;

  const Settings& settings_;
  TokenBucket up_link_;
  TokenBucket down_link_;
  tk::Fd epoll_;
  tk::Fd listener_;
  tk::Fd signals_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, std::unique_ptr<Connection>> connections_;
  using Timer = std::pair<Nanos, std::uint64_t>;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::vector<std::byte> scratch_ = std::vector<std::byte>(read_size);
};

void Relay::watch(int fd, std::uint64_t tag) {
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.u64 = tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) tk::throw_errno("epoll_ctl");
}

void Relay::setup() {
  epoll_ = tk::Fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) tk::throw_errno("epoll_create1");

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  ::sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  signals_ = tk::Fd(::signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_.valid()) tk::throw_errno("signalfd");
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = signal_tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signals_.get(), &event) != 0) tk::throw_errno("epoll_ctl");

  auto [listener, port] = tk::loopback::listen_on(settings_.listen_port, SOCK_NONBLOCK);
  listener_ = std::move(listener);
  // Edge-triggered: a connection it cannot take now (out of descriptors)
  // waits for the next one instead of waking the loop for ever.
  event.events = EPOLLIN | EPOLLET;
  event.data.u64 = listener_tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &event) != 0) tk::throw_errno("epoll_ctl");
  if (!settings_.port_file.empty()) tk::loopback::publish_port(port, settings_.port_file);
  std::printf("%d\n", port);
  std::fflush(stdout);
}

void Relay::accept_all(Nanos now) {
  for (;;) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: keep serving the connections there are.
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::uint64_t id = next_id_++;
    auto c = std::make_unique<Connection>(id, tk::Fd(fd), settings_, now, up_link_, down_link_);
    c->up.src = c->down.dst = fd;
    watch(fd, 2 * id);
    Connection& ref = *c;
    connections_.emplace(id, std::move(c));
    arm(ref, now);
  }
}

// Ends a connection abruptly: a reset to whichever side is still there.
void reset_socket(int fd) {
  if (fd < 0) return;
  linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
}

void Relay::open_connection(Connection& c) {
  c.open = true;
  tk::Fd server(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto addr = tk::loopback::address(settings_.target_port);
  // A blocking connect: on the loopback it completes (or is refused) at once.
  if (!server.valid() || ::connect(server.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    reset_socket(c.client.get());
    c.up.finished = c.down.finished = true;
    return;
  }
  ::fcntl(server.get(), F_SETFL, ::fcntl(server.get(), F_GETFL) | O_NONBLOCK);
  int one = 1;
  ::setsockopt(server.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c.server = std::move(server);
  c.up.dst = c.down.src = c.server.get();
  watch(c.server.get(), 2 * c.id + 1);
}

// Writes what has arrived to dst, in order, as far as dst takes it.
void Relay::deliver(Direction& d, Nanos now) {
  while (!d.segments.empty() && d.segments.front().arrives <= now && d.dst_writable && !d.failed) {
    Segment& s = d.segments.front();
    if (s.kind == Segment::Kind::fin) {
      ::shutdown(d.dst, SHUT_WR);
      d.segments.pop_front();
      d.finished = true;
      continue;
    }
    if (s.kind == Segment::Kind::reset) {
      reset_socket(d.dst);
      d.segments.clear();
      d.reset = d.finished = true;
      return;
    }
    ssize_t n = ::send(d.dst, s.bytes.get() + s.delivered, s.size - s.delivered, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        d.dst_writable = false;
        return;
      }
      // The receiver is gone: what is on its way is lost, as it would be.
      d.failed = true;
      d.segments.clear();
      d.finished = d.input_ended;
      return;
    }
    s.delivered += static_cast<std::size_t>(n);
    if (s.delivered == s.size) {
      d.flight.delivered(s.size, now);
      d.segments.pop_front();
    }
  }
}

// Reads src while the window has room; each read is one segment, timed
// by the link's token bucket and half the round trip.
void Relay::take_input(Direction& d, Nanos now) {
  while (d.src_readable && !d.input_ended) {
    std::size_t room = d.failed ? read_size : std::min<std::uint64_t>(read_size, d.flight.room());
    if (room == 0) return;
    // Read into a fresh block, kept as it is when the read filled a good
    // part of it; a small read is copied into a block of its size, so a
    // chatty sender's many small reads do not each hold a large block.
    auto block = std::make_unique_for_overwrite<std::byte[]>(room);
    ssize_t n = ::read(d.src, d.failed ? scratch_.data() : block.get(), room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      d.src_readable = false;
      return;
    }
    // Nothing travels behind an end of input or a reset, and nothing
    // overtakes what is already on its way.
    Nanos last = d.segments.empty() ? now : d.segments.back().arrives;
    Segment s;
    if (n <= 0) {
      d.input_ended = true;
      if (d.failed) {
        d.finished = true;
        return;
      }
      s.kind = n == 0 ? Segment::Kind::fin : Segment::Kind::reset;
      s.arrives = std::max(last, now + settings_.rtt / 2);
      d.segments.push_back(std::move(s));
      return;
    }
    if (d.failed) continue;
    s.size = static_cast<std::size_t>(n);
    if (s.size >= room / 4) {
      s.bytes = std::move(block);
    } else {
      s.bytes = std::make_unique_for_overwrite<std::byte[]>(s.size);
      std::copy_n(block.get(), s.size, s.bytes.get());
    }
    d.flight.sent(s.size);
    s.arrives = std::max(last, d.link.pass(s.size, now) + settings_.rtt / 2);
    d.segments.push_back(std::move(s));
  }
}

void Relay::service(Connection& c, Nanos now) {
  if (!c.open) {
    if (now < c.opens_at) return arm(c, now);
    open_connection(c);
  }
  for (Direction* d : {&c.up, &c.down}) {
    if (d->finished) continue;
    d->flight.acknowledge(now);
    deliver(*d, now);
    take_input(*d, now);
    // With no delay at all, what was just read is already due.
    deliver(*d, now);
  }
  // A reset one way ends the connection both ways.
  if (c.up.reset || c.down.reset || (c.up.finished && c.down.finished)) {
    connections_.erase(c.id);
    return;
  }
  arm(c, now);
}

Nanos Relay::next_due(const Connection& c) const {
  if (!c.open) return c.opens_at;
  Nanos due = never;
  for (const Direction* d : {&c.up, &c.down}) {
    if (d->finished) continue;
    if (!d->segments.empty() && d->dst_writable) due = std::min(due, d->segments.front().arrives);
    due = std::min(due, d->flight.next_ack());
  }
  return due;
}

void Relay::arm(Connection& c, Nanos now) {
  Nanos due = next_due(c);
  if (due == never) return;
  if (due < c.armed || c.armed <= now) {
    c.armed = due;
    timers_.emplace(due, c.id);
  }
}

int Relay::run() {
  setup();
  std::vector<epoll_event> events(256);
  for (;;) {
    Nanos now = clock_now();
    while (!timers_.empty() && timers_.top().first <= now) {
      auto id = timers_.top().second;
      timers_.pop();
      auto it = connections_.find(id);
      if (it != connections_.end()) service(*it->second, now);
    }
    timespec timeout{};
    timespec* wait = nullptr;
    if (!timers_.empty()) {
      Nanos left = timers_.top().first - now;
      timeout.tv_sec = left / tk::wan::nanos_per_second;
      timeout.tv_nsec = left % tk::wan::nanos_per_second;
      wait = &timeout;
    }
    int n = ::epoll_pwait2(epoll_.get(), events.data(), static_cast<int>(events.size()), wait, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      tk::throw_errno("epoll_pwait2");
    }
    now = clock_now();
    for (int i = 0; i < n; ++i) {
      std::uint64_t tag = events[static_cast<std::size_t>(i)].data.u64;
      std::uint32_t what = events[static_cast<std::size_t>(i)].events;
      if (tag == signal_tag) return 0;
      if (tag == listener_tag) {
        accept_all(now);
        continue;
      }
      auto it = connections_.find(tag / 2);
      if (it == connections_.end()) continue;
      Connection& c = *it->second;
      bool client_side = tag % 2 == 0;
      Direction& reading = client_side ? c.up : c.down;
      Direction& writing = client_side ? c.down : c.up;
      if (what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) reading.src_readable = true;
      if (what & (EPOLLOUT | EPOLLHUP | EPOLLERR)) writing.dst_writable = true;
      service(c, now);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  tk::ExitPolicy policy;
  policy.usage = 2;
  policy.usage_text =
      "usage: wanrelay [--rtt MS] [--rate BITS] [--window BYTES] [--port-file FILE] "
      "LISTEN_PORT TARGET_PORT\n";
  return tk::run_main("wanrelay", policy, [&] {
    Settings settings = parse_settings(argc, argv);
    Relay relay(settings);
    return relay.run();
  });
}
