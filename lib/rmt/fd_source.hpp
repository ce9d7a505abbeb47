// A ByteSource over a descriptor (the control pipe or socket), with an
// optional timeout for each wait so that a silent peer cannot hold a server.
#pragma once

#include "protocol.hpp"

namespace tk::rmt {

class FdSource final : public ByteSource {
 public:
  explicit FdSource(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  // Milliseconds to wait for input before read_some throws
  // Error(ETIMEDOUT); negative waits forever.
  void set_timeout(int milliseconds) noexcept { timeout_ms_ = milliseconds; }
  std::size_t read_some(std::span<std::byte> buf) override;

 private:
  int fd_;
  std::string name_;
  int timeout_ms_ = -1;
};

}  // namespace tk::rmt
