// mt's drive-health commands: tapealert, capacity, cartridge, encryption and
// --json health, each a fixed read-only SCSI command (lib/scsi) the Tape
// answers: a local st drive through SG_IO on the st node itself (or on its
// sg node, which answers all but the tape status), a remote
// one through tapekit's rmt (i29811), a virtual tape from its image and
// cartridge memory (simh_tape.cpp). A plain file or another rmt gets one
// line saying so (exit 2).
#include "session.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <iostream>
#include <optional>
#include <string_view>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "../../lib/escape.hpp"
#include "../../lib/io.hpp"
#include "../../lib/json.hpp"
#include "../../lib/scsi/pages.hpp"
#include "../../lib/scsi/sg_io.hpp"
#include "../../lib/tape/virtual_tapes.hpp"

namespace tk::mt {
namespace {

namespace scsi = tk::scsi;

// Why a local name cannot report drive health (it is no character
// device and no virtual tape), or empty. Remote drives and virtual tapes
// answer through their Tape (tapekit's rmt, the image); other servers
// refuse there.
std::string health_refusal(const Invocation& inv) {
  const std::string& name = inv.device;
  if (tk::opens_remote(name, inv.open_options) || tk::is_virtual_tape(name, inv.open_options))
    return {};
  struct stat st {};
  // A name that is not there is left to the open, for mt's perror line.
  if (::stat(name.c_str(), &st) != 0 || S_ISCHR(st.st_mode)) return {};
  const char* kind = S_ISREG(st.st_mode)   ? "a plain file"
                     : S_ISBLK(st.st_mode) ? "a block device"
                     : S_ISDIR(st.st_mode) ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                                            : "a socket";
  return name + " is " + kind + ", not a tape drive: it cannot report drive health";
}

// Opens the drive as status does (O_NONBLOCK: no tape needed), or leaves
// the reason in s.diagnostics and returns the exit status.
int open_drive(Session& s) {
  std::string refusal = health_refusal(s.inv);
  if (!refusal.empty()) {
    s.diagnostics += "mt: " + refusal + "\n";
    return static_cast<int>(Exit::device);
  }
  try {
    s.tape = tk::open_tape(s.inv.device, O_RDONLY | O_NONBLOCK, s.inv.open_options);
  } catch (const tk::Error& e) {
    s.diagnostics += perror_text(s.inv.device, e.errnum());
    return static_cast<int>(Exit::usage);
  }
  return 0;
}

std::vector<std::uint8_t> ask(const Session& s, scsi::HealthQuery query) {
  return s.tape->health_data(query);
}

scsi::Inquiry read_inquiry(const Session& s) {
  return scsi::parse_inquiry(ask(s, scsi::HealthQuery::inquiry));
}

// The line a failed section gets: a server that cannot be asked is named
// without the command, which was never sent.
std::string failure_line(const Session& s, const tk::Error& e) {
  const auto* scsi_error = dynamic_cast<const scsi::ScsiError*>(&e);
  if (scsi_error != nullptr && scsi_error->refusal() == scsi::Refusal::other_server)
    return "mt: " + s.inv.device + ": " + scsi_error->reason() + "\n";
  return "mt: " + s.inv.device + ": " + e.what() + "\n";
}

// One VPD page's answer in the drive's identity: left out where the server
// predates the question (asked false), null where the drive lacks the page
// or sent it malformed (its line goes to stderr), else the value.
template <class T>
struct VpdAnswer {
  bool asked = false;
  std::optional<T> value;
};

// What the drive says of itself is printed escaped (printable_text): its
// bytes must not end the line or reach the terminal as a sequence.
// The drive's identity: INQUIRY, the unit serial number when the drive
// (or the server before it) answers VPD page 0x80, and the SSC pages of
// the manufacturer-assigned serial number and the TapeAlert flags the
// drive supports.
struct Drive {
  scsi::Inquiry inquiry;
  std::optional<std::string> serial_number;
  VpdAnswer<std::string> manufacturer_serial_number;
  VpdAnswer<std::uint64_t> tapealert_supported;
};

// Flag numbers as runs: "1-9, 11, 20-22", or "none".
std::string flag_runs_text(std::uint64_t mask) {
  std::string out;
  for (int flag = 1; flag <= 64; ++flag) {
    if (((mask >> (flag - 1)) & 1U) == 0) continue;
    int last = flag;
    while (last < 64 && ((mask >> last) & 1U) != 0) ++last;
    out += (out.empty() ? "" : ", ") + std::to_string(flag) +
           (last > flag ? "-" + std::to_string(last) : std::string());
    flag = last;
  }
  return out.empty() ? "none" : out;
}

std::string inquiry_text(const Drive& d) {
  const scsi::Inquiry& i = d.inquiry;
  std::string out = "drive: " + printable_text(i.vendor) + " " + printable_text(i.product) + " " +
                    printable_text(i.revision) + "\n";
  if (d.serial_number) out += "drive serial number: " + printable_text(*d.serial_number) + "\n";
  if (const auto& m = d.manufacturer_serial_number.value)
    out += "manufacturer-assigned serial number: " + (m->empty() ? "empty" : printable_text(*m)) + "\n";
  if (const auto& t = d.tapealert_supported.value)
    out += "TapeAlert flags supported: " + flag_runs_text(*t) + "\n";
  return out;
}

std::string inquiry_json(const Drive& d) {
  const scsi::Inquiry& i = d.inquiry;
  tk::JsonObject out;
  out.string("vendor", i.vendor).string("product", i.product).string("revision", i.revision);
  if (d.serial_number) out.string("serial_number", *d.serial_number);
  if (d.manufacturer_serial_number.asked) {
    const auto& m = d.manufacturer_serial_number.value;
    if (m)
      out.string("manufacturer_assigned_serial_number", *m);
    else
      out.null("manufacturer_assigned_serial_number");
  }
  if (d.tapealert_supported.asked) {
    const auto& t = d.tapealert_supported.value;
    tk::JsonArray list;
    for (int flag = 1; t && flag <= 64; ++flag)
      if ((*t >> (flag - 1)) & 1U) list.integer(flag);
    if (t)
      out.raw("tapealert_supported", list.text());
    else
      out.null("tapealert_supported");
  }
  return out.text();
}

// The serial number, or nullopt where the drive has no VPD page 0x80 or
// the server predates the question: it only adds to the identity.
std::optional<std::string> read_unit_serial_number(const Session& s) {
  std::vector<std::uint8_t> page;
  try {
    page = ask(s, scsi::HealthQuery::unit_serial_number);
  } catch (const scsi::ScsiError&) {
    return std::nullopt;
  }
  return scsi::parse_unit_serial_number(page);
}

// The VPD pages the drive lists (page 0x00), or nullopt where it gives no
// usable list: each page is then asked for itself.
std::optional<std::vector<std::uint8_t>> read_supported_vpd_pages(const Session& s) {
  try {
    return scsi::parse_supported_vpd_pages(ask(s, scsi::HealthQuery::supported_vpd_pages));
  } catch (const tk::Error&) {
    return std::nullopt;
  }
}

// One SSC VPD page of the identity. A page the drive does not list is not
// asked for (some drives answer any page code with another page); that,
// a refusal and a malformed page are each a line on stderr and null.
template <class T, class Parse>
VpdAnswer<T> read_vpd(const Session& s, const std::optional<std::vector<std::uint8_t>>& listed,
                      scsi::HealthQuery query, std::uint8_t page, Parse parse) {
  if (listed && std::find(listed->begin(), listed->end(), page) == listed->end()) {
    std::cerr << "mt: " << s.inv.device << ": " << scsi::health_cdb(query).what
              << ": the drive does not support it (VPD page 0x00 does not list it)\n";
    return {true, std::nullopt};
  }
  try {
    return {true, parse(ask(s, query))};
  } catch (const scsi::ScsiError& e) {
    if (e.refusal() == scsi::Refusal::unknown_query) return {};
    std::cerr << failure_line(s, e);
  } catch (const tk::Error& e) {
    std::cerr << failure_line(s, e);
  }
  return {true, std::nullopt};
}

// Completes the identity INQUIRY began.
void read_vpd_pages(const Session& s, Drive& d) {
  try {
    d.serial_number = read_unit_serial_number(s);
  } catch (const tk::Error& e) {
    std::cerr << failure_line(s, e);
  }
  auto listed = read_supported_vpd_pages(s);
  d.manufacturer_serial_number =
      read_vpd<std::string>(s, listed, scsi::HealthQuery::manufacturer_serial_number,
                            scsi::manufacturer_serial_number_page,
                            [](const auto& page) { return scsi::parse_manufacturer_serial_number(page); });
  d.tapealert_supported = read_vpd<std::uint64_t>(
      s, listed, scsi::HealthQuery::tapealert_supported, scsi::tapealert_supported_page,
      [](const auto& page) { return scsi::parse_tapealert_supported(page); });
}

scsi::TapeAlertPage read_tapealert(const Session& s) {
  return scsi::parse_tapealert_page(ask(s, scsi::HealthQuery::tapealert));
}

scsi::TapeCapacityPage read_capacity(const Session& s) {
  return scsi::parse_tape_capacity_page(ask(s, scsi::HealthQuery::capacity));
}

scsi::Cartridge read_cartridge(const Session& s) {
  return scsi::cartridge_from(scsi::parse_attributes(ask(s, scsi::HealthQuery::attributes)));
}

// nullopt: the drive has no encryption (ILLEGAL REQUEST).
std::optional<scsi::EncryptionStatus> read_encryption(const Session& s) {
  try {
    return scsi::parse_encryption_status(ask(s, scsi::HealthQuery::encryption));
  } catch (const scsi::ScsiError& e) {
    if (e.refusal() == scsi::Refusal::illegal_request) return std::nullopt;
    throw;
  }
}

// Runs fn; a SCSI refusal or a malformed page becomes one line on stderr
// (s.diagnostics) and exit 2.
template <class Fn>
int answer(Session& s, Fn&& fn) {
  try {
    return fn();
  } catch (const tk::Error& e) {
    s.diagnostics += failure_line(s, e);
    return static_cast<int>(Exit::device);
  }
}

std::string percent_used(const scsi::PartitionCapacity& p) {
  if (!p.remaining_mib || !p.maximum_mib || *p.maximum_mib == 0) return {};
  double used = 100.0 * static_cast<double>(*p.maximum_mib - *p.remaining_mib) /
                static_cast<double>(*p.maximum_mib);
  return format(" (%.1f%% used)", used);
}

// The line naming the parameters a page holds that mt does not decode,
// or nothing.
std::string unknown_codes_text(const std::vector<std::uint16_t>& codes) {
  if (codes.empty()) return {};
  std::string out = "parameters not decoded:";
  for (auto code : codes) out += format(" 0x%04x", static_cast<unsigned>(code));
  return out + "\n";
}

std::string unknown_codes_json(const std::vector<std::uint16_t>& codes) {
  tk::JsonArray out;
  for (auto code : codes) out.integer(code);
  return out.text();
}

std::string tapealert_text(const scsi::TapeAlertPage& page) {
  std::string out = page.flags.empty() ? "no TapeAlert flag is active\n" : "";
  for (const auto& f : page.flags)
    out += format("TapeAlert %d: %.*s (%.*s)\n", f.number, static_cast<int>(f.name.size()),
                  f.name.data(), static_cast<int>(scsi::severity_name(f.severity).size()),
                  scsi::severity_name(f.severity).data());
  return out + unknown_codes_text(page.unknown_codes);
}

std::string capacity_text(const scsi::TapeCapacityPage& page) {
  std::string out = page.partitions.empty() ? "the drive reports no capacity\n" : "";
  for (const auto& p : page.partitions) {
    out += format("partition %d:", p.partition);
    if (p.maximum_mib == scsi::no_capacity_limit_mib) {
      out += " unlimited (a virtual tape without a capacity)\n";
      continue;
    }
    if (p.remaining_mib) out += format(" %u MiB remaining", *p.remaining_mib);
    if (p.maximum_mib) out += format("%s %u MiB maximum", p.remaining_mib ? " of" : "", *p.maximum_mib);
    out += percent_used(p) + "\n";
  }
  return out + unknown_codes_text(page.unknown_codes);
}

bool is_text(const scsi::Attribute& a) {
  return a.format == scsi::AttributeFormat::ascii || a.format == scsi::AttributeFormat::text;
}

// A text attribute's value without the spaces and NULs that pad it.
std::string attribute_text(const scsi::Attribute& a) {
  std::string text(a.value.begin(), a.value.end());
  while (!text.empty() && (text.back() == ' ' || text.back() == '\0')) text.pop_back();
  return text;
}

// An attribute mt has no name for (or that is not in its name's form):
// its value as its format reads, binary up to 8 bytes as a number, longer
// binary in hex.
std::string attribute_value_text(const scsi::Attribute& a) {
  if (is_text(a)) return printable_text(attribute_text(a));
  if (!a.value.empty() && a.value.size() <= 8) {
    std::uint64_t v = 0;
    for (auto b : a.value) v = v << 8 | b;
    return std::to_string(v);
  }
  std::string out = "0x";
  for (auto b : a.value) out += format("%02x", static_cast<unsigned>(b));
  return out;
}

// The same as JSON (a number, or a string: text, or hex), as a value to
// put into an object.
std::string attribute_value_json(const scsi::Attribute& a) {
  if (is_text(a)) return json_string(attribute_text(a));
  std::string value = attribute_value_text(a);
  return value.rfind("0x", 0) == 0 ? json_string(value) : value;
}

std::string cartridge_text(const scsi::Cartridge& c) {
  std::string out;
  auto text = [&](const char* label, const std::optional<std::string>& v) {
    if (v) out += std::string(label) + ": " + printable_text(*v) + "\n";
  };
  auto number = [&](const char* label, const auto& v) {
    if (v) out += std::string(label) + ": " + std::to_string(*v) + "\n";
  };
  text("barcode", c.barcode);
  text("medium serial number", c.serial_number);
  text("medium manufacturer", c.manufacturer);
  text("manufacture date", c.manufacture_date);
  if (c.medium_type) out += format("medium type: 0x%02x\n", *c.medium_type);
  if (c.density_code) out += format("density code: 0x%02x\n", *c.density_code);
  number("load count", c.load_count);
  number("MiB written in medium life", c.mib_written);
  number("MiB read in medium life", c.mib_read);
  number("MiB remaining in partition", c.remaining_mib);
  number("MiB maximum in partition", c.maximum_mib);
  for (const auto& a : c.others)
    out += format("attribute 0x%04x: ", static_cast<unsigned>(a.id)) + attribute_value_text(a) + "\n";
  if (out.empty()) out = "the cartridge memory holds none of these attributes\n";
  return out;
}

std::string encryption_text(const std::optional<scsi::EncryptionStatus>& e) {
  if (!e) return "encryption: not supported\n";
  auto mode = [](std::string_view name, unsigned code) {
    return std::string(name) + " (" + std::to_string(code) + ")";
  };
  return "encryption mode: " + mode(scsi::encryption_mode_name(e->encryption_mode), e->encryption_mode) +
         "\ndecryption mode: " + mode(scsi::decryption_mode_name(e->decryption_mode), e->decryption_mode) +
         format("\nalgorithm index: %u\nkey instance counter: %u\n", e->algorithm_index,
                e->key_instance_counter);
}

std::string tapealert_json(const scsi::TapeAlertPage& page) {
  tk::JsonArray out;
  for (const auto& f : page.flags)
    out.raw(tk::JsonObject()
                .integer("number", f.number)
                .string("name", f.name)
                .string("severity", scsi::severity_name(f.severity))
                .text());
  return out.text();
}

std::string capacity_json(const scsi::TapeCapacityPage& page) {
  tk::JsonArray out;
  for (const auto& p : page.partitions) {
    tk::JsonObject partition;
    partition.integer("partition", p.partition);
    // No limit has no figure: both null, and "unlimited" (present only
    // then, so a drive's report keeps its keys) says why.
    if (p.maximum_mib == scsi::no_capacity_limit_mib) {
      partition.null("remaining_mib").null("maximum_mib").boolean("unlimited", true);
    } else {
      for (auto [key, mib] : {std::pair{"remaining_mib", p.remaining_mib}, {"maximum_mib", p.maximum_mib}})
        if (mib)
          partition.integer(key, *mib);
        else
          partition.null(key);
    }
    out.raw(partition.text());
  }
  return out.text();
}

std::string cartridge_json(const scsi::Cartridge& c) {
  tk::JsonObject out;
  auto text = [&](const char* key, const std::optional<std::string>& v) {
    if (v) out.string(key, *v);
  };
  auto number = [&](const char* key, const auto& v) {
    if (v) out.integer(key, *v);
  };
  text("barcode", c.barcode);
  text("medium_serial_number", c.serial_number);
  text("medium_manufacturer", c.manufacturer);
  text("manufacture_date", c.manufacture_date);
  number("medium_type", c.medium_type);
  number("density_code", c.density_code);
  number("load_count", c.load_count);
  number("mib_written", c.mib_written);
  number("mib_read", c.mib_read);
  number("remaining_mib", c.remaining_mib);
  number("maximum_mib", c.maximum_mib);
  if (!c.others.empty()) {
    tk::JsonArray list;
    for (const auto& a : c.others)
      list.raw(tk::JsonObject().integer("id", a.id).raw("value", attribute_value_json(a)).text());
    out.raw("attributes", list.text());
  }
  return out.text();
}

std::string encryption_json(const scsi::EncryptionStatus& e) {
  return tk::JsonObject()
      .string("encryption_mode", scsi::encryption_mode_name(e.encryption_mode))
      .string("decryption_mode", scsi::decryption_mode_name(e.decryption_mode))
      .integer("algorithm_index", e.algorithm_index)
      .integer("key_instance_counter", e.key_instance_counter)
      .text();
}

// Whether a local node refused MTIOCGET as a node of another driver does:
// the sg driver with EPERM (Linux 6.1, measured), others with ENOTTY or
// EINVAL. An st node fails it only for the drive's sake (EIO, ENOMEDIUM).
bool refuses_st_ioctls(const Session& s, int errnum) {
  struct stat st {};
  int fd = s.tape->poll_fd();
  return (errnum == EPERM || errnum == ENOTTY || errnum == EINVAL) && fd >= 0 &&
         ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
}

// The st node of the drive behind such a node: the st driver links its
// device into the SCSI device's folder in sysfs as "tape", whose uevent
// names it (DEVNAME=st0); mt names the no-rewind node. Empty when there
// is none.
std::string st_node_of(const Session& s) {
  struct stat st {};
  if (::fstat(s.tape->poll_fd(), &st) != 0) return {};
  const std::string path =
      format("/sys/dev/char/%u:%u/device/tape/uevent", ::major(st.st_rdev), ::minor(st.st_rdev));
  std::array<char, 512> buf{};
  std::size_t n = 0;
  try {
    tk::Fd uevent = tk::open_file(path, O_RDONLY);
    n = tk::read_full(uevent.get(), std::as_writable_bytes(std::span(buf.data(), buf.size() - 1)), path);
  } catch (const tk::Error&) {
    return {};
  }
  std::string_view text(buf.data(), n);
  constexpr std::string_view key = "DEVNAME=";
  std::size_t at = text.find(key);
  if (at == std::string_view::npos || (at > 0 && text[at - 1] != '\n')) return {};
  std::string_view name = text.substr(at + key.size());
  name = name.substr(0, name.find('\n'));
  if (name.rfind("st", 0) != 0) return {};
  return "/dev/n" + std::string(name);
}

std::string no_status_line(const Session& s, int errnum) {
  std::string st_node = st_node_of(s);
  return "mt: " + s.inv.device + ": no tape status here (MTIOCGET: " + std::strerror(errnum) + "): " +
         (st_node.empty() ? std::string("not an st node") : "the drive's st node, " + st_node + ", has it") +
         "\n";
}

// --fail-on's severity: the least severe flag that makes tapealert exit 1.
std::optional<scsi::Severity> fail_on_severity(Session& s, const Args& args, int& status) {
  std::optional<std::string> word = s.inv.fail_on;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--fail-on" && i + 1 < args.size()) {
      word = args[++i];
    } else if (args[i].rfind("--fail-on=", 0) == 0) {
      word = args[i].substr(10);
    } else {
      s.diagnostics += "mt: tapealert: unexpected argument '" + args[i] +
                       "' (tapealert takes --fail-on critical|warning)\n";
      status = static_cast<int>(Exit::usage);
      return std::nullopt;
    }
  }
  if (!word) return std::nullopt;
  if (*word == "critical") return scsi::Severity::critical;
  if (*word == "warning") return scsi::Severity::warning;
  s.diagnostics += "mt: --fail-on " + *word + ": not critical or warning\n";
  status = static_cast<int>(Exit::usage);
  return std::nullopt;
}

}  // namespace

