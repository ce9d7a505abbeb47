// How rmt opens what its policy allowed (policy.hpp decides what). Kept
// apart from the policy so that safety never rests on a check made before
// the open: under --allow the open itself cannot leave the allowed tree.
#pragma once

#include <memory>
#include <sys/types.h>
#include <vector>

#include "../../lib/io.hpp"
#include "../../lib/tape/tape.hpp"
#include "policy.hpp"

namespace tk::rmt_server {

// The files the server must never open for a client: its own standard
// input, output and error (the connection), by device and inode.
class OwnStdio {
 public:
  // Records fds as they are now; a character device that is no terminal
  // (/dev/null) carries no session and is left out.
  explicit OwnStdio(std::initializer_list<int> fds);
  bool is_own(dev_t dev, ino_t ino) const noexcept;

 private:
  struct Id {
    dev_t dev;
    ino_t ino;
  };
  std::vector<Id> ids_;
};

// An open tape and, under --allow, the directory it was opened from, which
// the tape may reach its sidecar files through until it is closed.
struct OpenedTape {
  std::unique_ptr<Tape> tape;
  Fd directory;
  // The tape holds written records in this process before they reach the
  // kernel (a virtual tape's drive buffer), where they would die with it;
  // st's buffer is the kernel's, and files are written as they come.
  bool holds_writes = false;
};

// Opens what d says, with options (create mode) as given.
//  - Under --allow (d.root set): the root is opened, the name's directory
//    beneath it with open_beneath (openat2 RESOLVE_BENEATH, or the O_NOFOLLOW
//    walk), and the last component from there with O_NOFOLLOW; only a
//    regular file, a character device or a name not there yet is opened, so
//    no FIFO can hold the session (EACCES otherwise, EISDIR for a directory).
//  - Unrestricted: as named, but a magic link on the way (/dev/stdin,
//    /proc/PID/fd/N) is refused with EACCES.
// Either way a file that is the server's own stdio is refused with EACCES,
// checked before the open and again on the descriptor opened.
OpenedTape open_decided(const OpenDecision& d, OpenOptions options, const OwnStdio& own);

}  // namespace tk::rmt_server
