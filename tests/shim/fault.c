/* fault.so: an LD_PRELOAD shim that counts a program's system calls and
 * makes one of them fail, for tests/fault-sweep (issue 23, "every fault
 * answered").
 *
 *   TK_FAULT_LOG=FILE    at exit, one line "count LABEL FUNC N" per family
 *                        called; when the fault fires, "hit LABEL FUNC N ERR
 *                        MODE OBJECT": MODE r, w or rw for a descriptor as
 *                        opened, else -; OBJECT the path opened or renamed,
 *                        or what the descriptor refers to
 *   TK_FAULT=FUNC:N:ERR[@LABEL]
 *                        the Nth call of FUNC (in the process LABEL, else in
 *                        every process) fails with errno ERR (EIO, ENOSPC,
 *                        EINTR, EAGAIN, ENOMEM, EACCES, ...), or, with ERR
 *                        "short", moves half of its count (at least 1 byte),
 *                        or with "drop" (reads and writes only) does nothing
 *                        and says it did: a read finds end of file, a write
 *                        reports every byte written. "drop" is how a program
 *                        that ignores an error looks from outside, for
 *                        showing that the sweep notices one.
 *   TK_FAULT_PROG=NAME   only the program NAME is counted and faulted (rmt
 *                        under tar, not tar or the remote shell)
 *
 * FUNC is a family, one counter for the wrappers that do the same thing:
 * open (open, open64), openat, read, readv, write, writev, pread (pread,
 * preadv, ...), pwrite, fsync (fsync, fdatasync), ftruncate, fallocate
 * (fallocate, posix_fallocate), rename (rename, renameat, renameat2),
 * close, mmap, fork.
 *
 * LABEL names a process in the tree of one run of the program: "0" is the
 * program, "0.1" its first child by fork, "0.1.2" that child's second, so a
 * call is found again in the next run although buffer's two processes run
 * side by side. A child starts its counts from 0.
 *
 * Writes to descriptor 2 are never counted or faulted: they carry the
 * diagnostic whose presence the sweep checks, and a lost diagnostic is not
 * a fault of the program. Everything else the program calls through these
 * wrappers is: the shim cannot tell a file that matters from one that does
 * not, and the program must answer every failure anyway. Calls glibc makes
 * internally (malloc's mmap, fopen's openat) do not pass through here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum family { F_OPEN, F_OPENAT, F_READ, F_READV, F_WRITE, F_WRITEV, F_PREAD, F_PWRITE,
              F_FSYNC, F_FTRUNCATE, F_FALLOCATE, F_RENAME, F_CLOSE, F_MMAP, F_FORK, F_COUNT };
static const char* const family_name[F_COUNT] = {
    "open", "openat", "read", "readv", "write", "writev", "pread", "pwrite",
    "fsync", "ftruncate", "fallocate", "rename", "close", "mmap", "fork"};

#define SHORT_COUNT (-1)
#define DROP_CALL (-2)

static int active;              /* this program is counted and faulted */
static char label[128] = "0";
static unsigned forks_made;     /* this process's children so far */
static unsigned long counts[F_COUNT];
static int fault_family = -1;
static unsigned long fault_n;
static int fault_errno;
static char fault_label[128];   /* empty: every process */
static char fault_err_name[32];

static const struct { const char* name; int value; } errnos[] = {
    {"EIO", EIO},       {"ENOSPC", ENOSPC}, {"EINTR", EINTR},   {"EAGAIN", EAGAIN},
    {"ENOMEM", ENOMEM}, {"EACCES", EACCES}, {"EPERM", EPERM},   {"EROFS", EROFS},
    {"EMFILE", EMFILE}, {"ENFILE", ENFILE}, {"EBADF", EBADF},   {"EFBIG", EFBIG},
    {"EDQUOT", EDQUOT}, {"ENOENT", ENOENT}, {"EOPNOTSUPP", EOPNOTSUPP},
    {"EPIPE", EPIPE},   {"EXDEV", EXDEV},   {"EBUSY", EBUSY},   {"short", SHORT_COUNT}, {"drop", DROP_CALL}};

/* write(2) on descriptor 2 and the log, bypassing the counting. */
static ssize_t raw_write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  return real(fd, buf, count);
}

