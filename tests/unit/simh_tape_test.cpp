// The virtual tape's API for mt: vt-create, vt-protect, the validator, and
// the drive state kept beside the image.
#include "../../lib/tape/simh_tape.hpp"

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <span>
#include <sys/stat.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "disk_dir.hpp"

namespace {

class SimhTapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tk_test::make_disk_dir("simh-tape-unit");
    ASSERT_FALSE(dir_.empty());
    image_ = dir_ + "/t.tap";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int errno_of(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const tk::Error& e) {
      return e.errnum();
    }
    return 0;
  }

  void write_records(std::initializer_list<std::size_t> sizes) {
    auto tape = tk::open_simh_tape(image_, O_WRONLY | O_CREAT);
    for (std::size_t n : sizes) {
      std::vector<std::byte> rec(n, std::byte{0x5a});
      tape->write(rec);
    }
    tape->close();
  }

  std::string dir_;
  std::string image_;
};

TEST_F(SimhTapeTest, CreateMakesABlankImageWithItsCapacity) {
  tk::create_virtual_tape(image_, 1 << 20);
  std::ifstream state(tk::simh_state_path(image_));
  std::string text((std::istreambuf_iterator<char>(state)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("capacity 1048576\n"), std::string::npos) << text;
  auto tape = tk::open_simh_tape(image_, O_RDONLY);
  tk::TapeStatus s = tape->status();
  EXPECT_TRUE(s.bot);
  EXPECT_TRUE(s.online);
  EXPECT_EQ(s.drive_type, 0x72);
  EXPECT_EQ(s.block_size, 0u);
}

TEST_F(SimhTapeTest, CreateRefusesAnImageHoldingData) {
  write_records({10});
  EXPECT_EQ(errno_of([&] { tk::create_virtual_tape(image_, 0); }), EEXIST);
}

TEST_F(SimhTapeTest, CreateRefusesAnImageInUse) {
  tk::create_virtual_tape(image_, 0);
  auto tape = tk::open_simh_tape(image_, O_RDONLY);
  EXPECT_EQ(errno_of([&] { tk::create_virtual_tape(image_, 0); }), EBUSY);
}

TEST_F(SimhTapeTest, ProtectionRefusesWritersWithEROFSUntilCleared) {
  write_records({10});
  tk::set_virtual_tape_protect(image_, true);
  EXPECT_EQ(errno_of([&] { tk::open_simh_tape(image_, O_RDWR); }), EROFS);
  EXPECT_TRUE(tk::open_simh_tape(image_, O_RDONLY)->status().write_protected);
  tk::set_virtual_tape_protect(image_, false);
  EXPECT_EQ(errno_of([&] { tk::open_simh_tape(image_, O_RDWR); }), 0);
}

TEST_F(SimhTapeTest, ProtectingAMissingImageFailsWithENOENT) {
  EXPECT_EQ(errno_of([&] { tk::set_virtual_tape_protect(image_, true); }), ENOENT);
}

TEST_F(SimhTapeTest, ValidatorPassesWhatTheTapeWrote) {
  write_records({1, 2, 3, 65535});
  EXPECT_FALSE(tk::validate_simh_image(image_).has_value());
}

TEST_F(SimhTapeTest, ValidatorGivesTheOffsetOfACutRecord) {
  write_records({4});     // 0: record, 12: filemark
  write_records({4, 9});  // 16: record, 28: record of 9
  ASSERT_EQ(::truncate(image_.c_str(), 36), 0);
  auto defect = tk::validate_simh_image(image_);
  ASSERT_TRUE(defect.has_value());
  EXPECT_EQ(defect->offset, 28u);
  EXPECT_NE(defect->what.find("cut short"), std::string::npos) << defect->what;
}

// An unknown file that begins with a record running past its end is no
// image the drive may take: gzip's first bytes read as the length word of a
// record longer than the file.
TEST_F(SimhTapeTest, AnUnknownFileThatIsOneRecordCutShortIsForeign) {
  write_records({400});
  ASSERT_EQ(::truncate(image_.c_str(), 200), 0);
  auto defect = tk::validate_simh_image(image_);
  ASSERT_TRUE(defect.has_value());
  EXPECT_NE(defect->what.find("not a SIMH tape image"), std::string::npos) << defect->what;
  EXPECT_EQ(errno_of([&] { tk::open_simh_tape(image_, O_RDWR); }), EMEDIUMTYPE);
  struct stat st {};
  ASSERT_EQ(::stat(image_.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 200);  // refused, not written
}

TEST_F(SimhTapeTest, AMalformedStateFileFailsTheOpenWithEINVAL) {
  write_records({4});
  std::ofstream(tk::simh_state_path(image_)) << "offset banana\n";
  EXPECT_EQ(errno_of([&] { tk::open_simh_tape(image_, O_RDONLY); }), EINVAL);
}

TEST_F(SimhTapeTest, AStatePastTheEndOfAShrunkImageMeansBOT) {
  write_records({4, 4, 4});
  ASSERT_EQ(::truncate(image_.c_str(), 12), 0);
  auto tape = tk::open_simh_tape(image_, O_RDONLY);
  EXPECT_TRUE(tape->status().bot);
  std::vector<std::byte> buf(16);
  EXPECT_EQ(tape->read(buf), 4u);
}

TEST_F(SimhTapeTest, TheTapeIgnoresLseekAsStDoes) {
  write_records({4});
  auto tape = tk::open_simh_tape(image_, O_RDONLY);
  EXPECT_EQ(tape->seek(100, SEEK_SET), 0);
  EXPECT_EQ(tape->tell(), 2);  // after the record and the closing filemark
}

// Bytes the file system has allocated to the file.
std::uint64_t allocated(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

TEST_F(SimhTapeTest, WhileWritingTheImageHoldsWholeWindowsAndCloseFreesTheBlocksReservedAhead) {
  // Staging needs a file system whose reservations hold (ext4, xfs).
  bool reserves = tk_test::on_staging_file_system(dir_);
  if (reserves) {
    std::string probe = dir_ + "/probe";
    tk::Fd fd = tk::open_file(probe, O_RDWR | O_CREAT, 0666);
    reserves = ::fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
  }
  auto tape = tk::open_simh_tape(image_, O_WRONLY | O_CREAT);
  std::vector<std::byte> rec(10000, std::byte{0x33});
  for (int i = 0; i < 200; ++i) tape->write(rec);
  // What a reader would find if the writer were killed now.
  struct stat st {};
  ASSERT_EQ(::stat(image_.c_str(), &st), 0);
  if (reserves) {
    // Staged into reserved blocks: the first whole 1 MiB window, which ends
    // inside record 105 (a killed writer loses the drive's buffer).
    EXPECT_EQ(st.st_size, 1 << 20);
    // The image is locked while written: check a copy of what is there.
    std::string copy = image_ + ".copy";
    std::filesystem::copy_file(image_, copy);
    auto defect = tk::validate_simh_image(copy);
    ASSERT_TRUE(defect.has_value());
    EXPECT_EQ(defect->offset, 104u * 10008);
    EXPECT_GT(allocated(image_), 200u * 10008);  // reserved through what is staged
  } else {
    // Written as they come: 200 whole records.
    EXPECT_EQ(st.st_size, 200 * 10008);
    std::string copy = image_ + ".copy";
    std::filesystem::copy_file(image_, copy);
    EXPECT_FALSE(tk::validate_simh_image(copy).has_value());
  }
  tape->close();
  ASSERT_EQ(::stat(image_.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 200 * 10008 + 4);
  EXPECT_FALSE(tk::validate_simh_image(image_).has_value());
  EXPECT_LT(allocated(image_), 200u * 10008 + 65536);
}

TEST_F(SimhTapeTest, AWriteInTheMiddleAfterReservingLeavesTheTapeEndingThere) {
  write_records({30000, 30000, 30000, 30000, 30000, 30000});
  auto tape = tk::open_simh_tape(image_, O_RDWR);
  tape->op(tk::MtOp::rewind, 1);
  tape->op(tk::MtOp::fsr, 2);
  std::vector<std::byte> rec(700000, std::byte{0x44});
  tape->write(rec);
  tape->op(tk::MtOp::bsr, 1);
  tape->write(std::span(rec).first(5));
  tape->close();
  struct stat st {};
  ASSERT_EQ(::stat(image_.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 2 * 30008 + 5 + 9 + 4);
  EXPECT_LT(allocated(image_), 2u * 30008 + 65536);
  EXPECT_FALSE(tk::validate_simh_image(image_).has_value());
}

}  // namespace
