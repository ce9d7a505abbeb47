// What `mt verify` asks of an image: whether its framing holds from BOT to
// its end (validate_simh_image), and what the drive last did to complete a
// write session its writer never closed (last_recovery).
#include "simh_tape.hpp"

#include <cerrno>
#include <fcntl.h>
#include <optional>
#include <string>

#include "../io.hpp"
#include "drive_state.hpp"
#include "image_lock.hpp"
#include "simh_format.hpp"
#include "simh_internal.hpp"

namespace tk {
namespace {

using simh::Kind;
using simh::Object;

}  // namespace

std::optional<Recovery> last_recovery(const std::string& path) {
  Fd fd = open_file(path, O_RDONLY);
  StateHome home = find_state_home(AT_FDCWD, path, fd.get());
  DriveState state = load_drive_state(home.dir.get(), home.name);
  if (!state.recovered) return std::nullopt;
  return state.recovery;
}

std::optional<SimhDefect> validate_simh_image(const std::string& path, std::string* pending) {
  Fd fd = open_file(path, O_RDONLY);
  // A writer's image may end inside a record still in its buffer: while it
  // holds the lock, verify gets EBUSY as every other opener does.
  lock_image(fd.get(), path);
  try {
    // Verifying changes nothing: a session left unfinished is reported.
    StateHome home = find_state_home(AT_FDCWD, path, fd.get());
    LoadedState loaded = load_completed_state(home, path, fd.get(), 0666, false, {});
    if (pending != nullptr) *pending = loaded.pending;
  } catch (const DamagedImage& e) {
    if (e.errnum() != EMEDIUMTYPE) throw;
    return SimhDefect{0, e.damage()};
  }
  simh::ImageReader image(fd.get(), file_size(fd.get(), path));
  std::uint64_t pos = 0;
  std::uint64_t objects = 0;
  for (;;) {
    Object o = image.next(pos);
    if (o.kind == Kind::end_of_data) return std::nullopt;
    if (o.kind == Kind::invalid) {
      bool foreign = objects == 0;
      return SimhDefect{o.start, (foreign ? "not a SIMH tape image: " : "") + o.problem +
                                     " (object " + std::to_string(objects + 1) + ")"};
    }
    pos = o.end;
    ++objects;
  }
}

}  // namespace tk