int health_tapealert(Session& s, const Args& args) {
  int status = 0;
  auto fail_on = fail_on_severity(s, args, status);
  if (status != 0) return status;
  if (int r = open_drive(s)) return r;
  return answer(s, [&] {
    auto page = read_tapealert(s);
    std::cout << tapealert_text(page);
    for (const auto& f : page.flags)
      if (fail_on && static_cast<int>(f.severity) >= static_cast<int>(*fail_on)) return 1;
    return 0;
  });
}

// capacity, cartridge and encryption: one section read and printed.
template <class Read, class Show>
int print_section(Session& s, Read read, Show show) {
  if (int r = open_drive(s)) return r;
  return answer(s, [&] {
    std::cout << show(read(s));
    return 0;
  });
}

int health_capacity(Session& s, const Args&) {
  return print_section(s, [](Session& d) { return read_capacity(d); },
                       [](const auto& c) { return capacity_text(c); });
}

int health_cartridge(Session& s, const Args&) {
  return print_section(s, [](Session& d) { return read_cartridge(d); },
                       [](const auto& c) { return cartridge_text(c); });
}

int health_encryption(Session& s, const Args&) {
  return print_section(s, [](Session& d) { return read_encryption(d); },
                       [](const auto& e) { return encryption_text(e); });
}

