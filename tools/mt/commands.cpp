// The mt command table: mt-st 1.7's commands in mt-st's order (the order is
// the prefix-matching order and the -h list), then tapekit's own commands.
#include "commands.hpp"

#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <cstdio>
#include <iostream>
#include <string_view>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <vector>

#include "../../lib/escape.hpp"
#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../../lib/json.hpp"
#include "../../lib/tape/tape.hpp"
#include "status_text.hpp"
#include "session.hpp"

namespace tk::mt {
namespace {

enum class Access { none, read, read_write };

// mt-st's error_tests: after a failure, explain it from MTIOCGET.
enum Tests : unsigned { no_tests = 0, online = 1, write_protect = 2 };

constexpr int many_args = 255;

// MTSETDRVBUFFER sub-commands (docs/tape-semantics.md, "MTSETDRVBUFFER"); the
// last three are in <linux/mtio.h> only, which cannot be included beside
// <sys/mtio.h>.
constexpr std::uint32_t st_options_mask = MT_ST_OPTIONS;
constexpr std::uint32_t st_booleans = MT_ST_BOOLEANS;
constexpr std::uint32_t st_write_threshold = MT_ST_WRITE_THRESHOLD;
constexpr std::uint32_t st_set_booleans = MT_ST_SETBOOLEANS;
constexpr std::uint32_t st_clear_booleans = MT_ST_CLEARBOOLEANS;
constexpr std::uint32_t st_def_blksize = MT_ST_DEF_BLKSIZE;
constexpr std::uint32_t st_def_options = MT_ST_DEF_OPTIONS;
constexpr std::uint32_t st_def_density = MT_ST_DEF_DENSITY;
constexpr std::uint32_t st_def_compression = MT_ST_DEF_COMPRESSION;
constexpr std::uint32_t st_def_drvbuffer = MT_ST_DEF_DRVBUFFER;
constexpr std::uint32_t st_timeouts = 0x70000000;  // MT_ST_SET_TIMEOUT
constexpr std::uint32_t st_long_timeout = 0x70100000;  // MT_ST_SET_LONG_TIMEOUT
constexpr std::uint32_t st_set_cln = 0x80000000;  // MT_ST_SET_CLN

struct Command;
using Handler = int (*)(Session&, const Command&, const Args&);

struct Command {
  std::string_view name;
  tk::MtOp op;
  Handler handler;
  std::uint32_t count_bits;  // MTSETDRVBUFFER sub-command, or'ed into the count
  Access access;
  int max_args;
  unsigned tests;
  bool exact_only;  // tapekit's own commands are never matched by a prefix
};

struct StOption {
  std::string_view name;
  std::uint32_t bit;
  std::string_view explanation;
};

// mt-st 1.8's driver option names, in its matching order; the bits glibc's
// <sys/mtio.h> lacks are <linux/mtio.h>'s, named beside them. weof-no-wait
// (MT_ST_NOWAIT_EOF) is new in 1.8, placed and explained as 1.8's table has it.
constexpr std::array<StOption, 17> st_option_table{{
    {"buffer-writes", MT_ST_BUFFER_WRITES, "buffered writes"},
    {"async-writes", MT_ST_ASYNC_WRITES, "asynchronous writes"},
    {"read-ahead", MT_ST_READ_AHEAD, "read-ahead for fixed block size"},
    {"debug", MT_ST_DEBUGGING, "debugging (if compiled into driver)"},
    {"two-fms", MT_ST_TWO_FM, "write two filemarks when file closed"},
    {"fast-eod", MT_ST_FAST_MTEOM, "space directly to eod (and lose file number)"},
    {"auto-lock", MT_ST_AUTO_LOCK, "automatically lock/unlock drive door"},
    {"def-writes", MT_ST_DEF_WRITES, "the block size and density are for writes"},
    {"can-bsr", MT_ST_CAN_BSR, "drive can space backwards well"},
    {"no-blklimits", MT_ST_NO_BLKLIMS, "drive doesn't support read block limits"},
    {"can-partitions", MT_ST_CAN_PARTITIONS, "drive can handle partitioned tapes"},
    {"scsi2logical", MT_ST_SCSI2LOGICAL, "logical block addresses used with SCSI-2"},
    {"no-wait", 0x2000, "immediate mode for rewind, etc."},  // MT_ST_NOWAIT
    {"weof-no-wait", 0x8000, "immediate mode for writing filemarks"},  // MT_ST_NOWAIT_EOF
    {"sysv", 0x1000, "enable the SystemV semantics"},  // MT_ST_SYSV
    {"sili", 0x4000, "enable SILI for variable block mode"},  // MT_ST_SILI
    {"cleaning", st_set_cln, "set the cleaning bit location and mask"},
}};

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.substr(0, prefix.size()) == prefix;
}

// strtol(text, NULL, 0) stored into an int, as mt-st does (C++20 defines the
// narrowing as modulo 2^32, which is what mt-st's compiler does).
int c_count(const std::string& text) {
  return static_cast<int>(std::strtol(text.c_str(), nullptr, 0));
}

int device_op(Session& s, tk::MtOp op, int count) {
  if (int e = attempt(s, [&] { s.tape->op(op, count); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::device);
  }
  return 0;
}

// The MTIOCTOP commands: strtol with base 0, then a k/M/G unit, checked and
// narrowed exactly as mt-st does (docs/tape-semantics.md,
// "mt's count parsing").
int do_standard(Session& s, const Command& c, const Args& args) {
  int count = 1;
  if (!args.empty()) {
    const char* text = args[0].c_str();
    char* end = nullptr;
    count = static_cast<int>(std::strtol(text, &end, 0));
    if (end != text) {
      int multiplier = 1;
      if (*end == 'k')
        multiplier = 1024;
      else if (*end == 'M')
        multiplier = 1024 * 1024;
      else if (*end == 'G')
        multiplier = 1024 * 1024 * 1024;
      else if (*end != '\0') {
        s.diagnostics += "mt: illegal count unit.\n";
        return static_cast<int>(Exit::count);
      }
      // abs() as mt-st's C library computes it: abs(INT_MIN) stays INT_MIN.
      auto u = static_cast<std::uint32_t>(count);
      auto magnitude = static_cast<int>(count < 0 ? 0U - u : u);
      if (magnitude > INT_MAX / multiplier) {
        s.diagnostics += "mt: repeat count too large.\n";
        return static_cast<int>(Exit::count);
      }
      count = static_cast<int>(u * static_cast<std::uint32_t>(multiplier));
    }
  }
  count = static_cast<int>(static_cast<std::uint32_t>(count) | c.count_bits);
  if (c.op != tk::MtOp::mkpart && count < 0) {
    s.diagnostics += "mt: negative repeat count\n";
    return static_cast<int>(Exit::usage);
  }
  return device_op(s, c.op, count);
}

// MTSETDRVBUFFER with a masked number: strtol, no units, junk ignored.
int do_drvbuffer(Session& s, const Command& c, const Args& args) {
  auto value = static_cast<std::uint32_t>(args.empty() ? 1 : c_count(args[0]));
  std::uint32_t selector = c.count_bits & st_options_mask;
  if (selector == st_def_options)
    value &= 0xfffff;
  else if (selector == st_timeouts)
    value &= 0x7ffffff;
  else
    value &= 0xfffffff;
  return device_op(s, tk::MtOp::setdrvbuffer, static_cast<int>(value | c.count_bits));
}

// stoptions/stsetoptions/stclearoptions: one number, or option names each
// matched by prefix (first hit, ambiguous only against later entries).
int do_options(Session& s, const Command& c, const Args& args) {
  std::uint32_t bits = 0;
  if (!args.empty() && args[0][0] >= '0' && args[0][0] <= '9') {
    bits = static_cast<std::uint32_t>(c_count(args[0])) & ~st_options_mask;
  } else {
    for (const auto& arg : args) {
      std::size_t i = 0;
      while (i < st_option_table.size() && !starts_with(st_option_table[i].name, arg)) ++i;
      if (i == st_option_table.size()) {
        s.diagnostics += "Illegal property name '" + arg + "'.\n";
        s.diagnostics += "The implemented property names are:\n";
        for (const auto& o : st_option_table)
          s.diagnostics += format("  %9.*s -> %.*s\n", static_cast<int>(o.name.size()),
                                  o.name.data(), static_cast<int>(o.explanation.size()),
                                  o.explanation.data());
        return static_cast<int>(Exit::usage);
      }
      bits |= st_option_table[i].bit;
      if (arg.size() != st_option_table[i].name.size())
        for (std::size_t j = i + 1; j < st_option_table.size(); ++j)
          if (starts_with(st_option_table[j].name, arg)) {
            s.diagnostics += "Property name '" + arg + "' ambiguous.\n";
            return static_cast<int>(Exit::usage);
          }
    }
  }
  return device_op(s, tk::MtOp::setdrvbuffer, static_cast<int>(bits | c.count_bits));
}

int do_tell(Session& s, const Command&, const Args&) {
  std::int64_t block = 0;
  if (int e = attempt(s, [&] { block = s.tape->tell(); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::device);
  }
  if (s.inv.json)
    std::cout << tk::JsonObject().string("device", s.inv.device).integer("block", block).line();
  else
    std::cout << format("At block %lld.\n", static_cast<long long>(block));
  return 0;
}

int do_status(Session& s, const Command&, const Args&) {
  tk::StatusReport report;
  if (int e = attempt(s, [&] { report = s.tape->status_report(); })) {
    s.diagnostics += perror_text(s.inv.device, e);
    return static_cast<int>(Exit::device);
  }
  std::cout << (s.inv.json
                    ? status_json(s.inv.device, report.mtget, report.status, s.density_table) + "\n"
                    : status_text(report.mtget, s.density_table));
  return 0;
}

int do_densities(Session& s, const Command&, const Args&) {
  std::cout << densities_text(s.density_table);
  return 0;
}

int do_partseek(Session& s, const Command&, const Args& args) {
  if (int r = device_op(s, tk::MtOp::setpart, args.empty() ? 0 : c_count(args[0]))) return r;
  return device_op(s, tk::MtOp::seek, args.size() > 1 ? c_count(args[1]) : 0);
}

int do_asf(Session& s, const Command&, const Args& args) {
  if (int r = device_op(s, tk::MtOp::rewind, 1)) return r;
  int files = args.empty() ? 0 : c_count(args[0]);
  return files > 0 ? device_op(s, tk::MtOp::fsf, files) : 0;
}

// TAPEKIT_MT_DENSITY_TABLE: unset or empty, mt-st 1.8's names; "1.7" for
// scripts that parse what 1.7 printed (a 1.7-era LTFSArchiver strips
// "(no translation)" after the code, and takes "0x60(LTO-9)." for no code).
DensityTable density_table_from_environment() {
  const char* value = std::getenv("TAPEKIT_MT_DENSITY_TABLE");
  if (value == nullptr || *value == '\0') return DensityTable::mt_st_1_8;
  if (auto table = density_table_named(value)) return *table;
  throw tk::ExactExit(static_cast<int>(Exit::usage),
                      "mt: TAPEKIT_MT_DENSITY_TABLE=" + json_string(value) +
                          ": not a density table (1.7 or 1.8)\n");
}

// The st driver's minor-number layout (drivers/scsi/st.h): 2 mode bits.
std::string sysfs_options_path(dev_t rdev) {
  static constexpr std::array<const char*, 16> suffixes{
      "", "r", "k", "s", "l", "t", "o", "u", "m", "v", "p", "x", "a", "y", "q", "z"};
  unsigned minor_number = ::minor(rdev);
  unsigned tape = ((minor_number & ~255U) >> 3) | (minor_number & 31U);
  unsigned mode = ((minor_number & 0x60U) >> 5) << 2;
  return format("/sys/class/scsi_tape/st%u%s/options", tape, suffixes[mode & 15U]);
}

int do_show_options(Session& s, const Command&, const Args&) {
  struct stat st {};
  int fd = s.tape->poll_fd();
  if (fd < 0 || ::fstat(fd, &st) == -1 || (st.st_mode & S_IFCHR) == 0) {
    // mt-st tests the S_IFCHR bit alone; remote and image tapes have no node.
    // A remote drive's options live in the other host's sysfs, which the rmt
    // protocol cannot read: say so rather than blame the name.
    if (tk::opens_remote(s.inv.device, s.inv.open_options))
      s.diagnostics += "mt: " + s.inv.device +
                       " is a remote device; stshowoptions reads the st driver's options from "
                       "this host's sysfs (run it on the tape host).\n";
    else
      s.diagnostics += "mt: not a character device.\n";
    return static_cast<int>(Exit::usage);
  }
  std::string path = sysfs_options_path(st.st_rdev);
  std::array<char, 21> buf{};
  int failed = attempt(s, [&] {
    tk::Fd options = tk::open_file(path, O_RDONLY);
    tk::read_record(options.get(), std::as_writable_bytes(std::span(buf.data(), 20)), path);
  });
  if (failed) {
    s.diagnostics += "Can't read the sysfs file '" + path + "'.\n";
    return static_cast<int>(Exit::device);
  }
  auto options = static_cast<std::uint32_t>(std::strtol(buf.data(), nullptr, 0));
  std::string out = "The options set:";
  for (const auto& o : st_option_table)
    if (options & o.bit) out += " " + std::string(o.name);
  std::cout << out << "\n";
  return 0;
}

template <int (*Fn)(Session&, const Args&)>
int vt_handler(Session& s, const Command&, const Args& args) {
  return Fn(s, args);
}

constexpr std::array commands{
    Command{"weof", tk::MtOp::weof, do_standard, 0, Access::read_write, 1, online | write_protect, false},
    Command{"wset", tk::MtOp::wsm, do_standard, 0, Access::read_write, 1, online | write_protect, false},
    Command{"eof", tk::MtOp::weof, do_standard, 0, Access::read_write, 1, online, false},
    Command{"fsf", tk::MtOp::fsf, do_standard, 0, Access::read, 1, online, false},
    Command{"fsfm", tk::MtOp::fsfm, do_standard, 0, Access::read, 1, online, false},
    Command{"bsf", tk::MtOp::bsf, do_standard, 0, Access::read, 1, online, false},
    Command{"bsfm", tk::MtOp::bsfm, do_standard, 0, Access::read, 1, online, false},
    Command{"fsr", tk::MtOp::fsr, do_standard, 0, Access::read, 1, online, false},
    Command{"bsr", tk::MtOp::bsr, do_standard, 0, Access::read, 1, online, false},
    Command{"fss", tk::MtOp::fss, do_standard, 0, Access::read, 1, online, false},
    Command{"bss", tk::MtOp::bss, do_standard, 0, Access::read, 1, online, false},
    Command{"rewind", tk::MtOp::rewind, do_standard, 0, Access::read, 0, online, false},
    Command{"offline", tk::MtOp::offline, do_standard, 0, Access::read, 0, online, false},
    Command{"rewoffl", tk::MtOp::offline, do_standard, 0, Access::read, 0, online, false},
    Command{"eject", tk::MtOp::offline, do_standard, 0, Access::read, 0, online, false},
    Command{"retension", tk::MtOp::retension, do_standard, 0, Access::read, 0, online, false},
    Command{"eod", tk::MtOp::eom, do_standard, 0, Access::read, 0, online, false},
    Command{"seod", tk::MtOp::eom, do_standard, 0, Access::read, 0, online, false},
    Command{"seek", tk::MtOp::seek, do_standard, 0, Access::read, 1, online, false},
    Command{"tell", tk::MtOp::tell, do_tell, 0, Access::read, 0, online, false},
    Command{"status", tk::MtOp::nop, do_status, 0, Access::read, 0, no_tests, false},
    Command{"erase", tk::MtOp::erase, do_standard, 0, Access::read_write, 1, online, false},
    Command{"setblk", tk::MtOp::setblk, do_standard, 0, Access::read, 1, no_tests, false},
    Command{"lock", tk::MtOp::lock, do_standard, 0, Access::read, 0, online, false},
    Command{"unlock", tk::MtOp::unlock, do_standard, 0, Access::read, 0, online, false},
    Command{"load", tk::MtOp::load, do_standard, 0, Access::read, 1, no_tests, false},
    Command{"compression", tk::MtOp::compression, do_standard, 0, Access::read, 1, no_tests, false},
    Command{"setdensity", tk::MtOp::setdensity, do_standard, 0, Access::read, 1, no_tests, false},
    Command{"drvbuffer", tk::MtOp::setdrvbuffer, do_drvbuffer, 0, Access::read, 1, no_tests, false},
    Command{"stwrthreshold", tk::MtOp::setdrvbuffer, do_drvbuffer, st_write_threshold, Access::read, 1, no_tests, false},
    Command{"stoptions", tk::MtOp::setdrvbuffer, do_options, st_booleans, Access::read, many_args, no_tests, false},
    Command{"stsetoptions", tk::MtOp::setdrvbuffer, do_options, st_set_booleans, Access::read, many_args, no_tests, false},
    Command{"stclearoptions", tk::MtOp::setdrvbuffer, do_options, st_clear_booleans, Access::read, many_args, no_tests, false},
    Command{"defblksize", tk::MtOp::setdrvbuffer, do_drvbuffer, st_def_blksize, Access::read, 1, no_tests, false},
    Command{"defdensity", tk::MtOp::setdrvbuffer, do_drvbuffer, st_def_density, Access::read, 1, no_tests, false},
    Command{"defdrvbuffer", tk::MtOp::setdrvbuffer, do_drvbuffer, st_def_drvbuffer, Access::read, 1, no_tests, false},
    Command{"defcompression", tk::MtOp::setdrvbuffer, do_drvbuffer, st_def_compression, Access::read, 1, no_tests, false},
    Command{"stsetcln", tk::MtOp::setdrvbuffer, do_drvbuffer, st_set_cln, Access::read, 1, no_tests, false},
    Command{"sttimeout", tk::MtOp::setdrvbuffer, do_drvbuffer, st_timeouts, Access::read, 1, no_tests, false},
    Command{"stlongtimeout", tk::MtOp::setdrvbuffer, do_drvbuffer, st_long_timeout, Access::read, 1, no_tests, false},
    Command{"densities", tk::MtOp::nop, do_densities, 0, Access::none, 0, no_tests, false},
    Command{"setpartition", tk::MtOp::setpart, do_standard, 0, Access::read, 1, online, false},
    Command{"mkpartition", tk::MtOp::mkpart, do_standard, 0, Access::read_write, 1, online, false},
    Command{"partseek", tk::MtOp::seek, do_partseek, 0, Access::read, 2, online, false},
    Command{"asf", tk::MtOp::fsf, do_asf, 0, Access::read, 1, online, false},
    Command{"stshowoptions", tk::MtOp::nop, do_show_options, 0, Access::read, 1, no_tests, false},
    Command{"vt-create", tk::MtOp::nop, vt_handler<vt_create>, 0, Access::none, 5, no_tests, true},
    Command{"vt-protect", tk::MtOp::nop, vt_handler<vt_protect>, 0, Access::none, 1, no_tests, true},
    Command{"vt-alert", tk::MtOp::nop, vt_handler<vt_alert>, 0, Access::none, 64, no_tests, true},
    Command{"verify", tk::MtOp::nop, vt_handler<verify_image>, 0, Access::none, 0, no_tests, true},
    Command{"tapealert", tk::MtOp::nop, vt_handler<health_tapealert>, 0, Access::none, 2, no_tests, true},
    Command{"capacity", tk::MtOp::nop, vt_handler<health_capacity>, 0, Access::none, 0, no_tests, true},
    Command{"cartridge", tk::MtOp::nop, vt_handler<health_cartridge>, 0, Access::none, 0, no_tests, true},
    Command{"encryption", tk::MtOp::nop, vt_handler<health_encryption>, 0, Access::none, 0, no_tests, true},
    Command{"health", tk::MtOp::nop, vt_handler<health_report>, 0, Access::none, 0, no_tests, true},
};

// mt-st's lookup: the first entry the word is a prefix of; if the word is not
// that whole name and any later entry also starts with it, it is ambiguous.
const Command& find_command(const std::string& word) {
  for (const auto& c : commands)
    if (c.exact_only && c.name == word) return c;
  const Command* hit = nullptr;
  for (const auto& c : commands) {
    if (c.exact_only || !starts_with(c.name, word)) continue;
    if (hit == nullptr) {
      hit = &c;
      if (word.size() == c.name.size()) break;
    } else {
      throw tk::ExactExit(static_cast<int>(Exit::usage),
                          "mt: ambiguous command \"" + word + "\"\n" + usage_text(true));
    }
  }
  if (hit == nullptr)
    throw tk::ExactExit(static_cast<int>(Exit::usage),
                        "mt: unknown command \"" + word + "\"\n" + usage_text(true));
  return *hit;
}

// mt-st's test_error(): explain a failure from the drive's status (SCSI
// drives only). The write-protect hint comes when the bit is set, as in 1.8
// (1.7 printed it when the bit was clear).
void explain_failure(Session& s, const Command& c) {
  tk::StatusReport report;
  if (attempt(s, [&] { report = s.tape->status_report(); })) return;
  if (report.mtget.type != MT_ISSCSI1 && report.mtget.type != MT_ISSCSI2) return;
  auto gstat = static_cast<std::uint64_t>(report.mtget.gstat);
  if ((c.tests & online) && !(gstat & tk::gmt::online))
    s.diagnostics += "mt: The device is offline (not powered on, no tape ?).\n";
  if ((c.tests & write_protect) && (gstat & tk::gmt::wr_prot))
    s.diagnostics += "mt: The tape is write-protected.\n";
}

}  // namespace

std::string usage_text(bool explain) {
  std::string out = "usage: mt [-v] [--version] [-h] [ -f device ] command [ count ]\n";
  out += std::string("default tape device: ") + default_device + "\n";
  if (!explain) return out;
  std::vector<std::string_view> names;
  for (const auto& c : commands)
    if (!c.exact_only) names.push_back(c.name);
  std::string line = "commands: ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    line += names[i];
    bool last = i + 1 == names.size();
    line += last ? "." : ", ";
    if (line.size() >= 70 || last) {
      out += line + "\n";
      line = "          ";
    }
  }
  return out;
}

std::string help_text() {
  return usage_text(true) +
         "tapekit extensions:\n"
         "  vt-create capacity [--barcode label] [--manufactured yyyy-mm-dd]\n"
         "                       make the file a blank virtual tape; capacity 0: unlimited\n"
         "  vt-protect 1|0       set or clear a virtual tape's write protection\n"
         "  vt-alert n|-n|clear  raise or clear a virtual tape's TapeAlert flag n (1-64)\n"
         "  verify               check a virtual tape's structure, report the first damage\n"
         "  tapealert [--fail-on critical|warning]\n"
         "                       active TapeAlert flags: number, name, severity (exit 1\n"
         "                       with --fail-on when a flag that severe or worse is active)\n"
         "  capacity             remaining and maximum capacity of each partition, in MiB\n"
         "  cartridge            the cartridge memory: barcode, serial, load count, ...\n"
         "  encryption           the drive's data encryption status\n"
         "  health               the drive (INQUIRY), then all four (--json: one object,\n"
         "                       with status); st drives, remote ones, virtual tapes\n" +
         option_lines();
}

int run_command(const Invocation& inv) {
  const Command& c = find_command(inv.command);
  if (c.max_args != many_args && c.max_args < static_cast<int>(inv.args.size()))
    throw tk::ExactExit(static_cast<int>(Exit::usage),
                        "mt: too many arguments for the command '" + std::string(c.name) + "'.\n");
  if (inv.json && c.handler != do_status && c.handler != do_tell &&
      c.handler != vt_handler<health_report>)
    throw tk::ExactExit(static_cast<int>(Exit::usage),
                        "mt: --json applies to status, tell and health only\n");
  if (inv.fail_on && c.handler != vt_handler<health_tapealert>)
    throw tk::ExactExit(static_cast<int>(Exit::usage), "mt: --fail-on applies to tapealert only\n");

  Session s{inv, nullptr, {}, {}};
  if (c.handler == do_status || c.handler == do_densities || c.handler == vt_handler<health_report>)
    s.density_table = density_table_from_environment();
  if (c.access != Access::none) {
    int flags = c.access == Access::read ? O_RDONLY : O_RDWR;
    if ((c.tests & online) == 0) flags |= O_NONBLOCK;
    // To open_tape "-" is standard input or output; mt-st opens a file of
    // that name, so a script's "mt -f -" must not act on whatever its own
    // stdin or stdout is.
    const std::string open_name = inv.device == "-" ? "./-" : inv.device;
    tk::OpenOptions options = inv.open_options;
    // What the drive found on loading (an unfinished write completed or left
    // for a writer, an image changed behind its back): mt-st has no such
    // line, and an operator must see it whatever the command does.
    options.warn = [](const std::string& text) { std::fputs(("mt: " + text + "\n").c_str(), stderr); };
    // rewind and eod put the drive at an absolute position, so they are how
    // an image whose drive state cannot be read is taken up again.
    options.replace_unusable_state = c.handler == do_standard &&
                                     (c.op == tk::MtOp::rewind || c.op == tk::MtOp::eom);
    try {
      s.tape = tk::open_tape(open_name, flags, options);
    } catch (const tk::Error& e) {
      // mt-st's perror(device) line; a remote open that failed for more than
      // the errno says (the remote shell ended, the link broke) keeps why,
      // and so does a drive that did not open within --open-timeout.
      bool said_more = e.context() != "open " + inv.device;
      std::string text = said_more && (tk::opens_remote(inv.device, inv.open_options) ||
                                       e.errnum() == ETIMEDOUT)
                             ? "mt: " + std::string(e.what()) + "\n"
                             : perror_text(inv.device, e.errnum());
      if (const auto* damaged = dynamic_cast<const tk::DamagedImage*>(&e))
        text += "mt: " + inv.device + ": " + damaged->damage() + "\n";
      throw tk::ExactExit(static_cast<int>(Exit::usage), text);
    }
  }

  int status = c.handler(s, c, inv.args);
  const std::string damage = status != 0 ? s.damage : std::string();
  // mt-st also has a "Command not supported by this kernel." hint for ENOSYS,
  // but its perror() has replaced errno by then, so 1.7 never prints it.
  if (status != 0 && c.tests != no_tests) explain_failure(s, c);
  // A virtual tape knows where it is damaged; mt-st's perror line cannot say.
  if (!damage.empty())
    s.diagnostics += "mt: " + inv.device + ": " + damage + "\n";
  if (s.tape) {
    int e = attempt(s, [&] { s.tape->close(); });
    if (e && status == 0) {
      s.diagnostics += perror_text(inv.device, e);
      status = static_cast<int>(Exit::device);
    }
  }
  if (status != 0) throw tk::ExactExit(status, s.diagnostics);
  return status;
}

}  // namespace tk::mt
