// libFuzzer target: the rmt request framing and argument decoders (what the
// server reads from an untrusted connection) and the client's reply parser,
// fed the same bytes. Built and run by `make fuzz`; seeds in corpus/rmt_request.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../lib/rmt/protocol.hpp"
#include "../../lib/tape/tape_status.hpp"

namespace {

void decode(const tk::rmt::Request& r) {
  using namespace tk::rmt;
  switch (r.command) {
    case 'O': (void)parse_open_flags(r.lines[1]); break;
    case 'L':
      for (auto order : {SeekOrder::automatic, SeekOrder::bsd, SeekOrder::gnu})
        (void)decode_seek(r.lines[0], r.lines[1], order);
      break;
    case 'I':
    case 'i':
      if (auto op = parse_number(r.lines[0])) {
        (void)linux_op_from_v1(*op);
        (void)linux_op_from_extended(*op);
      }
      (void)parse_number(r.lines[1]);
      break;
    case 's': (void)tk::mtget_field(tk::MtGet{}, r.sub); break;
    default: break;
  }
}

void fuzz_requests(const std::uint8_t* data, std::size_t size) {
  using namespace tk::rmt;
  MemorySource source(std::as_bytes(std::span(data, size)));
  BufferedReader in(source, 64);  // a tiny buffer crosses every boundary
  Limits limits;
  limits.device = 64;
  limits.flags = 32;
  limits.number = 16;
  limits.drain = 512;
  Request r;
  std::vector<std::byte> payload;
  try {
    while (read_request(in, limits, r)) {
      decode(r);
      if (r.command == 'W') {
        auto n = parse_number(r.lines[0]);
        if (!n || *n < 0) break;
        if (*n > 100000) {
          in.discard(static_cast<std::uint64_t>(*n));
          continue;
        }
        // The server takes records in place; odd sizes go through the
        // copying path that the client uses.
        auto size = static_cast<std::size_t>(*n);
        if (size % 2 == 0) {
          if (in.take(size).size() < size) break;
        } else {
          payload.resize(size);
          if (in.read_exact(payload) < payload.size()) break;
        }
      }
    }
  } catch (const ProtocolError&) {
  }
}

void fuzz_replies(const std::uint8_t* data, std::size_t size) {
  using namespace tk::rmt;
  MemorySource source(std::as_bytes(std::span(data, size)));
  BufferedReader in(source, 64);
  std::vector<std::byte> body;
  try {
    for (;;) {
      Reply r = read_reply(in);
      if (r.ok && r.value <= 4096) {
        body.resize(static_cast<std::size_t>(r.value));
        if (in.read_exact(body) < body.size()) break;
        (void)tk::decode_mtget(body);
      }
    }
  } catch (const ProtocolError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_requests(data, size);
  fuzz_replies(data, size);
  return 0;
}
