// SIMH magtape codec: length words, framing checks and object scanning.
#include "simh_format.hpp"

#include <algorithm>
#include <cstring>
#include <sys/uio.h>
#include <unistd.h>

#include "../io.hpp"

namespace tk::simh {
namespace {

std::string hex(std::uint32_t word) {
  static const char digits[] = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 9; i >= 2; --i, word >>= 4) s[static_cast<std::size_t>(i)] = digits[word & 0xF];
  return s;
}

Object invalid_at(std::uint64_t offset, std::string problem) {
  Object o;
  o.kind = Kind::invalid;
  o.start = o.end = offset;
  o.problem = std::move(problem);
  return o;
}

Object marker(Kind kind, std::uint64_t start, std::uint64_t end) {
  Object o;
  o.kind = kind;
  o.start = start;
  o.end = end;
  return o;
}

Object record(std::uint64_t start, std::uint64_t end, std::uint32_t word) {
  Object o;
  o.kind = (word & bad_flag) != 0 ? Kind::bad_record : Kind::record;
  o.start = start;
  o.end = end;
  o.length = word & length_mask;
  return o;
}

std::string describe_bad_word(std::uint32_t word) {
  if (word >= reserved_min) return "reserved marker " + hex(word);
  if ((word & class_bits) != 0) return "invalid record length word " + hex(word);
  return "record length word " + hex(word) + " has no length";
}

}  // namespace

std::uint32_t load_le32(const std::byte* p) noexcept {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

void store_le32(std::byte* p, std::uint32_t value) noexcept {
  for (int i = 0; i < 4; ++i, value >>= 8) p[i] = static_cast<std::byte>(value & 0xFF);
}

WordKind classify(std::uint32_t word) noexcept {
  switch (word) {
    case mark_word: return WordKind::tape_mark;
    case eom_word: return WordKind::end_of_medium;
    case erase_gap: return WordKind::gap;
    case half_gap_forward:
    case half_gap_reverse: return WordKind::half_gap;
    default: break;
  }
  if (word >= reserved_min || (word & class_bits) != 0 || (word & length_mask) == 0)
    return WordKind::invalid;
  return WordKind::record;
}

void ImageReader::remember(std::uint64_t offset, const std::byte* bytes,
                           std::size_t count) noexcept {
  cache_offset_ = offset;
  cache_count_ = count > cache_.size() ? cache_.size() : count;
  for (std::size_t i = 0; i < cache_count_; ++i) cache_[i] = load_le32(bytes + 4 * i);
}

bool ImageReader::word_at(std::uint64_t offset, std::uint32_t& word) {
  if (offset + 4 > size_) return false;
  if (in_window(offset, 4)) {
    word = load_le32(window_at(offset));
    return true;
  }
  if (offset >= cache_offset_ && (offset - cache_offset_) % 4 == 0 &&
      (offset - cache_offset_) / 4 < cache_count_) {
    word = cache_[(offset - cache_offset_) / 4];
    return true;
  }
  // Two words: a trailing length and the header after it come in one read.
  std::byte buf[8];
  ssize_t n = retry_eintr(
      [&] { return ::pread(fd_, buf, sizeof buf, static_cast<off_t>(offset)); });
  if (n == -1) throw_syscall_error("read " + name_);
  if (n < 4) return false;
  remember(offset, buf, static_cast<std::size_t>(n) / 4);
  word = cache_[0];
  return true;
}

Object ImageReader::frame_forward(std::uint64_t start, std::uint32_t lead) {
  std::uint32_t length = lead & length_mask;
  std::uint32_t trail = 0;
  std::uint64_t end = start + record_span(length);
  if (end <= size_ && word_at(end - 4, trail) && trail == lead) return record(start, end, lead);
  if ((length & 1) != 0) {  // an E11-style image: odd records not padded
    std::uint64_t tight = start + 8 + length;
    if (tight <= size_ && word_at(tight - 4, trail) && trail == lead)
      return record(start, tight, lead);
  }
  if (end > size_ && ((length & 1) == 0 || start + 8 + length > size_)) {
    Object o = invalid_at(start, "record of " + std::to_string(length) + " bytes cut short by the end of the image");
    o.cut_short = true;
    return o;
  }
  return invalid_at(start, "trailing length " + hex(trail) + " does not match leading length " + hex(lead));
}

Object ImageReader::next(std::uint64_t pos, bool frame) {
  for (;;) {
    if (pos >= size_) return marker(Kind::end_of_data, pos, pos);
    std::uint32_t word = 0;
    if (!word_at(pos, word)) {
      Object o = invalid_at(pos, "length word cut short by the end of the image");
      o.cut_short = true;
      return o;
    }
    switch (classify(word)) {
      case WordKind::gap: pos += 4; continue;
      case WordKind::half_gap:
        if (word != half_gap_forward) return invalid_at(pos, describe_bad_word(word));
        pos += 2;
        continue;
      case WordKind::tape_mark: return marker(Kind::tape_mark, pos, pos + 4);
      case WordKind::end_of_medium: return marker(Kind::end_of_data, pos, pos);
      case WordKind::invalid: return invalid_at(pos, describe_bad_word(word));
      case WordKind::record: break;
    }
    if (frame) return frame_forward(pos, word);
    return record(pos, pos + record_span(word & length_mask), word);
  }
}

Object ImageReader::previous(std::uint64_t pos) {
  for (;;) {
    if (pos == 0) return marker(Kind::bot, 0, 0);
    std::uint32_t word = 0;
    if (pos < 4 || !word_at(pos - 4, word))
      return invalid_at(pos, "length word before offset " + std::to_string(pos) + " cut short");
    switch (classify(word)) {
      case WordKind::gap: pos -= 4; continue;
      case WordKind::half_gap:
        if (word != half_gap_reverse) return invalid_at(pos - 4, describe_bad_word(word));
        pos -= 2;
        continue;
      case WordKind::tape_mark: return marker(Kind::tape_mark, pos - 4, pos);
      case WordKind::end_of_medium:
      case WordKind::invalid: return invalid_at(pos - 4, describe_bad_word(word));
      case WordKind::record: break;
    }
    std::uint32_t length = word & length_mask;
    std::uint32_t lead = 0;
    if (pos >= record_span(length)) {
      std::uint64_t start = pos - record_span(length);
      if (word_at(start, lead) && lead == word) return record(start, pos, word);
    }
    if ((length & 1) != 0 && pos >= 8u + length) {
      std::uint64_t start = pos - 8 - length;
      if (word_at(start, lead) && lead == word) return record(start, pos, word);
    }
    return invalid_at(pos - 4, "trailing length " + hex(word) + " has no matching leading length");
  }
}

void ImageReader::fill_window(std::uint64_t offset) {
  constexpr std::uint64_t page = 4096;
  if (window_.empty()) window_.resize(window_bytes);
  window_count_ = 0;
  std::uint64_t from = offset & ~(page - 1);
  if (from >= size_) return;
  std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(window_bytes, size_ - from));
  ssize_t n = retry_eintr(
      [&] { return ::pread(fd_, window_.data(), want, static_cast<off_t>(from)); });
  if (n == -1) throw_syscall_error("read " + name_);
  window_offset_ = from;
  window_count_ = static_cast<std::size_t>(n);
}

