// What buffer adds around its outputs: --tee outputs beside -o, the digests
// of what reached each (--hash), and reading volumes back (--verify).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../../lib/digest.hpp"
#include "../../lib/tape/tape.hpp"

namespace tk::buffer {

// The digest of what reached one output, in total and, for an output that
// changes volumes, of each volume.
class OutputDigest {
 public:
  OutputDigest(DigestKind kind, bool per_volume);
  DigestKind kind() const noexcept { return total_.kind(); }
  // Bytes the output accepted, in order.
  void add(std::span<const std::byte> reached);
  // The current volume is complete; the next add() starts the next one.
  void end_volume();
  // The current (or only) volume's digest and size.
  std::string volume_hex() const;
  std::uint64_t volume_bytes() const noexcept { return volume_bytes_; }
  std::string total_hex() const { return total_.hex(); }
  // Each volume's digest, the current one last: one entry without volumes.
  std::vector<std::string> volume_hexes() const;
  // "buffer (writer): sha256 of NAME: HEX (N bytes)" for the whole, after
  // one line per volume when there was more than one.
  std::string summary(const std::string& name) const;
  // The same under --json: one {"event":"digest","output":NAME,"algorithm":..,
  // "volume":N,"digest":HEX,"bytes":N} per line, "volume" only on a volume's line.
  std::string summary_json(const std::string& name) const;

 private:
  Digest total_;
  std::optional<Digest> volume_;  // only for an output with volumes
  std::uint64_t total_bytes_ = 0;
  std::uint64_t volume_bytes_ = 0;
  std::vector<std::pair<std::string, std::uint64_t>> ended_;  // earlier volumes
};

// Where a volume starts, to find it again when reading it back: the tape
// file number it was written at, or -1 for a stream (read from its start).
std::int64_t volume_start(Tape& tape);

// Reads the volume `name` back from `start` (volume_start) to its filemark
// or end and compares its digest and size with what was written. Returns ""
// when they match, else the line that says how they differ, naming the
// volume as `label` ("out.tap, volume 2"). Throws Interrupted after request_stop().
std::string verify_volume(const std::string& name, const std::string& label, std::int64_t start,
                          std::size_t record_size, const OutputDigest& written,
                          const OpenOptions& how);

// One of the writer's outputs: -o, always the first, or a --tee. Each owns
// its tape and what is known of what reached it; the writer (writer.cpp)
// takes every output through the same steps, and only -o changes volumes.
struct Output {
  // A write the output took, with whether it ends its block.
  struct Sent {
    std::span<const std::byte> bytes;
    bool ends_block = true;
  };

  // hashed_by_volume: a digest of each volume too (-o with --next-volume).
  Output(std::unique_ptr<Tape> opened, std::optional<DigestKind> hash, bool hashed_by_volume)
      : tape(std::move(opened)) {
    if (hash) digest.emplace(*hash, hashed_by_volume);
  }
  const std::string& name() const noexcept { return tape->name(); }
  bool working() const noexcept { return failure.empty(); }

  std::unique_ptr<Tape> tape;
  std::optional<OutputDigest> digest;        // --hash, of what reached it
  std::uint64_t written = 0;                 // bytes that reached it, all volumes
  std::vector<std::uint64_t> per_volume{0};  // of which on each volume
  std::int64_t start = -1;                   // where its volume starts (volume_start), for --verify
  std::string failure;                       // why it was dropped (--keep-going); empty while it works
  bool open = true;                          // false from a volume's close to the next's open
  bool fresh_volume = false;                 // a volume just loaded has taken nothing yet
  // Writes it took and has not acknowledged (a pipelined remote tape's),
  // oldest first: not counted, their blocks kept from the reader.
  std::deque<Sent> sent;
  std::vector<Sent> unwritten;    // lost on a full volume, for the next one
  std::uint64_t blocks_done = 0;  // blocks every write of which it acknowledged
};

}  // namespace tk::buffer
