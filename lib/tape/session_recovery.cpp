// The proof, walk, cut and filemark that finish an interrupted write session.
#include "session_recovery.hpp"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "../error.hpp"
#include "../io.hpp"
#include "simh_format.hpp"

namespace tk {
namespace {

// How much of the image before a session's start its marker vouches for:
// enough that an image copied or restored over this one is told apart, read
// in one go when the marker is written and again before any cut.
constexpr std::uint64_t vouched_bytes = 64 * 1024;
// How much of the session's first record the marker keeps.
constexpr std::size_t first_bytes_kept = 32;

// Reads count bytes at offset, fewer only where the image ends.
std::vector<std::byte> read_at(int fd, std::uint64_t offset, std::size_t count,
                               const std::string& name) {
  std::vector<std::byte> buf(count);
  std::size_t done = 0;
  while (done < count) {
    ssize_t n = retry_eintr([&] {
      return ::pread(fd, buf.data() + done, count - done, static_cast<off_t>(offset + done));
    });
    if (n == -1) throw_syscall_error("read " + name);
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  buf.resize(done);
  return buf;
}

// FNV-1a: a change to the vouched bytes is what it must catch, not an
// adversary (who could as well rewrite the state file).
std::uint64_t digest(std::span<const std::byte> bytes) noexcept {
  std::uint64_t h = 0xcbf29ce484222325u;
  for (std::byte b : bytes) {
    h ^= std::to_integer<std::uint64_t>(b);
    h *= 0x100000001b3u;
  }
  return h;
}

std::uint64_t digest_before(int fd, std::uint64_t start, const std::string& name) {
  const std::uint64_t from = start - std::min(start, vouched_bytes);
  std::vector<std::byte> bytes = read_at(fd, from, static_cast<std::size_t>(start - from), name);
  // Short: the image ends before start; the digest then cannot match.
  if (bytes.size() != start - from) return ~digest(bytes);
  return digest(bytes);
}

std::string hex(std::span<const std::byte> bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string t;
  for (std::byte b : bytes) {
    auto v = std::to_integer<unsigned>(b);
    t += digits[v >> 4];
    t += digits[v & 0xF];
  }
  return t;
}

// Whether the image still begins the session with the object it recorded:
// as much of it as the image holds (a writer may have died inside it).
bool first_object_in_place(int fd, std::uint64_t size, const WriteSession& w,
                           const std::string& name) {
  if (!w.first_known || size <= w.start) return true;
  const std::size_t kept = w.first_bytes.size() / 2;
  const std::size_t want = 4 + kept;
  std::vector<std::byte> found = read_at(fd, w.start, want, name);
  std::byte word[4];
  simh::store_le32(word, w.first_word);
  const std::size_t word_seen = std::min<std::size_t>(found.size(), 4);
  if (!std::equal(word, word + word_seen, found.begin())) return false;
  if (found.size() <= 4) return true;
  std::string data = hex(std::span(found).subspan(4));
  return w.first_bytes.compare(0, data.size(), data) == 0;
}

std::string at(std::uint64_t offset) { return " at offset " + std::to_string(offset); }

}  // namespace

std::int64_t mtime_ns(const struct stat& st) noexcept {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::int64_t image_mtime_ns(int fd) noexcept {
  struct stat st {};
  return ::fstat(fd, &st) == -1 ? -1 : mtime_ns(st);
}

void begin_write_session(int fd, std::uint64_t inode, const FirstObject& first, DriveState& state,
                         const std::string& name) {
  WriteSession w;
  w.known = true;
  w.start = state.offset;
  w.file = state.file;
  w.block = state.block;
  w.lba = state.lba;
  w.before = digest_before(fd, state.offset, name);
  w.first_known = first.known;
  w.first_word = first.word;
  w.first_bytes = hex(first.data.first(std::min(first.data.size(), first_bytes_kept)));
  state.session = std::move(w);
  state.writing = true;
  state.image_inode = inode;
}

SessionFindings examine_interrupted_session(int fd, std::uint64_t size, std::uint64_t inode,
                                            const DriveState& state) {
  using simh::Kind;
  SessionFindings found;
  const WriteSession& w = state.session;
  const std::string name = "tape image";
  if (!w.known) {
    found.changed = "its drive state does not say where the unfinished write began";
    return found;
  }
  if (inode != state.image_inode) {
    found.changed = "another file has taken the image's name since";
    return found;
  }
  if (size < w.start) {
    found.changed = "the image is now shorter than where the unfinished write began" + at(w.start);
    return found;
  }
  if (digest_before(fd, w.start, name) != w.before) {
    found.changed = "the bytes before where the unfinished write began" + at(w.start) +
                    " are not the ones it wrote after";
    return found;
  }
  if (!first_object_in_place(fd, size, w, name)) {
    found.changed = "the object" + at(w.start) + " is not the one the unfinished write began with";
    return found;
  }
  simh::ImageReader image(fd, size);
  std::uint64_t pos = w.start;
  found.file = w.file;
  found.block = w.block;
  found.lba = w.lba;
  // Whether the data written last belongs to a file no filemark has closed;
  // a session may begin inside such a file (appending after its records).
  bool file_unclosed = pos > 0 && image.previous(pos).is_record();
  for (;;) {
    simh::Object o = image.next(pos);
    if (o.is_record()) {
      ++found.lba;
      if (found.block >= 0) ++found.block;
      file_unclosed = true;
    } else if (o.kind == Kind::tape_mark) {
      ++found.lba;
      if (found.file >= 0) ++found.file;
      found.block = 0;
      file_unclosed = false;
    } else if (o.kind == Kind::end_of_data) {
      found.end = o.start;
      break;
    } else if (o.cut_short) {
      // What a writer stopped mid-write leaves: its last write reached the
      // image only in part.
      found.end = o.start;
      found.cut_bytes = size - o.start;
      break;
    } else {
      found.changed = "the records written from offset " + std::to_string(w.start) +
                      " no longer chain: " + o.problem + at(o.start);
      return found;
    }
    pos = o.end;
  }
  if (file_unclosed) {
    found.needs_filemark = true;
    ++found.lba;
    if (found.file >= 0) ++found.file;
    found.block = 0;
  }
  found.ours = true;
  return found;
}

std::string describe_pending_session(const SessionFindings& found) {
  std::string t = "a write session was left unfinished (its writer killed, or power lost); "
                  "the next open for writing completes it";
  if (found.cut_bytes > 0)
    t += ", removing the " + std::to_string(found.cut_bytes) + " bytes cut short at offset " +
         std::to_string(found.end);
  if (found.needs_filemark) t += (found.cut_bytes > 0 ? " and" : ",") + std::string(" writing its filemark");
  return t;
}

std::string describe_completed_session(const Recovery& done) {
  std::string t = "completed a write session left unfinished (its writer killed, or power lost): ";
  if (done.cut_bytes > 0)
    t += "removed the " + std::to_string(done.cut_bytes) + " bytes cut short at offset " +
         std::to_string(done.cut_at);
  else
    t += "nothing was cut short";
  t += done.wrote_filemark ? ", wrote the filemark its close would have written" : "";
  return t;
}

void complete_interrupted_session(int fd, const SessionFindings& found, DriveState& state,
                                  const std::string& name) {
  Recovery done;
  std::uint64_t end = found.end;
  done.cut_at = end;
  if (found.cut_bytes > 0) {
    done.cut_bytes = found.cut_bytes;
    if (retry_eintr([&] { return ::ftruncate(fd, static_cast<off_t>(end)); }) == -1)
      throw_syscall_error("truncate " + name + " (completing an interrupted write)");
  }
  if (found.needs_filemark) {
    const std::byte mark[4] = {};
    write_all_at(fd, mark, end, name);
    end += sizeof mark;
    done.wrote_filemark = true;
  }
  // A drive moved back before the session began (a rewind) stays where it
  // was put; otherwise it is where the writer's close would have left it.
  if (state.offset >= state.session.start) {
    state.offset = end;
    state.file = found.file;
    state.block = found.block;
    state.lba = found.lba;
    state.eof = end == 0 ? EofState::none : EofState::filemark;
    if (end == 0) state.rewind();
  }
  done.file = state.file;
  state.writing = false;
  state.session = WriteSession{};
  state.recovered = true;
  state.recovery = done;
  state.image_mtime_ns = image_mtime_ns(fd);
}

}  // namespace tk