// Every section that answers; each that cannot is null in JSON (or left
// out of the text) and gets its one line on stderr. Exit 0 when the drive's
// status answered, whatever the other sections did.
int health_report(Session& s, const Args&) {
  if (int r = open_drive(s)) return r;
  // The drive's identity first: a server that cannot be asked (another
  // rmt) fails the whole report in one line instead of a line a section.
  std::optional<Drive> inquiry;
  std::exception_ptr inquiry_failed;
  try {
    inquiry = Drive{read_inquiry(s), std::nullopt, {}, {}};
  } catch (const scsi::ScsiError& e) {
    if (e.refusal() == scsi::Refusal::other_server) {
      s.diagnostics += failure_line(s, e);
      return static_cast<int>(Exit::device);
    }
    inquiry_failed = std::current_exception();
  } catch (const tk::Error&) {
    inquiry_failed = std::current_exception();
  }
  auto known_inquiry = [&] {
    if (inquiry_failed) std::rethrow_exception(inquiry_failed);
    return *inquiry;
  };
  auto section = [&](auto&& read, auto&& show) -> std::string {
    try {
      return show(read());
    } catch (const tk::Error& e) {
      std::cerr << failure_line(s, e);
      return {};
    }
  };
  if (inquiry) read_vpd_pages(s, *inquiry);
  std::optional<tk::StatusReport> report(std::in_place);
  if (int e = attempt(s, [&] { report = s.tape->status_report(); })) {
    if (!inquiry || !refuses_st_ioctls(s, e)) {
      s.diagnostics += perror_text(s.inv.device, e);
      return static_cast<int>(Exit::device);
    }
    // A node that answers SCSI commands but not st's ioctls (an sg node,
    // where tapeinfo users look) has every section but the status.
    report.reset();
    if (s.inv.json) std::cerr << no_status_line(s, e);
  }
  if (!s.inv.json) {
    std::cout << section(known_inquiry, inquiry_text)
              << section([&] { return read_tapealert(s); }, tapealert_text)
              << section([&] { return read_capacity(s); }, capacity_text)
              << section([&] { return read_cartridge(s); }, cartridge_text)
              << section([&] { return read_encryption(s); }, encryption_text);
    return 0;
  }
  auto or_null = [](std::string json) { return json.empty() ? std::string("null") : json; };
  std::string status =
      report ? status_json(s.inv.device, report->mtget, report->status, s.density_table) : "null";
  // Each page is read once; its unknown codes go beside it, null with it.
  std::optional<scsi::TapeAlertPage> tapealert;
  std::optional<scsi::TapeCapacityPage> capacity;
  std::string tapealert_out = or_null(section([&] { return read_tapealert(s); },
                                              [&](const scsi::TapeAlertPage& p) {
                                                tapealert = p;
                                                return tapealert_json(p);
                                              }));
  std::string capacity_out = or_null(section([&] { return read_capacity(s); },
                                             [&](const scsi::TapeCapacityPage& p) {
                                               capacity = p;
                                               return capacity_json(p);
                                             }));
  // The sections are read in this order: their lines on stderr come so.
  std::string drive = or_null(section(known_inquiry, inquiry_json));
  std::string cartridge = or_null(section([&] { return read_cartridge(s); }, cartridge_json));
  std::string encryption = or_null(section([&] { return read_encryption(s); },
                                           [](const std::optional<scsi::EncryptionStatus>& e) {
                                             return e ? encryption_json(*e) : std::string();
                                           }));
  tk::JsonObject health;
  health.string("device", s.inv.device)
      .raw("drive", drive)
      .raw("tapealert", tapealert_out)
      .raw("tapealert_unknown_codes", tapealert ? unknown_codes_json(tapealert->unknown_codes) : "null")
      .raw("capacity", capacity_out)
      .raw("capacity_unknown_codes", capacity ? unknown_codes_json(capacity->unknown_codes) : "null")
      .raw("cartridge", cartridge)
      .raw("encryption", encryption)
      .raw("status", status);
  std::cout << health.line();
  return 0;
}

}  // namespace tk::mt
