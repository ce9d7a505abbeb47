// tapectl: drives one Tape (through open_tape) from the command line so bats
// can write recognisable records, read them back and watch position and
// status. Independent of tools/ on purpose.
//
//   tapectl [-r|-w] [-n] [-t] NAME CMD [ARGS...] [: CMD [ARGS...]]...
//
//   write SIZE|fm...   one record per SIZE (content depends on size and byte
//                      index), "fm" writes a filemark
//   read N [BUF]       N reads with a BUF-byte buffer (default 1 MiB); prints
//                      one line each: the size (plus " corrupt" when the data
//                      is not what write produced), 0, or the errno name
//   show N [BUF]       like read, but prints each record's bytes as text
//   op NAME [COUNT]    one MTIOCTOP (COUNT default 1)
//   status             file=F block=B then the status bits in mt-st order
//   drive              type, partition, block size, density, compression
//   tell               the logical block address
//   health QUERY       the bytes Tape::health_data answers to scsi::HealthQuery
//                      QUERY (0-8), as hex, 16 a line (for sg3_utils' --in)
//   hold FILE SECS     create FILE once open, then keep the tape open SECS
//   bench-write SIZE TOTAL / bench-read SIZE
//                      timed bulk transfer; prints "SECONDS BYTES"
//
// The open mode is O_RDWR|O_CREAT when a command writes, else O_RDONLY; -r/-w
// force it, -n adds O_NONBLOCK, -t adds O_TRUNC. A failing command prints the
// errno name (as the last line of its output) and makes the exit status 1;
// a failed open prints "open: NAME" and exits 2.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/scsi/cdb.hpp"
#include "../../lib/tape/tape.hpp"

