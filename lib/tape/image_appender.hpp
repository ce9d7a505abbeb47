// ImageAppender: the end of a tape image, where every write goes. It reserves
// disk space ahead of the appends, stages appends that fall inside it (the
// drive's write buffer), and when staged bytes cannot be written cuts the
// image back to the last whole object that reached it.
//
// Reserved space: disk blocks past the end of the image, reserved with
// fallocate(KEEP_SIZE) ahead of the writes. A file system that allocates
// blocks as it writes back (ext4's delayed allocation) then finds them
// mapped, which makes an append of records at unaligned offsets cheaper than
// a plain file's aligned writes. The image's size never includes them, so a
// writer killed mid-tape leaves an image exactly as long as its data (the
// blocks are freed by the next truncating write or by release()). Reserved
// blocks are also what lets appends be staged. A refusal (no support, no
// space) stops reserving and staging: the write itself then reports real
// trouble, at the record that met it.
//
// Staging: appends that fall inside reserved blocks are gathered in an
// AppendBuffer and reach the image in aligned 1 MiB writes (append_buffer.hpp
// says why): when the window fills, at flush(), and before any unstaged
// write. Because the blocks are reserved, the write cannot find the disk full
// later. Should it fail anyway (an I/O error), the image is cut back to the
// last object boundary wholly in it, staging stops for the rest of the open,
// and StagedLoss hands the writer the Position it marked there. A writer
// killed outright loses what is staged (at most 1 MiB), as a drive that loses
// power loses its buffer; the image may then end in an object cut short. A
// writer that tells others what it wrote (rmt's W replies) flushes first.
//
// Position is the writer's own record of where it stood at a boundary; the
// appender reads only its offset (the image size there) and hands the rest
// back untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <sys/statfs.h>
#include <sys/uio.h>

#include "../error.hpp"
#include "append_buffer.hpp"
#include "simh_format.hpp"

namespace tk {

using FsType = decltype(statfs::f_type);

// What the file at fd lives on (statfs); 0 when it cannot be told, which
// neither reserves nor stages.
FsType file_system_type(int fd) noexcept;
// Whether reserving blocks ahead of the writes pays on this file system.
bool allocates_blocks(FsType type) noexcept;
// Whether a reservation there means a later write finds the room.
bool keeps_reservations(FsType type) noexcept;

// The image's size, the space reserved past it, and the writes that move it
// without staging. ImageAppender builds staging on it.
class ImageEnd {
 public:
  // fd stays the caller's; reader is told of every change to the image's
  // bytes; writable decides whether to reserve (on a suitable file system);
  // space is reserved no further than capacity (0 = unlimited).
  ImageEnd(int fd, std::string name, simh::ImageReader& reader, bool writable,
           std::uint64_t capacity);

  std::uint64_t size() const noexcept { return size_; }
  // Ends the image at `at` if it reaches past it (a write ends the tape where
  // it happens). Throws Error "truncate NAME".
  void truncate(std::uint64_t at);
  // Frees what was reserved past the end (truncating to the same size).
  void release() noexcept;

 protected:
  // Reserves room for total more bytes if needed; whether they may be staged.
  bool reserve_for(std::size_t total) noexcept;
  // Appends iov (total bytes) with one pwritev. A failure leaves the image as
  // it was and throws Error "write NAME" with bytes_done = done_before
  // (Interrupted for EINTR after a stop request).
  void write_through(std::span<const iovec> iov, std::size_t total, std::size_t done_before);
  // Counts total staged bytes as part of the image.
  void grow(std::size_t total) noexcept;
  // Ends the image at `at` after a loss and stops reserving and staging for
  // good; whether the file could be cut.
  bool cut_back(std::uint64_t at) noexcept;

  int fd() const noexcept { return fd_; }
  const std::string& name() const noexcept { return name_; }

 private:
  void reserve_through(std::uint64_t end) noexcept;

  static constexpr std::uint64_t first_reserve = 1 << 20;
  static constexpr std::uint64_t largest_reserve = 16 << 20;

