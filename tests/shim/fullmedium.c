/* fullmedium.so: an LD_PRELOAD shim that makes files under a path prefix
 * behave like a medium of a fixed size: a write that would grow such a file
 * past TK_MEDIUM_BYTES writes what fits, then fails with ENOSPC. A file
 * truncated or newly created starts empty again, like a fresh volume.
 * Positioned writes (pwrite, pwritev) may reach up to TK_MEDIUM_BYTES from
 * the start of the file, and so may fallocate, like a disk that fills up;
 * with TK_MEDIUM_FALLOCATE=ignore fallocate always succeeds, so that the
 * writes into the blocks it reserved fail instead (a disk failing later).
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

/* The medium's size for fd, or -1 when fd is not on the medium. */
static long long medium_bytes(int fd) {
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
  return atoll(bytes);
}

/* Bytes that still fit from offset, or -1 when fd is not on the medium. */
static long long room_from(int fd, long long offset) {
  long long size = medium_bytes(fd);
  if (size < 0) return -1;
  return size > offset ? size - offset : 0;
}

static long long capacity_left(int fd) {
  struct stat st;
  if (medium_bytes(fd) < 0 || fstat(fd, &st) != 0) return -1;
  return room_from(fd, (long long)st.st_size);
}

/* How much of count bytes at offset may be written: count, a part, or 0
 * with errno ENOSPC set. */
static size_t fitting(int fd, off_t offset, size_t count) {
  long long room = room_from(fd, (long long)offset);
  if (room < 0 || (long long)count <= room) return count;
  if (room == 0) errno = ENOSPC;
  return (size_t)room;
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t);
  if (!real) real = (ssize_t(*)(int, const void*, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  size_t n = fitting(fd, offset, count);
  if (n == 0 && count != 0) return -1;
  return real(fd, buf, n, offset);
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off_t offset) {
  return pwrite(fd, buf, count, offset);
}

ssize_t pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  static ssize_t (*real)(int, const struct iovec*, int, off_t);
  if (!real) real = (ssize_t(*)(int, const struct iovec*, int, off_t))dlsym(RTLD_NEXT, "pwritev");
  size_t total = 0;
  for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
  size_t n = fitting(fd, offset, total);
  if (n == total) return real(fd, iov, iovcnt, offset);
  if (n == 0) return total == 0 ? 0 : -1;
  /* Write the part that fits, iovec by iovec. */
  size_t done = 0;
  for (int i = 0; i < iovcnt && done < n; ++i) {
    size_t part = iov[i].iov_len < n - done ? iov[i].iov_len : n - done;
    ssize_t w = pwrite(fd, iov[i].iov_base, part, offset + (off_t)done);
    if (w < 0) return done ? (ssize_t)done : -1;
    done += (size_t)w;
    if ((size_t)w < part) break;
  }
  return (ssize_t)done;
}

ssize_t pwritev64(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  return pwritev(fd, iov, iovcnt, offset);
}

int fallocate(int fd, int mode, off_t offset, off_t len) {
  static int (*real)(int, int, off_t, off_t);
  if (!real) real = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT, "fallocate");
  const char* policy = getenv("TK_MEDIUM_FALLOCATE");
  int ignore = policy && strcmp(policy, "ignore") == 0;
  long long room = room_from(fd, (long long)offset);
  if (!ignore && room >= 0 && (long long)len > room) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, mode, offset, len);
}

int fallocate64(int fd, int mode, off_t offset, off_t len) { return fallocate(fd, mode, offset, len); }

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
