// JSON strings and printable text from bytes of any origin.
#include "escape.hpp"

#include <cstdio>

namespace tk {

std::size_t utf8_sequence(std::string_view text, std::size_t at) noexcept {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  std::size_t length;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  return length;
}

std::string json_string(std::string_view text) {
  std::string quoted = "\"";
  for (std::size_t at = 0; at < text.size();) {
    auto c = static_cast<unsigned char>(text[at]);
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += text[at++];
    } else if (c >= 0x20 && c < 0x7f) {
      quoted += text[at++];
    } else if (std::size_t length = c >= 0x80 ? utf8_sequence(text, at) : 0; length != 0) {
      quoted.append(text, at, length);
      at += length;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      quoted += escaped;
      ++at;
    }
  }
  return quoted + "\"";
}

std::string printable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char c) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\%03o", static_cast<unsigned>(c));
    out += escaped;
  };
  for (std::size_t at = 0; at < text.size();) {
    auto c = static_cast<unsigned char>(text[at]);
    if (c == '\\') {
      out += "\\\\";
      ++at;
    } else if (c >= 0x20 && c < 0x7f) {
      out += text[at++];
    } else if (std::size_t length = c >= 0x80 ? utf8_sequence(text, at) : 0;
               length != 0 && !(c == 0xc2 && static_cast<unsigned char>(text[at + 1]) < 0xa0)) {
      // U+0080-U+009F (0xc2 0x80-0x9f) are the C1 controls, CSI among them.
      out.append(text, at, length);
      at += length;
    } else if (length != 0) {
      for (std::size_t i = 0; i < length; ++i) escape(static_cast<unsigned char>(text[at + i]));
      at += length;
    } else {
      escape(c);
      ++at;
    }
  }
  return out;
}

}  // namespace tk
