// mt-st's status and densities formats, reproduced byte for byte. The
// density names are mt-st 1.8's (February 2025; read from its mt.c): 1.7's
// table with the 9-track reel codes and 0x09 (3480/3490E) described, the IBM
// 3592 drives named by model and 55F/60F/70F added with their encrypted
// forms, LTO-9 added and "SDLT160 compressed" spelled right. LTO-10 goes
// past 1.8: 0x62 and 0x63 are the codes LTO-10 drives report for Ultrium 10
// and Ultrium 10 Premium media (30 and 40 TB). 1.7's table, for scripts that
// parse what it printed, is the same less what 1.8 and tapekit added, with
// 1.7's names for what 1.8 renamed (its "comprssed" typo included).
#include "status_text.hpp"

#include <array>
#include <cstdarg>
#include <cstdio>
#include <utility>
#include <vector>

#include "../../lib/json.hpp"

namespace tk::mt {
namespace {

// Who first named a code: mt-st 1.7 (or earlier), 1.8, or tapekit alone.
enum class Since { mt_st_1_7, mt_st_1_8, tapekit };

struct Density {
  unsigned code;
  std::string_view name;
  Since since = Since::mt_st_1_7;
};

constexpr std::array<Density, 99> densities{{
    {0x00, "default"},
    {0x01, "NRZI (800 bpi) 9 Track Reel"},
    {0x02, "PE (1600 bpi) 9 Track Reel"},
    {0x03, "GCR (6250 bpi) 9 Track Reel"},
    {0x04, "QIC-11"},
    {0x05, "QIC-45/60 (GCR, 8000 bpi)"},
    {0x06, "PE (3200 bpi) 9 Track Reel"},
    {0x07, "IMFM (6400 bpi)"},
    {0x08, "GCR (8000 bpi)"},
    {0x09, "3480/3490E, GCR (37871 bpi)"},
    {0x0a, "MFM (6667 bpi)"},
    {0x0b, "PE (1600 bpi)"},
    {0x0c, "GCR (12960 bpi)"},
    {0x0d, "GCR (25380 bpi)"},
    {0x0f, "QIC-120 (GCR 10000 bpi)"},
    {0x10, "QIC-150/250 (GCR 10000 bpi)"},
    {0x11, "QIC-320/525 (GCR 16000 bpi)"},
    {0x12, "QIC-1350 (RLL 51667 bpi)"},
    {0x13, "DDS (61000 bpi)"},
    {0x14, "EXB-8200 (RLL 43245 bpi)"},
    {0x15, "EXB-8500 or QIC-1000"},
    {0x16, "MFM 10000 bpi"},
    {0x17, "MFM 42500 bpi"},
    {0x18, "TZ86"},
    {0x19, "DLT 10GB"},
    {0x1a, "DLT 20GB"},
    {0x1b, "DLT 35GB"},
    {0x1c, "QIC-385M"},
    {0x1d, "QIC-410M"},
    {0x1e, "QIC-1000C"},
    {0x1f, "QIC-2100C"},
    {0x20, "QIC-6GB"},
    {0x21, "QIC-20GB"},
    {0x22, "QIC-2GB"},
    {0x23, "QIC-875"},
    {0x24, "DDS-2"},
    {0x25, "DDS-3"},
    {0x26, "DDS-4 or QIC-4GB"},
    {0x27, "Exabyte Mammoth"},
    {0x28, "Exabyte Mammoth-2"},
    {0x29, "QIC-3080MC, IBM 3590 B"},
    {0x2a, "IBM 3590 E"},
    {0x30, "AIT-1 or MLR3"},
    {0x31, "AIT-2"},
    {0x32, "AIT-3 or SLR7"},
    {0x33, "SLR6"},
    {0x34, "SLR100"},
    {0x40, "DLT1 40 GB, or Ultrium"},
    {0x41, "DLT 40GB, or Ultrium2"},
    {0x42, "LTO-2"},
    {0x44, "LTO-3"},
    {0x45, "QIC-3095-MC (TR-4)"},
    {0x46, "LTO-4"},
    {0x47, "DDS-5 or TR-5"},
    {0x48, "SDLT220"},
    {0x49, "SDLT320"},
    {0x4a, "SDLT600, T10000A"},
    {0x4b, "T10000B"},
    {0x4c, "T10000C"},
    {0x4d, "T10000D"},
    {0x51, "IBM 3592 J1A"},
    {0x52, "IBM 3592 E05 (TS1120)"},
    {0x53, "IBM 3592 E06 (TS1130)"},
    {0x54, "IBM 3592 E07 (TS1140)"},
    {0x55, "IBM 3592 E08 (TS1150)"},
    {0x56, "IBM 3592 55F (TS1155)", Since::mt_st_1_8},
    {0x57, "IBM 3592 60F (TS1160)", Since::mt_st_1_8},
    {0x58, "LTO-5"},
    {0x59, "IBM 3592 70F (TS1170)", Since::mt_st_1_8},
    {0x5a, "LTO-6"},
    {0x5c, "LTO-7"},
    {0x5d, "LTO-7-M8"},
    {0x5e, "LTO-8"},
    {0x60, "LTO-9", Since::mt_st_1_8},
    {0x62, "LTO-10", Since::tapekit},
    {0x63, "LTO-10 Premium", Since::tapekit},
    {0x71, "IBM 3592 J1A, encrypted"},
    {0x72, "IBM 3592 E05, encrypted"},
    {0x73, "IBM 3592 E06, encrypted"},
    {0x74, "IBM 3592 E07, encrypted"},
    {0x75, "IBM 3592 E08, encrypted"},
    {0x76, "IBM 3592 55F, encrypted", Since::mt_st_1_8},
    {0x77, "IBM 3592 60F, encrypted", Since::mt_st_1_8},
    {0x79, "IBM 3592 70F, encrypted", Since::mt_st_1_8},
    {0x80, "DLT 15GB uncomp. or Ecrix"},
    {0x81, "DLT 15GB compressed"},
    {0x82, "DLT 20GB uncompressed"},
    {0x83, "DLT 20GB compressed"},
    {0x84, "DLT 35GB uncompressed"},
    {0x85, "DLT 35GB compressed"},
    {0x86, "DLT1 40 GB uncompressed"},
    {0x87, "DLT1 40 GB compressed"},
    {0x88, "DLT 40GB uncompressed"},
    {0x89, "DLT 40GB compressed"},
    {0x8c, "EXB-8505 compressed"},
    {0x90, "SDLT110 uncompr/EXB-8205 compr"},
    {0x91, "SDLT110 compressed"},
    {0x92, "SDLT160 uncompressed"},
    {0x93, "SDLT160 compressed"},
}};

// 1.7's names for the codes 1.8 renamed.
constexpr std::array<Density, 10> renamed_since_1_7{{
    {0x01, "NRZI (800 bpi)"},
    {0x02, "PE (1600 bpi)"},
    {0x03, "GCR (6250 bpi)"},
    {0x06, "PE (3200 bpi)"},
    {0x09, "GCR (37871 bpi)"},
    {0x52, "IBM 3592 E05"},
    {0x53, "IBM 3592 E06"},
    {0x54, "IBM 3592 E07"},
    {0x55, "IBM 3592 E08"},
    {0x93, "SDLT160 comprssed"},
}};

// The codes `table` names, with its names, in code order.
std::vector<Density> densities_of(DensityTable table) {
  std::vector<Density> out;
  for (Density d : densities) {
    if (table == DensityTable::mt_st_1_7) {
      if (d.since != Since::mt_st_1_7) continue;
      for (const Density& old : renamed_since_1_7)
        if (old.code == d.code) d.name = old.name;
    }
    out.push_back(d);
  }
  return out;
}

constexpr long type_scsi1 = MT_ISSCSI1;
constexpr long type_scsi2 = MT_ISSCSI2;
constexpr long type_onstream_sc = 0x61;
constexpr long type_ftape_flag = 0x800000;

// GMT bits and their names, in the order mt-st prints them.
constexpr std::array<std::pair<unsigned long, std::string_view>, 13> gstat_names{{
    {tk::gmt::eof, "EOF"},
    {tk::gmt::bot, "BOT"},
    {tk::gmt::eot, "EOT"},
    {tk::gmt::sm, "SM"},
    {tk::gmt::eod, "EOD"},
    {tk::gmt::wr_prot, "WR_PROT"},
    {tk::gmt::online, "ONLINE"},
    {tk::gmt::d_6250, "D_6250"},
    {tk::gmt::d_1600, "D_1600"},
    {tk::gmt::d_800, "D_800"},
    {tk::gmt::dr_open, "DR_OPEN"},
    {tk::gmt::im_rep_en, "IM_REP_EN"},
    {tk::gmt::cln, "CLN"},
}};

}  // namespace

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, ap);
  va_end(ap);
  return out;
}

