// The virtual tape's drive: what the st driver would remember about the
// loaded cartridge, kept in the IMAGE.state sidecar between opens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/types.h>

namespace tk {

// st's eof state (ST_NOEOF, ST_FM, ST_EOM_OK, ST_EOM_ERROR, ST_EOD_1, ST_EOD):
// it decides the EOT/EOD status bits and what the next read or write returns.
enum class EofState { none, filemark, early_warning, overflow, eod_write, eod };

// What the drive did when it found the image left by a writer that never
// closed it (killed, or its machine lost power): kept for `mt verify`.
struct Recovery {
  std::uint64_t cut_at = 0;     // image offset where the damage was cut off
  std::uint64_t cut_bytes = 0;  // bytes removed from there to the old end
  bool wrote_filemark = false;  // the filemark the writer's close would have written
  std::int64_t file = -1;       // the file number the drive was left after
};

// What a writer records before it changes the image, so that whoever later
// finds the session unfinished can prove the image is still the one it was
// writing before cutting anything: the bytes before the session's start are
// unchanged, and the session's first object is the one it was writing.
struct WriteSession {
  bool known = false;         // recorded (a state from before these fields is not)
  std::uint64_t start = 0;    // offset of the session's first object (the image was cut there)
  std::int64_t file = 0;      // the position's counts at start
  std::int64_t block = 0;
  std::int64_t lba = 0;
  std::uint64_t before = 0;   // digest of the image's bytes just before start
  bool first_known = false;   // what the session writes first (an erase writes nothing)
  std::uint32_t first_word = 0;  // its length word (0: a filemark)
  std::string first_bytes;    // its first data bytes, lowercase hex (at most 32 bytes)
};

// The TapeAlert flags the virtual tape's drive raises itself (SSC-4 Annex
// A; why these, simh_health.cpp).
namespace alert {
inline constexpr int hard_error = 3;
inline constexpr int read_failure = 5;
inline constexpr int write_protect = 9;
}  // namespace alert

struct DriveState {
  std::uint64_t offset = 0;  // byte offset of the position in the image
  std::int64_t file = 0;     // -1 = unknown, as st reports
  std::int64_t block = 0;
  std::int64_t lba = 0;  // records and filemarks before the position
  EofState eof = EofState::none;
  std::uint32_t block_size = 0;  // 0 = variable
  std::uint32_t density = 0;
  bool compression = false;
  // mt defcompression: -1 none, else 0/1, applied at load and when writing
  // starts at BOT unless compression was set since the load (st.rst).
  int default_compression = -1;
  bool compression_set = false;
  bool write_protect = false;
  bool online = true;
  bool locked = false;
  std::uint64_t capacity = 0;  // image bytes; 0 = unlimited
  // The image's mtime (ns) when the drive last saved; -1 unknown. An image
  // changed since (copied over, restored) is a new cartridge: back to BOT.
  std::int64_t image_mtime_ns = -1;
  // Set while a writer may have records in the image that no closing save
  // accounts for: the position above is then an object boundary the writer
  // passed, and everything after it is the writer's unfinished append.
  bool writing = false;
  // The image's inode when writing began, so a crashed session is never
  // "completed" on a different file put in its place.
  std::uint64_t image_inode = 0;
  WriteSession session;  // meaningful while writing
  bool recovered = false;  // recovery below is meaningful
  Recovery recovery;

  // The cartridge memory (MAM) a drive reads and updates on the cartridge
  // itself. A state saved before these fields existed has
  // none (memory false): counts begun later would be taken for the
  // medium's life, so they stay unreported.
  bool memory = true;
  std::uint64_t load_count = 0;     // one per load of the cartridge
  std::uint64_t bytes_written = 0;  // record bytes, in the medium's life
  std::uint64_t bytes_read = 0;
  std::string barcode;       // printable ASCII, at most 32; empty: no label
  std::string manufactured;  // YYYYMMDD; empty: unknown
  std::string serial;        // the medium serial number; empty: unknown
  // Active TapeAlert flags, bit n-1 for flag n (SSC-4 Annex A).
  std::uint64_t tapealert = 0;

  void raise_alert(int flag) noexcept { tapealert |= std::uint64_t{1} << (flag - 1); }

  void rewind() noexcept {
    offset = 0;
    file = block = lba = 0;
    eof = EofState::none;
  }
};

// Whether text may be a barcode (or medium serial number): 1 to 32
// printable ASCII characters, no space (SPC-4 gives them 32 bytes).
bool valid_label(std::string_view text);
// Whether text is a manufacture date as the MAM holds it: YYYYMMDD.
bool valid_mam_date(std::string_view text);

// The text of a state file, and back. parse_drive_state refuses (EINVAL,
// naming the file, line and text) a malformed line and any value no drive
// could hold: positions must be reachable in an image (a record or mark is
// at least 4 bytes, so lba <= offset / 4, file and block <= lba).
std::string format_drive_state(const DriveState& s);
DriveState parse_drive_state(std::string_view text, const std::string& path);

// Whether text begins with the header line of a state file, of this format
// or an earlier one: what tells a drive's state from another file that
// happens to be named IMAGE.state.
bool begins_as_drive_state(std::string_view text);

// Reads path (relative to dir_fd; never through a symbolic link, and never
// anything but a regular file: EINVAL naming it). No file is a loaded
// cartridge at BOT (docs/tape-semantics.md, "Virtual-tape decisions").
DriveState load_drive_state(int dir_fd, const std::string& path);

// Replaces path in one rename, so a crash never leaves half of a state. The
// temporary PATH.tmp is created exclusively (a planted file or hard link of
// that name is removed, never written through) with mode for a new file, or,
// given the image's stat, with the image's owner (where permitted) and its
// read and write bits.
void save_drive_state(int dir_fd, const std::string& path, const DriveState& s, mode_t mode,
                      const struct stat* image = nullptr);

// ENAMETOOLONG naming the state file when path's sidecar names (PATH.state,
// PATH.state.tmp) cannot exist, so nothing is created for an image whose
// drive could not be saved.
void check_state_names(const std::string& image_path);

}  // namespace tk
