// The image lock: one holder at a time, and none left behind by a holder
// that is gone.
#include "../../lib/tape/image_lock.hpp"

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"

namespace {

class ImageLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/image-lock-unit-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    image_ = dir_ + "/t.tap";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  tk::Fd open_image() { return tk::open_file(image_, O_RDWR | O_CREAT, 0666); }

  // The error a lock attempt on a fresh open of the image fails with; 0 if taken.
  int lock_errno() {
    tk::Fd fd = open_image();
    try {
      tk::lock_image(fd.get(), image_);
    } catch (const tk::Error& e) {
      return e.errnum();
    }
    return 0;
  }

  std::string dir_;
  std::string image_;
};

TEST_F(ImageLockTest, ASecondLockGetsEBUSYNamingTheOpen) {
  tk::Fd holder = open_image();
  tk::lock_image(holder.get(), image_);
  tk::Fd second = open_image();
  try {
    tk::lock_image(second.get(), image_);
    FAIL() << "a second lock was granted";
  } catch (const tk::Error& e) {
    EXPECT_EQ(e.errnum(), EBUSY);
    EXPECT_EQ(e.context(), "open " + image_);
  }
}

TEST_F(ImageLockTest, TheLockGoesWithTheDescriptorThatHeldIt) {
  {
    tk::Fd holder = open_image();
    tk::lock_image(holder.get(), image_);
    EXPECT_EQ(lock_errno(), EBUSY);
  }
  EXPECT_EQ(lock_errno(), 0);
}

TEST_F(ImageLockTest, AHolderKilledOutrightLeavesNoLockBehind) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    tk::Fd fd = open_image();
    tk::lock_image(fd.get(), image_);
    // The parent's read fails the test if this write did not happen.
    if (::write(ready[1], "x", 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(lock_errno(), EBUSY);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(lock_errno(), 0);
}

TEST_F(ImageLockTest, ADescriptorThatIsNoFileFailsWithItsOwnErrno) {
  try {
    tk::lock_image(-1, image_);
    FAIL() << "a lock on no file was granted";
  } catch (const tk::Error& e) {
    EXPECT_EQ(e.errnum(), EBADF);
    EXPECT_EQ(e.context(), "lock " + image_);
  }
}

}  // namespace
