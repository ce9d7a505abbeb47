// Which names the opt-in covers, and which files were made virtual tapes:
// decided by what an open reaches, never by a name's spelling alone.
#include "../../lib/tape/virtual_tapes.hpp"

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "../../lib/tape/simh_tape.hpp"

namespace {

namespace fs = std::filesystem;

class VirtualTapesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/virtual-tapes-unit-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = fs::canonical(dir).string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  bool made(const std::string& name) { return tk::made_virtual_tape(AT_FDCWD, dir_ + "/" + name, 0); }

  std::string dir_;
};

TEST_F(VirtualTapesTest, APatternWithoutSlashMatchesTheLastComponentAnywhere) {
  tk::VirtualTapeNames names({"*.tap"});
  EXPECT_TRUE(names.covers("/srv/tapes/t1.tap"));
  EXPECT_TRUE(names.covers("/t1.tap"));
  EXPECT_FALSE(names.covers("/srv/tapes.tap/t1.tar"));
}

TEST_F(VirtualTapesTest, APatternWithSlashMatchesTheWholePathOneDirectoryDeep) {
  tk::VirtualTapeNames names({dir_ + "/*"});
  EXPECT_TRUE(names.covers(dir_ + "/t1.img"));
  EXPECT_FALSE(names.covers(dir_ + "/sub/t1.img"));
  EXPECT_FALSE(names.covers("/elsewhere/t1.img"));
}

TEST_F(VirtualTapesTest, APatternsDirectoryIsResolvedAsTheNamesItIsMatchedAgainst) {
  fs::create_directory(dir_ + "/real");
  fs::create_directory_symlink(dir_ + "/real", dir_ + "/link");
  tk::VirtualTapeNames names({dir_ + "/link/*.tap"});
  EXPECT_TRUE(names.covers(dir_ + "/real/t.tap"));
}

TEST_F(VirtualTapesTest, NoPatternsCoverNothing) {
  const std::vector<std::string> none, empty_one{""};
  EXPECT_TRUE(tk::VirtualTapeNames(none).empty());
  EXPECT_TRUE(tk::VirtualTapeNames(empty_one).empty());
  EXPECT_FALSE(tk::VirtualTapeNames(none).covers("/x.tap"));
}

TEST_F(VirtualTapesTest, AFileIsMadeOneByVtCreateAndStaysOneWhenMovedAwayFromItsState) {
  tk::create_virtual_tape(dir_ + "/t.img", 0);
  EXPECT_TRUE(made("t.img"));
  fs::rename(dir_ + "/t.img", dir_ + "/moved.img");
  // The attribute, where the file system keeps user attributes (tmpfs
  // before Linux 6.6 does not): the test directory's does.
  EXPECT_TRUE(made("moved.img"));
}

TEST_F(VirtualTapesTest, APlainFileNamedTapIsNoneAndAFileThatIsNoStateMarksNothing) {
  write("x.tap", "a tar archive, say");
  EXPECT_FALSE(made("x.tap"));
  write("x.tap.state", "notes\n");
  EXPECT_FALSE(made("x.tap"));
}

TEST_F(VirtualTapesTest, AStateBesideTheFileMakesItOneAsEarlierVersionsLeftIt) {
  tk::create_virtual_tape(dir_ + "/t.tap", 0);
  // A copy keeps no attribute; its state beside it is the mark.
  fs::copy_file(dir_ + "/t.tap", dir_ + "/copy.tap");
  EXPECT_FALSE(made("copy.tap"));
  fs::copy_file(dir_ + "/t.tap.state", dir_ + "/copy.tap.state");
  EXPECT_TRUE(made("copy.tap"));
}

TEST_F(VirtualTapesTest, ANewNameIsOneOnlyWhereTheOptInCoversIt) {
  tk::OpenOptions none;
  none.virtual_tapes.emplace();
  struct stat st {};
  EXPECT_FALSE(tk::opens_virtual_tape(dir_ + "/new.tap", O_WRONLY | O_CREAT, false, st, none));
  tk::OpenOptions some;
  some.virtual_tapes = std::vector<std::string>{dir_ + "/*.img"};
  EXPECT_TRUE(tk::opens_virtual_tape(dir_ + "/new.img", O_WRONLY | O_CREAT, false, st, some));
  EXPECT_FALSE(tk::opens_virtual_tape(dir_ + "/new.tap", O_WRONLY | O_CREAT, false, st, some));
}

TEST_F(VirtualTapesTest, ADeviceIsNeverOne) {
  tk::OpenOptions all;
  all.virtual_tapes = std::vector<std::string>{"*"};
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_FALSE(tk::opens_virtual_tape("/dev/null", O_WRONLY, true, st, all));
}

}  // namespace
