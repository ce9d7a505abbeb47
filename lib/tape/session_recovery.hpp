// Completing a write session its writer never closed (killed, or its machine
// lost power), as the kernel's close completes a killed writer's file on st,
// and only once the image is proven to be the one that session was writing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <sys/stat.h>

#include "drive_state.hpp"

namespace tk {

// A file's modification time in nanoseconds, as the drive state keeps it.
std::int64_t mtime_ns(const struct stat& st) noexcept;
// The image's, -1 when fstat fails.
std::int64_t image_mtime_ns(int fd) noexcept;

// What a write session is about to put first at the drive's position.
struct FirstObject {
  bool known = false;  // false: the session only cuts the tape there (erase, weof 0)
  std::uint32_t word = 0;             // its length word; 0 for a filemark
  std::span<const std::byte> data{};  // a record's data
};

// Records in state.session what a session starting at state.offset must find
// again to prove an unfinished write is its own: the position's counts, a
// digest of the image's bytes before that offset (read through fd), and its
// first object. Sets state.writing and state.image_inode. Throws Error
// naming the image when the bytes cannot be read.
void begin_write_session(int fd, std::uint64_t inode, const FirstObject& first, DriveState& state,
                         const std::string& name);

// What an unfinished session (state.writing) left in the image at fd, of
// size bytes and inode inode.
struct SessionFindings {
  // The image is the one the session wrote: the same file, the bytes before
  // the session's start unchanged, its first object in place, and from there
  // a chain of whole objects to the end or to one object cut short by it.
  bool ours = false;
  std::string changed;          // when not ours, what differs, for the operator
  std::uint64_t end = 0;        // where the chain of whole objects ends
  std::uint64_t cut_bytes = 0;  // the object cut short after end, to remove
  bool needs_filemark = false;  // the file the session wrote last has no filemark
  std::int64_t file = 0, block = 0, lba = 0;  // the counts at end (after a filemark added)
};
// Reads only; never changes the image.
SessionFindings examine_interrupted_session(int fd, std::uint64_t size, std::uint64_t inode,
                                            const DriveState& state);

// One line for an operator about a session found unfinished and not yet
// completed (an open that may not write leaves it to the next writer).
std::string describe_pending_session(const SessionFindings& found);

// One line for an operator about a session just completed.
std::string describe_completed_session(const Recovery& done);

// Completes the session examined (found.ours) through fd, opened for reading
// and writing with the image's lock held: cuts off the object cut short,
// writes the filemark its close would have written, and leaves the drive
// just past the end, as st leaves a closed writer, unless the drive was
// moved back before the session's start since (then it stays there).
// state.recovery says what was done. Throws Error naming the image when it
// cannot cut or write.
void complete_interrupted_session(int fd, const SessionFindings& found, DriveState& state,
                                  const std::string& name);

}  // namespace tk
