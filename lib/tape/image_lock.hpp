// The lock that puts a cartridge "in the drive": one holder of an image at a
// time, as one drive holds one tape (docs/tape-semantics.md, "The image lock").
#pragma once

#include <string>

namespace tk {

// Takes the image's exclusive lock on fd without waiting: EBUSY (context
// "open PATH") while another open file holds it. Being a flock, the lock
// belongs to fd's open file and goes with it when that is closed, even by
// the death of its holder (SIGKILL included).
void lock_image(int fd, const std::string& path);

}  // namespace tk
