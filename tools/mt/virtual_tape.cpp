// mt's virtual-tape commands: vt-create, vt-protect and verify on *.tap images.
#include "session.hpp"

#include <iostream>
#include <string_view>

#include "../../lib/size.hpp"
#include "../../lib/tape/simh_tape.hpp"

namespace tk::mt {
namespace {

bool is_virtual_tape_name(const std::string& name, const tk::OpenOptions& options) {
  constexpr std::string_view suffix = ".tap";
  return !tk::opens_remote(name, options) && name.size() > suffix.size() &&
         std::string_view(name).substr(name.size() - suffix.size()) == suffix;
}

int refuse_non_image(Session& s, std::string_view command) {
  s.diagnostics += "mt: " + std::string(command) + ": " + s.inv.device +
                   " is not a virtual tape (a *.tap image)\n";
  return static_cast<int>(Exit::usage);
}

// What the drive did for a writer that never closed, in an operator's words.
std::string recovery_text(const tk::Recovery& r) {
  std::string t = "the drive completed a write session whose writer never closed it (killed, or power lost): ";
  if (r.cut_bytes > 0)
    t += std::to_string(r.cut_bytes) + " bytes of a record cut short were removed at offset " +
         std::to_string(r.cut_at);
  else
    t += "nothing was cut short";
  t += r.wrote_filemark ? ", the filemark its close would have written was written"
                        : ", no filemark was needed";
  if (r.file >= 0) t += ", and the drive was left at file " + std::to_string(r.file);
  return t;
}

}  // namespace

int vt_create(Session& s, const Args& args) {
  if (!is_virtual_tape_name(s.inv.device, s.inv.open_options)) return refuse_non_image(s, "vt-create");
  if (args.empty()) {
    s.diagnostics += "mt: vt-create needs a capacity (0 = unlimited)\n";
    return static_cast<int>(Exit::usage);
  }
  std::uint64_t capacity = tk::parse_size(args[0], "capacity");
  if (int e = attempt(s, [&] { tk::create_virtual_tape(s.inv.device, capacity); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::device);
  }
  return 0;
}

int vt_protect(Session& s, const Args& args) {
  if (!is_virtual_tape_name(s.inv.device, s.inv.open_options)) return refuse_non_image(s, "vt-protect");
  if (args.size() != 1 || (args[0] != "1" && args[0] != "0")) {
    s.diagnostics += "mt: vt-protect takes 1 (protect) or 0 (allow writing)\n";
    return static_cast<int>(Exit::usage);
  }
  if (int e = attempt(s, [&] { tk::set_virtual_tape_protect(s.inv.device, args[0] == "1"); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::device);
  }
  return 0;
}

int verify_image(Session& s, const Args&) {
  if (!is_virtual_tape_name(s.inv.device, s.inv.open_options)) return refuse_non_image(s, "verify");
  std::optional<tk::SimhDefect> defect;
  std::string pending;
  if (int e = attempt(s, [&] { defect = tk::validate_simh_image(s.inv.device, &pending); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::usage);
  }
  // An unfinished session is what the image holds now, damage included; the
  // line after says what the next writer will do about it.
  const std::string pending_line = pending.empty() ? "" : s.inv.device + ": " + pending + "\n";
  if (defect) {
    s.diagnostics += s.inv.device + ": damaged at byte offset " + std::to_string(defect->offset) +
                     ": " + defect->what + "\n" + pending_line;
    return static_cast<int>(Exit::device);
  }
  std::cout << s.inv.device << ": no structural errors\n" << pending_line;
  std::optional<tk::Recovery> recovery;
  (void)attempt(s, [&] { recovery = tk::last_recovery(s.inv.device); });
  if (recovery) std::cout << s.inv.device << ": " << recovery_text(*recovery) << "\n";
  return 0;
}

}  // namespace tk::mt
