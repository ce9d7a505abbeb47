// parse_size / parse_count: one table row per input.
#include "../../lib/size.hpp"

#include <gtest/gtest.h>

#include "../../lib/error.hpp"

namespace {

TEST(ParseSize, AcceptsUnitsFromBufferAndLarger) {
  struct Row {
    const char* text;
    std::uint64_t value;
  } rows[] = {
      {"0", 0},          {"10240", 10240},    {"4k", 4096},        {"4K", 4096},
      {"4kb", 4096},     {"4KiB", 4096},      {"2b", 1024},        {"2B", 1024},
      {"1m", 1048576},   {"1M", 1048576},     {"3g", 3ULL << 30},  {"2t", 2ULL << 40},
      {"256k", 262144},  {"32768", 32768},
  };
  for (const auto& row : rows) EXPECT_EQ(tk::parse_size(row.text, "-s"), row.value) << row.text;
}

TEST(ParseSize, RejectsWhatBufferSilentlyMisread) {
  for (const char* text : {"", "abc", "1.5k", "10x", "0x100", "-1", "k", "4kk", "1 k", " 4k"})
    EXPECT_THROW(tk::parse_size(text, "-s"), tk::UsageError) << text;
}

TEST(ParseSize, MessageNamesOptionAndValue) {
  try {
    tk::parse_size("12q", "-s");
    FAIL();
  } catch (const tk::UsageError& e) {
    EXPECT_STREQ(e.what(), "invalid -s '12q': unknown unit (use b, k, m, g or t)");
  }
}

TEST(ParseSize, AFractionIsRefusedWithItsValueInBytes) {
  const struct {
    const char* text;
    const char* message;
  } rows[] = {
      {"1.5k", "invalid -s '1.5k': a size is a whole number, without a fraction: 1.5k is 1536"},
      {"2.25M", "invalid -s '2.25M': a size is a whole number, without a fraction: 2.25M is 2359296"},
      {"1.3k", "invalid -s '1.3k': a size is a whole number, without a fraction"},
      {"1.5", "invalid -s '1.5': a size is a whole number, without a fraction"},
      {"1.k", "invalid -s '1.k': a size is a whole number, without a fraction"},
  };
  for (const auto& row : rows) {
    try {
      tk::parse_size(row.text, "-s");
      ADD_FAILURE() << row.text;
    } catch (const tk::UsageError& e) {
      EXPECT_STREQ(e.what(), row.message);
    }
  }
}

TEST(ParseSize, RejectsOverflowAndValuesAboveMax) {
  EXPECT_THROW(tk::parse_size("99999999999999999999", "-m"), tk::UsageError);
  EXPECT_THROW(tk::parse_size("17179869184t", "-m"), tk::UsageError);
  EXPECT_THROW(tk::parse_size("2k", "-s", 1024), tk::UsageError);
  EXPECT_EQ(tk::parse_size("1k", "-s", 1024), 1024u);
}

TEST(ParseCount, AcceptsSignedWholeNumbersInRange) {
  EXPECT_EQ(tk::parse_count("85", "-p", 0, 100), 85);
  EXPECT_EQ(tk::parse_count("+3", "count"), 3);
  EXPECT_EQ(tk::parse_count("-3", "count"), -3);
  EXPECT_THROW(tk::parse_count("101", "-p", 0, 100), tk::UsageError);
  EXPECT_THROW(tk::parse_count("12x", "-p"), tk::UsageError);
  EXPECT_THROW(tk::parse_count("", "-p"), tk::UsageError);
}

}  // namespace
