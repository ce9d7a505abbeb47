// The rmt wire codec: framing of requests and replies, open flags, seek
// argument order and op-code mapping. Knows no Tape; both the server
// (tools/rmt) and the remote backend (lib/tape/remote_tape) use it. The S
// reply's struct mtget is the tape's (lib/tape/tape_status.hpp).
// The wire contract: docs/rmt-protocol.md; the headings quoted below are its.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../error.hpp"

namespace tk::rmt {

// Longest argument lines kept ("Framing"); longer lines are drained to their
// newline and flagged, never split and executed.
struct Limits {
  std::size_t device = 4095;
  std::size_t flags = 256;
  std::size_t number = 64;
  // An argument line longer than this is not drained but ends the session.
  std::size_t drain = std::size_t{1} << 20;
};

// A frame that cannot be answered in sync: end of input inside a request,
// an unknown command byte, or an endless line. The session ends on it.
class ProtocolError : public Error {
 public:
  enum class Kind { truncated, garbage, oversize, bad_reply };
  ProtocolError(Kind kind, std::string context)
      : Error(kind == Kind::truncated ? EPIPE : EPROTO, std::move(context)), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

// Where the reader gets bytes: a pipe, a socket, or memory (the fuzzer).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads at least one byte; returns 0 only at end of input.
  virtual std::size_t read_some(std::span<std::byte> buf) = 0;
};

// A ByteSource over memory, for tests and the fuzzer.
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const std::byte> data) : data_(data) {}
  std::size_t read_some(std::span<std::byte> buf) override;

 private:
  std::span<const std::byte> data_;
};

// Buffered reading of the control stream: one read(2) serves many requests.
class BufferedReader {
 public:
  explicit BufferedReader(ByteSource& source, std::size_t capacity = 64 * 1024);

  // The next byte, or -1 at end of input.
  int get();
  // Reads a line up to '\n' (not stored) into out, keeping at most `keep`
  // bytes; returns false at end of input before '\n'. Sets too_long when
  // the line was longer than `keep`; throws ProtocolError(oversize) beyond
  // `drain` bytes.
  bool read_line(std::string& out, std::size_t keep, std::size_t drain, bool& too_long);
  // Fills buf exactly; returns the bytes read (short only at end of input).
  std::size_t read_exact(std::span<std::byte> buf);
  // Reads and drops n bytes; returns the bytes dropped.
  std::uint64_t discard(std::uint64_t n);
  // True when bytes are already buffered (no read(2) needed for the next get).
  bool buffered() const noexcept { return pos_ < end_; }
  // The next n bytes, consumed, in place in the buffer (which grows to hold
  // them): a W record is written from where it was read, without a copy.
  // Shorter than n only at end of input.
  std::span<const std::byte> take(std::size_t n);

 private:
  bool fill();
  ByteSource& source_;
  std::unique_ptr<std::byte[]> buf_;
  std::size_t capacity_;
  std::size_t pos_ = 0;
  std::size_t end_ = 0;
};

// One request as framed on the wire; argument lines are raw text.
struct Request {
  char command = 0;
  int line_count = 0;
  std::array<std::string, 2> lines;
  std::array<bool, 2> too_long{};
  char sub = 0;  // the byte after 's'
};

// Reads the next request: skips stray newlines where a command byte is
// expected, then reads exactly the argument lines the command takes, all of
// them before anything is validated. Returns false at end of input between
// requests; throws ProtocolError for an unknown command byte, end of input
// inside a request, or a line beyond Limits::drain.
bool read_request(BufferedReader& in, const Limits& limits, Request& out);

// Strict decimal: optional leading blanks, optional sign, digits, nothing after.
std::optional<std::int64_t> parse_number(std::string_view text);

// Open flags as numeric, numeric plus symbolic, or symbolic (with or without
// "O_"); the symbolic part wins; a number alone is masked to O_ACCMODE,
// since only the access mode is the same on every OS ("O: open"). Returns Linux
// flags, or nullopt for an invalid line.
std::optional<int> parse_open_flags(std::string_view text);
// "<accmode> O_WRONLY|O_CREAT|O_TRUNC": portable to every symbolic server.
std::string format_open_flags(int flags);

// How to read the two lines of L ("L: seek").
enum class SeekOrder { automatic, bsd, gnu };
struct SeekArgs {
  std::int64_t offset = 0;
  int whence = 0;  // 0,1,2 lseek; 3,4 SEEK_DATA/HOLE; 10,11 dump's QFA
};
// Decodes L's lines a and b; nullopt when either is not a number/keyword.
std::optional<SeekArgs> decode_seek(std::string_view a, std::string_view b, SeekOrder order);

