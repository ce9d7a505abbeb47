// Where a virtual tape's drive state is kept. The position belongs to the
// image, not to the name it was reached by: every name of one image (a
// symlink, a relative or absolute path, a bind mount, a hard link beside
// it) finds the one IMAGE.state, in the directory that holds the image.
#pragma once

#include <string>

#include "../io.hpp"

namespace tk {

// On the image itself: the absolute name beside which its state is kept,
// so that a hard link in another directory finds it. Every version has put
// it on the images it opened, so it also tells one that was opened as a
// virtual tape (virtual_tapes.hpp).
inline constexpr const char* kStateBesideAttribute = "user.tapekit.state-beside";

struct StateHome {
  Fd dir;             // the directory that holds the image
  std::string image;  // the image's name in it
  std::string name;   // the state file's name in it
  std::string shown;  // the state file as messages name it
};

// The state's home for the image open as image_fd, reached as path
// (relative to dir_fd; there, as rmt's confined opens give it, a name is
// never a symlink). A symlink is followed to the image it names. An image
// with other hard links keeps its state beside the name that has one in
// its directory, or the name remember_state_home recorded on it; one that
// holds data and has none that can be found is refused (EMLINK), since a
// state made anew would load it at BOT and the next write would cut the
// data the other name's state knows of.
StateHome find_state_home(int dir_fd, const std::string& path, int image_fd);

// Records on the image (a user extended attribute, where the file system
// has them and the caller owns the image or is root) the absolute name its
// state is kept beside, so that a hard link in another directory finds the
// one state too. find_state_home records it whenever it finds the state
// beside the name, and follows it only to a name that is still the image
// and has a state beside it, never for a confined open.
void remember_state_home(int image_fd, const StateHome& home);

}  // namespace tk
