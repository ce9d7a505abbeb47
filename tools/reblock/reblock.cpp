// reblock's copy loops: exact records out of any input, and the record survey.
#include "reblock.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"

namespace tk::reblock {
namespace {

// Small records are gathered in a buffer of at least this many bytes, so one
// read(2) can feed many writes.
constexpr std::size_t min_capacity = 256 * 1024;

// Buffers start on a page boundary: the kernel copies into page-aligned
// memory markedly faster (a 256 KiB read from the page cache took 30 us into
// malloc's 16-byte-aligned block, 17 us into an aligned one).
constexpr std::align_val_t page_alignment{4096};

struct AlignedDelete {
  void operator()(std::byte* p) const noexcept { ::operator delete[](p, page_alignment); }
};
using AlignedBuffer = std::unique_ptr<std::byte[], AlignedDelete>;

AlignedBuffer allocate_aligned(std::size_t size) {
  return AlignedBuffer(static_cast<std::byte*>(::operator new[](size, page_alignment)));
}

std::string count_noun(std::uint64_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

// Reads one record of at most options.max_record bytes; a bigger one is an
// error that names the limit (Tape::read fails with ENOMEM, as st does).
std::size_t read_bounded(Tape& in, std::span<std::byte> buf, const Options& options) {
  try {
    return in.read(buf);
  } catch (const Error& e) {
    if (e.errnum() != ENOMEM) throw;
    // The backend's context may give the record's size; st's cannot.
    std::string limit = "--max-record " + std::to_string(options.max_record) + " bytes";
    throw Error(ENOMEM, e.context() + ": " + record_larger_than(in.name(), limit));
  }
}

// Output records of exactly options.size bytes, gathered in one buffer whose
// capacity is a multiple of the size, so a record never wraps: input lands at
// fill_, every complete record from start_ on is written straight from the
// buffer, and both go back to 0 when the buffer is used up. Nothing is copied
// when the input is read straight into free_space().
class Reblocker {
 public:
  Reblocker(Tape& out, const Options& options, Totals& totals, bool input_is_stream)
      : out_(out),
        options_(options),
        totals_(totals),
        input_is_stream_(input_is_stream),
        capacity_(options.size * ((std::max(options.size, min_capacity) + options.size - 1) /
                                  options.size)),
        buffer_(allocate_aligned(capacity_)) {}

  std::span<std::byte> free_space() { return {buffer_.get() + fill_, capacity_ - fill_}; }

  // Takes n bytes just placed at free_space() and writes the records they complete.
  void commit(std::size_t n) {
    fill_ += n;
    while (fill_ - start_ >= options_.size) {
      if (input_is_stream_) ++totals_.in_full;
      write(start_, options_.size);
      start_ += options_.size;
    }
    if (start_ == capacity_) start_ = fill_ = 0;
  }

  void append(std::span<const std::byte> data) {
    while (!data.empty()) {
      std::size_t n = std::min(data.size(), capacity_ - fill_);
      std::memcpy(buffer_.get() + fill_, data.data(), n);
      data = data.subspan(n);
      commit(n);
    }
  }

  // Writes what is left as the last record, padded to size with -B.
  void finish() {
    std::size_t rest = fill_ - start_;
    if (rest == 0) return;
    if (input_is_stream_) ++totals_.in_partial;
    if (options_.pad) {
      std::memset(buffer_.get() + fill_, std::to_integer<int>(options_.pad_byte),
                  options_.size - rest);
      rest = options_.size;
    }
    std::size_t offset = start_;
    start_ = fill_ = 0;
    write(offset, rest);
  }

 private:
  void write(std::size_t offset, std::size_t length) {
    try {
      out_.write({buffer_.get() + offset, length});
    } catch (const Error& e) {
      take_back_lost(e, out_, totals_);
      // Say how much of the output can be trusted: the records before this one.
      std::string context = e.context() + reached_text(options_, totals_);
      if (e.bytes_done() > 0)
        context += " and " + std::to_string(e.bytes_done()) + " bytes of the next";
      totals_.bytes_out += e.bytes_done();
      throw Error(e.errnum(), std::move(context), e.bytes_done());
    }
    totals_.bytes_out += length;
    if (length == options_.size)
      ++totals_.out_full;
    else
      ++totals_.out_partial;
  }

  Tape& out_;
  const Options& options_;
  Totals& totals_;
  bool input_is_stream_;
  std::size_t capacity_;
  AlignedBuffer buffer_;
  std::size_t start_ = 0;
  std::size_t fill_ = 0;
};

// dd's human-readable size: two significant figures below 10, whole above.
std::string human(double value, const char* const* units, double base) {
  int unit = 0;
  while (value >= base * 0.9995 && units[unit + 1] != nullptr) {
    value /= base;
    ++unit;
  }
  char text[32];
  if (value < 9.95)
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  else
    std::snprintf(text, sizeof text, "%.0f %s", value, units[unit]);
  return text;
}

constexpr const char* si_units[] = {"B", "kB", "MB", "GB", "TB", "PB", nullptr};
constexpr const char* iec_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", nullptr};

}  // namespace

std::string reached_text(const Options& options, const Totals& totals) {
  if (options.records)
    return " after " + count_noun(totals.out_full + totals.out_partial, "record", "records") +
           " (" + std::to_string(totals.bytes_out) + " bytes)";
  return " after " + count_noun(totals.out_full, "full record", "full records") + " of " +
         std::to_string(options.size) + " bytes";
}

void take_back_lost(const Error& e, const Tape& out, Totals& totals) noexcept {
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;
  if (const auto* lost = dynamic_cast<const LostWrites*>(&e)) {
    bytes += lost->bytes_lost();
    records += lost->records_lost();
  }
  Tape::Unacknowledged sent = out.unacknowledged();
  bytes += sent.bytes;
  records += sent.records;
  totals.bytes_out -= std::min(bytes, totals.bytes_out);
  // Lost records are the last ones written, full ones unless the copy had
  // already reached its short tail.
  std::uint64_t partial = std::min(records, totals.out_partial);
  totals.out_partial -= partial;
  totals.out_full -= std::min(records - partial, totals.out_full);
}

void copy_reblocked(Tape& in, Tape& out, const Options& options, Totals& totals) {
  bool stream = !in.keeps_records();
  Reblocker blocks(out, options, totals, stream);
  AlignedBuffer record_buffer = allocate_aligned(stream ? 1 : options.max_record);
  std::span<std::byte> record(record_buffer.get(), stream ? 1 : options.max_record);
  for (;;) {
    std::size_t n = 0;
    try {
      // A stop signal that came between two reads ends the copy here.
      if (stop_requested()) throw Interrupted("read " + in.name());
      // From a stream, read straight into the output buffer; records must be
      // read whole, so they go through their own buffer.
      n = stream ? in.read(blocks.free_space()) : read_bounded(in, record, options);
    } catch (const Error&) {
      // Keep what was read: it goes out before the read error is reported.
      blocks.finish();
      throw;
    }
    if (n == 0) break;
    totals.bytes_in += n;
    if (stream) {
      blocks.commit(n);
      continue;
    }
    if (n == options.size)
      ++totals.in_full;
    else
      ++totals.in_partial;
    blocks.append(record.first(n));
  }
  blocks.finish();
}

void copy_records(Tape& in, Tape& out, const Options& options, Totals& totals) {
  AlignedBuffer record_buffer = allocate_aligned(options.max_record);
  std::span<std::byte> record(record_buffer.get(), options.max_record);
  for (;;) {
    if (stop_requested()) throw Interrupted("read " + in.name());
    std::size_t n = read_bounded(in, record, options);
    if (n == 0) break;
    totals.bytes_in += n;
    ++totals.sizes[n];
    ++(n == options.size ? totals.in_full : totals.in_partial);
    try {
      out.write(record.first(n));
    } catch (const Error& e) {
      take_back_lost(e, out, totals);
      throw Error(e.errnum(), e.context() + reached_text(options, totals), e.bytes_done());
    }
    totals.bytes_out += n;
    ++(n == options.size ? totals.out_full : totals.out_partial);
  }
}

std::string format_summary(const Totals& totals, double seconds) {
  char line[256];
  std::string text;
  std::snprintf(line, sizeof line, "%" PRIu64 "+%" PRIu64 " records in\n", totals.in_full,
                totals.in_partial);
  text += line;
  std::snprintf(line, sizeof line, "%" PRIu64 "+%" PRIu64 " records out\n", totals.out_full,
                totals.out_partial);
  text += line;
  auto bytes = static_cast<double>(totals.bytes_out);
  text += totals.bytes_out == 1 ? "1 byte" : std::to_string(totals.bytes_out) + " bytes";
  if (totals.bytes_out >= 1000) {
    text += " (" + human(bytes, si_units, 1000);
    if (totals.bytes_out >= 1024) text += ", " + human(bytes, iec_units, 1024);
    text += ")";
  }
  std::snprintf(line, sizeof line, " copied, %g s, ", seconds);
  text += line;
  text += seconds > 0 ? human(bytes / seconds, si_units, 1000) + "/s\n" : "-- B/s\n";
  return text;
}

std::string format_histogram(const Totals& totals) {
  std::string text;
  std::uint64_t records = 0;
  for (auto it = totals.sizes.rbegin(); it != totals.sizes.rend(); ++it) {
    text += count_noun(it->second, "record", "records") + " of " +
            count_noun(it->first, "byte", "bytes") + "\n";
    records += it->second;
  }
  text += count_noun(records, "record", "records") + ", " +
          count_noun(totals.bytes_in, "byte", "bytes") + "\n";
  return text;
}

}  // namespace tk::reblock