// Whether a server reads whole lines, so that S must be sent with its
// newline (GNU rmt since tar 1.23), or a byte at a time, so that a newline
// after S is a garbage command that ends it (the BSD lineage; "S: status"):
// the version probe with a count line that is not a number. GNU rmt
// parses the count strictly and refuses it with its own text, without an
// ioctl; atoi reads 0 there, so to the others it is the version probe again
// (v1 servers: A1; v0: the same refused ioctl). Sent only along with a
// request that is answered anyway, so that it costs no round trip.
inline constexpr std::string_view line_reader_probe = "I-1\n0x\n";

// Protocol version 1 (after "I-1" -> "A1"): BSD/Sun op numbers 0..10 to
// Linux op codes ("I: tape operation"); nullopt for anything else.
std::optional<int> linux_op_from_v1(std::int64_t wire);
// Linux op code to its v1 wire number, if it has one.
std::optional<int> v1_op_from_linux(int linux_op);
// The "i" extended ops: 2 RETEN, 3 ERASE, 4 EOM; nullopt otherwise.
std::optional<int> linux_op_from_extended(std::int64_t wire);
// An extended op number that only tapekit's rmt knows: it answers A with the
// same number, other v1 servers refuse it (EINVAL) without side effects.
// Clients ask it before a request whose meaning differs between servers.
inline constexpr std::int64_t tapekit_identify_op = 29803;  // "tk"
// Asked of tapekit's rmt only: the tape's logical block address (MTIOCPOS),
// failing with ENOTTY on a file, as mt-st's tell does. Dump's QFA request
// (L with whence 10) answers a file's offset instead, for restore.
inline constexpr std::int64_t tapekit_position_op = 29804;
// "s" + this: the drive's compression, asked of tapekit's rmt only (struct
// mtget has no bit for it): A1 on, A0 off, E5 when the drive cannot tell.
// Other v1 servers answer an unknown field E22.
inline constexpr char tapekit_compression_field = 'C';

// Pipelined rmt, tapekit's client and server only. After O the client asks
// "i29805\n<version>\n" (sent right behind O, and i29807 behind it, when
// the server is already known to be ours: after a failed O the pipeline is
// answered all the same and the streams refused, no tape being open); a
// server that speaks the extension
// answers A<version> with the highest version both speak (1 today), and
// anything else (an older tapekit rmt refuses the unknown op with E22)
// leaves the session strictly request/response. O ends the agreement.
//
// Version 1 changes two things on the server, nothing else:
// - After a W that failed or wrote short, every later W is answered
//   E125 (ECANCELED) with its payload read and dropped, never written.
// - After an R that returned 0 (filemark, end of data) or failed, every
//   later R is answered E125 without reading.
// Both hold until "i29806\n0\n" (acknowledge), answered A<requests
// cancelled>, which the client sends only after it has seen the failure
// and every reply to what it had sent before. So the client may keep many
// W or R requests in flight and still know, reply by reply, which records
// reached the tape, and read-ahead never passes a filemark, end of data or
// an error. Every other request is sent with nothing in flight; after C
// the client closes its side at once.
//
// Flow control: a W reply is at most a status and an error line (under 110
// bytes), and the client keeps at most pipelined_max_requests in flight, so
// the replies it has not read yet always fit in one pipe (64 KiB): the
// server never blocks on its output while the client blocks on its input.
// R requests are under 24 bytes each, so the same bound keeps the requests
// the server has not read within one pipe while it blocks on a reply.
inline constexpr std::int64_t tapekit_pipeline_op = 29805;
inline constexpr std::int64_t tapekit_acknowledge_op = 29806;
inline constexpr std::int64_t pipeline_version = 1;
inline constexpr std::size_t pipelined_max_requests = 512;
std::optional<int> extended_op_from_linux(int linux_op);

