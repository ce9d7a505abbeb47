#include "cxxopts.hpp"

#include "../../lib/error.hpp"

namespace tk {

void throw_getopt_error(const cxxopts::exceptions::parsing& e) {
  std::string name = cxxopts_option_name(e.what());
  std::string dashed = name.size() == 1 ? "-- '" + name + "'" : "'--" + name + "'";
  if (dynamic_cast<const cxxopts::exceptions::no_such_option*>(&e))
    throw UsageError(name.size() == 1 ? "invalid option " + dashed
                                      : "unrecognized option " + dashed);
  if (dynamic_cast<const cxxopts::exceptions::invalid_option_syntax*>(&e)) {
    // "-?" and the like: to getopt, an unknown option letter.
    std::string letters = name.substr(name.find_first_not_of('-') == std::string::npos
                                          ? name.size()
                                          : name.find_first_not_of('-'));
    throw UsageError(letters.empty() ? "invalid option -- '" + name + "'"
                                     : "invalid option -- '" + letters.substr(0, 1) + "'");
  }
  if (dynamic_cast<const cxxopts::exceptions::missing_argument*>(&e) ||
      dynamic_cast<const cxxopts::exceptions::option_requires_argument*>(&e))
    throw UsageError(name.size() == 1 ? "option requires an argument " + dashed
                                      : "option " + dashed + " requires an argument");
  throw UsageError(e.what());
}

}  // namespace tk