  int fd_;
  std::string name_;
  simh::ImageReader& reader_;
  std::uint64_t size_;
  std::uint64_t capacity_;
  // The file size limit (ulimit -f) when the image was opened, 0 for none.
  // Nothing is reserved, so nothing staged, past it: the write that meets
  // it is the record's own, which fails with EFBIG before it is accepted,
  // as at a full disk, instead of a staged write after.
  std::uint64_t size_limit_;
  bool reserve_;                    // reserve blocks ahead of appends
  bool stage_;                      // stage appends inside reserved blocks
  bool reserved_ = false;           // blocks past the end may be reserved
  std::uint64_t reserved_end_ = 0;  // reserved up to here (0 = nothing)
  std::uint64_t reserve_step_ = first_reserve;
};

// Staged appends that could not be written: the image now ends at
// kept.offset, the last boundary wholly written (or the Position the staging
// began at). cut is false when even the truncation failed, so the file may
// still hold bytes past that end.
template <class Position>
struct StagedLoss {
  Position kept;
  int errnum;  // what the write failed with
  bool cut;
};

// The image's end with the drive's write buffer in front of it.
template <class Position>
class ImageAppender : public ImageEnd {
 public:
  using ImageEnd::ImageEnd;

  // Appends iov (total bytes, one or more whole objects) at the end of the
  // image: staged when it falls inside reserved blocks, else written at once
  // after what is staged. before is where the writer stands, at the end of
  // the image. Throws Error as write_through does, StagedLoss when staged
  // bytes could not be written.
  void append(std::span<const iovec> iov, std::size_t total, std::size_t done_before,
              const Position& at) {
    if (reserve_for(total)) {
      stage(iov, total, at);
      return;
    }
    // Without reserved blocks the write itself must report a full disk, at
    // the record that did not fit: what is staged goes first, to keep order.
    flush();
    write_through(iov, total, done_before);
  }

  // Notes that the image (size()) now ends on an object boundary, where the
  // writer stands at `at`. Throws StagedLoss as flush() does.
  void mark_boundary(const Position& at) {
    if (!staged_.pending()) return;
    staged_ends_.push_back(at);
    if (staged_ends_.size() >= max_staged_objects) flush();
  }

  // Writes everything staged; throws StagedLoss when it cannot.
  void flush() {
    if (!staged_.pending()) return;
    try {
      staged_.flush();
    } catch (const Error& e) {
      lose_staged(e);
    }
    staged_ends_.clear();
  }

 private:
  // A bound on the objects tracked while staged (tiny records fill it first).
  static constexpr std::size_t max_staged_objects = 4096;

  void stage(std::span<const iovec> iov, std::size_t total, const Position& at) {
    if (!staged_.pending()) {
      staged_ends_.clear();
      durable_ = at;
    }
    try {
      std::uint64_t offset = size();
      for (const iovec& v : iov) {
        staged_.add(offset, {static_cast<const std::byte*>(v.iov_base), v.iov_len});
        offset += v.iov_len;
      }
    } catch (const Error& e) {
      lose_staged(e);
    }
    while (!staged_ends_.empty() && staged_ends_.front().offset <= staged_.written_to()) {
      durable_ = staged_ends_.front();
      staged_ends_.pop_front();
    }
    grow(total);
  }

  [[noreturn]] void lose_staged(const Error& failure) {
    Position keep = durable_;
    for (const Position& p : staged_ends_) {
      if (p.offset > staged_.written_to()) break;
      keep = p;
    }
    staged_.discard();
    staged_ends_.clear();
    bool cut = cut_back(keep.offset);
    throw StagedLoss<Position>{keep, failure.errnum(), cut};
  }

  AppendBuffer staged_{fd(), name()};  // appends not yet in the image
  std::deque<Position> staged_ends_;  // object ends within them, in order
  Position durable_{};                 // the last object end known in the image
};

}  // namespace tk