// Parallel streams, tapekit's client and server only, after a pipeline was
// agreed. The client asks the first connection "i29807\n<N>\n" for N
// streams in all; the server answers A<length> followed by that many bytes
// of join token, and waits for N - 1 joins. Each further connection (the
// same remote shell, the same rmt command) sends "i29808\n<k>:<token>\n"
// as its first request, k from 1 to N - 1; its rmt hands its standard input
// and output to the first one's over a local socket, which accepts only
// the same uid holding the token, and answers A<k>. A refused join is
// answered E13. An older server refuses i29807 (E22): one stream.
//
// Once all have joined, request i (counted from 0, every request, not only
// R and W) goes on stream i mod N and its reply comes back on the same
// stream; the server serves the streams strictly in that order, so records
// reach the tape in the order written. The pipeline rules above hold as
// for one stream. C or O ends the joining: the other streams are let go.
//
// A stream that ends (end of input, a failed reply) while joined closes the
// tape at once, then every request on a stream left is answered E103
// (ECONNABORTED) with the lost stream in its text, except "i29809\n0\n",
// answered A<records written since the open>, and "i29809\n1\n", answered
// A<the lost stream's number + 1> (0: none lost); C is answered A0. The
// server ends when every stream has ended, or 30 s after the loss.
//
// When some did not join (a login refused or timed out, a join refused),
// the client's next request on the first connection is "i29810\n<mask>\n",
// bit k set for each stream k it saw answered A<k>: the server keeps those
// (it accepted each before its A) and lets every other go, answers A<the
// streams now in the session>, and the M streams in the session are the
// first connection and the kept ones in the order of k, request i on the
// (i mod M)th of them. An older server refuses it (E22), having let every
// joined stream go when the first connection spoke again: one stream.
inline constexpr std::int64_t tapekit_streams_op = 29807;
inline constexpr std::int64_t tapekit_join_op = 29808;
inline constexpr std::int64_t tapekit_session_op = 29809;
inline constexpr std::int64_t tapekit_streams_kept_op = 29810;
inline constexpr std::int64_t max_streams = 16;

// Drive health, asked of tapekit's rmt only: "i29811\n<q>\n", q a
// scsi::HealthQuery (0 INQUIRY, 1 TapeAlert log page, 2 tape capacity log
// page, 3 READ ATTRIBUTE, 4 data encryption status, 5, 6, 7, 8 the VPD
// pages 0x80, 0x00, 0xb1, 0xb2; a server older than q refuses it, E22 with
// unknown_health_query_text, having asked the drive nothing). The server builds
// that one read-only command itself (lib/scsi/cdb.hpp) for the device it
// has open, and answers A<n> followed by the n bytes of data the drive
// returned (at most max_health_data), or E<errno> with the reason the
// command got no data (its errno as scsi::ScsiError's: EOPNOTSUPP for
// ILLEGAL REQUEST, ENOMEDIUM, EPERM, ENOTTY where no drive can answer). A
// read, so allowed under --read-only. Other servers are never asked: a
// client that is not told tapekit's rmt by i29803 says so itself.
inline constexpr std::int64_t tapekit_health_op = 29811;
// A literal, so its data() ends in NUL.
inline constexpr std::string_view unknown_health_query_text = "Invalid health query";
inline constexpr std::size_t max_health_data = 0x10000;
inline constexpr std::size_t max_join_token = 128;

// Reply formatting, appended to out: "A<n>\n" and "E<errno>\n<text>\n"
// (the text one ASCII line under 79 bytes, errno never 0).
void append_ok(std::string& out, std::uint64_t value);
// "A-1\n" and the like: a status field that may be negative (st reports a
// position it lost as mt_fileno or mt_blkno -1, and rmt-dump's s passes it on).
void append_ok_signed(std::string& out, std::int64_t value);
void append_error(std::string& out, int errnum, std::string_view text);

// A reply as a client reads it.
struct Reply {
  bool ok = false;
  std::int64_t value = 0;  // A<value>
  int errnum = 0;          // E or F
  bool fatal = false;      // F: the connection must be considered dead
  std::string text;        // E or F's message line, escaped (printable_text)
};
// What an A value may be. A count (of bytes read or written, an open, an
// ioctl, a seek, a struct's size) is never negative: A-1 there is a protocol
// violation, and a client that took it would size buffers and positions by
// it. A status field (the s<c> sub-replies, "s: one status field") is the
// server's mtget field as it is, and st reports an unknown file or block number
// as -1: rmt-dump sends A-1 at end of data, with no tape and while not ready.
enum class ReplyValue { count, field };
// Reads one status line (at most 64 bytes, as GNU clients accept) and, for
// E/F, the message line; throws ProtocolError(bad_reply) on anything else,
// including a negative A value where `value` is a count.
Reply read_reply(BufferedReader& in, ReplyValue value = ReplyValue::count);
// True when this reply to line_reader_probe is GNU rmt's.
bool answers_as_line_reader(const Reply& reply);

}  // namespace tk::rmt
