// json_string and printable_text: what passes as it is, and how every other
// byte is written.
#include "../../lib/escape.hpp"

#include <gtest/gtest.h>
#include <string>

namespace {

using namespace std::string_literals;

TEST(JsonString, PrintableAsciiAndWellFormedUtf8PassAsTheyAre) {
  EXPECT_EQ(tk::json_string("IBM ULT3580"), "\"IBM ULT3580\"");
  EXPECT_EQ(tk::json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xbc"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xbc\"");
}

TEST(JsonString, QuotesBackslashesAndControlsAreEscaped) {
  EXPECT_EQ(tk::json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(tk::json_string("\x1b[2J\r\n\t\x7f"), "\"\\u001b[2J\\u000d\\u000a\\u0009\\u007f\"");
  EXPECT_EQ(tk::json_string("a\0b"s), "\"a\\u0000b\"");
}

TEST(JsonString, EachByteThatIsNoUtf8IsItsValueAsU00XX) {
  // A lone 0xff, a stray continuation byte, an overlong '/', a surrogate and
  // a sequence cut short by the end.
  EXPECT_EQ(tk::json_string("\xff"), "\"\\u00ff\"");
  EXPECT_EQ(tk::json_string("\x80"), "\"\\u0080\"");
  EXPECT_EQ(tk::json_string("\xc0\xaf"), "\"\\u00c0\\u00af\"");
  EXPECT_EQ(tk::json_string("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");
  EXPECT_EQ(tk::json_string("x\xe2\x82"), "\"x\\u00e2\\u0082\"");
}

TEST(PrintableText, PrintableAsciiAndUtf8PassAsTheyAre) {
  EXPECT_EQ(tk::printable_text("No space left on device"), "No space left on device");
  EXPECT_EQ(tk::printable_text("caf\xc3\xa9 \xc2\xa0\xe2\x82\xac"), "caf\xc3\xa9 \xc2\xa0\xe2\x82\xac");
}

TEST(PrintableText, ControlsDelAndTheBackslashAreVisibleEscapes) {
  EXPECT_EQ(tk::printable_text("\x1b]0;owned\a"), "\\033]0;owned\\007");
  EXPECT_EQ(tk::printable_text("one\r\ntwo\tthree\x7f"), "one\\015\\012two\\011three\\177");
  EXPECT_EQ(tk::printable_text("a\\033b"), "a\\\\033b");
  EXPECT_EQ(tk::printable_text("\0"s), "\\000");
}

TEST(PrintableText, C1ControlsAndBytesThatAreNoUtf8AreEscapedByteByByte) {
  // CSI as a raw byte and as UTF-8 U+009B; U+00A0 just past the C1 range stays.
  EXPECT_EQ(tk::printable_text("\x9b" "2J"), "\\2332J");
  EXPECT_EQ(tk::printable_text("\xc2\x9b" "2J"), "\\302\\2332J");
  EXPECT_EQ(tk::printable_text("\xff\xc0\xaf"), "\\377\\300\\257");
}

}  // namespace
