// Which local names are virtual tapes. A name is one when it was made one
// (`mt vt-create`, or an open the opt-in below covered), which leaves its
// marks on what is there: the drive's state beside the image, an extended
// attribute on the image itself. Every other name, whatever it ends in, is
// the plain file the programs tapekit replaces make of it (GNU tar's rmt
// overwrites /x/nightly.tap; it never turns it into a tape).
#pragma once

#include <string>
#include <sys/stat.h>
#include <vector>

#include "tape.hpp"

namespace tk {

// The extended attribute every image opened as a virtual tape carries
// (where the file system keeps user attributes), so that an image moved
// away from its state stays one.
inline constexpr const char* kVirtualTapeAttribute = "user.tapekit.virtual-tape";

// The opt-in: shell patterns saying which names are virtual tapes, new ones
// included (rmt --virtual-tapes, $TAPEKIT_VIRTUAL_TAPES). A pattern without
// "/" matches the last component of a name in any directory ("*.tap"); one
// with "/" matches the whole path ("/srv/tapes/*"), relative ones taken
// from the working directory. Either is matched against the file the open
// reaches: symlinks and the directory's own name resolved.
class VirtualTapeNames {
 public:
  VirtualTapeNames() = default;
  explicit VirtualTapeNames(const std::vector<std::string>& patterns);
  // The patterns of $TAPEKIT_VIRTUAL_TAPES, separated by ":"; none when it
  // is unset or empty.
  static VirtualTapeNames from_environment();
  // Whether resolved (an absolute path, every symlink resolved) is named.
  bool covers(const std::string& resolved) const;
  bool empty() const noexcept { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string text;
    bool whole_path = false;
  };
  std::vector<Pattern> patterns_;
};

// The opt-in options ask for: options.virtual_tapes when set, else the
// environment's.
VirtualTapeNames virtual_tape_names(const OpenOptions& options);

// Whether the regular file name (relative to dir_fd; its last symlinks not
// followed with O_NOFOLLOW in flags) was made a virtual tape: its drive
// state is beside it, or it carries kVirtualTapeAttribute, or the attribute
// earlier versions put on every image they opened.
bool made_virtual_tape(int dir_fd, const std::string& name, int flags);

// Whether open_tape opens the local name as a virtual tape: found says
// whether something is there (st: what the open will reach). A regular file
// made one, or a regular file or new name the opt-in covers; nothing else.
bool opens_virtual_tape(const std::string& name, int flags, bool found, const struct stat& st,
                        const OpenOptions& options);

// The same question for a tool that has not opened name yet (mt's
// virtual-tape and health commands): a local name, followed as an open
// follows it.
bool is_virtual_tape(const std::string& name, const OpenOptions& options);

// Puts kVirtualTapeAttribute on the image open as fd, where the file system
// and the caller's rights allow (elsewhere the drive state alone marks it).
void mark_virtual_tape(int fd);

}  // namespace tk
