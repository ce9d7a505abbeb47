// What the loopback helpers (wanrelay, wanprobe) share: addresses on
// 127.0.0.1 and telling a script which port a listener got.
#pragma once

#include <arpa/inet.h>
#include <cstdio>
#include <fcntl.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>

#include "../../lib/io.hpp"

namespace tk::loopback {

inline sockaddr_in address(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A listening socket on 127.0.0.1:port (0: a free one); returns it and the port.
inline std::pair<Fd, int> listen_on(int port, int flags = 0) {
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  if (!listener.valid()) throw_errno("socket");
  int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto addr = address(port);
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw_errno("bind 127.0.0.1:" + std::to_string(port));
  }
  if (::listen(listener.get(), 128) != 0) throw_errno("listen");
  socklen_t len = sizeof addr;
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw_errno("getsockname");
  return {std::move(listener), ntohs(addr.sin_port)};
}

// Writes the port to path whole, then renames it into place: a script that
// waits for the file never reads half a number.
inline void publish_port(int port, const std::string& path) {
  std::string text = std::to_string(port) + "\n";
  std::string temporary = path + ".tmp";
  {
    Fd file = open_file(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    write_all(file.get(), std::as_bytes(std::span(text)), temporary);
    file.close(temporary);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) throw_errno("rename " + temporary);
}

}  // namespace tk::loopback
