// wanprobe: both ends of the measurements and checks made through wanrelay.
//
//   wanprobe serve PORT_FILE      a server on a free port of 127.0.0.1 (written
//                                 to PORT_FILE) until killed; each connection
//                                 names its exchange in its first byte
//   wanprobe echo PORT            standard input to the server and back to
//                                 standard output; ends at the server's EOF
//   wanprobe ping PORT COUNT      COUNT one-byte exchanges, one at a time;
//                                 prints "COUNT exchanges: MS ms each"
//   wanprobe stream PORT MIB      sends MIB MiB and prints the rate the server
//                                 saw, first byte to last: "MIB/S MiB/s"
//
// echo and ping are echoed back byte for byte; the server half-closes after
// its client's EOF, so a relay that loses a half-close makes echo hang.
#include <chrono>
#include <cstdio>
#include <netinet/tcp.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/size.hpp"
#include "../../tools/common/run_main.hpp"
#include "loopback.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t chunk_size = 256 * 1024;

tk::Fd connect_to(int port) {
  tk::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) tk::throw_errno("socket");
  auto addr = tk::loopback::address(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    tk::throw_errno("connect 127.0.0.1:" + std::to_string(port));
  }
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Copies from to to until from ends; returns the bytes copied and the time
// from the first to the last.
std::pair<std::uint64_t, double> copy_stream(int from, int to, bool discard) {
  std::vector<std::byte> buf(chunk_size);
  std::uint64_t total = 0;
  Clock::time_point first{}, last{};
  for (;;) {
    std::size_t n = tk::read_record(from, buf, "socket");
    if (n == 0) break;
    last = Clock::now();
    if (total == 0) first = last;
    total += n;
    if (!discard) tk::write_all(to, std::span(buf).first(n), "socket");
  }
  return {total, std::chrono::duration<double>(last - first).count()};
}

void serve_connection(tk::Fd fd) {
  try {
    std::byte kind{};
    if (tk::read_full(fd.get(), std::span(&kind, 1), "socket") != 1) return;
    if (kind == std::byte{'E'}) {
      copy_stream(fd.get(), fd.get(), false);
    } else {
      auto [bytes, seconds] = copy_stream(fd.get(), -1, true);
      std::string reply = std::to_string(bytes) + " " + std::to_string(seconds) + "\n";
      tk::write_all(fd.get(), std::as_bytes(std::span(reply)), "socket");
    }
    ::shutdown(fd.get(), SHUT_WR);
    // Wait for the client to close, so it never meets a reset.
    copy_stream(fd.get(), -1, true);
  } catch (const tk::Error&) {
    // A client that went away ends its own exchange only.
  }
}

int serve(const std::string& port_file) {
  auto [listener, port] = tk::loopback::listen_on(0);
  tk::loopback::publish_port(port, port_file);
  for (;;) {
    int fd = tk::retry_eintr(::accept4, listener.get(), static_cast<sockaddr*>(nullptr),
                             static_cast<socklen_t*>(nullptr), SOCK_CLOEXEC);
    if (fd < 0) tk::throw_errno("accept");
    std::thread(serve_connection, tk::Fd(fd)).detach();
  }
}

int echo(int port) {
  tk::Fd fd = connect_to(port);
  tk::write_all(fd.get(), std::as_bytes(std::span("E", 1)), "socket");
  std::thread sender([&] {
    copy_stream(0, fd.get(), false);
    ::shutdown(fd.get(), SHUT_WR);
  });
  copy_stream(fd.get(), 1, false);
  // The server's end may come before ours (it went away): do not wait for
  // standard input to end too.
  sender.detach();
  return 0;
}

int ping(int port, std::int64_t count) {
  tk::Fd fd = connect_to(port);
  tk::write_all(fd.get(), std::as_bytes(std::span("E", 1)), "socket");
  std::byte byte{'p'};
  auto exchange = [&] {
    tk::write_all(fd.get(), std::span(&byte, 1), "socket");
    if (tk::read_full(fd.get(), std::span(&byte, 1), "socket") != 1) {
      throw tk::Error(ECONNRESET, "ping: the server closed early");
    }
  };
  // The first exchange also waits for the connection to open: not counted.
  exchange();
  auto start = Clock::now();
  for (std::int64_t i = 0; i < count; ++i) exchange();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("%lld exchanges: %.1f ms each\n", static_cast<long long>(count), seconds * 1000 / static_cast<double>(count));
  return 0;
}

int stream(int port, std::int64_t mib) {
  tk::Fd fd = connect_to(port);
  tk::write_all(fd.get(), std::as_bytes(std::span("S", 1)), "socket");
  std::vector<std::byte> block(1u << 20, std::byte{0x5a});
  for (std::int64_t i = 0; i < mib; ++i) tk::write_all(fd.get(), block, "socket");
  ::shutdown(fd.get(), SHUT_WR);
  char reply[128] = {};
  std::size_t n = tk::read_full(fd.get(), std::as_writable_bytes(std::span(reply, sizeof reply - 1)), "socket");
  unsigned long long bytes = 0;
  double seconds = 0;
  if (n == 0 || std::sscanf(reply, "%llu %lf", &bytes, &seconds) != 2 || seconds <= 0) {
    throw tk::Error(EPROTO, "stream: no rate from the server");
  }
  std::printf("%.1f MiB/s\n", static_cast<double>(bytes) / 1048576 / seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tk::ExitPolicy policy;
  policy.usage = 2;
  policy.usage_text = "usage: wanprobe serve PORT_FILE | echo PORT | ping PORT COUNT | stream PORT MIB\n";
  return tk::run_main("wanprobe", policy, [&] {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 2 && args[0] == "serve") return serve(args[1]);
    if (args.size() < 2) throw tk::UsageError("missing operands");
    int port = static_cast<int>(tk::parse_count(args[1], "port", 1, 65535));
    if (args.size() == 2 && args[0] == "echo") return echo(port);
    if (args.size() == 3 && args[0] == "ping") return ping(port, tk::parse_count(args[2], "count", 1, 1'000'000));
    if (args.size() == 3 && args[0] == "stream") return stream(port, tk::parse_count(args[2], "MiB", 1, 1'000'000));
    throw tk::UsageError("unknown command " + args[0]);
  });
}
