// --streams auto's arithmetic: ceil(rate x round trip / OpenSSH's 2 MiB
// channel window), from 1 to 8.
#include "../../lib/tape/remote_tape.hpp"

#include <gtest/gtest.h>

namespace {

using std::chrono::milliseconds;
using std::chrono::microseconds;
constexpr std::uint64_t mib = std::uint64_t{1} << 20;

TEST(AutoStreams, OneStreamWhereOneWindowCoversTheRoundTrip) {
  EXPECT_EQ(tk::auto_streams(microseconds(200), 0), 1);
  EXPECT_EQ(tk::auto_streams(milliseconds(0), 0), 1);
  // 256 MiB/s x 8 ms = 2.05 MiB: just over one window.
  EXPECT_EQ(tk::auto_streams(milliseconds(8), 0), 2);
}

TEST(AutoStreams, TheDefaultRateAcrossFiftyMillisecondsTakesSeven) {
  // 256 MiB/s x 50 ms = 12.8 MiB = 6.4 windows.
  EXPECT_EQ(tk::auto_streams(milliseconds(50), 0), 7);
}

TEST(AutoStreams, ARateGivenIsAimedAt) {
  // 112 MiB/s (a 1 Gbit/s link) x 50 ms = 5.6 MiB: three windows.
  EXPECT_EQ(tk::auto_streams(milliseconds(50), 112 * mib), 3);
  EXPECT_EQ(tk::auto_streams(milliseconds(50), 40 * mib), 1);
}

TEST(AutoStreams, NeverMoreThanEight) {
  EXPECT_EQ(tk::auto_streams(milliseconds(300), 0), 8);
  EXPECT_EQ(tk::auto_streams(std::chrono::seconds(10), 1024 * mib), 8);
}

}  // namespace
