// Message digests over OpenSSL's EVP and libxxhash.
#include "digest.hpp"

#include <cerrno>
#include <openssl/evp.h>
#include <xxhash.h>

#include "error.hpp"

namespace tk {

namespace {

std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    text[2 * i] = digits[bytes[i] >> 4];
    text[2 * i + 1] = digits[bytes[i] & 0xf];
  }
  return text;
}

const EVP_MD* evp_of(DigestKind kind) {
  return kind == DigestKind::sha256 ? EVP_sha256() : EVP_md5();
}

}  // namespace

// One of the two is in use, by kind. Both libraries keep their state on the
// heap, so a Digest moves cheaply.
struct Digest::State {
  EVP_MD_CTX* evp = nullptr;
  XXH3_state_t* xxh = nullptr;
  ~State() {
    EVP_MD_CTX_free(evp);
    XXH3_freeState(xxh);
  }
};

std::optional<DigestKind> digest_kind_from_name(std::string_view name) {
  if (name == "sha256") return DigestKind::sha256;
  if (name == "md5") return DigestKind::md5;
  if (name == "xxh128") return DigestKind::xxh128;
  return std::nullopt;
}

const char* digest_name(DigestKind kind) noexcept {
  switch (kind) {
    case DigestKind::sha256: return "sha256";
    case DigestKind::md5: return "md5";
    case DigestKind::xxh128: return "xxh128";
  }
  return "?";
}

bool digest_slower_than_copies(DigestKind kind) noexcept { return kind != DigestKind::xxh128; }

Digest::Digest(DigestKind kind) : kind_(kind), state_(std::make_unique<State>()) {
  if (kind == DigestKind::xxh128) {
    state_->xxh = XXH3_createState();
    if (state_->xxh == nullptr) throw Error(ENOMEM, "create xxh128 state");
  } else {
    state_->evp = EVP_MD_CTX_new();
    if (state_->evp == nullptr)
      throw Error(ENOMEM, std::string("create ") + digest_name(kind) + " state");
  }
  reset();
}

Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::reset() {
  bool ok = kind_ == DigestKind::xxh128
                ? XXH3_128bits_reset(state_->xxh) == XXH_OK
                : EVP_DigestInit_ex(state_->evp, evp_of(kind_), nullptr) == 1;
  if (!ok) throw Error(EINVAL, std::string("start ") + digest_name(kind_) + " digest");
}

void Digest::update(std::span<const std::byte> data) {
  if (data.empty()) return;
  bool ok = kind_ == DigestKind::xxh128
                ? XXH3_128bits_update(state_->xxh, data.data(), data.size()) == XXH_OK
                : EVP_DigestUpdate(state_->evp, data.data(), data.size()) == 1;
  if (!ok) throw Error(EINVAL, std::string("update ") + digest_name(kind_) + " digest");
}

std::string Digest::hex() const {
  if (kind_ == DigestKind::xxh128) {
    // The canonical (big-endian) form is what xxhsum prints.
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state_->xxh));
    return to_hex(canonical.digest, sizeof canonical.digest);
  }
  // Finishing an EVP context ends it: finish a copy, so updates may go on.
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  unsigned char bytes[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  bool ok = copy != nullptr && EVP_MD_CTX_copy_ex(copy, state_->evp) == 1 &&
            EVP_DigestFinal_ex(copy, bytes, &size) == 1;
  EVP_MD_CTX_free(copy);
  if (!ok) throw Error(EINVAL, std::string("finish ") + digest_name(kind_) + " digest");
  return to_hex(bytes, size);
}

}  // namespace tk
