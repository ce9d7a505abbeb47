// tk::Digest: one interface over the message digests buffer computes inline
// (--hash): SHA-256 and MD5 through OpenSSL's EVP, which picks the CPU's
// SHA extensions where there are any, and XXH128 through libxxhash, for
// catching a damaged tape at memory speed where no adversary is involved.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tk {

enum class DigestKind { sha256, md5, xxh128 };

// "sha256", "md5", "xxh128" (as the --hash option spells them); nullopt for
// anything else.
std::optional<DigestKind> digest_kind_from_name(std::string_view name);
// The lower-case name, as digest_kind_from_name reads it.
const char* digest_name(DigestKind kind) noexcept;
// Whether one core hashes slower than a pipe moves data (SHA-256 and MD5
// do, XXH128 does not: bench/README.md, "Measurements behind the code"):
// such a digest is worth a thread of its own beside the copies, a fast one
// costs more in wake-ups than it takes.
bool digest_slower_than_copies(DigestKind kind) noexcept;

class Digest {
 public:
  explicit Digest(DigestKind kind);
  ~Digest();
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  DigestKind kind() const noexcept { return kind_; }
  void update(std::span<const std::byte> data);
  // The digest of everything updated since construction or the last
  // reset(), in lower-case hex as sha256sum, md5sum and `xxhsum -H2` print
  // it; the state is left as it was, so more may follow.
  std::string hex() const;
  // Starts again from nothing.
  void reset();

 private:
  struct State;
  DigestKind kind_;
  std::unique_ptr<State> state_;
};

}  // namespace tk
