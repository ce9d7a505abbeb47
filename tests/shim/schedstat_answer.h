/* schedstat_answer.h: for LD_PRELOAD shims that answer reads of a
 * /proc/.../schedstat themselves. The shim defines, before including this,
 *   static int answers(const char* path);   nonzero: the shim answers it
 *   static int answer(int (*real_open)(const char*, int, ...));
 *                                            a descriptor to read instead
 * and gets open() and open64() that divert those paths, and
 * schedstat_text(), the descriptor of a file holding the given three fields. */
#ifndef TK_SCHEDSTAT_ANSWER_H
#define TK_SCHEDSTAT_ANSWER_H

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static int answers(const char* path);
static int answer(int (*real_open)(const char*, int, ...));

static int schedstat_text(unsigned long long on_cpu, unsigned long long waited,
                          unsigned long long slices) {
  char text[96];
  int n = snprintf(text, sizeof text, "%llu %llu %llu\n", on_cpu, waited, slices);
  int fd = memfd_create("schedstat", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (pwrite(fd, text, (size_t)n, 0) != n) {
    close(fd);
    return -1;
  }
  return fd;
}

#define SCHEDSTAT_OPEN_LIKE(name)                                           \
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
    if (answers(path)) return answer(real);                                 \
    return real(path, flags, mode);                                         \
  }

SCHEDSTAT_OPEN_LIKE(open)
SCHEDSTAT_OPEN_LIKE(open64)

#endif
