// AppendBuffer: appends to a file, gathered into large writes at offsets
// aligned to its window, as a drive gathers blocks in its buffer.
//
// Why: the page cache sizes the folios it creates by the offset and length of
// each write. A tape image's records start at offsets only 4-byte aligned
// (every record carries 8 bytes of length words), so writing them one by one
// leaves the image cached in small folios, and reading it back while it is
// still cached costs more than reading a plain file written in aligned
// blocks (bench/README.md, "Measurements behind the code"). Gathered into
// aligned 1 MiB writes, the same bytes land in large folios; the copy into the
// window costs less than the per-record writes it saves.
//
// Bytes handed to add() are the caller's to account for until flush() (or a
// window filling up) has written them: a failed write throws tk::Error and
// written_to() says how far the file got. The caller decides what that means
// for what it had acknowledged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

namespace tk {

class AppendBuffer {
 public:
  static constexpr std::size_t window_bytes = std::size_t{1} << 20;

  // fd stays the caller's; context names the file in errors.
  AppendBuffer(int fd, std::string context) : fd_(fd), context_(std::move(context)) {}

  bool pending() const noexcept { return begin_ != end_; }
  // Every byte before this offset that was added has reached the file.
  std::uint64_t written_to() const noexcept { return begin_; }

  // Queues bytes for the file at offset `at`, which must follow the pending
  // bytes while any are pending; writes each window as it fills.
  void add(std::uint64_t at, std::span<const std::byte> bytes);
  // Writes everything pending.
  void flush();
  // Forgets what is pending (after a failure was dealt with).
  void discard() noexcept { begin_ = end_; }

 private:
  void write_out();  // writes [begin_, end_)

  struct FreeWindow {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  int fd_;
  std::string context_;
  std::unique_ptr<std::byte[], FreeWindow> window_;  // allocated on first add
  std::uint64_t window_at_ = 0;  // file offset of window_[0]: a multiple of window_bytes
  std::uint64_t begin_ = 0;      // first pending byte
  std::uint64_t end_ = 0;        // end of the pending bytes
};

}  // namespace tk
