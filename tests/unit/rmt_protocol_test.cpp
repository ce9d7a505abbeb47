// The rmt codec's decoders: one table row per input (rmt-protocol.md §5, §6, §7).
#include "../../lib/rmt/protocol.hpp"
#include "../../lib/tape/tape_status.hpp"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <gtest/gtest.h>

namespace {

using namespace tk::rmt;

TEST(RmtOpenFlags, SymbolicWinsAndNumbersAloneKeepTheAccessMode) {
  struct Row {
    const char* text;
    int flags;
  } rows[] = {
      {"0", O_RDONLY},
      {"577", O_WRONLY},
      {"2", O_RDWR},
      {"65 O_WRONLY|O_CREAT", O_WRONLY | O_CREAT},
      {"1 O_RDONLY", O_RDONLY},
      {"O_WRONLY|O_CREAT|O_TRUNC", O_WRONLY | O_CREAT | O_TRUNC},
      {"WRONLY|CREAT", O_WRONLY | O_CREAT},
      {"O_WRONLY | O_APPEND", O_WRONLY | O_APPEND},
      {"O_WRONLY|O_CREAT|", O_WRONLY | O_CREAT},
      {"0 O_RDONLY|O_LARGEFILE", O_RDONLY},
      {"O_CREAT", O_RDONLY | O_CREAT},
  };
  for (const auto& row : rows) {
    auto f = parse_open_flags(row.text);
    ASSERT_TRUE(f) << row.text;
    EXPECT_EQ(*f, row.flags) << row.text;
  }
}

TEST(RmtOpenFlags, RejectsWhatGnuRejects) {
  for (const char* text : {"", "junk", "0 junk", "-1", "|O_WRONLY", "O_WRONLY||O_CREAT",
                           "O_WRONLY|O_BOGUS", "o_wronly", "64|512", "3", "O_RDWR|O_WRONLY",
                           "99999999999"})
    EXPECT_FALSE(parse_open_flags(text)) << text;
}

TEST(RmtOpenFlags, FormatsAccessModeNumberAndNames) {
  EXPECT_EQ(format_open_flags(O_WRONLY | O_CREAT | O_TRUNC), "1 O_WRONLY|O_CREAT|O_TRUNC");
  EXPECT_EQ(format_open_flags(O_RDONLY), "0 O_RDONLY");
  EXPECT_EQ(format_open_flags(O_RDWR | O_CREAT), "2 O_RDWR|O_CREAT");
}

TEST(RmtNumber, IsStrictDecimal) {
  EXPECT_EQ(parse_number("10240"), 10240);
  EXPECT_EQ(parse_number(" +5"), 5);
  EXPECT_EQ(parse_number("-1"), -1);
  EXPECT_EQ(parse_number("010"), 10);
  for (const char* text : {"", "5 ", "0x5", "abc", "5\r", "99999999999999999999", "-"})
    EXPECT_FALSE(parse_number(text)) << text;
}

TEST(RmtSeek, AutomaticOrderMatchesWhatEachClientMeant) {
  struct Row {
    const char* a;
    const char* b;
    std::int64_t offset;
    int whence;
  } rows[] = {
      {"0", "1", 0, 1},           // tar 1.34 tell
      {"1", "0", 0, 1},           // tar 1.35 tell
      {"184320", "1", 184320, 1}, // tar 1.34 skip
      {"1", "10240", 10240, 1},   // tar 1.35 skip
      {"20480", "0", 20480, 0},   // tar 1.34 set
      {"0", "30720", 30720, 0},   // tar 1.35 set
      {"0", "10", 0, 10},         // dump QFA tell
      {"1234", "11", 1234, 11},   // dump QFA seek
      {"2", "0", 0, 2},           // GNU end
      {"0", "2", 0, 2},           // BSD end
      {"SEEK_END", "0", 0, 2},
      {"-5", "END", -5, 2},
      {"1", "3", 1, 3},           // ambiguous: BSD by default
  };
  for (const auto& row : rows) {
    auto s = decode_seek(row.a, row.b, SeekOrder::automatic);
    ASSERT_TRUE(s) << row.a << "/" << row.b;
    EXPECT_EQ(s->offset, row.offset) << row.a << "/" << row.b;
    EXPECT_EQ(s->whence, row.whence) << row.a << "/" << row.b;
  }
  EXPECT_FALSE(decode_seek("abc", "0", SeekOrder::automatic));
  EXPECT_FALSE(decode_seek("END", "SET", SeekOrder::automatic));
  EXPECT_EQ(decode_seek("1", "3", SeekOrder::gnu)->offset, 3);
}

TEST(RmtOps, V1NumbersMapToLinuxAndBack) {
  EXPECT_EQ(linux_op_from_v1(0), 5);   // weof
  EXPECT_EQ(linux_op_from_v1(5), 6);   // rewind
  EXPECT_EQ(linux_op_from_v1(10), 12); // eom
  EXPECT_FALSE(linux_op_from_v1(11));
  EXPECT_FALSE(linux_op_from_v1(-1));
  EXPECT_EQ(v1_op_from_linux(6), 5);
  EXPECT_FALSE(v1_op_from_linux(32));  // compression has no portable number
  EXPECT_EQ(linux_op_from_extended(4), 12);
  EXPECT_FALSE(linux_op_from_extended(0));
}

TEST(RmtMtget, Encodes48LittleEndianBytes) {
  tk::MtGet m;
  m.type = 0x72;
  m.dsreg = 0x40000200;
  m.gstat = 0x41000000;
  m.fileno = 2;
  m.blkno = 5;
  auto bytes = tk::encode_mtget(m);
  EXPECT_EQ(std::to_integer<int>(bytes[0]), 0x72);
  EXPECT_EQ(std::to_integer<int>(bytes[17]), 0x02);
  EXPECT_EQ(std::to_integer<int>(bytes[27]), 0x41);
  EXPECT_EQ(std::to_integer<int>(bytes[40]), 2);
  EXPECT_EQ(std::to_integer<int>(bytes[44]), 5);
  auto back = tk::decode_mtget(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->dsreg, m.dsreg);
  EXPECT_EQ(back->blkno, 5);
  EXPECT_FALSE(tk::decode_mtget(std::span(bytes).first(24)));
  EXPECT_EQ(tk::mtget_field(m, 'f'), 0x41000000);
  EXPECT_FALSE(tk::mtget_field(m, 'X'));
}

// The S reply of dump's rmt 0.4b47 switched to v1 (x86-64), as it sent it
// for type -2, gstat 0x81010000 and file and block -1: each field through
// htonl() into the first 4 bytes of its 8.
TEST(RmtProtocol, DumpV1StatusIsReadInNetworkOrder) {
  std::array<std::byte, 48> bytes{};
  auto put = [&](std::size_t at, std::initializer_list<int> values) {
    for (int v : values) bytes[at++] = static_cast<std::byte>(v);
  };
  put(0, {0xff, 0xff, 0xff, 0xfe});
  put(24, {0x81, 0x01, 0x00, 0x00});
  put(32, {0x00, 0x00, 0x00, 0x03});
  put(40, {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x05});
  auto m = tk::decode_mtget(bytes, tk::MtGetOrder::dump_v1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->type, -2);
  EXPECT_EQ(m->gstat, 0x81010000);
  EXPECT_EQ(m->erreg, 3);
  EXPECT_EQ(m->fileno, -1);
  EXPECT_EQ(m->blkno, 5);
  EXPECT_FALSE(tk::decode_mtget(std::span(bytes).first(24), tk::MtGetOrder::dump_v1));
}

TEST(RmtReplies, StayShortAndNeverSendErrnoZero) {
  std::string out;
  append_error(out, 0, std::string(200, 'x') + "\n");
  EXPECT_EQ(out.substr(0, 3), "E5\n");
  EXPECT_EQ(out.size(), 3 + 78 + 1);
}

// Reads one reply from `wire` as a client would.
Reply reply_from(const std::string& wire, ReplyValue value = ReplyValue::count) {
  MemorySource source(std::as_bytes(std::span(wire.data(), wire.size())));
  BufferedReader in(source);
  return read_reply(in, value);
}

TEST(RmtReplies, StatusFieldsMayBeNegativeCountsMayNot) {
  // rmt-dump's sF and sB at end of data, with no tape, while not ready.
  EXPECT_EQ(reply_from("A-1\n", ReplyValue::field).value, -1);
  EXPECT_TRUE(reply_from("A-1\n", ReplyValue::field).ok);
  EXPECT_EQ(reply_from("A-2147483648\n", ReplyValue::field).value, -2147483648LL);
  EXPECT_EQ(reply_from("A5\n", ReplyValue::field).value, 5);
  // A count that is negative would size a read or move a position.
  for (const char* wire : {"A-1\n", "A-0000000000000000001\n", "A-9223372036854775808\n"}) {
    SCOPED_TRACE(wire);
    try {
      reply_from(wire);
      ADD_FAILURE() << "accepted";
    } catch (const ProtocolError& e) {
      EXPECT_EQ(e.kind(), ProtocolError::Kind::bad_reply);
      EXPECT_NE(std::strstr(e.what(), "negative count in reply"), nullptr);
    }
  }
  EXPECT_EQ(reply_from("A-0\n").value, 0);
  // Malformed is malformed for a field too.
  for (const char* wire : {"A-\n", "A--1\n", "A-1x\n", "A99999999999999999999\n"}) {
    SCOPED_TRACE(wire);
    EXPECT_THROW(reply_from(wire, ReplyValue::field), ProtocolError);
  }
}

TEST(RmtReplies, OnlyGnuRmtsRefusalOfTheFramingProbeSaysItReadsLines) {
  // What rmt-tar (tar 1.34) answers "I-1\n0x\n"; a BSD-lineage server's
  // atoi reads 0 and fails the ioctl with strerror's text, and a v1 server
  // answers A1 (ours refuses the count in GNU's words, but it is v1: what it
  // answers here is never looked at).
  EXPECT_TRUE(answers_as_line_reader(reply_from("E22\nInvalid byte count\n")));
  EXPECT_FALSE(answers_as_line_reader(reply_from("E22\nInvalid argument\n")));
  EXPECT_FALSE(answers_as_line_reader(reply_from("E25\nInvalid byte count\n")));
  EXPECT_FALSE(answers_as_line_reader(reply_from("A1\n")));
  EXPECT_FALSE(answers_as_line_reader(reply_from("A0\n")));
  EXPECT_EQ(line_reader_probe, "I-1\n0x\n");
}

TEST(RmtRequests, ReadsAllLinesBeforeAnythingIsDecided) {
  std::string wire = "O" + std::string(5000, 'a') + "\n0\nR5\n";
  MemorySource source(std::as_bytes(std::span(wire.data(), wire.size())));
  BufferedReader in(source, 128);
  Request r;
  ASSERT_TRUE(read_request(in, Limits{}, r));
  EXPECT_EQ(r.command, 'O');
  EXPECT_TRUE(r.too_long[0]);
  EXPECT_EQ(r.lines[1], "0");
  ASSERT_TRUE(read_request(in, Limits{}, r));
  EXPECT_EQ(r.command, 'R');
  EXPECT_EQ(r.lines[0], "5");
  EXPECT_FALSE(read_request(in, Limits{}, r));
}

}  // namespace

namespace {

// Hands out its bytes a few at a time, as a pipe might.
class TrickleSource final : public tk::rmt::ByteSource {
 public:
  explicit TrickleSource(std::string data) : data_(std::move(data)) {}
  std::size_t read_some(std::span<std::byte> buf) override {
    std::size_t n = std::min({buf.size(), data_.size() - pos_, std::size_t{3}});
    std::memcpy(buf.data(), data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string data_;
  std::size_t pos_ = 0;
};

TEST(RmtReader, TakeGathersARecordInPlaceAcrossReadsAndGrows) {
  std::string record(100, 'x');
  TrickleSource source("W100\n" + record + "R5\n");
  tk::rmt::BufferedReader in(source, 16);
  tk::rmt::Request r;
  ASSERT_TRUE(tk::rmt::read_request(in, tk::rmt::Limits{}, r));
  auto got = in.take(100);
  ASSERT_EQ(got.size(), 100u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got.data()), got.size()), record);
  ASSERT_TRUE(tk::rmt::read_request(in, tk::rmt::Limits{}, r));
  EXPECT_EQ(r.command, 'R');
  EXPECT_EQ(in.take(10).size(), 0u);  // end of input: short
}

}  // namespace
