// The image's end: appends reach the file whole and in order, a failed flush
// cuts the image back to the last whole object, and reserved space is freed.
#include "../../lib/tape/image_appender.hpp"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../../lib/tape/simh_format.hpp"
#include "disk_dir.hpp"

namespace {

// What a writer remembers at a boundary: here, how many objects lie before it.
struct Mark {
  std::uint64_t offset = 0;
  int objects = 0;
};

using Appender = tk::ImageAppender<Mark>;

// Makes writes past limit bytes fail with EFBIG (and not kill the process)
// for as long as it lives.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t limit) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit now = old_;
    now.rlim_cur = limit;
    ::setrlimit(RLIMIT_FSIZE, &now);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

class ImageAppenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tk_test::make_disk_dir("image-appender-unit");
    ASSERT_FALSE(dir_.empty());
    path_ = dir_ + "/t.tap";
    fd_ = tk::open_file(path_, O_RDWR | O_CREAT, 0666);
    reader_ = tk::simh::ImageReader(fd_.get(), 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Whether appends to the image are staged here: a file system whose
  // reservations hold (ext4, xfs) and that grants one.
  bool stages() const {
    if (!tk::keeps_reservations(tk::file_system_type(fd_.get()))) return false;
    tk::Fd probe = tk::open_file(dir_ + "/probe", O_RDWR | O_CREAT, 0666);
    return ::fallocate(probe.get(), FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
  }

  // Object number i: `bytes` bytes of the value i.
  static std::vector<std::byte> object(int i, std::size_t bytes) {
    return std::vector<std::byte>(bytes, static_cast<std::byte>(i));
  }

  // Appends object i (of bytes bytes) as the writer does, then marks its end.
  static void add(Appender& end, int i, std::size_t bytes, int& objects) {
    std::vector<std::byte> data = object(i, bytes);
    iovec iov{data.data(), data.size()};
    end.append({&iov, 1}, bytes, 0, Mark{end.size(), objects});
    ++objects;
    end.mark_boundary(Mark{end.size(), objects});
  }

  std::vector<std::byte> contents() const {
    struct stat st {};
    EXPECT_EQ(::fstat(fd_.get(), &st), 0);
    std::vector<std::byte> bytes(static_cast<std::size_t>(st.st_size));
    EXPECT_EQ(::pread(fd_.get(), bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
    return bytes;
  }

  std::uint64_t file_size() const {
    struct stat st {};
    EXPECT_EQ(::fstat(fd_.get(), &st), 0);
    return static_cast<std::uint64_t>(st.st_size);
  }

  // Bytes the file system has allocated to the image.
  std::uint64_t allocated() const {
    struct stat st {};
    EXPECT_EQ(::fstat(fd_.get(), &st), 0);
    return static_cast<std::uint64_t>(st.st_blocks) * 512;
  }

  // The objects numbered 0..count-1, of bytes bytes each, one after another.
  static std::vector<std::byte> objects(int count, std::size_t bytes) {
    std::vector<std::byte> all;
    for (int i = 0; i < count; ++i) {
      std::vector<std::byte> o = object(i, bytes);
      all.insert(all.end(), o.begin(), o.end());
    }
    return all;
  }

  std::string dir_;
  std::string path_;
  tk::Fd fd_;
  tk::simh::ImageReader reader_;
};

TEST(FileSystemDecisions, OnlyDiskFileSystemsReserveAndOnlyExt4AndXfsStage) {
  EXPECT_FALSE(tk::allocates_blocks(0));
  EXPECT_FALSE(tk::allocates_blocks(TMPFS_MAGIC));
  EXPECT_FALSE(tk::allocates_blocks(RAMFS_MAGIC));
  EXPECT_TRUE(tk::allocates_blocks(EXT4_SUPER_MAGIC));
  EXPECT_TRUE(tk::allocates_blocks(BTRFS_SUPER_MAGIC));
  EXPECT_TRUE(tk::keeps_reservations(EXT4_SUPER_MAGIC));
  EXPECT_TRUE(tk::keeps_reservations(XFS_SUPER_MAGIC));
  EXPECT_FALSE(tk::keeps_reservations(BTRFS_SUPER_MAGIC));
  EXPECT_FALSE(tk::keeps_reservations(0));
}

TEST_F(ImageAppenderTest, AppendsReachTheFileWholeAndInOrder) {
  Appender end(fd_.get(), path_, reader_, true, 0);
  int count = 0;
  for (int i = 0; i < 40; ++i) add(end, i, 70001, count);
  EXPECT_EQ(end.size(), 40u * 70001);
  EXPECT_EQ(reader_.size(), end.size());
  end.flush();
  EXPECT_EQ(contents(), objects(40, 70001));
}

TEST_F(ImageAppenderTest, WithoutReservingEveryAppendIsInTheFileAtOnce) {
  Appender end(fd_.get(), path_, reader_, false, 0);
  int count = 0;
  for (int i = 0; i < 3; ++i) {
    add(end, i, 1000, count);
    EXPECT_EQ(file_size(), end.size());
  }
  EXPECT_EQ(contents(), objects(3, 1000));
  EXPECT_LT(allocated(), 65536u);  // nothing reserved ahead
}

TEST_F(ImageAppenderTest, StagedAppendsReachTheFileInWholeWindowsUntilFlushed) {
  if (!stages()) GTEST_SKIP() << "appends are not staged on this file system";
  Appender end(fd_.get(), path_, reader_, true, 0);
  int count = 0;
  for (int i = 0; i < 15; ++i) add(end, i, 100000, count);
  EXPECT_EQ(end.size(), 1500000u);
  EXPECT_EQ(file_size(), tk::AppendBuffer::window_bytes);
  end.flush();
  EXPECT_EQ(contents(), objects(15, 100000));
}

TEST_F(ImageAppenderTest, ManyTinyObjectsFlushBeforeTheirBoundariesPileUp) {
  if (!stages()) GTEST_SKIP() << "appends are not staged on this file system";
  Appender end(fd_.get(), path_, reader_, true, 0);
  int count = 0;
  for (int i = 0; i < 4095; ++i) add(end, i, 4, count);
  EXPECT_EQ(file_size(), 0u);
  add(end, 4095, 4, count);
  EXPECT_EQ(file_size(), 4096u * 4);
}

TEST_F(ImageAppenderTest, AFailedFlushCutsTheImageBackToTheLastWholeObject) {
  if (!stages()) GTEST_SKIP() << "appends are not staged on this file system";
  Appender end(fd_.get(), path_, reader_, true, 0);
  FileSizeLimit limit(1572864);  // the flush gets half of the second window in
  int count = 0;
  for (int i = 0; i < 6; ++i) add(end, i, 300000, count);
  ASSERT_EQ(file_size(), tk::AppendBuffer::window_bytes);
  try {
    end.flush();
    FAIL() << "the flush past the file size limit succeeded";
  } catch (const tk::StagedLoss<Mark>& loss) {
    // Objects 0-4 end at 1500000, below the limit; object 5 did not fit.
    EXPECT_EQ(loss.kept.offset, 1500000u);
    EXPECT_EQ(loss.kept.objects, 5);
    EXPECT_EQ(loss.errnum, EFBIG);
    EXPECT_TRUE(loss.cut);
  }
  EXPECT_EQ(end.size(), 1500000u);
  EXPECT_EQ(reader_.size(), 1500000u);
  EXPECT_EQ(contents(), objects(5, 300000));
  // Staging has stopped: the next append is in the file at once.
  add(end, 5, 10, count);
  EXPECT_EQ(file_size(), 1500010u);
}

TEST_F(ImageAppenderTest, AFailureInTheFirstWindowKeepsWhereTheStagingBegan) {
  if (!stages()) GTEST_SKIP() << "appends are not staged on this file system";
  Appender end(fd_.get(), path_, reader_, true, 0);
  int count = 0;
  add(end, 0, 1000, count);
  end.flush();
  FileSizeLimit limit(1500);
  add(end, 1, 1000, count);
  add(end, 2, 1000, count);
  try {
    end.flush();
    FAIL() << "the flush past the file size limit succeeded";
  } catch (const tk::StagedLoss<Mark>& loss) {
    EXPECT_EQ(loss.kept.offset, 1000u);
    EXPECT_EQ(loss.kept.objects, 1);
  }
  EXPECT_EQ(contents(), objects(1, 1000));
}

TEST_F(ImageAppenderTest, NothingIsStagedPastTheFileSizeLimitSoTheObjectThatMeetsItFailsItself) {
  FileSizeLimit limit(1600000);  // five objects and a third of a sixth
  Appender end(fd_.get(), path_, reader_, true, 0);
  int count = 0;
  for (int i = 0; i < 5; ++i) add(end, i, 300000, count);
  try {
    add(end, 5, 300000, count);
    FAIL() << "an append past the file size limit succeeded";
  } catch (const tk::Error& e) {
    // The sixth object's own write: part of it went in, then EFBIG, not
    // the ENOSPC a short write alone would suggest.
    EXPECT_EQ(e.errnum(), EFBIG);
  }
  end.flush();
  EXPECT_EQ(end.size(), 1500000u);
  EXPECT_EQ(contents(), objects(5, 300000));
}

TEST_F(ImageAppenderTest, AWriteThatFailsLeavesTheImageAsItWasAndSaysWhatWasDone) {
  Appender end(fd_.get(), path_, reader_, false, 0);
  int count = 0;
  add(end, 0, 100, count);
  tk::Fd read_only = tk::open_file(path_, O_RDONLY);
  tk::simh::ImageReader reader(read_only.get(), 100);
  Appender refusing(read_only.get(), path_, reader, false, 0);
  std::vector<std::byte> data = object(1, 10);
  iovec iov{data.data(), data.size()};
  try {
    refusing.append({&iov, 1}, 10, 7, Mark{100, 1});
    FAIL() << "a write through a read-only descriptor succeeded";
  } catch (const tk::Error& e) {
    EXPECT_EQ(e.errnum(), EBADF);
    EXPECT_EQ(e.context(), "write " + path_);
    EXPECT_EQ(e.bytes_done(), 7u);
  }
  EXPECT_EQ(refusing.size(), 100u);
  EXPECT_EQ(file_size(), 100u);
}

TEST_F(ImageAppenderTest, ReservedSpaceIsFreedAtRelease) {
  Appender end(fd_.get(), path_, reader_, true, 0);
  if (!tk::allocates_blocks(tk::file_system_type(fd_.get())))
    GTEST_SKIP() << "nothing is reserved on this file system";
  int count = 0;
  add(end, 0, 10000, count);
  end.flush();
  EXPECT_GE(allocated(), std::uint64_t{1} << 20);  // reserved a step ahead
  end.release();
  EXPECT_LT(allocated(), 65536u);
  EXPECT_EQ(file_size(), 10000u);
  EXPECT_EQ(contents(), objects(1, 10000));
}

TEST_F(ImageAppenderTest, NothingIsReservedPastTheCapacity) {
  Appender end(fd_.get(), path_, reader_, true, 200000);
  if (!tk::allocates_blocks(tk::file_system_type(fd_.get())))
    GTEST_SKIP() << "nothing is reserved on this file system";
  int count = 0;
  add(end, 0, 10000, count);
  end.flush();
  EXPECT_LE(allocated(), 200000u + 65536);
}

TEST_F(ImageAppenderTest, TruncatingEndsTheImageThereAndFreesWhatWasReserved) {
  Appender end(fd_.get(), path_, reader_, true, 0);
  int count = 0;
  for (int i = 0; i < 3; ++i) add(end, i, 10000, count);
  end.flush();
  end.truncate(50000);  // past the end: nothing to cut
  EXPECT_EQ(end.size(), 30000u);
  end.truncate(20000);
  EXPECT_EQ(end.size(), 20000u);
  EXPECT_EQ(reader_.size(), 20000u);
  EXPECT_EQ(contents(), objects(2, 10000));
  EXPECT_LT(allocated(), 20000u + 65536);
  add(end, 7, 5, count);
  end.flush();
  std::vector<std::byte> want = objects(2, 10000);
  std::vector<std::byte> last = object(7, 5);
  want.insert(want.end(), last.begin(), last.end());
  EXPECT_EQ(contents(), want);
}

}  // namespace
