// The virtual tape drive's state file: what loads, what is refused, and how
// it is saved.
#include "../../lib/tape/drive_state.hpp"

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/error.hpp"

namespace {

// A whole state file (header, lines, end line) around some lines.
std::string framed(const std::string& lines) {
  return "# tapekit virtual tape drive state, format 2 (the image is the cartridge)\n" + lines +
         "end\n";
}

// Why the text of a state file is refused ("" if it loads).
std::string refusal_of_file(const std::string& text) {
  try {
    tk::parse_drive_state(text, "t.tap.state");
  } catch (const tk::Error& e) {
    EXPECT_EQ(e.errnum(), EINVAL);
    return e.what();
  }
  return "";
}

std::string refusal(const std::string& lines) { return refusal_of_file(framed(lines)); }

// The lines every state file of the format before the end line had.
const std::string legacy_header = "# tapekit virtual tape drive state (the image is the cartridge)\n";
const std::string legacy_lines =
    "offset 0\nfile 0\nblock 0\nlba 0\neof none\nblock-size 0\ndensity 0\ncompression 0\n"
    "write-protect 0\nonline 1\nlocked 0\ncapacity 0\nimage-mtime 5\nwriting 0\n";

TEST(DriveState, WhatIsSavedLoadsBackTheSame) {
  tk::DriveState s;
  s.offset = 1000;
  s.file = 2;
  s.block = 3;
  s.lba = 7;
  s.eof = tk::EofState::early_warning;
  s.block_size = 512;
  s.density = 0x5a;
  s.writing = true;
  s.image_inode = 42;
  s.recovered = true;
  s.recovery = {600008, 448568, true, 1};
  tk::DriveState back = tk::parse_drive_state(tk::format_drive_state(s), "x");
  EXPECT_EQ(back.offset, 1000u);
  EXPECT_EQ(back.file, 2);
  EXPECT_EQ(back.block, 3);
  EXPECT_EQ(back.lba, 7);
  EXPECT_EQ(back.eof, tk::EofState::early_warning);
  EXPECT_EQ(back.block_size, 512u);
  EXPECT_EQ(back.density, 0x5au);
  EXPECT_TRUE(back.writing);
  EXPECT_EQ(back.image_inode, 42u);
  ASSERT_TRUE(back.recovered);
  EXPECT_EQ(back.recovery.cut_at, 600008u);
  EXPECT_EQ(back.recovery.cut_bytes, 448568u);
  EXPECT_TRUE(back.recovery.wrote_filemark);
  EXPECT_EQ(back.recovery.file, 1);
}

TEST(DriveState, TheCartridgeMemoryLoadsBackTheSame) {
  tk::DriveState s;
  s.load_count = 12;
  s.bytes_written = 5 << 20;
  s.bytes_read = 3 << 20;
  s.barcode = "ABC123L8";
  s.manufactured = "20261204";
  s.serial = "TK1";
  s.tapealert = (std::uint64_t{1} << 19) | (std::uint64_t{1} << 63);
  tk::DriveState back = tk::parse_drive_state(tk::format_drive_state(s), "x");
  EXPECT_TRUE(back.memory);
  EXPECT_EQ(back.load_count, 12u);
  EXPECT_EQ(back.bytes_written, 5u << 20);
  EXPECT_EQ(back.bytes_read, 3u << 20);
  EXPECT_EQ(back.barcode, "ABC123L8");
  EXPECT_EQ(back.manufactured, "20261204");
  EXPECT_EQ(back.serial, "TK1");
  EXPECT_EQ(back.tapealert, s.tapealert);
}

// A state saved before the cartridge memory existed has none: its counts
// are unknown, and stay so when saved again.
TEST(DriveState, AStateFromBeforeTheCartridgeMemoryHasNone) {
  tk::DriveState old = tk::parse_drive_state(legacy_header + legacy_lines, "x");
  EXPECT_FALSE(old.memory);
  EXPECT_TRUE(old.barcode.empty());
  EXPECT_EQ(old.tapealert, 0u);
  EXPECT_FALSE(tk::parse_drive_state(tk::format_drive_state(old), "x").memory);
  EXPECT_TRUE(tk::DriveState{}.memory);  // no state file: a cartridge new to the drive
}

TEST(DriveState, LabelsAndDatesACartridgeMemoryCannotHoldAreRefused) {
  EXPECT_NE(refusal("barcode " + std::string(33, 'A') + "\n").find("barcode"), std::string::npos);
  EXPECT_NE(refusal("barcode A\x01\n").find("barcode"), std::string::npos);
  EXPECT_NE(refusal("manufactured 20261304\n").find("manufacture date"), std::string::npos);
  EXPECT_NE(refusal("manufactured 2026-12-04\n").find("manufacture date"), std::string::npos);
  EXPECT_NE(refusal("tapealert -1\n").find("line 2"), std::string::npos);
}

// A state file that was emptied or cut short is refused, never read as a
// drive at BOT (whose next write would cut every file on the image).
TEST(DriveState, AnEmptyOrCutShortStateIsRefusedNotTakenForBOT) {
  tk::DriveState s;
  s.offset = 600502;
  s.file = 3;
  s.lba = 62;
  s.image_mtime_ns = 1;
  const std::string whole = tk::format_drive_state(s);
  EXPECT_EQ(refusal_of_file(whole), "");
  EXPECT_NE(refusal_of_file("").find("empty"), std::string::npos);
  // Cut at every byte: no prefix loads.
  for (std::size_t cut = 1; cut < whole.size(); ++cut)
    EXPECT_NE(refusal_of_file(whole.substr(0, cut)), "") << "cut at " << cut;
  EXPECT_NE(refusal_of_file(whole.substr(0, whole.size() - 4)).find("cut short"), std::string::npos);
  EXPECT_NE(refusal_of_file(whole + "offset 0\n").find("after the end line"), std::string::npos);
  EXPECT_NE(refusal_of_file("offset 0\nend\n").find("no drive state header"), std::string::npos);
  // The format before the end line: whole, it loads; cut before its last
  // line that every such file had, it is refused.
  EXPECT_EQ(refusal_of_file(legacy_header + legacy_lines), "");
  EXPECT_NE(refusal_of_file(legacy_header + "offset 0\nfile 0\n").find("cut short: no block line"),
            std::string::npos);
}

// After mt seek the drive's file number is unknown (-1), and a recovery
// made then records it so: that state must load (it once made the tape
// unusable until the state file was deleted by hand).
TEST(DriveState, ARecoveryMadeWithTheFileNumberUnknownLoads) {
  tk::DriveState s;
  s.offset = 300;
  s.file = -1;
  s.block = -1;
  s.lba = 31;
  s.recovered = true;
  s.recovery = {296, 100, true, -1};
  tk::DriveState back = tk::parse_drive_state(tk::format_drive_state(s), "x");
  EXPECT_EQ(back.recovery.file, -1);
  EXPECT_EQ(back.file, -1);
  EXPECT_NE(refusal("lba 0\nrecovered-cut-at 0\nrecovered-file -2\n"), "");
}

TEST(DriveState, AWriteSessionsRecordLoadsBackTheSame) {
  tk::DriveState s;
  s.offset = 5000;
  s.lba = 20;
  s.file = 3;
  s.writing = true;
  s.image_inode = 77;
  s.session = {true, 4000, 2, 5, 19, 0xfeedfacecafebeefu, true, 10240, "00ff10"};
  tk::DriveState back = tk::parse_drive_state(tk::format_drive_state(s), "x");
  EXPECT_TRUE(back.session.known);
  EXPECT_EQ(back.session.start, 4000u);
  EXPECT_EQ(back.session.file, 2);
  EXPECT_EQ(back.session.block, 5);
  EXPECT_EQ(back.session.lba, 19);
  EXPECT_EQ(back.session.before, 0xfeedfacecafebeefu);
  EXPECT_TRUE(back.session.first_known);
  EXPECT_EQ(back.session.first_word, 10240u);
  EXPECT_EQ(back.session.first_bytes, "00ff10");
  s.session.first_bytes.clear();  // a first record of no data
  back = tk::parse_drive_state(tk::format_drive_state(s), "x");
  EXPECT_TRUE(back.session.first_known);
  EXPECT_EQ(back.session.first_bytes, "");
  // Not reachable, or not hex: refused.
  EXPECT_NE(refusal("writing 1\nsession-start 8\nsession-lba 3\n"), "");
  EXPECT_NE(refusal("writing 1\nsession-start 8\nsession-first-bytes 0g\n"), "");
}

// The recovery is history: a drive rewound since still loads it.
TEST(DriveState, ARecoveryFromFurtherDownTheTapeLoadsAtBOT) {
  tk::DriveState s;
  s.recovered = true;
  s.recovery = {5000, 10, true, 7};
  EXPECT_EQ(tk::parse_drive_state(tk::format_drive_state(s), "x").recovery.file, 7);
}

// One line per crafted value: each must be refused with a reason, never
// loaded into arithmetic that overflows (UBSan aborted on these before).
TEST(DriveState, ValuesNoDriveCouldHoldAreRefusedWithTheReason) {
  struct Case {
    const char* text;
    const char* reason;
  } cases[] = {
      {"offset 9223372036854775807\n", "offset beyond any image"},
      {"offset 100\nlba 9223372036854775807\n", "lba not reachable"},
      {"offset 100\nlba 26\n", "lba not reachable"},
      {"offset 100\nlba -1\n", "lba not reachable"},
      {"offset 100\nlba 10\nfile 9223372036854775807\n", "file number not reachable"},
      {"offset 100\nlba 10\nfile -2\n", "file number not reachable"},
      {"offset 100\nlba 10\nblock 11\n", "block number not reachable"},
      {"block-size 16777216\n", "block size larger"},
      {"density 256\n", "not a density code"},
      {"capacity 18446744073709551615\n", "capacity beyond"},
      {"image-mtime -5\n", "mtime negative"},
      {"recovered-cut-at 9223372036854775807\n", "recovery record"},
      {"offset 99999999999999999999\n", "line 2 'offset 99999999999999999999'"},
      {"eof sideways\n", "line 2 'eof sideways'"},
  };
  for (const Case& c : cases) {
    std::string why = refusal(c.text);
    EXPECT_NE(why.find(c.reason), std::string::npos) << c.text << " -> " << why;
    EXPECT_NE(why.find("t.tap.state"), std::string::npos) << why;
  }
}

TEST(DriveState, AStateFileTooLongToBeOneIsRefused) {
  char dir[] = "/tmp/drive-state-unit-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/t.tap.state";
  std::ofstream(path) << std::string(10000, '#') << "\n";
  try {
    tk::load_drive_state(AT_FDCWD, path);
    ADD_FAILURE() << "loaded";
  } catch (const tk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("too long"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A planted hard link named like the temporary must not be written through.
TEST(DriveState, SavingNeverWritesThroughAPlantedTemporary) {
  char dir[] = "/tmp/drive-state-unit-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string d = dir;
  std::ofstream(d + "/victim") << "precious\n";
  ASSERT_EQ(::link((d + "/victim").c_str(), (d + "/t.tap.state.tmp").c_str()), 0);
  tk::save_drive_state(AT_FDCWD, d + "/t.tap.state", tk::DriveState{}, 0600);
  std::ifstream victim(d + "/victim");
  std::string text((std::istreambuf_iterator<char>(victim)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious\n");
  struct stat st {};
  ASSERT_EQ(::stat((d + "/victim").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(tk::load_drive_state(AT_FDCWD, d + "/t.tap.state").offset, 0u);
  std::filesystem::remove_all(d);
}

TEST(DriveState, AnImageNameTooLongForItsSidecarIsRefusedNamingTheState) {
  std::string name = "/tmp/" + std::string(250, 'x') + ".tap";
  try {
    tk::check_state_names(name);
    ADD_FAILURE() << "accepted";
  } catch (const tk::Error& e) {
    EXPECT_EQ(e.errnum(), ENAMETOOLONG);
    EXPECT_NE(std::string(e.what()).find(".tap.state"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(tk::check_state_names("/tmp/" + std::string(200, 'x') + ".tap"));
}

}  // namespace
