// JsonObject and JsonArray: the bytes each value becomes; FlatJson: what it
// reads back, and that it refuses every malformed line.
#include "../../lib/json.hpp"

#include <gtest/gtest.h>
#include <cstdint>
#include <string>

namespace {

using namespace std::string_literals;

TEST(JsonWriter, FieldsAreWrittenInTheOrderAdded) {
  tk::JsonObject o;
  o.string("b", "x").integer("a", 1).boolean("c", true).boolean("d", false).null("e");
  EXPECT_EQ(o.text(), R"({"b":"x","a":1,"c":true,"d":false,"e":null})");
  EXPECT_EQ(o.line(), o.text() + "\n");
}

TEST(JsonWriter, EmptyObjectAndArray) {
  EXPECT_EQ(tk::JsonObject().text(), "{}");
  EXPECT_EQ(tk::JsonObject().line(), "{}\n");
  EXPECT_EQ(tk::JsonArray().text(), "[]");
}

TEST(JsonWriter, StringsEscapeControlsQuotesAndBytesThatAreNoUtf8) {
  tk::JsonObject o;
  o.string("text", "a\"b\\c\n\x1b\x7f\xff" "caf\xc3\xa9 \xc0\xaf" "\0"s);
  EXPECT_EQ(o.text(),
            "{\"text\":\"a\\\"b\\\\c\\u000a\\u001b\\u007f\\u00ffcaf\xc3\xa9 \\u00c0\\u00af\\u0000\"}");
  tk::JsonArray a;
  a.string("\t").string("\xe2\x82");
  EXPECT_EQ(a.text(), R"(["\u0009","\u00e2\u0082"])");
}

TEST(JsonWriter, KeysAreJsonStringsToo) {
  tk::JsonObject o;
  o.integer("a\"b", 1);
  EXPECT_EQ(o.text(), R"({"a\"b":1})");
}

TEST(JsonWriter, IntegersAreTheirDecimalDigits) {
  tk::JsonObject o;
  o.integer("u64", UINT64_MAX).integer("i64", INT64_MIN).integer("int", -1).integer("u8",
                                                                                   std::uint8_t{200});
  EXPECT_EQ(o.text(),
            R"({"u64":18446744073709551615,"i64":-9223372036854775808,"int":-1,"u8":200})");
  tk::JsonArray a;
  a.integer(0).integer(7U).integer(std::uint16_t{65535});
  EXPECT_EQ(a.text(), "[0,7,65535]");
}

TEST(JsonWriter, FixedNumbersHaveExactlyTheDecimalsAsked) {
  EXPECT_EQ(tk::json_fixed(1.23456, 3), "1.235");
  EXPECT_EQ(tk::json_fixed(2.5, 0), "2");
  EXPECT_EQ(tk::json_fixed(1e6, 1), "1000000.0");
  EXPECT_EQ(tk::json_fixed(0.00004, 4), "0.0000");
  tk::JsonObject o;
  o.fixed("t", 0.1, 3).fixed("rate", 123456.7, 0).fixed("share", 0.25, 4);
  EXPECT_EQ(o.text(), R"({"t":0.100,"rate":123457,"share":0.2500})");
}

TEST(JsonWriter, NestedObjectsAndArraysGoInAsTheyAre) {
  tk::JsonArray flags;
  flags.raw(tk::JsonObject().integer("flag", 20).string("name", "Clean now").text());
  flags.raw(tk::JsonObject().text());
  tk::JsonObject inner;
  inner.raw("before", flags.text()).raw("during", tk::JsonArray().text());
  tk::JsonObject o;
  o.string("event", "summary").raw("tapealert", inner.text()).raw("status", "null");
  EXPECT_EQ(o.text(),
            R"({"event":"summary","tapealert":{"before":[{"flag":20,"name":"Clean now"},{}],"during":[]},"status":null})");
}

std::optional<tk::FlatJson> read(const std::string& line, std::string& why) {
  return tk::FlatJson::parse(line, why);
}

