// Density code names, status text and JSON: mt-st's output formats.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "../../lib/tape/tape.hpp"

namespace tk::mt {

// Whose names the density codes go by: mt-st 1.8's, with LTO-10 added (the
// default), or 1.7's, for scripts written against what 1.7 printed.
enum class DensityTable { mt_st_1_8, mt_st_1_7 };

// The table of mt-st release "1.8" or "1.7"; nullopt for any other text.
std::optional<DensityTable> density_table_named(std::string_view version);

// The table's name for a SCSI density code, or nullopt ("no translation").
std::optional<std::string_view> density_name(unsigned code, DensityTable table);

// `mt densities`: mt-st's two-column table of those names.
std::string densities_text(DensityTable table);

// `mt status`: mt-st's text for this mtget, byte for byte.
std::string status_text(const tk::MtGet& g, DensityTable table);

// `mt --json status`: one JSON object (no newline; health nests it).
std::string status_json(const std::string& device, const tk::MtGet& g, const tk::TapeStatus& s,
                        DensityTable table);

// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tk::mt
