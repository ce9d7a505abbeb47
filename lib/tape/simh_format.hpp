// The SIMH magtape image format (.tap): object codes, record framing, and
// scanning an image object by object through its length words, so spacing
// never reads record data (docs/tape-semantics.md, "The SIMH image format").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tk::simh {

// Every integer in an image is a 32-bit little-endian word.
inline constexpr std::uint32_t mark_word = 0x00000000;
inline constexpr std::uint32_t eom_word = 0xFFFFFFFF;
inline constexpr std::uint32_t erase_gap = 0xFFFFFFFE;
// open-simh writes these where a gap overwrote half a length word.
inline constexpr std::uint32_t half_gap_forward = 0xFFFEFFFF;
inline constexpr std::uint32_t half_gap_reverse = 0xFFFF0000;
inline constexpr std::uint32_t reserved_min = 0xFF000000;
inline constexpr std::uint32_t bad_flag = 0x80000000;   // record read error
inline constexpr std::uint32_t class_bits = 0x7F000000;  // must be 0
inline constexpr std::uint32_t length_mask = 0x00FFFFFF;
inline constexpr std::uint32_t max_record = length_mask;

std::uint32_t load_le32(const std::byte* p) noexcept;
void store_le32(std::byte* p, std::uint32_t value) noexcept;

// Data bytes as stored: odd lengths get one pad byte in the standard format.
constexpr std::uint64_t padded(std::uint32_t length) noexcept { return length + (length & 1u); }
// Bytes a record occupies in a standard image: two length words plus data.
constexpr std::uint64_t record_span(std::uint32_t length) noexcept { return 8 + padded(length); }

// The leading (and trailing) length word of a record.
constexpr std::uint32_t record_word(std::uint32_t length, bool bad) noexcept {
  return (length & length_mask) | (bad ? bad_flag : 0u);
}

// What a length word says by itself, before any framing is checked.
enum class WordKind { record, tape_mark, end_of_medium, gap, half_gap, invalid };
WordKind classify(std::uint32_t word) noexcept;

enum class Kind {
  record,       // good data record
  bad_record,   // data record with the error flag
  tape_mark,
  end_of_data,  // end of the file or an end-of-medium marker
  bot,          // (reverse scans) beginning of tape
  invalid,      // structural error; problem says what
};

struct Object {
  Kind kind = Kind::invalid;
  std::uint64_t start = 0;  // offset of the first length word (of the marker)
  std::uint64_t end = 0;    // offset just past the object
  std::uint32_t length = 0;  // data bytes of a record
  std::string problem;       // for invalid: what is wrong at start
  // For invalid: the object is sound as far as the image goes and the image
  // ends inside it, as a writer stopped mid-write leaves it.
  bool cut_short = false;
  bool is_record() const noexcept { return kind == Kind::record || kind == Kind::bad_record; }
};

// Read access to an image through pread. Spacing caches the last words read,
// so a forward scan costs one small read per object and never reads record
// data. Reading a record small enough (read_ahead_limit) goes through a
// read-ahead window: one large page-aligned pread serves the data, trailers
// and headers of many records. A larger record costs one preadv (its data,
// trailing length and the next header together): above read_ahead_limit the
// extra copy out of the window costs more than the system calls it saves
// (bench/README.md, "Measurements behind the code"). Reads both
// padded (standard) and unpadded (E11) odd-length records.
//
// Everything cached is image bytes by offset; whoever changes the image (a
// write, a truncation) must call set_size() or forget() before reading again.
class ImageReader {
 public:
  static constexpr std::size_t window_bytes = 256 * 1024;
  static constexpr std::uint32_t read_ahead_limit = 16 * 1024;

  ImageReader() = default;
  // name: the image's, for the errors of its reads.
  ImageReader(int fd, std::uint64_t size, std::string name = "tape image") noexcept
      : fd_(fd), size_(size), name_(std::move(name)) {}

  std::uint64_t size() const noexcept { return size_; }
  // Call after the image changed (writes, truncation).
  void set_size(std::uint64_t size) noexcept {
    size_ = size;
    forget();
  }
  void forget() noexcept {
    cache_count_ = 0;
    window_count_ = 0;
  }

  // The object starting at pos, erase gaps skipped. With frame false a record's
  // trailing length is left for read_data to check (saving a read), and end
  // assumes the standard padded layout until read_data corrects it.
  Object next(std::uint64_t pos, bool frame = true);
  // The object ending at pos (reverse read through the trailing length).
  Object previous(std::uint64_t pos);
  // Reads the data of record rec (from next()) into buf, which must hold
  // rec.length bytes, checking the trailing length and fixing rec.end for an
  // unpadded record. On a framing error rec becomes invalid and it returns false.
  bool read_data(Object& rec, std::span<std::byte> buf);

 private:
  bool word_at(std::uint64_t offset, std::uint32_t& word);
  void remember(std::uint64_t offset, const std::byte* bytes, std::size_t count) noexcept;
  // The record starting at start with leading word lead; frames it.
  Object frame_forward(std::uint64_t start, std::uint32_t lead);
  // Whether the window holds the count bytes at offset.
  bool in_window(std::uint64_t offset, std::uint64_t count) const noexcept {
    return offset >= window_offset_ && offset - window_offset_ + count <= window_count_;
  }
  const std::byte* window_at(std::uint64_t offset) const noexcept {
    return window_.data() + (offset - window_offset_);
  }
  // Refills the window from the page boundary at or before offset.
  void fill_window(std::uint64_t offset);
  // read_data through the window; false when the record is not framed there.
  bool read_through_window(Object& rec, std::span<std::byte> buf, std::uint32_t lead);

  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string name_ = "tape image";
  std::uint64_t cache_offset_ = 0;
  std::size_t cache_count_ = 0;  // valid words in cache_
  std::array<std::uint32_t, 2> cache_{};
  std::vector<std::byte> window_;  // allocated on first use
  std::uint64_t window_offset_ = 0;
  std::size_t window_count_ = 0;  // valid bytes in window_
};

}  // namespace tk::simh
