#include "same_file.hpp"

#include <sys/stat.h>

namespace tk {

bool output_is_input(const std::string& input, const std::string& output,
                     const OpenOptions& options) {
  if (output.empty() || output == "-" || opens_remote(output, options)) return false;
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0 || !S_ISREG(out.st_mode)) return false;
  bool standard_input = input.empty() || input == "-";
  if (!standard_input && opens_remote(input, options)) return false;
  struct stat in {};
  int got = standard_input ? ::fstat(0, &in) : ::stat(input.c_str(), &in);
  return got == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino;
}

std::string output_is_input_text(const std::string& program, const std::string& option,
                                 const std::string& output) {
  return program + ": " + option + " " + output +
         ": input file is output file; opening it would empty it\n";
}

}  // namespace tk
