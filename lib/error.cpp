// tk::Error construction: the message is built here, not by std::system_error,
// whose what() format is implementation-defined.
#include "error.hpp"

#include <cerrno>
#include <cstring>

namespace tk {

Error::Error(int errnum, std::string context) : Error(errnum, std::move(context), 0) {}

Error::Error(int errnum, std::string context, std::size_t bytes_done)
    : std::system_error(errnum, std::generic_category()),
      context_(std::move(context)),
      bytes_done_(bytes_done) {
  message_ = context_.empty() ? std::string(std::strerror(errnum))
                              : context_ + ": " + std::strerror(errnum);
}

void throw_errno(std::string context) { throw Error(errno, std::move(context)); }

}  // namespace tk
