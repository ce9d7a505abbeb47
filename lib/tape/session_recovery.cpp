// The walk, cut and filemark that finish an interrupted write session.
#include "session_recovery.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../error.hpp"
#include "../io.hpp"
#include "simh_format.hpp"

namespace tk {

std::int64_t mtime_ns(const struct stat& st) noexcept {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::int64_t image_mtime_ns(int fd) noexcept {
  struct stat st {};
  return ::fstat(fd, &st) == -1 ? -1 : mtime_ns(st);
}

void complete_interrupted_session(int fd, std::uint64_t size, DriveState& state,
                                  const std::string& name) {
  using simh::Kind;
  simh::ImageReader image(fd, size);
  std::uint64_t pos = state.offset;
  // Whether the data written last belongs to a file no filemark has closed;
  // the walk may begin inside such a file (a save in mid-append).
  bool file_unclosed = pos > 0 && image.previous(pos).is_record();
  std::uint64_t end = pos;
  bool cut = false;
  for (;;) {
    simh::Object o = image.next(pos);
    if (o.is_record()) {
      ++state.lba;
      if (state.block >= 0) ++state.block;
      file_unclosed = true;
    } else if (o.kind == Kind::tape_mark) {
      ++state.lba;
      if (state.file >= 0) ++state.file;
      state.block = 0;
      file_unclosed = false;
    } else {
      end = o.start;
      cut = o.kind == Kind::invalid;
      break;
    }
    pos = o.end;
  }
  Recovery done;
  done.cut_at = end;
  if (cut) {
    done.cut_bytes = size - end;
    if (retry_eintr([&] { return ::ftruncate(fd, static_cast<off_t>(end)); }) == -1)
      throw_syscall_error("truncate " + name + " (completing an interrupted write)");
  }
  if (file_unclosed) {
    const std::byte mark[4] = {};
    write_all_at(fd, mark, end, name);
    end += sizeof mark;
    ++state.lba;
    if (state.file >= 0) ++state.file;
    state.block = 0;
    done.wrote_filemark = true;
  }
  state.offset = end;
  state.eof = end == 0 ? EofState::none : EofState::filemark;
  if (end == 0) state.rewind();
  done.file = state.file;
  state.writing = false;
  state.recovered = true;
  state.recovery = done;
  state.image_mtime_ns = image_mtime_ns(fd);
}

}  // namespace tk
