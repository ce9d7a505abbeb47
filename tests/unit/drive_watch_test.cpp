// buffer's DriveWatch (tools/buffer/drive_watch.hpp): the cadence buffer(1)
// promises for the cartridge's capacity ("asked at the start of each volume
// and every 30 seconds after while no write is in flight"), kept on a clock
// the test steps, and what it asks of a drive that refuses.
#include "../../tools/buffer/drive_watch.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "../../lib/error.hpp"
#include "../../tools/buffer/run_state.hpp"
#include "../../lib/scsi/page_builder.hpp"

namespace {

using namespace std::chrono_literals;
using tk::buffer::DriveWatch;

// A drive that answers the Tape Capacity page with `remaining_mib` (or
// refuses it) and counts what it was asked; no data moves.
class CountingDrive : public tk::Tape {
 public:
  std::uint32_t remaining_mib = 1000;
  bool refuses = false;
  int capacity_asks = 0;
  int alert_asks = 0;

  std::size_t read(std::span<std::byte>) override { return 0; }
  void write(std::span<const std::byte>) override {}
  void op(tk::MtOp, int) override {}
  tk::TapeStatus status() override { return {}; }
  std::int64_t tell() override { return 0; }
  std::int64_t seek(std::int64_t, int) override { throw tk::Error(ESPIPE, "seek"); }
  void close() override {}
  bool keeps_records() const override { return true; }
  std::vector<std::uint8_t> health_data(tk::scsi::HealthQuery query) override {
    if (query == tk::scsi::HealthQuery::tapealert) {
      ++alert_asks;
      return tk::scsi::build_tapealert_page(0);
    }
    ++capacity_asks;
    if (refuses) throw tk::Error(EIO, "LOG SENSE");
    return tk::scsi::build_tape_capacity_page(remaining_mib, 2000);
  }
};

class DriveWatchCadence : public ::testing::Test {
 protected:
  DriveWatch::Clock::time_point now{1h};
  tk::buffer::RunState run;
  CountingDrive drive;
  DriveWatch watch{run, true, [this] { return now; }};
};

TEST_F(DriveWatchCadence, AsksAtTheVolumesStartThenEveryHalfMinute) {
  watch.volume_started(drive, 0, true);
  EXPECT_EQ(drive.capacity_asks, 1);
  EXPECT_EQ(run.output_stats().tape_remaining_mib, 1000u);
  EXPECT_EQ(run.output_stats().tape_maximum_mib, 2000u);

  now += DriveWatch::kSampleEvery - 1ms;
  EXPECT_FALSE(watch.capacity_due());
  now += 1ms;
  ASSERT_TRUE(watch.capacity_due());
  drive.remaining_mib = 900;
  watch.sample_capacity(drive, 100 << 20, false);
  EXPECT_EQ(drive.capacity_asks, 2);
  EXPECT_EQ(run.output_stats().tape_remaining_mib, 900u);
  EXPECT_EQ(run.output_stats().tape_sampled_at, 100u << 20);
  EXPECT_FALSE(watch.capacity_due());
  EXPECT_EQ(DriveWatch::kSampleEvery, 30s);
}

TEST_F(DriveWatchCadence, WithAWriteInFlightLetsTheSampleGoForAnotherHalfMinute) {
  watch.volume_started(drive, 0, true);
  now += DriveWatch::kSampleEvery;
  ASSERT_TRUE(watch.capacity_due());
  watch.sample_capacity(drive, 1, true);
  EXPECT_EQ(drive.capacity_asks, 1);
  EXPECT_FALSE(watch.capacity_due());
  now += DriveWatch::kSampleEvery;
  ASSERT_TRUE(watch.capacity_due());
  watch.sample_capacity(drive, 2, false);
  EXPECT_EQ(drive.capacity_asks, 2);
}

TEST_F(DriveWatchCadence, ADriveThatRefusesIsNotAskedAgainUntilTheNextVolume) {
  drive.refuses = true;
  watch.volume_started(drive, 0, true);
  EXPECT_EQ(drive.capacity_asks, 1);
  now += 10 * DriveWatch::kSampleEvery;
  EXPECT_FALSE(watch.capacity_due());
  EXPECT_EQ(run.output_stats().tape_maximum_mib, 0u);

  drive.refuses = false;
  watch.volume_started(drive, 5, false);
  EXPECT_EQ(drive.capacity_asks, 2);
  EXPECT_EQ(run.output_stats().tape_maximum_mib, 2000u);
}

TEST(DriveWatch, ARunThatDoesNotReportAsksTheDriveNothing) {
  tk::buffer::RunState run;
  CountingDrive drive;
  DriveWatch::Clock::time_point now{1h};
  DriveWatch watch{run, false, [&now] { return now; }};
  watch.volume_started(drive, 0, true);
  now += 10 * DriveWatch::kSampleEvery;
  EXPECT_FALSE(watch.capacity_due());
  watch.sample_capacity(drive, 1, false);
  watch.before_close(drive);
  EXPECT_EQ(drive.capacity_asks, 0);
  EXPECT_EQ(drive.alert_asks, 0);
  EXPECT_FALSE(run.output_stats().alerts_known);
}

}  // namespace
