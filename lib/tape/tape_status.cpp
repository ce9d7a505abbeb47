// Conversions of a drive's status between its portable and mtget forms.
#include "tape_status.hpp"

#include <algorithm>
#include <climits>

#include "tape.hpp"

namespace tk {

std::uint32_t dsreg_density(std::int64_t dsreg) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(dsreg) & MT_ST_DENSITY_MASK) >>
                                    MT_ST_DENSITY_SHIFT);
}

std::uint32_t dsreg_block_size(std::int64_t dsreg) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(dsreg) & MT_ST_BLKSIZE_MASK) >>
                                    MT_ST_BLKSIZE_SHIFT);
}

std::int64_t make_dsreg(std::uint32_t density, std::uint32_t block_size) {
  return static_cast<std::int64_t>(
      ((std::uint64_t{density} << MT_ST_DENSITY_SHIFT) & MT_ST_DENSITY_MASK) |
      ((std::uint64_t{block_size} << MT_ST_BLKSIZE_SHIFT) & MT_ST_BLKSIZE_MASK));
}

unsigned long erreg_soft_errors(std::int64_t erreg) {
  return (static_cast<unsigned long>(erreg) & MT_ST_SOFTERR_MASK) >> MT_ST_SOFTERR_SHIFT;
}

TapeStatus status_from_mtget(const MtGet& g) {
  TapeStatus s;
  auto bits = static_cast<std::uint64_t>(g.gstat);
  s.drive_type = static_cast<long>(g.type);
  s.partition = static_cast<long>(g.resid);
  s.file_number = g.fileno;
  s.block_number = g.blkno;
  s.block_size = dsreg_block_size(g.dsreg);
  s.density = dsreg_density(g.dsreg);
  s.soft_errors = static_cast<long>(g.erreg);
  s.eof = (bits & gmt::eof) != 0;
  s.bot = (bits & gmt::bot) != 0;
  s.eot = (bits & gmt::eot) != 0;
  s.sm = (bits & gmt::sm) != 0;
  s.eod = (bits & gmt::eod) != 0;
  s.write_protected = (bits & gmt::wr_prot) != 0;
  s.online = (bits & gmt::online) != 0;
  s.door_open = (bits & gmt::dr_open) != 0;
  s.immediate_report = (bits & gmt::im_rep_en) != 0;
  s.cleaning_requested = (bits & gmt::cln) != 0;
  return s;
}

MtGet mtget_from_status(const TapeStatus& s) {
  MtGet g;
  g.type = s.drive_type;
  g.resid = s.partition;
  g.dsreg = make_dsreg(s.density, s.block_size);
  std::uint64_t bits = 0;
  if (s.eof) bits |= gmt::eof;
  if (s.bot) bits |= gmt::bot;
  if (s.eot) bits |= gmt::eot;
  if (s.sm) bits |= gmt::sm;
  if (s.eod) bits |= gmt::eod;
  if (s.write_protected) bits |= gmt::wr_prot;
  if (s.online) bits |= gmt::online;
  if (s.density == 3) bits |= gmt::d_6250;
  if (s.density == 2) bits |= gmt::d_1600;
  if (s.density == 1) bits |= gmt::d_800;
  if (s.door_open) bits |= gmt::dr_open;
  if (s.immediate_report) bits |= gmt::im_rep_en;
  if (s.cleaning_requested) bits |= gmt::cln;
  g.gstat = static_cast<std::int64_t>(bits);
  g.erreg = s.soft_errors;
  auto clamp = [](std::int64_t v) {
    return static_cast<std::int32_t>(std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX));
  };
  g.fileno = clamp(s.file_number);
  g.blkno = clamp(s.block_number);
  return g;
}

namespace {
void put_le(std::byte* at, std::uint64_t v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) at[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
std::uint64_t get_le(const std::byte* at, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::to_integer<std::uint64_t>(at[i]) << (8 * i);
  return v;
}
}  // namespace

std::array<std::byte, mtget_wire_size> encode_mtget(const MtGet& m) {
  std::array<std::byte, mtget_wire_size> out{};
  put_le(out.data() + 0, static_cast<std::uint64_t>(m.type), 8);
  put_le(out.data() + 8, static_cast<std::uint64_t>(m.resid), 8);
  put_le(out.data() + 16, static_cast<std::uint64_t>(m.dsreg), 8);
  put_le(out.data() + 24, static_cast<std::uint64_t>(m.gstat), 8);
  put_le(out.data() + 32, static_cast<std::uint64_t>(m.erreg), 8);
  put_le(out.data() + 40, static_cast<std::uint32_t>(m.fileno), 4);
  put_le(out.data() + 44, static_cast<std::uint32_t>(m.blkno), 4);
  return out;
}

std::optional<MtGet> decode_mtget(std::span<const std::byte> bytes, MtGetOrder order) {
  if (bytes.size() != mtget_wire_size) return std::nullopt;
  MtGet m;
  if (order == MtGetOrder::dump_v1) {
    auto be32 = [&](std::size_t at) {
      std::uint32_t v = 0;
      for (std::size_t i = 0; i < 4; ++i) v = v << 8 | std::to_integer<std::uint32_t>(bytes[at + i]);
      return v;
    };
    // htonl() kept 32 bits: counts are signed (st's -1), registers are bits.
    auto signed32 = [&](std::size_t at) { return static_cast<std::int32_t>(be32(at)); };
    m.type = signed32(0);
    m.resid = signed32(8);
    m.dsreg = be32(16);
    m.gstat = be32(24);
    m.erreg = be32(32);
    m.fileno = signed32(40);
    m.blkno = signed32(44);
    return m;
  }
  m.type = static_cast<std::int64_t>(get_le(bytes.data() + 0, 8));
  m.resid = static_cast<std::int64_t>(get_le(bytes.data() + 8, 8));
  m.dsreg = static_cast<std::int64_t>(get_le(bytes.data() + 16, 8));
  m.gstat = static_cast<std::int64_t>(get_le(bytes.data() + 24, 8));
  m.erreg = static_cast<std::int64_t>(get_le(bytes.data() + 32, 8));
  m.fileno = static_cast<std::int32_t>(static_cast<std::uint32_t>(get_le(bytes.data() + 40, 4)));
  m.blkno = static_cast<std::int32_t>(static_cast<std::uint32_t>(get_le(bytes.data() + 44, 4)));
  return m;
}

std::optional<std::int64_t> mtget_field(const MtGet& m, char sub) {
  switch (sub) {
    case 'T': return m.type;
    case 'D': return m.dsreg;
    case 'E': return m.erreg;
    case 'R': return m.resid;
    case 'F': return m.fileno;
    case 'B': return m.blkno;
    case 'f': return m.gstat;  // Linux has no mt_flags; rmt-dump sends gstat
    case 'b': return 0;        // mt_bf: no optimal blocking factor to report
    default: return std::nullopt;
  }
}

StatusReport Tape::status_report() {
  TapeStatus s = status();
  return {mtget_from_status(s), s};
}

}  // namespace tk
