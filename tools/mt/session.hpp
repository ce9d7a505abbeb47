// What one mt command runs with, and the helpers its handlers share.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/tape/tape.hpp"
#include "cmdline.hpp"
#include "status_text.hpp"

namespace tk::mt {

using Args = std::vector<std::string>;

struct Session {
  const Invocation& inv;
  std::unique_ptr<tk::Tape> tape;  // null for commands that open nothing
  std::string diagnostics;         // stderr text, shown when the command fails
  // What the last attempt() found damaged in a virtual tape, if that was why
  // it failed: detail mt-st's perror line has no room for.
  std::string damage;
  // The density names status and densities print (TAPEKIT_MT_DENSITY_TABLE).
  DensityTable density_table = DensityTable::mt_st_1_8;
};

// perror(device)'s line (perror omits the prefix for an empty name).
inline std::string perror_text(const std::string& device, int errnum) {
  return (device.empty() ? "" : device + ": ") + std::strerror(errnum) + "\n";
}

// Runs one device call and returns 0, or the errno it failed with. mt-st
// reports device failures as perror(device) lines whose exit status and
// follow-up hints depend on the step that failed, so the handlers need the
// errno back rather than an exception; this is the one place mt does so.
template <class Fn>
int attempt(Session& s, Fn&& fn) {
  s.damage.clear();
  try {
    fn();
    return 0;
  } catch (const tk::DamagedImage& e) {
    s.damage = e.damage() + (e.is_damage() ? " (mt verify shows the first damage)" : "");
    return e.errnum();
  } catch (const tk::Error& e) {
    return e.errnum();
  }
}

// tapekit's virtual-tape commands (docs/tape-semantics.md, "The virtual tape");
// each returns the exit status and leaves its message in s.diagnostics.
int vt_create(Session& s, const Args& args);
int vt_protect(Session& s, const Args& args);
int vt_alert(Session& s, const Args& args);
int verify_image(Session& s, const Args& args);

// tapekit's drive-health commands (health.cpp): st drives, remote drives
// behind tapekit's rmt, virtual tapes.
int health_tapealert(Session& s, const Args& args);
int health_capacity(Session& s, const Args& args);
int health_cartridge(Session& s, const Args& args);
int health_encryption(Session& s, const Args& args);
int health_report(Session& s, const Args& args);

}  // namespace tk::mt
