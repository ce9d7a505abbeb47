// --tee outputs, --hash digests and --verify read-backs for buffer's writer.
#include "outputs.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "report.hpp"

namespace tk::buffer {

OutputDigest::OutputDigest(DigestKind kind, bool per_volume) : total_(kind) {
  // Volumes are hashed apart only where there can be several: hashing
  // every byte twice would halve the rate for nothing.
  if (per_volume) volume_.emplace(kind);
}

void OutputDigest::add(std::span<const std::byte> reached) {
  total_.update(reached);
  if (volume_) volume_->update(reached);
  total_bytes_ += reached.size();
  volume_bytes_ += reached.size();
}

std::string OutputDigest::volume_hex() const { return volume_ ? volume_->hex() : total_.hex(); }

std::vector<std::string> OutputDigest::volume_hexes() const {
  std::vector<std::string> hexes;
  for (const auto& [hex, bytes] : ended_) hexes.push_back(hex);
  hexes.push_back(volume_hex());
  return hexes;
}

void OutputDigest::end_volume() {
  ended_.emplace_back(volume_hex(), volume_bytes_);
  if (volume_) volume_->reset();
  volume_bytes_ = 0;
}

std::string OutputDigest::summary(const std::string& name) const {
  std::string prefix = std::string("buffer (writer): ") + digest_name(kind()) + " of " + name;
  std::string text;
  if (!ended_.empty()) {
    for (std::size_t i = 0; i <= ended_.size(); ++i) {
      bool current = i == ended_.size();
      text += prefix + ", volume " + std::to_string(i + 1) + ": " +
              (current ? volume_hex() : ended_[i].first) + " (" +
              std::to_string(current ? volume_bytes_ : ended_[i].second) + " bytes)\n";
    }
  }
  return text + prefix + ": " + total_.hex() + " (" + std::to_string(total_bytes_) + " bytes)\n";
}

std::string OutputDigest::summary_json(const std::string& name) const {
  auto line = [&](std::optional<std::size_t> volume, const std::string& hex, std::uint64_t bytes) {
    JsonObject json;
    json.string("event", "digest").string("output", name).string("algorithm", digest_name(kind()));
    if (volume) json.integer("volume", *volume);
    return json.string("digest", hex).integer("bytes", bytes).line();
  };
  std::string json;
  if (!ended_.empty()) {
    for (std::size_t i = 0; i <= ended_.size(); ++i) {
      bool current = i == ended_.size();
      json += line(i + 1, current ? volume_hex() : ended_[i].first,
                   current ? volume_bytes_ : ended_[i].second);
    }
  }
  return json + line(std::nullopt, total_.hex(), total_bytes_);
}

std::int64_t volume_start(Tape& tape) {
  if (!tape.keeps_records()) return -1;
  try {
    return tape.status().file_number;
  } catch (const Error&) {
    return -1;  // a device that cannot say: read it from where it opens
  }
}

std::string verify_volume(const std::string& name, const std::string& label, std::int64_t start,
                          std::size_t record_size, const OutputDigest& written,
                          const OpenOptions& how) {
  Digest read_back(written.kind());
  std::uint64_t bytes = 0;
  try {
    std::unique_ptr<Tape> tape = open_tape(name, O_RDONLY, how);
    if (start >= 0) {
      tape->op(MtOp::rewind, 1);
      if (start > 0) tape->op(MtOp::fsf, static_cast<int>(start));
    }
    // A record is at most one block; a stream is read in blocks.
    std::vector<std::byte> record(record_size);
    for (;;) {
      // A file's reads do not block, so a stop may interrupt none of them.
      if (stop_requested()) throw Interrupted("read back " + name);
      std::size_t n = tape->read(record);
      if (n == 0) break;
      read_back.update(std::span<const std::byte>(record.data(), n));
      bytes += n;
    }
    tape->close();
  } catch (const Interrupted&) {
    throw;  // stopped, not failed: the caller says by what
  } catch (const Error& e) {
    return "buffer (writer): verify of " + label + " failed: " + e.what() + "\n";
  }
  std::string hex = read_back.hex();
  if (hex == written.volume_hex() && bytes == written.volume_bytes()) return "";
  return "buffer (writer): verify of " + label +
         " failed: it differs from what was written: read back " + std::to_string(bytes) +
         " bytes, " + digest_name(written.kind()) + " " + hex + "; wrote " +
         std::to_string(written.volume_bytes()) + " bytes, " + written.volume_hex() + "\n";
}

TeeOutputs::TeeOutputs(const std::vector<std::string>& names, std::optional<DigestKind> hash,
                       const Opener& open) {
  tees_.reserve(names.size());
  for (const std::string& name : names) {
    TeeOutput tee;
    tee.tape = open(name);
    tee.start = volume_start(*tee.tape);
    if (hash) tee.digest.emplace(*hash, false);
    tees_.push_back(std::move(tee));
  }
}

bool TeeOutputs::any_working() const noexcept {
  for (const TeeOutput& tee : tees_)
    if (tee.failure.empty()) return true;
  return false;
}

std::vector<TeeOutputs::Failure> TeeOutputs::write(std::span<const std::byte> block,
                                                   const std::function<void()>& on_interrupted) {
  std::vector<Failure> failures;
  for (TeeOutput& tee : tees_) {
    if (!tee.failure.empty()) continue;
    std::size_t done = 0;
    auto count = [&](std::size_t bytes) {
      if (tee.digest) tee.digest->add(block.subspan(done, bytes));
      tee.written += bytes;
      done += bytes;
    };
    for (;;) {
      try {
        tee.tape->write(block.subspan(done));
        count(block.size() - done);
        break;
      } catch (const Interrupted& e) {
        count(e.bytes_done());
        on_interrupted();
      } catch (const Error& e) {
        count(e.bytes_done());
        tee.failure = std::strerror(e.errnum());
        failures.push_back({&tee, tee.failure});
        break;
      }
    }
  }
  return failures;
}

std::string TeeOutputs::close_all() {
  std::string text;
  for (TeeOutput& tee : tees_) {
    if (tee.closed) continue;
    tee.closed = true;  // a failed close is not tried again
    try {
      tee.tape->close();
    } catch (const LostWrites& e) {
      tee.written -= std::min<std::uint64_t>(tee.written, e.bytes_lost());
      tee.failure = std::strerror(e.cause());
      tee.digest.reset();  // it no longer describes what is there
      text += "buffer (writer): close of " + tee.tape->name() + " failed: " + e.what() + "\n";
    } catch (const Error& e) {
      if (tee.failure.empty()) tee.failure = std::strerror(e.errnum());
      text += "buffer (writer): close of " + tee.tape->name() + " failed: " + e.what() + "\n";
    }
  }
  return text;
}

std::string TeeOutputs::reached_text() const {
  std::string text;
  for (const TeeOutput& tee : tees_)
    text += ", " + std::to_string(tee.written) + " bytes reached " + tee.tape->name();
  return text;
}

std::string TeeOutputs::digest_summary(bool json) const {
  std::string text;
  for (const TeeOutput& tee : tees_)
    if (tee.failure.empty() && tee.digest)
      text += json ? tee.digest->summary_json(tee.tape->name()) : tee.digest->summary(tee.tape->name());
  return text;
}

std::string TeeOutputs::verify_all(std::size_t record_size, const OpenOptions& how) const {
  std::string text;
  for (const TeeOutput& tee : tees_)
    if (tee.failure.empty() && tee.digest)
      text += verify_volume(tee.tape->name(), tee.tape->name(), tee.start, record_size,
                            *tee.digest, how);
  return text;
}

}  // namespace tk::buffer
