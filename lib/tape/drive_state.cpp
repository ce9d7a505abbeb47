// The IMAGE.state sidecar: one "key value" line per field, validated on load
// and replaced atomically on save.
#include "drive_state.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <fcntl.h>
#include <span>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "../error.hpp"
#include "../io.hpp"
#include "../path.hpp"
#include "simh_format.hpp"

namespace tk {
namespace {

constexpr std::string_view eof_names[] = {"none",     "filemark",  "early-warning",
                                          "overflow", "eod-write", "eod"};

// Far beyond any disk, yet small enough that the drive's arithmetic on
// positions and counts (a few additions per object) cannot overflow.
constexpr std::uint64_t largest_offset = std::uint64_t{1} << 60;

constexpr std::string_view state_suffix = ".state";
constexpr std::string_view temporary_suffix = ".tmp";

template <class T>
bool parse_number(std::string_view text, T& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// A count of objects (file, block): -1 (unknown) up to the objects before
// the position.
bool reachable_count(std::int64_t value, std::int64_t lba) { return value >= -1 && value <= lba; }

// The whole state, each field in range on its own, checked together.
const char* inconsistency(const DriveState& s) {
  if (s.offset > largest_offset) return "offset beyond any image";
  if (s.lba < 0 || static_cast<std::uint64_t>(s.lba) > s.offset / 4)
    return "lba not reachable at that offset";
  if (!reachable_count(s.file, s.lba)) return "file number not reachable at that position";
  if (!reachable_count(s.block, s.lba)) return "block number not reachable at that position";
  if (s.block_size > simh::max_record) return "block size larger than a record can be";
  if (s.density > 0xFF) return "density is not a density code";
  if (s.capacity > largest_offset) return "capacity beyond any image";
  if (s.image_mtime_ns < -1) return "image mtime negative";
  // recovery.file is -1 when the drive's file number was unknown (after a
  // seek), as the drive writes it: that state must load.
  if (s.recovered &&
      (s.recovery.cut_at > largest_offset || s.recovery.cut_bytes > largest_offset ||
       s.recovery.file < -1 || s.recovery.file > static_cast<std::int64_t>(largest_offset)))
    return "recovery record out of range";
  if (!s.barcode.empty() && !valid_label(s.barcode)) return "barcode is not printable ASCII of at most 32";
  if (!s.serial.empty() && !valid_label(s.serial)) return "serial is not printable ASCII of at most 32";
  if (!s.manufactured.empty() && !valid_mam_date(s.manufactured))
    return "manufacture date is not YYYYMMDD";
  const WriteSession& w = s.session;
  if (s.writing && w.known) {
    if (w.start > largest_offset) return "session start beyond any image";
    if (w.lba < 0 || static_cast<std::uint64_t>(w.lba) > w.start / 4)
      return "session lba not reachable at its start";
    if (!reachable_count(w.file, w.lba) || !reachable_count(w.block, w.lba))
      return "session file or block not reachable at its start";
    if (w.first_bytes.size() > 64 || w.first_bytes.size() % 2 != 0 ||
        w.first_bytes.find_first_not_of("0123456789abcdef") != std::string::npos)
      return "session first bytes are not hex";
  }
  return nullptr;
}

// fsync of the directory a rename happened in. A directory opened only as
// a place (O_PATH, where it could not be read) or a file system that cannot
// sync a directory is left as it is: the rename is as durable as it gets.
void sync_directory(int dir_fd, const std::string& path) {
  // The state's home holds its directory open readable already: synced as
  // it is, with no second open each save. Opened only as a place (O_PATH:
  // EBADF), or the working directory, it is opened for the sync.
  Fd opened;
  int fd = dir_fd;
  int synced = dir_fd == AT_FDCWD ? -1 : retry_eintr_always(::fsync, dir_fd);
  if (dir_fd == AT_FDCWD || (synced == -1 && errno == EBADF)) {
    const std::string directory = dir_fd == AT_FDCWD ? directory_of(path) : ".";
    fd = retry_eintr(
        [&] { return ::openat(dir_fd, directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd == -1) return;
    opened = Fd(fd);
    synced = retry_eintr_always(::fsync, fd);
  }
  if (synced == -1 && errno != EINVAL && errno != EROFS)
    throw_errno("sync the directory of " + path + " (" + descriptor_path(fd) + ")");
}

Error state_error(const std::string& path, const std::string& what) {
  return Error(EINVAL, "read " + path + " (" + what + ")");
}

}  // namespace

bool valid_label(std::string_view text) {
  return !text.empty() && text.size() <= 32 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

bool valid_mam_date(std::string_view text) {
  if (text.size() != 8 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  int month = (text[4] - '0') * 10 + (text[5] - '0');
  int day = (text[6] - '0') * 10 + (text[7] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

// A state file of this format begins with kHeader and ends with the line
// "end": one that stops short of it (emptied, cut) is refused, never read
// as a drive at BOT. A file from before the end line (kLegacyHeader) loads
// only with every line that format always wrote up to "writing".
constexpr std::string_view kHeader = "# tapekit virtual tape drive state, format 2 (the image is the cartridge)";
constexpr std::string_view kLegacyHeader = "# tapekit virtual tape drive state (the image is the cartridge)";
constexpr std::string_view kEnd = "end";
constexpr std::string_view kLegacyKeys[] = {
    "offset", "file", "block", "lba", "eof", "block-size", "density", "compression",
    "write-protect", "online", "locked", "capacity", "image-mtime", "writing"};

bool begins_as_drive_state(std::string_view text) {
  return text.starts_with(std::string(kHeader) + "\n") || text.starts_with(std::string(kLegacyHeader) + "\n");
}

std::string format_drive_state(const DriveState& s) {
  std::string t = std::string(kHeader) + "\n";
  auto add = [&](std::string_view key, const std::string& value) {
    t.append(key).append(" ").append(value).append("\n");
  };
  auto flag = [&](std::string_view key, bool on) { add(key, on ? "1" : "0"); };
  add("offset", std::to_string(s.offset));
  add("file", std::to_string(s.file));
  add("block", std::to_string(s.block));
  add("lba", std::to_string(s.lba));
  add("eof", std::string(eof_names[static_cast<std::size_t>(s.eof)]));
  add("block-size", std::to_string(s.block_size));
  add("density", std::to_string(s.density));
  flag("compression", s.compression);
  add("default-compression", std::to_string(s.default_compression));
  flag("compression-set", s.compression_set);
  flag("write-protect", s.write_protect);
  flag("online", s.online);
  flag("locked", s.locked);
  add("capacity", std::to_string(s.capacity));
  add("image-mtime", std::to_string(s.image_mtime_ns));
  flag("writing", s.writing);
  if (s.image_inode != 0) add("image-inode", std::to_string(s.image_inode));
  if (s.writing && s.session.known) {
    const WriteSession& w = s.session;
    add("session-start", std::to_string(w.start));
    add("session-file", std::to_string(w.file));
    add("session-block", std::to_string(w.block));
    add("session-lba", std::to_string(w.lba));
    add("session-before", std::to_string(w.before));
    if (w.first_known) {
      add("session-first-word", std::to_string(w.first_word));
      add("session-first-bytes", w.first_bytes.empty() ? "-" : w.first_bytes);
    }
  }
  if (s.memory) {
    add("load-count", std::to_string(s.load_count));
    add("bytes-written", std::to_string(s.bytes_written));
    add("bytes-read", std::to_string(s.bytes_read));
  }
  if (!s.barcode.empty()) add("barcode", s.barcode);
  if (!s.manufactured.empty()) add("manufactured", s.manufactured);
  if (!s.serial.empty()) add("serial", s.serial);
  if (s.tapealert != 0) add("tapealert", std::to_string(s.tapealert));
  if (s.recovered) {
    add("recovered-cut-at", std::to_string(s.recovery.cut_at));
    add("recovered-cut-bytes", std::to_string(s.recovery.cut_bytes));
    flag("recovered-filemark", s.recovery.wrote_filemark);
    add("recovered-file", std::to_string(s.recovery.file));
  }
  t.append(kEnd).append("\n");
  return t;
}

DriveState parse_drive_state(std::string_view text, const std::string& path) {
  DriveState s;
  s.memory = false;  // until the file says otherwise: one from before MAM has none
  if (text.empty()) throw state_error(path, "empty");
  const std::string_view first_line = text.substr(0, text.find('\n'));
  const bool legacy = first_line == kLegacyHeader;
  if (!legacy && first_line != kHeader) throw state_error(path, "no drive state header on line 1");
  bool ended = false;
  std::vector<std::string_view> keys_seen;
  int line_number = 0;
  while (!text.empty()) {
    ++line_number;
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (ended) throw state_error(path, "line " + std::to_string(line_number) + " after the end line");
    if (line == kEnd && nl != std::string_view::npos && !legacy) {
      ended = true;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    auto space = line.find(' ');
    std::string_view key = line.substr(0, space);
    keys_seen.push_back(key);
    std::string_view value = space == std::string_view::npos ? "" : line.substr(space + 1);
    bool ok = true;
    auto flag = [&](bool& b) {
      int v = 0;
      ok = parse_number(value, v) && (v == 0 || v == 1);
      b = v == 1;
    };
    if (key == "offset") ok = parse_number(value, s.offset);
    else if (key == "file") ok = parse_number(value, s.file);
    else if (key == "block") ok = parse_number(value, s.block);
    else if (key == "lba") ok = parse_number(value, s.lba);
    else if (key == "block-size") ok = parse_number(value, s.block_size);
    else if (key == "density") ok = parse_number(value, s.density);
    else if (key == "capacity") ok = parse_number(value, s.capacity);
    else if (key == "image-mtime") ok = parse_number(value, s.image_mtime_ns);
    else if (key == "compression") flag(s.compression);
    else if (key == "default-compression") ok = parse_number(value, s.default_compression) &&
                                                s.default_compression >= -1 && s.default_compression <= 1;
    else if (key == "compression-set") flag(s.compression_set);
    else if (key == "write-protect") flag(s.write_protect);
    else if (key == "online") flag(s.online);
    else if (key == "locked") flag(s.locked);
    else if (key == "writing") flag(s.writing);
    else if (key == "image-inode") ok = parse_number(value, s.image_inode);
    else if (key == "session-start") {
      ok = parse_number(value, s.session.start);
      s.session.known = true;
    }
    else if (key == "session-file") ok = parse_number(value, s.session.file);
    else if (key == "session-block") ok = parse_number(value, s.session.block);
    else if (key == "session-lba") ok = parse_number(value, s.session.lba);
    else if (key == "session-before") ok = parse_number(value, s.session.before);
    else if (key == "session-first-word") {
      ok = parse_number(value, s.session.first_word);
      s.session.first_known = true;
    }
    else if (key == "session-first-bytes") s.session.first_bytes = value == "-" ? "" : std::string(value);
    else if (key == "recovered-cut-at") {
      ok = parse_number(value, s.recovery.cut_at);
      s.recovered = true;
    }
    else if (key == "recovered-cut-bytes") ok = parse_number(value, s.recovery.cut_bytes);
    else if (key == "recovered-filemark") flag(s.recovery.wrote_filemark);
    else if (key == "recovered-file") ok = parse_number(value, s.recovery.file);
    else if (key == "load-count") {
      ok = parse_number(value, s.load_count);
      s.memory = true;
    }
    else if (key == "bytes-written") ok = parse_number(value, s.bytes_written);
    else if (key == "bytes-read") ok = parse_number(value, s.bytes_read);
    else if (key == "barcode") s.barcode = value;
    else if (key == "manufactured") s.manufactured = value;
    else if (key == "serial") s.serial = value;
    else if (key == "tapealert") ok = parse_number(value, s.tapealert);
    else if (key == "eof") {
      ok = false;
      for (std::size_t i = 0; i < std::size(eof_names); ++i)
        if (value == eof_names[i]) {
          s.eof = static_cast<EofState>(i);
          ok = true;
        }
    }
    // Unknown keys are skipped so that newer state files still load.
    if (!ok)
      throw state_error(path, "line " + std::to_string(line_number) + " '" + std::string(line) + "'");
  }
  if (!legacy && !ended) throw state_error(path, "cut short: no end line");
  if (legacy)
    for (std::string_view key : kLegacyKeys)
      if (std::find(keys_seen.begin(), keys_seen.end(), key) == keys_seen.end())
        throw state_error(path, "cut short: no " + std::string(key) + " line");
  if (const char* what = inconsistency(s)) throw state_error(path, what);
  return s;
}

DriveState load_drive_state(int dir_fd, const std::string& path) {
  // The drive's memory is never reached through a symlink (rmt's --allow
  // confines names; a planted link must not redirect the state), and never
  // waits: a FIFO or device planted under its name is refused, not opened
  // for a read that would block with the image's lock held.
  int fd = retry_eintr([&] {
    return ::openat(dir_fd, path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  });
  if (fd == -1) {
    if (errno == ENOENT) return DriveState{};
    throw_errno("open " + path);
  }
  Fd owner(fd);
  struct stat st {};
  if (::fstat(fd, &st) == -1) throw_errno("stat " + path);
  if (!S_ISREG(st.st_mode)) throw state_error(path, "not a regular file");
  // A state file is a few hundred bytes; anything near this is not one.
  std::string text(8192, '\0');
  std::size_t n = read_full(fd, std::as_writable_bytes(std::span(text)), path);
  if (n == text.size()) throw state_error(path, "too long to be a drive state");
  text.resize(n);
  return parse_drive_state(text, path);
}

void save_drive_state(int dir_fd, const std::string& path, const DriveState& state, mode_t mode,
                      const struct stat* image) {
  std::string tmp = path + std::string(temporary_suffix);
  DriveState s = state;
  // Which image this state is of, for a name that finds it beside another
  // hard link of the image (state_home.cpp).
  if (image != nullptr) s.image_inode = static_cast<std::uint64_t>(image->st_ino);
  std::string text = format_drive_state(s);
  // A leftover (a crash between create and rename) or a planted name goes
  // first; O_EXCL then guarantees the file written is the one created here,
  // not whatever another hard link or symlink of that name points to.
  if (::unlinkat(dir_fd, tmp.c_str(), 0) == -1 && errno != ENOENT) throw_errno("remove " + tmp);
  Fd fd = open_file_at(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  try {
    struct stat st {};
    if (::fstat(fd.get(), &st) == -1) throw_errno("stat " + tmp);
    if (st.st_nlink != 1 || !S_ISREG(st.st_mode))
      throw Error(EEXIST, "create " + tmp + " (linked elsewhere since it was created)");
    if (image != nullptr) {
      // The drive belongs with the cartridge: whoever saves it (root, or a
      // member of the image's group), its owner can still load and save it.
      // Only root may give a file away; others keep the mode at least.
      if (::fchown(fd.get(), image->st_uid, image->st_gid) == -1 && errno != EPERM)
        throw_errno("chown " + tmp);
      if (::fchmod(fd.get(), image->st_mode & 0666) == -1) throw_errno("chmod " + tmp);
    }
    write_all(fd.get(), std::as_bytes(std::span(text)), tmp);
    // On the disk before the rename and the rename before the caller goes
    // on: after a power loss the name holds the old state or the new one,
    // never an empty file (which would be refused).
    if (retry_eintr_always(::fsync, fd.get()) == -1) throw_errno("sync " + tmp);
    fd.close("close " + tmp);
    if (::renameat(dir_fd, tmp.c_str(), dir_fd, path.c_str()) == -1) throw_errno("rename " + tmp);
    sync_directory(dir_fd, path);
  } catch (const Error&) {
    ::unlinkat(dir_fd, tmp.c_str(), 0);  // the old state stays; a half-written copy helps no one
    throw;
  }
}

void check_state_names(const std::string& image_path) {
  std::string longest = image_path + std::string(state_suffix) + std::string(temporary_suffix);
  auto slash = longest.rfind('/');
  std::size_t last = longest.size() - (slash == std::string::npos ? 0 : slash + 1);
  if (last > NAME_MAX || longest.size() >= PATH_MAX)
    throw Error(ENAMETOOLONG, "open " + image_path + " (its drive state " + image_path +
                                  std::string(state_suffix) + " would be too long a name)");
}

}  // namespace tk