std::optional<DensityTable> density_table_named(std::string_view version) {
  if (version == "1.8") return DensityTable::mt_st_1_8;
  if (version == "1.7") return DensityTable::mt_st_1_7;
  return std::nullopt;
}

std::optional<std::string_view> density_name(unsigned code, DensityTable table) {
  for (const Density& d : densities_of(table))
    if (d.code == code) return d.name;
  return std::nullopt;
}

std::string densities_text(DensityTable table) {
  const std::vector<Density> named = densities_of(table);
  std::string out =
      "Some SCSI tape density codes:\n"
      "code   explanation                   code   explanation\n";
  const std::size_t half = (named.size() + 1) / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const auto& left = named[i];
    out += format("0x%02x   %-28.*s", left.code, static_cast<int>(left.name.size()),
                  left.name.data());
    if (i + half < named.size()) {
      const auto& right = named[i + half];
      out += format("  0x%02x   %.*s", right.code, static_cast<int>(right.name.size()),
                    right.name.data());
    }
    out += '\n';
  }
  return out;
}

std::string status_text(const tk::MtGet& g, DensityTable table) {
  std::string out;
  const char* type = nullptr;
  if (g.type == type_scsi1)
    type = "SCSI 1";
  else if (g.type == type_scsi2)
    type = "SCSI 2";
  else if (g.type == type_onstream_sc)
    type = "OnStream SC-, DI-, DP-, or USB";
  auto dsreg = static_cast<unsigned long>(g.dsreg);
  auto gstat = static_cast<unsigned long>(g.gstat);
  if (type == nullptr) {
    if (g.type & type_ftape_flag)
      out += format("qic-117 drive type = 0x%05lx\n", static_cast<unsigned long>(g.type & 0x1ffff));
    else if (g.type == 0)
      out += "IDE-Tape (type code 0) ?\n";
    else
      out += format("Unknown tape drive type (type code %ld)\n", g.type);
    out += format("File number=%d, block number=%d.\n", g.fileno, g.blkno);
    out += format("mt_resid: %ld, mt_erreg: 0x%lx\n", g.resid, static_cast<unsigned long>(g.erreg));
    out += format("mt_dsreg: 0x%lx, mt_gstat: 0x%lx\n", dsreg, gstat);
  } else {
    out += format("%s tape drive:\n", type);
    if (g.type == type_scsi2)
      out += format("File number=%d, block number=%d, partition=%ld.\n", g.fileno, g.blkno,
                    g.resid & 0xff);
    else
      out += format("File number=%d, block number=%d.\n", g.fileno, g.blkno);
    unsigned dens = tk::dsreg_density(g.dsreg);
    auto name = density_name(dens, table).value_or("no translation");
    out += format("Tape block size %u bytes. Density code 0x%x (%.*s).\n",
                  tk::dsreg_block_size(g.dsreg), dens, static_cast<int>(name.size()), name.data());
    out += format("Soft error count since last status=%lu\n", tk::erreg_soft_errors(g.erreg));
  }
  out += format("General status bits on (%lx):\n", gstat);
  for (const auto& [bit, bit_name] : gstat_names)
    if (gstat & bit) out += " " + std::string(bit_name);
  out += '\n';
  return out;
}

std::string status_json(const std::string& device, const tk::MtGet& g, const tk::TapeStatus& s,
                        DensityTable table) {
  auto gstat = static_cast<unsigned long>(g.gstat);
  unsigned dens = tk::dsreg_density(g.dsreg);
  tk::JsonObject out;
  out.string("device", device)
      .integer("drive_type", g.type)
      .integer("file", g.fileno)
      .integer("block", g.blkno)
      .integer("partition", g.resid)
      .integer("block_size", tk::dsreg_block_size(g.dsreg))
      .integer("density_code", dens);
  if (auto name = density_name(dens, table))
    out.string("density_name", *name);
  else
    out.null("density_name");
  out.integer("soft_errors", tk::erreg_soft_errors(g.erreg));
  for (const auto& [bit, bit_name] : gstat_names) {
    std::string key;
    for (char c : bit_name) key += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    out.boolean(key, (gstat & bit) != 0);
  }
  if (s.compression_known)
    out.boolean("compression", s.compression);
  else
    out.null("compression");
  return out.text();
}

}  // namespace tk::mt
