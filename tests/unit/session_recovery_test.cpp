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
  // The marker a writer saves before its session's first object: the
  // image written so far is what it vouches for.
  tk::DriveState begin(std::int64_t file, std::int64_t block, std::int64_t lba,
                       std::uint32_t first_word, std::size_t first_data = 8) {
    write_image();
    tk::DriveState state;
    state.offset = image_.size();
    state.file = file;
    state.block = block;
    state.lba = lba;
    std::vector<std::byte> data(first_data, std::byte{0x42});
    tk::begin_write_session(fd_, inode(), {true, first_word, data}, state, path_);
    return state;
  }
  std::uint64_t inode() {
    struct stat st {};
    ::fstat(fd_, &st);
    return static_cast<std::uint64_t>(st.st_ino);
  }
  tk::SessionFindings examine(const tk::DriveState& state) {
    return tk::examine_interrupted_session(fd_, size_now(), inode(), state);
  }
  void complete(tk::DriveState& state) {
    tk::SessionFindings found = examine(state);
    ASSERT_TRUE(found.ours) << found.changed;
    tk::complete_interrupted_session(fd_, found, state, path_);
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
  tk::DriveState state = begin(1, 0, 2, 10);
  append_record(10);                   // written in the session
  append_word(5000);                   // a record cut short: header and a little data
  image_.insert(image_.end(), 20, std::byte{1});
  const std::uint64_t cut_at = start + 18;
  const std::uint64_t size = write_image();

  complete(state);

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
  tk::DriveState state = begin(0, 0, 0, 10);
  append_record(10);
  append_word(tk::simh::mark_word);
  const std::uint64_t size = write_image();
  complete(state);
  EXPECT_EQ(size_now(), size);
  EXPECT_EQ(state.offset, size);
  EXPECT_EQ(state.file, 1);
  EXPECT_FALSE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.recovery.cut_bytes, 0u);
}

TEST_F(SessionRecoveryTest, ASessionBegunInsideAnUnclosedFileStillClosesIt) {
  append_record(10);
  tk::DriveState state = begin(0, 1, 1, 10);  // appending after the file's first record
  append_record(10);
  const std::uint64_t size = write_image();
  complete(state);
  EXPECT_EQ(size_now(), size + 4);
  EXPECT_TRUE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.file, 1);
  EXPECT_EQ(state.lba, 3);
}

TEST_F(SessionRecoveryTest, AnImageThatLostEverythingIsABlankTapeAtBOT) {
  tk::DriveState state = begin(0, 0, 0, 70000);
  append_word(70000);  // the first record's header, nothing after it
  write_image();
  complete(state);
  EXPECT_EQ(size_now(), 0u);
  EXPECT_EQ(state.offset, 0u);
  EXPECT_EQ(state.file, 0);
  EXPECT_EQ(state.eof, tk::EofState::none);
  EXPECT_FALSE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.recovery.cut_bytes, 4u);
}

TEST_F(SessionRecoveryTest, ADriveRewoundSinceTheSessionStaysAtBOT) {
  append_record(10);
  append_word(tk::simh::mark_word);
  tk::DriveState state = begin(1, 0, 2, 10);
  append_record(10);
  write_image();
  state.rewind();  // a reader's rewind, saved with the session still pending
  complete(state);
  EXPECT_TRUE(state.recovery.wrote_filemark);
  EXPECT_EQ(state.offset, 0u);
  EXPECT_EQ(state.file, 0);
  EXPECT_EQ(state.lba, 0);
}

// The image restored or copied over after the crash: what lies before the
// session's start is not what the session wrote after.
TEST_F(SessionRecoveryTest, ChangedBytesBeforeTheStartAreNotTheSessionsImage) {
  append_record(100);
  append_word(tk::simh::mark_word);
  tk::DriveState state = begin(1, 0, 2, 10);
  append_record(10);
  image_[10] = std::byte{0x43};  // inside file 0's data
  write_image();
  append_word(5000);  // and it ends as a writer's cut record would
  write_image();
  tk::SessionFindings found = examine(state);
  EXPECT_FALSE(found.ours);
  EXPECT_NE(found.changed.find("bytes before"), std::string::npos) << found.changed;
}

TEST_F(SessionRecoveryTest, AnotherFirstObjectAtTheStartIsNotTheSessionsImage) {
  append_record(100);
  append_word(tk::simh::mark_word);
  tk::DriveState state = begin(1, 0, 2, 10);
  append_record(12);  // the session recorded a 10-byte record first
  write_image();
  EXPECT_FALSE(examine(state).ours);
}

TEST_F(SessionRecoveryTest, AFirstRecordWithOtherDataIsNotTheSessionsImage) {
  tk::DriveState state = begin(0, 0, 0, 10);
  append_word(10);
  image_.insert(image_.end(), 10, std::byte{0x41});  // 0x42 was recorded
  append_word(10);
  write_image();
  EXPECT_FALSE(examine(state).ours);
}

// Only an object cut short by the end is a writer's unfinished write;
// garbage with data after it is something else, and nothing is cut.
TEST_F(SessionRecoveryTest, ABrokenChainBeforeTheEndIsNotTheSessionsImage) {
  tk::DriveState state = begin(0, 0, 0, 10);
  append_record(10);
  append_word(0x7F000001);  // a class no writer uses
  image_.insert(image_.end(), 100, std::byte{7});
  write_image();
  tk::SessionFindings found = examine(state);
  EXPECT_FALSE(found.ours);
  EXPECT_NE(found.changed.find("no longer chain"), std::string::npos) << found.changed;
}

TEST_F(SessionRecoveryTest, AnImageShorterThanTheStartIsNotTheSessionsImage) {
  append_record(100);
  tk::DriveState state = begin(0, 1, 1, 10);
  image_.resize(50);
  ASSERT_EQ(::ftruncate(fd_, 50), 0);
  EXPECT_FALSE(examine(state).ours);
}

TEST_F(SessionRecoveryTest, AMarkerWithoutItsSessionRecordIsNeverTrusted) {
  append_record(100);
  append_word(5000);
  write_image();
  tk::DriveState state;  // a state from before session records
  state.writing = true;
  state.image_inode = inode();
  EXPECT_FALSE(examine(state).ours);
}

TEST_F(SessionRecoveryTest, AnotherInodeIsNotTheSessionsImage) {
  tk::DriveState state = begin(0, 0, 0, 10);
  append_record(10);
  write_image();
  state.image_inode = inode() + 1;
  EXPECT_FALSE(examine(state).ours);
}

}  // namespace
