// rmt-client: drives lib/tape's remote backend (or any Tape) one call at a
// time, so tests can check RemoteTape against our rmt, rmt-dump and rmt-tar.
//
// usage: rmt-client NAME FLAGS STEP...
//   FLAGS  r (O_RDONLY), w (O_WRONLY|O_CREAT|O_TRUNC), a (O_RDWR|O_CREAT)
//   STEPS  write SIZE     one record of SIZE bytes from stdin
//          read SIZE      one record, written to stdout
//          readall SIZE   records until a read returns 0, to stdout
//          ahead          expect_sequential_reads(): a remote tape reads ahead
//          op NAME COUNT  fsf, bsf, fsr, bsr, weof, rewind, eom, nop,
//                         compression, setblk, erase, retension, offline
//          status         prints "file F block B size S density D flags..."
//          tell | seek OFFSET WHENCE
// Options come from the environment: RSH and RMT, as for every client.
// Exit 0 on success, 1 with "rmt-client: message" on the first failure.
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../../lib/size.hpp"
#include "../../lib/tape/tape.hpp"
#include "../../tools/common/run_main.hpp"

namespace {

struct NamedOp {
  const char* name;
  tk::MtOp op;
};
constexpr NamedOp ops[] = {
    {"fsf", tk::MtOp::fsf},       {"bsf", tk::MtOp::bsf},         {"fsr", tk::MtOp::fsr},
    {"bsr", tk::MtOp::bsr},       {"weof", tk::MtOp::weof},       {"rewind", tk::MtOp::rewind},
    {"eom", tk::MtOp::eom},       {"nop", tk::MtOp::nop},         {"compression", tk::MtOp::compression},
    {"setblk", tk::MtOp::setblk}, {"erase", tk::MtOp::erase},     {"retension", tk::MtOp::retension},
    {"offline", tk::MtOp::offline}, {"bsfm", tk::MtOp::bsfm},     {"reset", tk::MtOp::reset},
};

void out(std::span<const std::byte> data) { tk::write_all(1, data, "standard output"); }

void print(const std::string& s) { out(std::as_bytes(std::span(s.data(), s.size()))); }

int run(int argc, char** argv) {
  if (argc < 3) throw tk::UsageError("usage: rmt-client NAME r|w|a STEP...");
  std::string mode = argv[2];
  int flags = mode == "r" ? O_RDONLY : mode == "w" ? (O_WRONLY | O_CREAT | O_TRUNC)
                                                   : (O_RDWR | O_CREAT);
  auto tape = tk::open_tape(argv[1], flags);
  std::vector<std::byte> buf;
  for (int i = 3; i < argc; ++i) {
    std::string step = argv[i];
    auto next = [&](const char* what) -> std::string {
      if (i + 1 >= argc) throw tk::UsageError(std::string("missing ") + what);
      return argv[++i];
    };
    if (step == "write") {
      auto n = tk::parse_size(next("size"), "size");
      buf.resize(n);
      std::size_t got = tk::read_full(0, buf, "standard input");
      tape->write(std::span(buf.data(), got));
    } else if (step == "read" || step == "readall") {
      auto n = tk::parse_size(next("size"), "size");
      buf.resize(n);
      for (;;) {
        std::size_t got = tape->read(buf);
        out(std::span(buf.data(), got));
        if (step == "read" || got == 0) break;
      }
    } else if (step == "ahead") {
      tape->expect_sequential_reads();
    } else if (step == "op") {
      std::string name = next("op");
      int count = static_cast<int>(tk::parse_count(next("count"), "count", INT32_MIN, INT32_MAX));
      const NamedOp* found = nullptr;
      for (const auto& o : ops)
        if (name == o.name) found = &o;
      if (!found) throw tk::UsageError("unknown op " + name);
      tape->op(found->op, count);
    } else if (step == "status") {
      tk::TapeStatus s = tape->status();
      std::string line = "type " + std::to_string(s.drive_type) + " file " +
                         std::to_string(s.file_number) + " block " +
                         std::to_string(s.block_number) + " size " +
                         std::to_string(s.block_size) + " density " + std::to_string(s.density);
      for (auto [on, word] : {std::pair{s.bot, " BOT"}, {s.eof, " EOF"}, {s.eod, " EOD"},
                              {s.eot, " EOT"}, {s.online, " ONLINE"},
                              {s.write_protected, " WR_PROT"}})
        if (on) line += word;
      print(line + "\n");
    } else if (step == "tell") {
      print(std::to_string(tape->tell()) + "\n");
    } else if (step == "seek") {
      auto offset = tk::parse_count(next("offset"), "offset");
      auto whence = static_cast<int>(tk::parse_count(next("whence"), "whence", 0, 4));
      print(std::to_string(tape->seek(offset, whence)) + "\n");
    } else {
      throw tk::UsageError("unknown step " + step);
    }
  }
  tape->close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tk::run_main("rmt-client", tk::ExitPolicy{}, [&] { return run(argc, argv); });
}
