// The virtual tape: a SIMH .tap image (the cartridge) and its IMAGE.state
// sidecar (the drive), behaving like the Linux st driver on a no-rewind node
// (docs/tape-semantics.md, "The virtual tape").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "../error.hpp"
#include "drive_state.hpp"
#include "tape.hpp"

namespace tk {

// Opens (or, for writing, creates) the image at path. Errors: EBUSY while
// another open holds it, EROFS opening a write-protected image for writing,
// ENOMEDIUM after offline unless O_NONBLOCK, ENOENT reading a missing image.
std::unique_ptr<Tape> open_simh_tape(const std::string& path, int flags,
                                     const OpenOptions& options = {});

// What a new cartridge's memory is given: empty fields get the defaults
// (no barcode; manufactured today, UTC).
struct CartridgeLabel {
  std::string barcode;       // 1 to 32 printable characters, no space
  std::string manufactured;  // YYYYMMDD
};

// Makes a blank cartridge loaded at BOT; capacity 0 = unlimited. Refuses with
// EEXIST when a non-empty image is there (an empty one is reinitialised), and
// EINVAL for a label a cartridge memory cannot hold.
void create_virtual_tape(const std::string& path, std::uint64_t capacity_bytes,
                         const CartridgeLabel& label = {});

// Sets or clears the image's write protection (kept in the state file).
void set_virtual_tape_protect(const std::string& path, bool on);

// Raises the TapeAlert flags in set and clears those in clear (bit n-1 for
// flag n), as an operator testing a monitor would; the cartridge is not
// loaded for it.
void set_virtual_tape_alerts(const std::string& path, std::uint64_t set, std::uint64_t clear);

// The first structural error of an image.
struct SimhDefect {
  std::uint64_t offset;  // byte offset of the faulty object
  std::string what;
};

// Checks framing from BOT to the end of the image (or an end-of-medium
// marker); nothing when the image is sound. Changes nothing: a write
// session its writer never closed is left to the next writer, and pending
// (when given) says so in an operator's words, else is made empty. Throws
// Error if the image cannot be read or its drive state is unusable.
std::optional<SimhDefect> validate_simh_image(const std::string& path,
                                              std::string* pending = nullptr);

// What the drive last did to complete a write session a writer never closed
// (the damage it cut off, the filemark it wrote); nothing if it never had to.
std::optional<Recovery> last_recovery(const std::string& path);

// The sidecar state file that holds the drive's state for an image.
std::string simh_state_path(const std::string& image_path);

}  // namespace tk