static void log_line(const char* line) {
  const char* path = getenv("TK_FAULT_LOG");
  if (!path || !*path) return;
  static int (*real_open)(const char*, int, ...);
  static int (*real_close)(int);
  if (!real_open) real_open = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
  if (!real_close) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  int fd = real_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  raw_write(fd, line, strlen(line));
  real_close(fd);
}

static void dump_counts(void) {
  if (!active) return;
  int saved = errno;
  char line[256];
  for (int f = 0; f < F_COUNT; ++f) {
    unsigned long n = __atomic_load_n(&counts[f], __ATOMIC_RELAXED);
    if (n == 0) continue;
    snprintf(line, sizeof line, "count %s %s %lu\n", label, family_name[f], n);
    log_line(line);
  }
  active = 0; /* once: exit() and then _exit() */
  errno = saved;
}

__attribute__((constructor)) static void fault_init(void) {
  const char* prog = getenv("TK_FAULT_PROG");
  active = !prog || !*prog || strcmp(prog, program_invocation_short_name) == 0;
  const char* spec = getenv("TK_FAULT");
  if (!active || !spec || !*spec) return;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", spec);
  char* at = strchr(copy, '@');
  if (at) {
    *at = 0;
    snprintf(fault_label, sizeof fault_label, "%s", at + 1);
  }
  char* func = strtok(copy, ":");
  char* nth = strtok(NULL, ":");
  char* err = strtok(NULL, ":");
  if (!func || !nth || !err) goto bad;
  for (int f = 0; f < F_COUNT; ++f)
    if (strcmp(func, family_name[f]) == 0) fault_family = f;
  fault_n = strtoul(nth, NULL, 10);
  for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; ++i)
    if (strcmp(err, errnos[i].name) == 0) {
      fault_errno = errnos[i].value;
      snprintf(fault_err_name, sizeof fault_err_name, "%s", err);
    }
  if (fault_family < 0 || fault_n == 0 || fault_errno == 0) goto bad;
  return;
bad:
  raw_write(2, "fault.so: TK_FAULT is not FUNC:N:ERR[@LABEL]\n", 46);
  abort();
}

__attribute__((destructor)) static void fault_fini(void) { dump_counts(); }

/* Counts a call of family f; returns the errno to fail it with, SHORT_COUNT,
 * or 0 to make the call. */
static int fault_for(enum family f, int fd, const char* path) {
  if (!active) return 0;
  unsigned long n = __atomic_add_fetch(&counts[f], 1, __ATOMIC_RELAXED);
  if ((int)f != fault_family || n != fault_n) return 0;
  if (fault_label[0] && strcmp(fault_label, label) != 0) return 0;
  char object[256] = "-";
  const char* mode = "-";
  if (path) {
    snprintf(object, sizeof object, "%s", path);
  } else if (fd >= 0) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, object, sizeof object - 1);
    object[len > 0 ? len : 0] = 0;
    int flags = fcntl(fd, F_GETFL);
    if (flags != -1)
      mode = (flags & O_ACCMODE) == O_RDONLY ? "r" : (flags & O_ACCMODE) == O_WRONLY ? "w" : "rw";
  }
  char line[512];
  snprintf(line, sizeof line, "hit %s %s %lu %s %s %s\n", label, family_name[f], n, fault_err_name,
           mode, object);
  log_line(line);
  return fault_errno;
}

#define REAL(name) \
  static __typeof__(name)* real_##name; \
  if (!real_##name) real_##name = (__typeof__(name)*)dlsym(RTLD_NEXT, #name)

/* Fails with e (returns -1) unless e is 0 or SHORT_COUNT. */
#define FAIL_IF(e) \
  do { \
    int fail_with_ = (e); \
    if (fail_with_ > 0) { \
      errno = fail_with_; \
      return -1; \
    } \
  } while (0)

static size_t shortened(size_t count) { return count > 1 ? count / 2 : count; }

static size_t iov_total(const struct iovec* iov, int iovcnt) {
  size_t total = 0;
  for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
  return total;
}

/* iov cut to total bytes (at least 1), into out; returns the new iovcnt. */
static int short_iov(const struct iovec* iov, int iovcnt, struct iovec* out, int max) {
  size_t want = shortened(iov_total(iov, iovcnt)), have = 0;
  int n = 0;
  for (int i = 0; i < iovcnt && i < max && have < want; ++i) {
    out[n] = iov[i];
    if (have + out[n].iov_len > want) out[n].iov_len = want - have;
    have += out[n].iov_len;
    ++n;
  }
  return n;
}
#define IOV_MAX_SHIM 64

/* ---- open ---- */
static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char* path, int flags, ...) {
  REAL(open);
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  FAIL_IF(fault_for(F_OPEN, -1, path));
  return real_open(path, flags, mode);
}
int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open(path, flags, mode);
}
int __open_2(const char* path, int flags) { return open(path, flags); }
int __open64_2(const char* path, int flags) { return open(path, flags); }

