// tk::Digest against the published test vectors, and the promise that hex()
// may be asked mid-stream without changing what follows.
#include "../../lib/digest.hpp"

#include <gtest/gtest.h>
#include <string>
#include <string_view>

namespace {

std::span<const std::byte> bytes_of(std::string_view text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

std::string digest_of(tk::DigestKind kind, std::string_view text) {
  tk::Digest digest(kind);
  digest.update(bytes_of(text));
  return digest.hex();
}

TEST(Digest, Sha256OfAbcIsTheFipsVector) {
  EXPECT_EQ(digest_of(tk::DigestKind::sha256, "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Digest, Md5OfAbcIsTheRfc1321Vector) {
  EXPECT_EQ(digest_of(tk::DigestKind::md5, "abc"), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(Digest, Xxh128OfNothingIsXxhsumsValue) {
  // `xxhsum -H2 </dev/null`
  EXPECT_EQ(digest_of(tk::DigestKind::xxh128, ""), "99aa06d3014798d86001c324468d497f");
}

TEST(Digest, HexMidStreamLeavesTheStateAlone) {
  for (auto kind : {tk::DigestKind::sha256, tk::DigestKind::md5, tk::DigestKind::xxh128}) {
    tk::Digest digest(kind);
    digest.update(bytes_of("a"));
    (void)digest.hex();
    digest.update(bytes_of("bc"));
    EXPECT_EQ(digest.hex(), digest_of(kind, "abc")) << tk::digest_name(kind);
  }
}

TEST(Digest, ResetStartsFromNothing) {
  tk::Digest digest(tk::DigestKind::sha256);
  digest.update(bytes_of("xyz"));
  digest.reset();
  digest.update(bytes_of("abc"));
  EXPECT_EQ(digest.hex(), digest_of(tk::DigestKind::sha256, "abc"));
}

TEST(Digest, NamesRoundTripAndUnknownNamesAreRefused) {
  for (auto kind : {tk::DigestKind::sha256, tk::DigestKind::md5, tk::DigestKind::xxh128})
    EXPECT_EQ(tk::digest_kind_from_name(tk::digest_name(kind)), kind);
  EXPECT_FALSE(tk::digest_kind_from_name("sha1").has_value());
  EXPECT_FALSE(tk::digest_kind_from_name("SHA256").has_value());
}

}  // namespace
