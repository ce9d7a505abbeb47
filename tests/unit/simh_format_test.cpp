// The SIMH codec: length words, framing of padded and unpadded records, gaps,
// markers, and forward/reverse scans that find structural errors.
#include "../../lib/tape/simh_format.hpp"

#include <cstdlib>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "../../lib/io.hpp"

namespace {

using tk::simh::ImageReader;
using tk::simh::Kind;
using tk::simh::Object;

// Builds an image byte by byte, as the format description says.
struct Image {
  std::vector<std::byte> bytes;

  Image& word(std::uint32_t w) {
    std::byte b[4];
    tk::simh::store_le32(b, w);
    bytes.insert(bytes.end(), b, b + 4);
    return *this;
  }
  Image& record(std::uint32_t length, bool bad = false, bool pad = true, std::uint32_t trail = 0) {
    std::uint32_t w = tk::simh::record_word(length, bad);
    word(w);
    for (std::uint32_t i = 0; i < length; ++i) bytes.push_back(static_cast<std::byte>('a' + i % 26));
    if (pad && (length & 1) != 0) bytes.push_back(std::byte{0});
    return word(trail != 0 ? trail : w);
  }
  Image& mark() { return word(tk::simh::mark_word); }
  Image& gap() { return word(tk::simh::erase_gap); }
  Image& eom() { return word(tk::simh::eom_word); }
  Image& raw(std::initializer_list<int> b) {
    for (int x : b) bytes.push_back(static_cast<std::byte>(x));
    return *this;
  }
};

// The image in a temporary file, with a reader over it.
class ImageFile {
 public:
  explicit ImageFile(const Image& image) {
    char name[] = "/tmp/simh-unit-XXXXXX";
    fd_ = tk::Fd(::mkstemp(name));
    ::unlink(name);
    tk::write_all(fd_.get(), image.bytes, name);
    reader_ = ImageReader(fd_.get(), image.bytes.size());
  }
  ImageReader& reader() { return reader_; }
  int fd() const { return fd_.get(); }

