#include "append_buffer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include "../error.hpp"

namespace tk {

void AppendBuffer::add(std::uint64_t at, std::span<const std::byte> bytes) {
  if (!window_) {
    // Page-aligned memory, so each page of the window maps to one page of the file.
    void* p = std::aligned_alloc(4096, window_bytes);
    if (p == nullptr) throw Error(ENOMEM, "buffer writes to " + context_);
    window_.reset(static_cast<std::byte*>(p));
  }
  if (!pending()) {
    window_at_ = at & ~std::uint64_t{window_bytes - 1};
    begin_ = end_ = at;
  }
  while (!bytes.empty()) {
    std::size_t room = static_cast<std::size_t>(window_at_ + window_bytes - end_);
    std::size_t now = std::min(room, bytes.size());
    std::memcpy(window_.get() + (end_ - window_at_), bytes.data(), now);
    end_ += now;
    bytes = bytes.subspan(now);
    if (end_ == window_at_ + window_bytes) {
      write_out();
      window_at_ = end_;
    }
  }
}

void AppendBuffer::flush() {
  if (pending()) write_out();
}

void AppendBuffer::write_out() {
  // A regular file's write is not interrupted by signals that are handled, so
  // EINTR is only retried here, never treated as a request to stop: what is
  // pending was already acknowledged.
  while (begin_ < end_) {
    ssize_t n = ::pwrite(fd_, window_.get() + (begin_ - window_at_),
                         static_cast<std::size_t>(end_ - begin_), static_cast<off_t>(begin_));
    if (n == -1 && errno == EINTR) continue;
    if (n == -1) throw_errno("write " + context_);
    if (n == 0) throw Error(ENOSPC, "write " + context_);
    begin_ += static_cast<std::uint64_t>(n);
  }
}

}  // namespace tk
