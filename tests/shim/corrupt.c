/* corrupt.c: an LD_PRELOAD shim that makes a medium corrupt what it is
 * given: the first byte of the first write(2) to the file TK_CORRUPT_PATH
 * reaches the file inverted, though the write reports success. For tests
 * that a read-back (buffer --verify) notices a volume that differs.
 *   TK_CORRUPT_PATH=/dir/file LD_PRELOAD=corrupt.so cmd */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int corrupted;

static int is_target(int fd) {
  const char* path = getenv("TK_CORRUPT_PATH");
  if (!path) return 0;
  char link[64], target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n < 0) return 0;
  target[n] = 0;
  return strcmp(target, path) == 0;
}

ssize_t write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  if (corrupted || count == 0 || !is_target(fd)) return real(fd, buf, count);
  char* copy = malloc(count);
  if (!copy) return real(fd, buf, count);
  memcpy(copy, buf, count);
  copy[0] = (char)~copy[0];
  ssize_t n = real(fd, copy, count);
  free(copy);
  corrupted = 1;
  return n;
}
