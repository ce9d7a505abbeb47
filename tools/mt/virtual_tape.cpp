// mt's virtual-tape commands: vt-create, which makes a name a virtual tape,
// and vt-protect, vt-alert and verify on one (lib/tape/virtual_tapes.hpp).
#include "session.hpp"

#include <cerrno>
#include <charconv>
#include <iostream>
#include <optional>
#include <string_view>
#include <sys/stat.h>

#include "../../lib/size.hpp"
#include "../../lib/tape/drive_state.hpp"
#include "../../lib/tape/simh_tape.hpp"
#include "../../lib/tape/virtual_tapes.hpp"

namespace tk::mt {
namespace {

// vt-create makes a virtual tape of a local name that is not there yet or
// is an empty regular file; never of a device or anything remote.
bool may_become_virtual_tape(const std::string& name, const tk::OpenOptions& options) {
  if (tk::opens_remote(name, options)) return false;
  struct stat st {};
  return ::stat(name.c_str(), &st) != 0 ? errno == ENOENT : S_ISREG(st.st_mode);
}

// The other commands act on a virtual tape, or on a local name that is not
// there, which their open reports as mt-st reports any missing device.
bool acts_on(const std::string& name, const tk::OpenOptions& options) {
  if (tk::is_virtual_tape(name, options)) return true;
  struct stat st {};
  return !tk::opens_remote(name, options) && ::stat(name.c_str(), &st) != 0 && errno == ENOENT;
}

int refuse_non_image(Session& s, std::string_view command) {
  s.diagnostics += "mt: " + std::string(command) + ": " + s.inv.device +
                   " is not a virtual tape (mt vt-create makes one)\n";
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

// vt-create's options after the capacity: --barcode LABEL and
// --manufactured YYYY-MM-DD, each as one word (--barcode=L) or two.
bool parse_label(Session& s, const Args& args, tk::CartridgeLabel& label) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string given = args[i], name = args[i], value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
      given += " " + value;
    }
    // The MAM holds the date as YYYYMMDD; the operator writes it as ISO 8601.
    const std::string compact = value.size() == 10 && value[4] == '-' && value[7] == '-'
                                    ? value.substr(0, 4) + value.substr(5, 2) + value.substr(8, 2)
                                    : std::string();
    if (name == "--barcode" && tk::valid_label(value)) {
      label.barcode = value;
    } else if (name == "--manufactured" && tk::valid_mam_date(compact)) {
      label.manufactured = compact;
    } else {
      s.diagnostics += "mt: vt-create: '" + given +
                       "' is not --barcode LABEL (1 to 32 printable characters, no space) or "
                       "--manufactured YYYY-MM-DD\n";
      return false;
    }
  }
  return true;
}

// One flag number of vt-alert: 1 to 64.
std::optional<int> alert_number(const std::string& word) {
  int n = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), n);
  if (ec != std::errc() || end != word.data() + word.size() || n < 1 || n > 64) return std::nullopt;
  return n;
}

}  // namespace

int vt_create(Session& s, const Args& args) {
  if (!may_become_virtual_tape(s.inv.device, s.inv.open_options)) {
    s.diagnostics += "mt: vt-create: " + s.inv.device +
                     " is no local file a virtual tape can be made in\n";
    return static_cast<int>(Exit::usage);
  }
  if (args.empty()) {
    s.diagnostics += "mt: vt-create needs a capacity (0 = unlimited)\n";
    return static_cast<int>(Exit::usage);
  }
  std::uint64_t capacity = tk::parse_size(args[0], "capacity");
  tk::CartridgeLabel label;
  if (!parse_label(s, Args(args.begin() + 1, args.end()), label)) return static_cast<int>(Exit::usage);
  if (int e = attempt(s, [&] { tk::create_virtual_tape(s.inv.device, capacity, label); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::device);
  }
  return 0;
}

int vt_protect(Session& s, const Args& args) {
  if (!acts_on(s.inv.device, s.inv.open_options)) return refuse_non_image(s, "vt-protect");
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

// vt-alert N raises TapeAlert flag N, vt-alert -N clears it, vt-alert
// clear clears them all: for testing what watches the drive.
int vt_alert(Session& s, const Args& args) {
  if (!acts_on(s.inv.device, s.inv.open_options)) return refuse_non_image(s, "vt-alert");
  if (args.empty()) {
    s.diagnostics += "mt: vt-alert takes flags to raise (N), to clear (-N), or clear\n";
    return static_cast<int>(Exit::usage);
  }
  // Clearing comes first, so "clear 20" leaves flag 20 alone raised.
  std::uint64_t set = 0, clear = 0;
  for (const auto& word : args) {
    const bool off = !word.empty() && word[0] == '-';
    std::optional<int> n = alert_number(off ? word.substr(1) : word);
    if (word == "clear") {
      clear = ~std::uint64_t{0};
    } else if (n) {
      (off ? clear : set) |= std::uint64_t{1} << (*n - 1);
    } else {
      s.diagnostics += "mt: vt-alert: '" + word + "' is not a flag N or -N (1 to 64) or clear\n";
      return static_cast<int>(Exit::usage);
    }
  }
  if (int e = attempt(s, [&] { tk::set_virtual_tape_alerts(s.inv.device, set, clear); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::device);
  }
  return 0;
}

int verify_image(Session& s, const Args&) {
  if (!acts_on(s.inv.device, s.inv.open_options)) return refuse_non_image(s, "verify");
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