bool ImageReader::read_through_window(Object& rec, std::span<std::byte> buf, std::uint32_t lead) {
  const std::uint64_t data_at = rec.start + 4;
  const std::uint32_t pad = rec.length & 1u;
  // Data, pad and trailer; the next header too when the image goes on.
  std::uint64_t need = rec.length + pad + 4;
  if (data_at + need + 4 <= size_) need += 4;
  if (!in_window(data_at, need)) fill_window(data_at);
  const std::uint64_t trail_at = data_at + rec.length + pad;
  if (in_window(trail_at, 4) && load_le32(window_at(trail_at)) == lead) {
    rec.end = trail_at + 4;
  } else if (pad != 0 && in_window(trail_at - 1, 4) && load_le32(window_at(trail_at - 1)) == lead) {
    rec.end = trail_at + 3;  // an unpadded odd record
  } else {
    return false;
  }
  std::memcpy(buf.data(), window_at(data_at), rec.length);
  return true;
}

bool ImageReader::read_data(Object& rec, std::span<std::byte> buf) {
  std::uint32_t lead = record_word(rec.length, rec.kind == Kind::bad_record);
  if (rec.length <= read_ahead_limit) {
    if (read_through_window(rec, buf, lead)) return true;
    Object framed = frame_forward(rec.start, lead);
    rec = framed.kind == Kind::invalid ? framed : invalid_at(rec.start, "record changed while reading");
    return false;
  }
  // The tail holds [pad] trailing length, next header: both layouts fit in 9.
  std::byte tail[9];
  std::size_t pad = rec.length & 1u;
  iovec iov[2] = {{buf.data(), rec.length}, {tail, pad + 8}};
  auto data_at = static_cast<off_t>(rec.start + 4);
  ssize_t n = retry_eintr([&] { return ::preadv(fd_, iov, 2, data_at); });
  if (n == -1) throw_syscall_error("read " + name_);
  std::size_t got = static_cast<std::size_t>(n);
  if (got >= rec.length + pad + 4 && load_le32(tail + pad) == lead) {
    rec.end = rec.start + record_span(rec.length);
    std::size_t extra = got - rec.length - pad - 4;
    remember(rec.end, tail + pad + 4, extra / 4);
    return true;
  }
  if (pad != 0 && got >= rec.length + 4u && load_le32(tail) == lead) {
    rec.end = rec.start + 8 + rec.length;
    std::size_t extra = got - rec.length - 4;
    remember(rec.end, tail + 4, (extra > 4 ? 4 : extra) / 4);
    return true;
  }
  Object framed = frame_forward(rec.start, lead);
  rec = framed.kind == Kind::invalid ? framed : invalid_at(rec.start, "record changed while reading");
  return false;
}

}  // namespace tk::simh
