#include "append_buffer.hpp"

#include <algorithm>
#include <cstring>

#include "../error.hpp"
#include "../io.hpp"

namespace tk {

void AppendBuffer::add(std::uint64_t at, std::span<const std::byte> bytes) {
#ifdef TK_WITHOUT_WRITE_STAGING
  // bench/bench-mechanisms' build without it: each record written as it
  // comes, to show what gathering gains.
  if (!pending()) {
    try {
      write_all_at(fd_, bytes, at, context_);
    } catch (const Error& e) {
      begin_ = end_ = at + e.bytes_done();
      throw;
    }
    begin_ = end_ = at + bytes.size();
    return;
  }
#endif
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
  try {
    write_all_at(fd_, {window_.get() + (begin_ - window_at_), static_cast<std::size_t>(end_ - begin_)},
                 begin_, context_);
  } catch (const Error& e) {
    begin_ += e.bytes_done();
    throw;
  }
  begin_ = end_;
}

}  // namespace tk
