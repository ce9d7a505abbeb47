// What the virtual tape's files (simh_tape.cpp, simh_load.cpp,
// simh_verify.cpp, simh_health.cpp) share and the library's users need not see.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <sys/types.h>

#include "../io.hpp"
#include "drive_state.hpp"
#include "state_home.hpp"
#include "tape.hpp"

namespace tk {

// The size of the open file fd; path names it in errors.
std::uint64_t file_size(int fd, const std::string& path);

struct LoadedState {
  DriveState state;
  std::string pending;  // a session left unfinished, for the next writer to complete
  // The cartridge is new to the drive (no state yet, or the image changed
  // behind its back): the open loads it, which its memory counts.
  bool new_cartridge = false;
  // The state could not be read and the caller asked to start afresh.
  bool unusable_replaced = false;
};

// The drive's state for the locked image fd. A session its writer never
// closed is completed first, by an open that may write the image and only
// once the image is proven to be the one that session wrote; an open that
// may not is told, and sees the tape where the session was last saved.
// With replace_unusable, a state that cannot be read is said (warn) and
// replaced by a fresh drive's, for a command that sets an absolute position.
LoadedState load_completed_state(const StateHome& home, const std::string& path, int fd,
                                 mode_t mode, bool may_complete, const OpenOptions::Warn& warn,
                                 bool replace_unusable = false);

// The drive's answers to health queries (simh_health.cpp): the Tape
// Capacity log page for a cartridge whose image holds `image_bytes`, and
// the cartridge memory's attributes, as an LTO drive encodes them.
std::vector<std::uint8_t> simh_capacity_page(const DriveState& state, std::uint64_t image_bytes);
std::vector<std::uint8_t> simh_attribute_list(const DriveState& state);

// The drive over the image fd, locked and with its state loaded
// (simh_tape.cpp); the arguments are its constructor's.
std::unique_ptr<Tape> make_simh_tape(const std::string& path, StateHome home, Fd fd, DriveState state,
                                     bool readable, bool writable, int write_errno,
                                     bool file_protected, bool saves_state, mode_t create_mode);

}  // namespace tk