int openat(int dir, const char* path, int flags, ...) {
  REAL(openat);
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  FAIL_IF(fault_for(F_OPENAT, -1, path));
  return real_openat(dir, path, flags, mode);
}
int openat64(int dir, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return openat(dir, path, flags, mode);
}
int __openat_2(int dir, const char* path, int flags) { return openat(dir, path, flags); }
int __openat64_2(int dir, const char* path, int flags) { return openat(dir, path, flags); }

/* ---- read ---- */
ssize_t read(int fd, void* buf, size_t count) {
  REAL(read);
  int e = fault_for(F_READ, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return 0;
  return real_read(fd, buf, e == SHORT_COUNT ? shortened(count) : count);
}
ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen) {
  (void)buflen;
  return read(fd, buf, count);
}

ssize_t readv(int fd, const struct iovec* iov, int iovcnt) {
  REAL(readv);
  int e = fault_for(F_READV, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return 0;
  if (e != SHORT_COUNT) return real_readv(fd, iov, iovcnt);
  struct iovec cut[IOV_MAX_SHIM];
  return real_readv(fd, cut, short_iov(iov, iovcnt, cut, IOV_MAX_SHIM));
}

ssize_t pread(int fd, void* buf, size_t count, off_t offset) {
  REAL(pread);
  int e = fault_for(F_PREAD, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return 0;
  return real_pread(fd, buf, e == SHORT_COUNT ? shortened(count) : count, offset);
}
ssize_t pread64(int fd, void* buf, size_t count, off_t offset) { return pread(fd, buf, count, offset); }
ssize_t __pread_chk(int fd, void* buf, size_t count, off_t offset, size_t buflen) {
  (void)buflen;
  return pread(fd, buf, count, offset);
}
ssize_t __pread64_chk(int fd, void* buf, size_t count, off_t offset, size_t buflen) {
  (void)buflen;
  return pread(fd, buf, count, offset);
}

ssize_t preadv(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  REAL(preadv);
  int e = fault_for(F_PREAD, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return 0;
  if (e != SHORT_COUNT) return real_preadv(fd, iov, iovcnt, offset);
  struct iovec cut[IOV_MAX_SHIM];
  return real_preadv(fd, cut, short_iov(iov, iovcnt, cut, IOV_MAX_SHIM), offset);
}
ssize_t preadv64(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  return preadv(fd, iov, iovcnt, offset);
}

/* ---- write ---- */
ssize_t write(int fd, const void* buf, size_t count) {
  if (fd == 2) return raw_write(fd, buf, count);
  int e = fault_for(F_WRITE, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return (ssize_t)count;
  return raw_write(fd, buf, e == SHORT_COUNT ? shortened(count) : count);
}

ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  REAL(writev);
  if (fd == 2) return real_writev(fd, iov, iovcnt);
  int e = fault_for(F_WRITEV, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return (ssize_t)iov_total(iov, iovcnt);
  if (e != SHORT_COUNT) return real_writev(fd, iov, iovcnt);
  struct iovec cut[IOV_MAX_SHIM];
  return real_writev(fd, cut, short_iov(iov, iovcnt, cut, IOV_MAX_SHIM));
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  REAL(pwrite);
  int e = fault_for(F_PWRITE, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return (ssize_t)count;
  return real_pwrite(fd, buf, e == SHORT_COUNT ? shortened(count) : count, offset);
}
ssize_t pwrite64(int fd, const void* buf, size_t count, off_t offset) {
  return pwrite(fd, buf, count, offset);
}

ssize_t pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  REAL(pwritev);
  int e = fault_for(F_PWRITE, fd, NULL);
  FAIL_IF(e);
  if (e == DROP_CALL) return (ssize_t)iov_total(iov, iovcnt);
  if (e != SHORT_COUNT) return real_pwritev(fd, iov, iovcnt, offset);
  struct iovec cut[IOV_MAX_SHIM];
  return real_pwritev(fd, cut, short_iov(iov, iovcnt, cut, IOV_MAX_SHIM), offset);
}
ssize_t pwritev64(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  return pwritev(fd, iov, iovcnt, offset);
}

/* ---- the rest ---- */
int fsync(int fd) {
  REAL(fsync);
  FAIL_IF(fault_for(F_FSYNC, fd, NULL));
  return real_fsync(fd);
}
int fdatasync(int fd) {
  REAL(fdatasync);
  FAIL_IF(fault_for(F_FSYNC, fd, NULL));
  return real_fdatasync(fd);
}

int ftruncate(int fd, off_t length) {
  REAL(ftruncate);
  FAIL_IF(fault_for(F_FTRUNCATE, fd, NULL));
  return real_ftruncate(fd, length);
}
int ftruncate64(int fd, off_t length) { return ftruncate(fd, length); }

int fallocate(int fd, int mode, off_t offset, off_t len) {
  REAL(fallocate);
  FAIL_IF(fault_for(F_FALLOCATE, fd, NULL));
  return real_fallocate(fd, mode, offset, len);
}
int fallocate64(int fd, int mode, off_t offset, off_t len) { return fallocate(fd, mode, offset, len); }
/* posix_fallocate returns the error instead of setting errno. */
int posix_fallocate(int fd, off_t offset, off_t len) {
  REAL(posix_fallocate);
  int e = fault_for(F_FALLOCATE, fd, NULL);
  if (e > 0) return e;
  return real_posix_fallocate(fd, offset, len);
}
int posix_fallocate64(int fd, off_t offset, off_t len) { return posix_fallocate(fd, offset, len); }

int rename(const char* from, const char* to) {
  REAL(rename);
  FAIL_IF(fault_for(F_RENAME, -1, from));
  return real_rename(from, to);
}
int renameat(int from_dir, const char* from, int to_dir, const char* to) {
  REAL(renameat);
  FAIL_IF(fault_for(F_RENAME, -1, from));
  return real_renameat(from_dir, from, to_dir, to);
}
int renameat2(int from_dir, const char* from, int to_dir, const char* to, unsigned flags) {
  REAL(renameat2);
  FAIL_IF(fault_for(F_RENAME, -1, from));
  return real_renameat2(from_dir, from, to_dir, to, flags);
}

/* A failed close(2) has still closed the descriptor (Linux), so the fault
 * closes it too and then reports the error, as EIO from NFS would. */
int close(int fd) {
  REAL(close);
  int e = fault_for(F_CLOSE, fd, NULL);
  int rc = real_close(fd);
  if (e > 0 && rc == 0) {
    errno = e;
    return -1;
  }
  return rc;
}

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  REAL(mmap);
  int e = fault_for(F_MMAP, fd, NULL);
  if (e > 0) {
    errno = e;
    return MAP_FAILED;
  }
  return real_mmap(addr, len, prot, flags, fd, offset);
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, len, prot, flags, fd, offset);
}

pid_t fork(void) {
  REAL(fork);
  FAIL_IF(fault_for(F_FORK, -1, NULL));
  unsigned child_number = ++forks_made;
  pid_t pid = real_fork();
  if (pid == 0) {
    char parent[sizeof label];
    memcpy(parent, label, sizeof parent);
    snprintf(label, sizeof label, "%.100s.%u", parent, child_number);
    for (int f = 0; f < F_COUNT; ++f) counts[f] = 0;
    forks_made = 0;
  }
  return pid;
}

/* A child that ends with _exit still reports its counts. */
void _exit(int status) {
  REAL(_exit);
  dump_counts();
  real__exit(status);
  __builtin_unreachable();
}
void _Exit(int status) { _exit(status); }
