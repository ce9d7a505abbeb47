// Completing a write session its writer never closed: the cut, the filemark
// and where the drive is left.
#include "../../lib/tape/session_recovery.hpp"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "../../lib/tape/simh_format.hpp"

namespace {

class SessionRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/session-recovery-unit-XXXXXX";
    fd_ = ::mkstemp(path);
    ASSERT_GE(fd_, 0);
    path_ = path;
  }
  void TearDown() override {
    ::close(fd_);
    ::unlink(path_.c_str());
  }

  void append_word(std::uint32_t word) {
    std::byte b[4];
    tk::simh::store_le32(b, word);
    image_.insert(image_.end(), b, b + 4);
  }
  void append_record(std::uint32_t length) {
    append_word(length);
    image_.insert(image_.end(), tk::simh::padded(length), std::byte{0x42});
    append_word(length);
  }
  std::uint64_t write_image() {
    EXPECT_EQ(::pwrite(fd_, image_.data(), image_.size(), 0), static_cast<ssize_t>(image_.size()));
    return image_.size();
  }
  std::uint64_t size_now() {
    struct stat st {};
    ::fstat(fd_, &st);
    return static_cast<std::uint64_t>(st.st_size);
  }

  int fd_ = -1;
  std::string path_;
  std::vector<std::byte> image_;
};

TEST_F(SessionRecoveryTest, ACutRecordIsRemovedAndTheFileClosedWithAFilemark) {
  append_record(100);                  // file 0, before the session
  append_word(tk::simh::mark_word);    // 112
  const std::uint64_t start = image_.size();
  append_record(10);                   // written in the session
  append_word(5000);                   // a record cut short: header and a little data
  image_.insert(image_.end(), 20, std::byte{1});
  const std::uint64_t cut_at = start + 18;
  const std::uint64_t size = write_image();

  tk::DriveState state;
  state.offset = start;
  state.file = 1;
  state.block = 0;
  state.lba = 2;
  state.writing = true;
  tk::complete_interrupted_session(fd_, size, state, path_);

  EXPECT_EQ(size_now(), cut_at + 4);
  EXPECT_FALSE(state.writing);
  EXPECT_EQ(state.offset, cut_at + 4);
  EXPECT_EQ(state.file, 2);
  EXPECT_EQ(state.block, 0);
  EXPECT_EQ(state.lba, 4);
  EXPECT_EQ(state.eof, tk::EofState::filemark);
  ASSERT_TRUE(state.recovered);
  EXPECT_EQ(state.recovery.cut_at, cut_at);
  EXPECT_EQ(state.recovery.cut_bytes, size - cut_at);
  EXPECT_TRUE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.recovery.file, 2);
}

TEST_F(SessionRecoveryTest, ASessionThatEndedOnAFilemarkGetsNoSecondOne) {
  append_record(10);
  append_word(tk::simh::mark_word);
  const std::uint64_t size = write_image();
  tk::DriveState state;
  state.writing = true;
  tk::complete_interrupted_session(fd_, size, state, path_);
  EXPECT_EQ(size_now(), size);
  EXPECT_EQ(state.offset, size);
  EXPECT_EQ(state.file, 1);
  EXPECT_FALSE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.recovery.cut_bytes, 0u);
}

TEST_F(SessionRecoveryTest, AWalkFromInsideAnUnclosedFileStillClosesIt) {
  append_record(10);
  append_record(10);
  const std::uint64_t size = write_image();
  tk::DriveState state;
  state.offset = 18;  // saved after the first record, in mid-append
  state.block = 1;
  state.lba = 1;
  state.writing = true;
  tk::complete_interrupted_session(fd_, size, state, path_);
  EXPECT_EQ(size_now(), size + 4);
  EXPECT_TRUE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.file, 1);
  EXPECT_EQ(state.lba, 3);
}

TEST_F(SessionRecoveryTest, AnImageThatLostEverythingIsABlankTapeAtBOT) {
  append_word(70000);  // the first record's header, nothing after it
  const std::uint64_t size = write_image();
  tk::DriveState state;
  state.writing = true;
  tk::complete_interrupted_session(fd_, size, state, path_);
  EXPECT_EQ(size_now(), 0u);
  EXPECT_EQ(state.offset, 0u);
  EXPECT_EQ(state.file, 0);
  EXPECT_EQ(state.eof, tk::EofState::none);
  EXPECT_FALSE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.recovery.cut_bytes, 4u);
}

}  // namespace
