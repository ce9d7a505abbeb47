// Reading the control stream with timeouts.
#include "fd_source.hpp"

#include <cerrno>
#include <poll.h>

#include "../io.hpp"

namespace tk::rmt {

std::size_t FdSource::read_some(std::span<std::byte> buf) {
  if (timeout_ms_ >= 0) {
    pollfd pfd{fd_, POLLIN, 0};
    int n = retry_eintr([&] { return ::poll(&pfd, 1, timeout_ms_); });
    if (n == -1) throw_syscall_error("poll " + name_);
    if (n == 0) throw Error(ETIMEDOUT, "read " + name_);
  }
  return read_record(fd_, buf, name_);
}

}  // namespace tk::rmt
