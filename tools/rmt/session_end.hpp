// How an rmt request stops short of its success reply: refused with an E
// reply, or ending the session. The session and its stream set share them.
#pragma once

#include <string>

#include "server.hpp"

namespace tk::rmt_server {

// Ends the session: the control stream cannot be trusted any more.
struct SessionEnd {
  Exit status;
  std::string reason;
};

// A request refused before it reached the tape: errno plus reply text.
struct Refusal {
  int errnum;
  const char* text;
};

}  // namespace tk::rmt_server
