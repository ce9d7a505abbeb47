// Text that came from outside the program (a drive's INQUIRY strings, a
// server's message line, a file name) made safe to print: as a JSON string,
// or as a line of text that nothing in it can end or turn into a terminal
// control sequence.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tk {

// The length of the well-formed UTF-8 sequence at text[at] (2 to 4), or 0
// when the byte there starts none: ASCII, a stray continuation byte, an
// overlong form, a surrogate, beyond U+10FFFF, or a sequence cut short.
std::size_t utf8_sequence(std::string_view text, std::size_t at) noexcept;

// text as a quoted JSON string. Quotes and backslashes are escaped;
// control characters, DEL and each byte that is no part of well-formed
// UTF-8 become \u00XX with the byte's value (lower-case hex), so that the
// string is valid JSON whatever the bytes and a reader that knows the rule
// can give each byte back. Well-formed UTF-8 passes as it is.
std::string json_string(std::string_view text);

// text with every byte that could end the line, move the cursor or start a
// terminal sequence written visibly as \ooo (three octal digits, as C and
// printf(1) write them: ESC is \033, LF \012): C0 controls (TAB, CR and LF
// included), DEL, C1 controls (a raw byte or UTF-8 U+0080-U+009F) and bytes
// that are no part of well-formed UTF-8. The backslash becomes \\, so the
// escapes cannot be forged. Printable ASCII and other UTF-8 pass as they are.
std::string printable_text(std::string_view text);

}  // namespace tk
