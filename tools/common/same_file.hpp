// Whether a tool's output is its own input, which opening it would empty.
#pragma once

#include <string>

#include "../../lib/tape/tape.hpp"

namespace tk {

// True when `output` names the regular file that `input` names ("-" or
// empty: standard input), here on this machine. Opening it with O_TRUNC
// would empty the input before a byte of it is read (dd and buffer 1.19 do
// so silently; GNU cat refuses: "input file is output file").
bool output_is_input(const std::string& input, const std::string& output,
                     const OpenOptions& options);

// "PROGRAM: OPTION OUTPUT: input file is output file; ...", one line.
std::string output_is_input_text(const std::string& program, const std::string& option,
                                 const std::string& output);

}  // namespace tk
