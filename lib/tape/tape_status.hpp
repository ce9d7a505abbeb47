// The one model of a drive's status: the portable TapeStatus every backend
// reports, and struct mtget, the form the st driver and the rmt S reply give
// it in, with the one pair of conversions between them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <sys/mtio.h>

namespace tk {

// A portable snapshot of MTIOCGET. Status bits are kept as booleans.
struct TapeStatus {
  long drive_type = MT_ISSCSI2;    // mt_type
  long partition = 0;              // st puts the partition in mt_resid
  std::int64_t file_number = -1;   // -1 = unknown
  std::int64_t block_number = -1;  // -1 = unknown
  std::uint32_t block_size = 0;    // 0 = variable
  std::uint32_t density = 0;
  long soft_errors = 0;  // mt_erreg
  bool bot = false;
  bool eof = false;
  bool eot = false;
  bool sm = false;
  bool eod = false;
  bool write_protected = false;
  bool online = false;
  bool door_open = false;
  bool immediate_report = false;
  bool cleaning_requested = false;
  bool compression = false;
  bool compression_known = false;  // false where the device cannot report it
};

// Linux x86-64 struct mtget as the driver fills it and as an rmt S reply
// carries it (docs/rmt-protocol.md, "S: status"), kept verbatim so that status
// output can reproduce every bit the driver reported.
struct MtGet {
  std::int64_t type = 0;   // mt_type: MT_ISSCSI2, MT_ISSCSI1, ...
  std::int64_t resid = 0;  // st: the current partition
  std::int64_t dsreg = 0;  // density and block size, see dsreg_*()
  std::int64_t gstat = 0;  // gmt:: bits
  std::int64_t erreg = 0;  // st: soft error count under MT_ST_SOFTERR_MASK
  std::int32_t fileno = -1;
  std::int32_t blkno = -1;
};

// The GMT_* bits of mt_gstat (<sys/mtio.h> defines them as tests), in mt-st's
// print order.
namespace gmt {
inline constexpr std::uint64_t all = ~std::uint64_t{0};
inline constexpr std::uint64_t eof = GMT_EOF(all);
inline constexpr std::uint64_t bot = GMT_BOT(all);
inline constexpr std::uint64_t eot = GMT_EOT(all);
inline constexpr std::uint64_t sm = GMT_SM(all);
inline constexpr std::uint64_t eod = GMT_EOD(all);
inline constexpr std::uint64_t wr_prot = GMT_WR_PROT(all);
inline constexpr std::uint64_t online = GMT_ONLINE(all);
inline constexpr std::uint64_t d_6250 = GMT_D_6250(all);
inline constexpr std::uint64_t d_1600 = GMT_D_1600(all);
inline constexpr std::uint64_t d_800 = GMT_D_800(all);
inline constexpr std::uint64_t dr_open = GMT_DR_OPEN(all);
inline constexpr std::uint64_t im_rep_en = GMT_IM_REP_EN(all);
#ifdef GMT_CLN
inline constexpr std::uint64_t cln = GMT_CLN(all);
#else
inline constexpr std::uint64_t cln = 0x00008000;  // <linux/mtio.h>'s GMT_CLN; glibc lacks it
#endif
}  // namespace gmt

// mt_dsreg's two fields (MT_ST_DENSITY_*, MT_ST_BLKSIZE_*), and the packing.
std::uint32_t dsreg_density(std::int64_t dsreg);
std::uint32_t dsreg_block_size(std::int64_t dsreg);
std::int64_t make_dsreg(std::uint32_t density, std::uint32_t block_size);
// mt_erreg's soft error count (MT_ST_SOFTERR_*).
unsigned long erreg_soft_errors(std::int64_t erreg);

// The portable view of an mtget (compression is unknown: MTIOCGET has no bit).
TapeStatus status_from_mtget(const MtGet& g);
// The mtget a real st drive would report for this status; D_6250/D_1600/D_800
// follow density codes 3/2/1 as the st driver sets them, file and block
// numbers beyond an int are clamped.
MtGet mtget_from_status(const TapeStatus& s);

// The 48 little-endian bytes of an rmt S reply.
inline constexpr std::size_t mtget_wire_size = 48;
std::array<std::byte, mtget_wire_size> encode_mtget(const MtGet& m);
// How a server lays out S's 48 bytes: tapekit's, and any server's before a
// version probe, little-endian (x86-64's struct mtget as it is); dump's rmt
// once a version probe switched it to v1 puts each field through htonl(),
// so each is a big-endian 32-bit value in the first 4 bytes of its 8.
enum class MtGetOrder { little_endian, dump_v1 };
// Decodes an S reply's payload; nullopt for any size but 48.
std::optional<MtGet> decode_mtget(std::span<const std::byte> bytes,
                                  MtGetOrder order = MtGetOrder::little_endian);
// The value of an rmt "s<c>" sub-command; nullopt for an unknown c
// (docs/rmt-protocol.md, "s: one status field").
std::optional<std::int64_t> mtget_field(const MtGet& m, char sub);

}  // namespace tk
