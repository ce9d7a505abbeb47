// What buffer adds around its outputs: --tee outputs beside -o, the digests
// of what reached each (--hash), and reading volumes back (--verify).
#pragma once

#include <cstdint>
#include <functional>
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

// One --tee output.
struct TeeOutput {
  std::unique_ptr<Tape> tape;
  std::uint64_t written = 0;  // bytes it accepted
  std::optional<OutputDigest> digest;
  std::int64_t start = -1;    // volume_start
  std::string failure;        // why it was dropped (--keep-going); empty while it works
  bool closed = false;
};

// The --tee outputs, written in step with -o: each block goes to -o, then
// to each of them in turn, before the next block is taken.
class TeeOutputs {
 public:
  using Opener = std::function<std::unique_ptr<Tape>(const std::string& name)>;
  TeeOutputs(const std::vector<std::string>& names, std::optional<DigestKind> hash,
             const Opener& open);

  bool empty() const noexcept { return tees_.empty(); }
  bool any_working() const noexcept;
  // Writes the block to every output still working. A signal interrupting
  // a write calls on_interrupted (which may throw to stop), then the rest
  // goes on. Returns the outputs that failed this time, with their error.
  struct Failure {
    TeeOutput* tee;
    std::string error;
  };
  std::vector<Failure> write(std::span<const std::byte> block,
                             const std::function<void()>& on_interrupted);
  // Closes every output still open; returns one line per failed close.
  std::string close_all();
  // "N bytes reached NAME" for each output, comma-separated.
  std::string reached_text() const;
  // The digests of the outputs still working.
  std::string digest_summary(bool json) const;
  // Each output, in the order of the --tee options.
  const std::vector<TeeOutput>& outputs() const noexcept { return tees_; }
  // Reads each working output back; returns the mismatch lines.
  std::string verify_all(std::size_t record_size, const OpenOptions& how) const;

 private:
  std::vector<TeeOutput> tees_;
};

}  // namespace tk::buffer
