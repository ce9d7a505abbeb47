// The image lock: an advisory flock, so no holder can leave it behind.
#include "image_lock.hpp"

#include <cerrno>
#include <sys/file.h>

#include "../error.hpp"
#include "../io.hpp"

namespace tk {

void lock_image(int fd, const std::string& path) {
  int r = retry_eintr([&] { return ::flock(fd, LOCK_EX | LOCK_NB); });
  if (r == -1) {
    if (errno == EWOULDBLOCK) throw Error(EBUSY, "open " + path);
    throw_syscall_error("lock " + path);
  }
}

}  // namespace tk
