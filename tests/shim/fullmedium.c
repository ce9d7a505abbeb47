/* fullmedium.so: an LD_PRELOAD shim that makes files under a path prefix
 * behave like a medium of a fixed size: a write that would grow such a file
 * past TK_MEDIUM_BYTES writes what fits, then fails with ENOSPC. A file
 * truncated or newly created starts empty again, like a fresh volume.
 *   TK_MEDIUM_PATH=/dir/prefix TK_MEDIUM_BYTES=1048576 LD_PRELOAD=fullmedium.so cmd */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static ssize_t (*real_write)(int, const void*, size_t);

static long long capacity_left(int fd) {
  const char* prefix = getenv("TK_MEDIUM_PATH");
  const char* bytes = getenv("TK_MEDIUM_BYTES");
  if (!prefix || !bytes) return -1;
  char link[64], target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 0) return -1;
  target[n] = 0;
  if (strncmp(target, prefix, strlen(prefix)) != 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  long long left = atoll(bytes) - (long long)st.st_size;
  return left < 0 ? 0 : left;
}

ssize_t write(int fd, const void* buf, size_t count) {
  if (!real_write) real_write = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  long long left = capacity_left(fd);
  if (left < 0 || (long long)count <= left) return real_write(fd, buf, count);
  if (left == 0) {
    errno = ENOSPC;
    return -1;
  }
  return real_write(fd, buf, (size_t)left);
}
