/* starved.c: an LD_PRELOAD shim for a client whose remote shell is starved
 * of CPU: /proc/PID/schedstat of any other process says it has waited,
 * runnable, for a CPU all the time since the machine started (its second
 * field is CLOCK_MONOTONIC now), so every delay in an exchange with it
 * reads as CPU delay. For tests that --streams auto does not count that
 * time as the link's. The process's own schedstat is the real one.
 *   LD_PRELOAD=starved.so buffer --streams auto ... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int is_other_schedstat(const char* path) {
  int pid = 0, end = 0;
  if (sscanf(path, "/proc/%d/schedstat%n", &pid, &end) != 1 || path[end] != '\0') return 0;
  return pid != getpid();
}

static int starved_schedstat(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  char text[96];
  int n = snprintf(text, sizeof text, "1000 %lld 1\n",
                   (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  int fd = memfd_create("schedstat", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (write(fd, text, (size_t)n) != n || lseek(fd, 0, SEEK_SET) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

#define OPEN_LIKE(name)                                                     \
  int name(const char* path, int flags, ...) {                              \
    static int (*real)(const char*, int, ...);                              \
    if (!real) real = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, #name); \
    mode_t mode = 0;                                                        \
    if (flags & (O_CREAT | O_TMPFILE)) {                                    \
      va_list ap;                                                           \
      va_start(ap, flags);                                                  \
      mode = (mode_t)va_arg(ap, int);                                       \
      va_end(ap);                                                           \
    }                                                                       \
    if (is_other_schedstat(path)) return starved_schedstat();               \
    return real(path, flags, mode);                                         \
  }

OPEN_LIKE(open)
OPEN_LIKE(open64)