namespace {

using tk::MtOp;

const std::map<std::string, MtOp> op_names = {
    {"reset", MtOp::reset},       {"fsf", MtOp::fsf},
    {"bsf", MtOp::bsf},           {"fsr", MtOp::fsr},
    {"bsr", MtOp::bsr},           {"weof", MtOp::weof},
    {"rewind", MtOp::rewind},     {"offline", MtOp::offline},
    {"nop", MtOp::nop},           {"retension", MtOp::retension},
    {"bsfm", MtOp::bsfm},         {"fsfm", MtOp::fsfm},
    {"eom", MtOp::eom},           {"erase", MtOp::erase},
    {"setblk", MtOp::setblk},     {"setdensity", MtOp::setdensity},
    {"seek", MtOp::seek},         {"setdrvbuffer", MtOp::setdrvbuffer},
    {"fss", MtOp::fss},           {"bss", MtOp::bss},
    {"wsm", MtOp::wsm},           {"lock", MtOp::lock},
    {"unlock", MtOp::unlock},     {"load", MtOp::load},
    {"unload", MtOp::unload},     {"compression", MtOp::compression},
    {"setpart", MtOp::setpart},   {"mkpart", MtOp::mkpart},
    {"weofi", MtOp::weofi},
};

std::byte pattern(std::size_t size, std::size_t i) {
  return static_cast<std::byte>((i * 7 + size * 13) % 251);
}

const char* errno_name(int e) {
  const char* n = strerrorname_np(e);
  return n != nullptr ? n : "E?";
}

long number(const std::string& s) {
  std::size_t used = 0;
  long v = std::stol(s, &used, 0);
  if (used != s.size()) throw std::invalid_argument("bad number " + s);
  return v;
}

bool writes(const std::vector<std::string>& cmd) {
  if (cmd[0] == "write" || cmd[0] == "bench-write") return true;
  return cmd[0] == "op" && cmd.size() > 1 &&
         (cmd[1] == "weof" || cmd[1] == "weofi" || cmd[1] == "erase" || cmd[1] == "wsm");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void do_write(tk::Tape& tape, const std::vector<std::string>& args) {
  for (std::size_t a = 1; a < args.size(); ++a) {
    if (args[a] == "fm") {
      tape.op(MtOp::weof, 1);
      continue;
    }
    auto size = static_cast<std::size_t>(number(args[a]));
    std::vector<std::byte> rec(size);
    for (std::size_t i = 0; i < size; ++i) rec[i] = pattern(size, i);
    tape.write(rec);
  }
}

bool do_read(tk::Tape& tape, const std::vector<std::string>& args, bool show) {
  long count = args.size() > 1 ? number(args[1]) : 1;
  auto bufsize = static_cast<std::size_t>(args.size() > 2 ? number(args[2]) : 1 << 20);
  std::vector<std::byte> buf(bufsize);
  bool ok = true;
  for (long r = 0; r < count; ++r) {
    try {
      std::size_t n = tape.read(buf);
      if (show) {
        std::printf("%.*s\n", static_cast<int>(n), reinterpret_cast<const char*>(buf.data()));
        continue;
      }
      bool intact = true;
      for (std::size_t i = 0; i < n && intact; ++i) intact = buf[i] == pattern(n, i);
      std::printf("%zu%s\n", n, intact ? "" : " corrupt");
    } catch (const tk::Error& e) {
      std::printf("%s\n", errno_name(e.errnum()));
      ok = false;
    }
  }
  return ok;
}

void do_status(tk::Tape& tape) {
  tk::TapeStatus s = tape.status();
  std::printf("file=%lld block=%lld", static_cast<long long>(s.file_number),
              static_cast<long long>(s.block_number));
  const std::pair<bool, const char*> bits[] = {
      {s.eof, "EOF"},           {s.bot, "BOT"},         {s.eot, "EOT"},
      {s.sm, "SM"},             {s.eod, "EOD"},         {s.write_protected, "WR_PROT"},
      {s.online, "ONLINE"},     {s.door_open, "DR_OPEN"}, {s.immediate_report, "IM_REP_EN"},
      {s.cleaning_requested, "CLN"},
  };
  for (auto [on, name] : bits)
    if (on) std::printf(" %s", name);
  std::printf("\n");
}

void do_drive(tk::Tape& tape) {
  tk::TapeStatus s = tape.status();
  std::printf("type=0x%lx partition=%ld blksize=%u density=0x%x compression=%d\n",
              s.drive_type, s.partition, s.block_size, s.density, s.compression ? 1 : 0);
}

void do_health(tk::Tape& tape, const std::vector<std::string>& args) {
  auto query = static_cast<tk::scsi::HealthQuery>(number(args.at(1)));
  std::vector<std::uint8_t> data = tape.health_data(query);
  for (std::size_t i = 0; i < data.size(); ++i)
    std::printf("%02x%c", data[i], i % 16 == 15 || i + 1 == data.size() ? '\n' : ' ');
}

void bench_write(tk::Tape& tape, const std::vector<std::string>& args) {
  auto size = static_cast<std::size_t>(number(args.at(1)));
  auto total = static_cast<std::size_t>(number(args.at(2)));
  std::vector<std::byte> rec(size);
  for (std::size_t i = 0; i < size; ++i) rec[i] = pattern(size, i);
  auto t0 = std::chrono::steady_clock::now();
  std::size_t done = 0;
  for (; done + size <= total; done += size) tape.write(rec);
  tape.close();
  std::printf("%.3f %zu\n", seconds_since(t0), done);
}

void bench_read(tk::Tape& tape, const std::vector<std::string>& args) {
  auto size = static_cast<std::size_t>(number(args.at(1)));
  std::vector<std::byte> buf(size);
  auto t0 = std::chrono::steady_clock::now();
  std::size_t done = 0;
  for (std::size_t n; (n = tape.read(buf)) != 0;) done += n;
  std::printf("%.3f %zu\n", seconds_since(t0), done);
}

bool run(tk::Tape& tape, const std::vector<std::string>& cmd) {
  try {
    const std::string& c = cmd[0];
    if (c == "write") do_write(tape, cmd);
    else if (c == "read" || c == "show") return do_read(tape, cmd, c == "show");
    else if (c == "op") {
      auto it = op_names.find(cmd.at(1));
      if (it == op_names.end()) throw std::invalid_argument("unknown op " + cmd[1]);
      tape.op(it->second, cmd.size() > 2 ? static_cast<int>(number(cmd[2])) : 1);
    } else if (c == "status") do_status(tape);
    else if (c == "drive") do_drive(tape);
    else if (c == "health") do_health(tape, cmd);
    else if (c == "tell") std::printf("%lld\n", static_cast<long long>(tape.tell()));
    else if (c == "hold") {
      std::FILE* f = std::fopen(cmd.at(1).c_str(), "w");
      if (f != nullptr) std::fclose(f);
      std::this_thread::sleep_for(std::chrono::seconds(number(cmd.at(2))));
    } else if (c == "bench-write") bench_write(tape, cmd);
    else if (c == "bench-read") bench_read(tape, cmd);
    else throw std::invalid_argument("unknown command " + c);
  } catch (const tk::Error& e) {
    std::printf("%s\n", errno_name(e.errnum()));
    std::fflush(stdout);
    return false;
  }
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  int force = -1, extra = 0, a = 1;
  for (; a < argc && argv[a][0] == '-' && argv[a][1] != '\0'; ++a) {
    if (std::strcmp(argv[a], "-r") == 0) force = O_RDONLY;
    else if (std::strcmp(argv[a], "-w") == 0) force = O_RDWR | O_CREAT;
    else if (std::strcmp(argv[a], "-n") == 0) extra |= O_NONBLOCK;
    else if (std::strcmp(argv[a], "-t") == 0) extra |= O_TRUNC;
    else break;
  }
  if (argc - a < 2) {
    std::fprintf(stderr, "usage: tapectl [-r|-w] [-n] [-t] NAME CMD [ARGS...] [: CMD...]\n");
    return 2;
  }
  std::string name = argv[a++];
  std::vector<std::vector<std::string>> cmds(1);
  for (; a < argc; ++a) {
    if (std::strcmp(argv[a], ":") == 0) cmds.emplace_back();
    else cmds.back().emplace_back(argv[a]);
  }
  bool writing = false;
  for (auto& c : cmds) {
    if (c.empty()) {
      std::fprintf(stderr, "tapectl: empty command\n");
      return 2;
    }
    writing = writing || writes(c);
  }
  int flags = (force != -1 ? force : writing ? O_RDWR | O_CREAT : O_RDONLY) | extra;
  std::unique_ptr<tk::Tape> tape;
  try {
    tape = tk::open_tape(name, flags);
  } catch (const tk::Error& e) {
    std::printf("open: %s\n", errno_name(e.errnum()));
    return 2;
  }
  bool ok = true;
  try {
    for (auto& c : cmds) ok = run(*tape, c) && ok;
    tape->close();
  } catch (const tk::Error& e) {
    std::printf("close: %s\n", errno_name(e.errnum()));
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tapectl: %s\n", e.what());
    return 2;
  }
  return ok ? 0 : 1;
}
