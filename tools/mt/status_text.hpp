// Density code names, status text and JSON: mt-st's output formats.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "../../lib/tape/tape.hpp"

namespace tk::mt {

// mt-st 1.8's name for a SCSI density code (LTO-10 too), or nullopt
// ("no translation").
std::optional<std::string_view> density_name(unsigned code);

// `mt densities`: mt-st's two-column table of those names.
std::string densities_text();

// `mt status`: mt-st's text for this mtget, byte for byte.
std::string status_text(const tk::MtGet& g);

// `mt --json status`: one JSON object and a newline.
std::string status_json(const std::string& device, const tk::MtGet& g, const tk::TapeStatus& s);

// A JSON string literal for text.
std::string json_quote(std::string_view text);

// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tk::mt
