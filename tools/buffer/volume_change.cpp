// Changing volumes: the --next-volume command, and the writer's side of it
// (a full medium, what carries over to the next volume) with its
// read-backs (--verify).
#include "volume_change.hpp"

#include <cstdlib>
#include <fcntl.h>

#include "../../lib/io.hpp"
#include "../../lib/process.hpp"
#include "../common/run_main.hpp"
#include "buffer.hpp"
#include "ends.hpp"
#include "writer.hpp"

namespace tk::buffer {

int run_volume_command(const std::string& command, std::size_t volume, std::uint64_t bytes,
                       const char* name_variable, const std::string& name) {
  ::setenv("BUFFER_VOLUME", std::to_string(volume).c_str(), 1);
  ::setenv("BUFFER_BYTES", std::to_string(bytes).c_str(), 1);
  ::setenv(name_variable, name.c_str(), 1);
  Fd null = open_file("/dev/null", O_RDONLY);
  return run_shell(command, null.get(), 2);
}

std::unique_ptr<Tape> open_next_volume(const Options& o, VolumeSide side, std::size_t volume,
                                       std::uint64_t bytes, const std::string& current) {
  const bool input = side == VolumeSide::input;
  const std::string who = input ? "buffer (reader): " : "buffer (writer): ";
  const std::string moved =
      std::to_string(bytes) + (input ? " bytes were read\n" : " bytes were written\n");
  print_stderr(who + (input ? "end of data on " : "end of medium on ") + current + " after " +
               std::to_string(bytes) + " bytes; running the volume change command\n");
  int status = run_volume_command(*o.next_volume, volume, bytes,
                                  input ? "BUFFER_INPUT" : "BUFFER_OUTPUT",
                                  input ? o.input : o.output);
  if (status != 0)
    throw ExactExit(kExitRuntime, who + "volume change command failed (" +
                                      describe_wait_status(status) + "); " + moved);
  // The first open's lines (1.19's two, and why) follow the one that says
  // which volume and what had moved: the run had begun.
  const std::string cannot = who + "cannot open volume " + std::to_string(volume) + "; " + moved;
  std::unique_ptr<Tape> opened;
  try {
    opened = input ? open_input(o) : open_output(o);
  } catch (const ExactExit& e) {
    throw ExactExit(kExitRuntime, cannot + e.what());
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {
    // Opened, but not made ready (an input told it will be read in order).
    throw ExactExit(kExitRuntime, cannot + "buffer: " + e.what() + "\n");
  }
  print_stderr(who + (input ? "reading volume " : "continuing on volume ") +
               std::to_string(volume) + "\n");
  return opened;
}

void Writer::refuse_volume(const Error& e, std::size_t block_size, std::size_t left) {
  run_.set_writer_reported();
  std::string what = left == block_size
                         ? "a block of " + std::to_string(block_size) + " bytes"
                         : "the last " + std::to_string(left) + " bytes of a block";
  std::string text = "buffer (writer): volume " + std::to_string(per_volume_.size()) + " of " +
                     output_->name() + " took no data: " + what + " did not fit: " +
                     strerror_text(e.errnum()) + "\n";
  text += close_after_stop();
  throw ExactExit(kExitRuntime, text + "buffer (writer): " + reached_text());
}

void Writer::change_volume() {
  // Closed first, so the count below is what reached this volume; read
  // back while it is still in the drive.
  close_output();
  if (std::string mismatch = verify_primary(); !mismatch.empty()) {
    run_.set_writer_reported();
    throw ExactExit(kExitRuntime, mismatch);
  }
  if (digest_) settled_digest().end_volume();
  per_volume_.push_back(0);
  run_.set_volume(per_volume_.size());
  try {
    output_ = open_next_volume(options_, VolumeSide::output, per_volume_.size(), written_,
                               output_->name());
  } catch (const ExactExit&) {
    run_.set_writer_reported();
    throw;
  } catch (const Interrupted&) {
    // A stop while the command ran or before the next volume opened: the
    // one before is closed whole, and what reached each is said, as at
    // any stop.
    check_reader_alive();
    abandon(abandon_reason());
  }
  output_open_ = true;
  ring_.note_consumer_step();
  note_volume_start();
  fresh_volume_ = true;
}

void Writer::note_volume_start() {
  drive_watch_.volume_started(*output_, written_, per_volume_.size() == 1);
  if (!options_.verify && !reports_progress(options_)) return;
  volume_start_ = volume_start(*output_);
  run_.set_tape_file(volume_start_);
}

std::string Writer::verify_primary() {
  if (!options_.verify || primary_failed_ || !digest_) return "";
  std::string label = output_->name();
  if (options_.next_volume) label += ", volume " + std::to_string(per_volume_.size());
  return read_back(label, [&] {
    return verify_volume(output_->name(), label, volume_start_, options_.block_size, settled_digest(),
                         open_options(options_));
  });
}

std::string Writer::read_back(const std::string& label, const std::function<std::string()>& verify) {
  ProcessState& own = run_.writer();
  own.set_phase(Phase::reading_back);
  if (own.has(StopReason::end_read_back)) {
    own.set_phase(Phase::copying);
    return "buffer (writer): no read-back of " + label + ": stopped by " +
           signal_name(own.stop_signal()) + "\n";
  }
  try {
    std::string mismatch = verify();
    own.set_phase(Phase::copying);
    return mismatch;
  } catch (const Interrupted&) {
    own.set_phase(Phase::copying);
    clear_stop();
    return "buffer (writer): read-back of " + label + " stopped by " +
           signal_name(own.stop_signal()) + "\n";
  }
}

}  // namespace tk::buffer