 private:
  tk::Fd fd_;
  ImageReader reader_;
};

std::vector<Kind> kinds_forward(ImageReader& r) {
  std::vector<Kind> out;
  std::uint64_t pos = 0;
  for (;;) {
    Object o = r.next(pos);
    out.push_back(o.kind);
    if (o.kind == Kind::end_of_data || o.kind == Kind::invalid) return out;
    pos = o.end;
  }
}

TEST(SimhWords, LittleEndianRoundTrip) {
  std::byte b[4];
  tk::simh::store_le32(b, 0x80000005);
  EXPECT_EQ(b[0], std::byte{0x05});
  EXPECT_EQ(b[3], std::byte{0x80});
  EXPECT_EQ(tk::simh::load_le32(b), 0x80000005u);
}

TEST(SimhWords, ClassifyFollowsTheFormatTable) {
  using tk::simh::WordKind;
  EXPECT_EQ(tk::simh::classify(0), WordKind::tape_mark);
  EXPECT_EQ(tk::simh::classify(0xFFFFFFFF), WordKind::end_of_medium);
  EXPECT_EQ(tk::simh::classify(0xFFFFFFFE), WordKind::gap);
  EXPECT_EQ(tk::simh::classify(0xFFFEFFFF), WordKind::half_gap);
  EXPECT_EQ(tk::simh::classify(0xFF000000), WordKind::invalid);
  EXPECT_EQ(tk::simh::classify(0x01000005), WordKind::invalid);
  EXPECT_EQ(tk::simh::classify(0x80000000), WordKind::invalid);
  EXPECT_EQ(tk::simh::classify(0x80000005), WordKind::record);
  EXPECT_EQ(tk::simh::classify(0x00FFFFFF), WordKind::record);
}

TEST(SimhWords, OddRecordsArePaddedToEven) {
  EXPECT_EQ(tk::simh::padded(5), 6u);
  EXPECT_EQ(tk::simh::padded(6), 6u);
  EXPECT_EQ(tk::simh::record_span(5), 14u);
  EXPECT_EQ(tk::simh::record_word(5, true), 0x80000005u);
}

TEST(SimhReader, ScansTheSpecExampleForward) {
  // HELLO, WORLD!, TM, DATA, TM, TM: positions as mtdump prints them.
  Image img;
  img.record(5).record(6).mark().record(4).mark().mark();
  ImageFile f(img);
  std::uint64_t expected_starts[] = {0, 14, 28, 32, 44, 48};
  std::uint64_t pos = 0;
  for (std::uint64_t start : expected_starts) {
    Object o = f.reader().next(pos);
    EXPECT_EQ(o.start, start);
    pos = o.end;
  }
  EXPECT_EQ(f.reader().next(pos).kind, Kind::end_of_data);
  EXPECT_EQ(pos, 52u);
}

TEST(SimhReader, ReadsUnpaddedOddRecords) {
  Image img;
  img.record(5, false, false).record(3, false, false).mark();
  ImageFile f(img);
  Object a = f.reader().next(0);
  EXPECT_EQ(a.kind, Kind::record);
  EXPECT_EQ(a.end, 13u);
  Object b = f.reader().next(a.end);
  EXPECT_EQ(b.length, 3u);
  EXPECT_EQ(f.reader().next(b.end).kind, Kind::tape_mark);
}

TEST(SimhReader, SkipsEraseGapsAndHalfGaps) {
  Image img;
  img.gap().gap().record(2).word(tk::simh::half_gap_forward).raw({0xFF, 0xFF}).mark();
  ImageFile f(img);
  EXPECT_EQ(kinds_forward(f.reader()),
            (std::vector<Kind>{Kind::record, Kind::tape_mark, Kind::end_of_data}));
}

TEST(SimhReader, EndOfMediumMarkerEndsTheDataEvenWithBytesAfterIt) {
  Image img;
  img.record(4).eom().raw({1, 2, 3, 4, 5});
  ImageFile f(img);
  Object o = f.reader().next(12);
  EXPECT_EQ(o.kind, Kind::end_of_data);
  EXPECT_EQ(o.start, 12u);
}

TEST(SimhReader, FlagsBadRecords) {
  Image img;
  img.record(3, true).record(2);
  ImageFile f(img);
  Object o = f.reader().next(0);
  EXPECT_EQ(o.kind, Kind::bad_record);
  EXPECT_EQ(o.length, 3u);
  EXPECT_EQ(o.end, 12u);
}

TEST(SimhReader, ReportsAMismatchedTrailingLength) {
  Image img;
  img.record(4).record(6, false, true, 7);
  ImageFile f(img);
  Object o = f.reader().next(12);
  EXPECT_EQ(o.kind, Kind::invalid);
  EXPECT_EQ(o.start, 12u);
  EXPECT_NE(o.problem.find("does not match"), std::string::npos) << o.problem;
}

TEST(SimhReader, ReportsATruncatedRecordAndHeader) {
  Image img;
  img.record(4).word(100).raw({1, 2, 3});
  ImageFile f(img);
  Object o = f.reader().next(12);
  EXPECT_EQ(o.kind, Kind::invalid);
  EXPECT_NE(o.problem.find("cut short"), std::string::npos) << o.problem;

  Image img2;
  img2.record(4).raw({9, 9});
  ImageFile f2(img2);
  EXPECT_EQ(f2.reader().next(12).kind, Kind::invalid);
}

TEST(SimhReader, ReportsReservedMarkersAndClassBits) {
  Image img;
  img.word(0xFF000001);
  ImageFile f(img);
  EXPECT_EQ(f.reader().next(0).kind, Kind::invalid);
  Image img2;
  img2.word(0x02000004).raw({0, 0, 0, 0}).word(0x02000004);
  ImageFile f2(img2);
  EXPECT_EQ(f2.reader().next(0).kind, Kind::invalid);
}

TEST(SimhReader, ScansBackwardThroughTrailingLengths) {
  Image img;
  img.record(5).mark().gap().record(3, false, false).record(8);
  ImageFile f(img);
  std::uint64_t end = img.bytes.size();
  Object a = f.reader().previous(end);
  EXPECT_EQ(a.kind, Kind::record);
  EXPECT_EQ(a.length, 8u);
  Object b = f.reader().previous(a.start);
  EXPECT_EQ(b.length, 3u);
  EXPECT_EQ(b.start, 22u);
  Object c = f.reader().previous(b.start);
  EXPECT_EQ(c.kind, Kind::tape_mark);
  EXPECT_EQ(c.start, 14u);
  Object d = f.reader().previous(c.start);
  EXPECT_EQ(d.start, 0u);
  EXPECT_EQ(f.reader().previous(0).kind, Kind::bot);
}

TEST(SimhReader, ReverseScanRejectsATrailerWithoutItsHeader) {
  Image img;
  img.record(4).raw({1, 2}).word(4);
  ImageFile f(img);
  EXPECT_EQ(f.reader().previous(img.bytes.size()).kind, Kind::invalid);
}

TEST(SimhReader, ReadDataChecksTheTrailerAndKeepsTheNextHeader) {
  Image img;
  img.record(5).record(7, false, false).mark();
  ImageFile f(img);
  std::vector<std::byte> buf(16);
  Object a = f.reader().next(0, false);
  ASSERT_TRUE(f.reader().read_data(a, std::span(buf).first(5)));
  EXPECT_EQ(buf[0], std::byte{'a'});
  EXPECT_EQ(buf[4], std::byte{'e'});
  Object b = f.reader().next(a.end, false);
  ASSERT_EQ(b.length, 7u);
  ASSERT_TRUE(f.reader().read_data(b, std::span(buf).first(7)));
  EXPECT_EQ(b.end, 14u + 15u);
  EXPECT_EQ(f.reader().next(b.end).kind, Kind::tape_mark);
}

TEST(SimhReader, ReadDataTurnsAMismatchIntoAnInvalidObject) {
  Image img;
  img.record(6, false, true, 9);
  ImageFile f(img);
  std::vector<std::byte> buf(6);
  Object a = f.reader().next(0, false);
  EXPECT_FALSE(f.reader().read_data(a, buf));
  EXPECT_EQ(a.kind, Kind::invalid);
}

// Records with distinct contents (byte i of record r is r + i), sized so that
// some straddle the read-ahead window's edges.
Image numbered_records(std::uint32_t count, std::uint32_t first_length) {
  Image img;
  for (std::uint32_t r = 0; r < count; ++r) {
    std::uint32_t length = first_length + r;
    std::uint32_t w = tk::simh::record_word(length, false);
    img.word(w);
    for (std::uint32_t i = 0; i < length; ++i) img.bytes.push_back(static_cast<std::byte>(r + i));
    if ((length & 1) != 0) img.bytes.push_back(std::byte{0});
    img.word(w);
  }
  return img.mark();
}

bool holds_record(const std::vector<std::byte>& buf, std::uint32_t r, std::uint32_t length) {
  for (std::uint32_t i = 0; i < length; ++i)
    if (buf[i] != static_cast<std::byte>(r + i)) return false;
  return true;
}

TEST(SimhReadAhead, RecordsAcrossTheWindowEdgesReadIntactForwardAndAfterGoingBack) {
  // About 2.5 windows of 3001..3200-byte records.
  const std::uint32_t count = 200, first = 3001;
  Image img = numbered_records(count, first);
  ImageFile f(img);
  std::vector<std::byte> buf(first + count);
  std::vector<std::uint64_t> starts;
  std::uint64_t pos = 0;
  for (std::uint32_t r = 0; r < count; ++r) {
    Object o = f.reader().next(pos, false);
    ASSERT_EQ(o.length, first + r);
    ASSERT_TRUE(f.reader().read_data(o, std::span(buf).first(o.length))) << o.problem;
    ASSERT_TRUE(holds_record(buf, r, o.length)) << "record " << r;
    starts.push_back(o.start);
    pos = o.end;
  }
  EXPECT_EQ(f.reader().next(pos).kind, Kind::tape_mark);
  // Back to the first window and forward again, as bsr then read would.
  for (std::uint32_t r : {150u, 3u, 120u, 121u, 0u, 199u}) {
    Object o = f.reader().next(starts[r], false);
    ASSERT_TRUE(f.reader().read_data(o, std::span(buf).first(o.length))) << o.problem;
    EXPECT_TRUE(holds_record(buf, r, o.length)) << "record " << r;
    Object back = f.reader().previous(o.end);
    EXPECT_EQ(back.start, starts[r]);
  }
}

TEST(SimhReadAhead, ARecordChangedInTheImageReadsNewAfterSetSize) {
  Image img = numbered_records(20, 100);
  ImageFile f(img);
  std::vector<std::byte> buf(200);
  Object a = f.reader().next(0, false);
  ASSERT_TRUE(f.reader().read_data(a, std::span(buf).first(a.length)));
  // Rewrite record 1 (101 bytes at 108) as a 50-byte record and end the image there.
  Image replacement;
  replacement.record(50).mark();
  ASSERT_EQ(::pwrite(f.fd(), replacement.bytes.data(), replacement.bytes.size(), 108),
            static_cast<ssize_t>(replacement.bytes.size()));
  ASSERT_EQ(::ftruncate(f.fd(), 108 + 62), 0);
  f.reader().set_size(108 + 62);
  Object b = f.reader().next(a.end, false);
  ASSERT_EQ(b.length, 50u);
  ASSERT_TRUE(f.reader().read_data(b, std::span(buf).first(b.length)));
  EXPECT_EQ(buf[0], std::byte{'a'});
  EXPECT_EQ(b.end, 108u + 58);
  EXPECT_EQ(f.reader().next(b.end).kind, Kind::tape_mark);
  EXPECT_EQ(f.reader().next(b.end + 4).kind, Kind::end_of_data);
}

TEST(SimhReadAhead, RecordsAboveTheLimitAndBelowItInterleave) {
  Image img;
  const std::uint32_t big = ImageReader::read_ahead_limit + 1001;
  img.record(10).record(big).record(11, false, false).record(big - 1).record(12).mark();
  ImageFile f(img);
  std::vector<std::byte> buf(big);
  std::uint64_t pos = 0;
  for (std::uint32_t length : {10u, big, 11u, big - 1, 12u}) {
    Object o = f.reader().next(pos, false);
    ASSERT_EQ(o.length, length);
    ASSERT_TRUE(f.reader().read_data(o, std::span(buf).first(length))) << o.problem;
    EXPECT_EQ(buf[length - 1], static_cast<std::byte>('a' + (length - 1) % 26));
    pos = o.end;
  }
  EXPECT_EQ(pos, img.bytes.size() - 4);
  EXPECT_EQ(f.reader().next(pos).kind, Kind::tape_mark);
}

TEST(SimhReadAhead, AnOddRecordCutShortAtTheEndOfTheImageIsInvalid) {
  Image img;
  img.record(9);
  img.bytes.erase(img.bytes.end() - 2, img.bytes.end());  // half of the trailing length
  ImageFile f(img);
  std::vector<std::byte> buf(9);
  Object o = f.reader().next(0, false);
  EXPECT_FALSE(f.reader().read_data(o, buf));
  EXPECT_EQ(o.kind, Kind::invalid);
}

}  // namespace