TEST(FlatJson, ReadsStringsNumbersAndBooleans) {
  std::string why = "left over";
  auto o = read(R"( {"t":0.100, "fill":3,"event":"signal","signal":"SIGINT","ok":true,"no":false} )", why);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(why, "");
  EXPECT_EQ(o->number("t"), 0.1);
  EXPECT_EQ(o->number("fill"), 3);
  EXPECT_EQ(o->number("ok"), 1);
  EXPECT_EQ(o->number("no"), 0);
  EXPECT_EQ(o->string("event"), "signal");
  EXPECT_EQ(o->string("signal"), "SIGINT");
  EXPECT_EQ(o->number("event"), std::nullopt);
  EXPECT_EQ(o->string("fill"), std::nullopt);
  EXPECT_EQ(o->number("missing"), std::nullopt);
  ASSERT_TRUE(read("{}", why).has_value());
  EXPECT_EQ(read("{}", why)->string(""), std::nullopt);
}

TEST(FlatJson, GivesBackWhatTheWriterWrote) {
  const std::string bytes = "in \"x\\y\"\n\t\x1b\xff\xc3\xa9\0end"s;
  std::string why;
  auto o = read(tk::JsonObject().string("input", bytes).fixed("t", 12.5, 3).text(), why);
  ASSERT_TRUE(o.has_value()) << why;
  EXPECT_EQ(o->string("input"), bytes);
  EXPECT_EQ(o->number("t"), 12.5);
}

TEST(FlatJson, UndoesEveryJsonEscape) {
  std::string why;
  auto o = read(R"({"s":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac"})", why);
  ASSERT_TRUE(o.has_value()) << why;
  EXPECT_EQ(o->string("s"), "\"\\/\b\f\n\r\tA\xe9?");
}

TEST(FlatJson, TheLineFeedIsNoPartOfALine) {
  // getline takes it off; one left over is text after the object.
  std::string why;
  EXPECT_FALSE(read(tk::JsonObject().integer("a", 1).line(), why).has_value());
  EXPECT_EQ(why, "text after the object");
  EXPECT_TRUE(read("{\"a\":1}\r", why).has_value());
}

TEST(FlatJson, ALaterKeyReplacesAnEarlierOne) {
  std::string why;
  auto o = read(R"({"a":1,"a":2})", why);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->number("a"), 2);
}

// One row a malformed line: what it is, and the reason the reader gives.
struct Malformed {
  std::string line;
  std::string why;
};

TEST(FlatJson, RefusesMalformedLinesAndSaysWhy) {
  const Malformed rows[] = {
      {"", "expected '{'"},
      {"   ", "expected '{'"},
      {"[1,2]", "expected '{'"},
      {"{", "expected '\"'"},
      {"{\"a\"", "expected ':'"},
      {"{\"a\":", "expected a value"},
      {"{\"a\":1", "expected '}'"},
      {"{\"a\":1,}", "expected '\"'"},
      {"{\"a\" 1}", "expected ':'"},
      {"{a:1}", "expected '\"'"},
      {"{\"a\":1}x", "text after the object"},
      {"{\"a\":1}{\"b\":2}", "text after the object"},
      {"{\"a\":\"x", "unterminated string"},
      {"{\"a\":\"x\\", "unterminated string"},
      {"{\"a", "unterminated string"},
      {"{\"a\":\"\\u12\"}", "bad \\u escape"},
      {"{\"a\":\"\\u12zz\"}", "bad \\u escape"},
      {"{\"a\":\"\\u", "bad \\u escape"},
      {"{\"a\":\"\\q\"}", "bad escape"},
      {"{\"a\":nan}", "expected a value"},
      {"{\"a\":inf}", "expected a value"},
      {"{\"a\":1e999}", "expected a value"},
      {"{\"a\":null}", "expected a value"},
      {"{\"a\":tru}", "expected a value"},
      {"{\"a\":{\"b\":1}}", "expected a value"},
      {"{\"a\":[1]}", "expected a value"},
      {"{\"a\":-}", "expected a value"},
      {"{\"a\":1\0}"s, "expected '}'"},
  };
  for (const Malformed& row : rows) {
    std::string why;
    EXPECT_FALSE(read(row.line, why).has_value()) << row.line;
    EXPECT_EQ(why, row.why) << row.line;
  }
}

TEST(FlatJson, RefusesEveryCutOfAGoodLine) {
  const std::string line =
      tk::JsonObject().fixed("t", 1.5, 3).string("event", "signal\x01").boolean("b", true).text();
  std::string why;
  ASSERT_TRUE(read(line, why).has_value());
  for (std::size_t length = 0; length < line.size(); ++length) {
    EXPECT_FALSE(read(line.substr(0, length), why).has_value()) << length;
    EXPECT_FALSE(why.empty()) << length;
  }
}

}  // namespace
