/* fake_st: an LD_PRELOAD interposer that makes one character device look like
 * a Linux st tape drive, so mt-st and tapekit's mt can be run side by side
 * without a drive and their ioctls compared.
 *
 * Environment:
 *   FAKE_ST_DEVICE  the character device to fake (default /dev/zero); any
 *                   descriptor whose st_rdev equals it is treated as the tape
 *   FAKE_ST_LOG     file the calls are appended to, one line each:
 *                   "open rdonly|wronly|rdwr[ nonblock]", "MTIOCTOP op=N count=0xHEX",
 *                   "MTIOCGET", "MTIOCPOS"
 *   FAKE_ST_STATE   what the drive holds, as st reports it (default: a tape,
 *                   loaded and ready):
 *                   eod        at end of data after a fast eom: file and
 *                              block -1, EOD ONLINE IM_REP_EN
 *                   no-tape    file and block -1, DR_OPEN IM_REP_EN; an open
 *                              without O_NONBLOCK and every MTIOCTOP fail
 *                              with ENOMEDIUM, as st's do
 *                   not-ready  (loading, rewinding) file and block -1,
 *                              IM_REP_EN alone; the same calls fail with EIO
 *   FAKE_ST_TYPE FAKE_ST_RESID FAKE_ST_DSREG FAKE_ST_GSTAT FAKE_ST_ERREG
 *   FAKE_ST_FILENO FAKE_ST_BLKNO
 *                   struct mtget fields returned by MTIOCGET (strtol base 0;
 *                   defaults: SCSI-2 drive, file 0 block 0, BOT ONLINE IM_REP_EN,
 *                   or FAKE_ST_STATE's)
 *   FAKE_ST_POS     block number returned by MTIOCPOS (default 0)
 *   FAKE_ST_FAIL    comma-separated "WHAT:ERRNO" items making calls fail:
 *                   WHAT is an MTIOCTOP op number, "op" (every MTIOCTOP),
 *                   "get" (MTIOCGET) or "pos" (MTIOCPOS)
 *   FAKE_ST_SYSFS   directory that replaces /sys/class/scsi_tape in open()
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mtio.h>
#include <sys/stat.h>
#include <unistd.h>

static const char sysfs_prefix[] = "/sys/class/scsi_tape/";

/* FAKE_ST_STATE: the MTIOCGET defaults it sets, and the errno st gives a
 * blocking open or an MTIOCTOP in it (0: they succeed). */
struct drive_state {
  const char *name;
  long fileno, blkno, gstat;
  int unready_errno;
};

static const struct drive_state drive_states[] = {
    {"", 0, 0, 0x41010000L, 0},          /* BOT ONLINE IM_REP_EN */
    {"eod", -1, -1, 0x09010000L, 0},     /* EOD ONLINE IM_REP_EN */
    {"no-tape", -1, -1, 0x00050000L, ENOMEDIUM}, /* DR_OPEN IM_REP_EN */
    {"not-ready", -1, -1, 0x00010000L, EIO},     /* IM_REP_EN */
};

/* The state FAKE_ST_STATE names; an unknown name is reported once on
 * stderr and read as the default, so that a test's typo shows. */
static const struct drive_state *drive_state(void) {
  const char *name = getenv("FAKE_ST_STATE");
  if (!name) name = "";
  for (size_t i = 0; i < sizeof drive_states / sizeof drive_states[0]; ++i)
    if (strcmp(name, drive_states[i].name) == 0) return &drive_states[i];
  static int told;
  if (!told) {
    told = 1;
    fprintf(stderr, "fake_st: FAKE_ST_STATE=%s: not eod, no-tape or not-ready\n", name);
  }
  return &drive_states[0];
}

static long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 0) : fallback;
}

static void log_line(const char *fmt, ...) {
  const char *path = getenv("FAKE_ST_LOG");
  if (!path || !*path) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  int saved = errno;
  FILE *f = fopen(path, "a");
  if (f) {
    fputs(line, f);
    fclose(f);
  }
  errno = saved;
}

static int is_fake_path_rdev(dev_t rdev) {
  const char *dev = getenv("FAKE_ST_DEVICE");
  struct stat st;
  if (stat(dev && *dev ? dev : "/dev/zero", &st) != 0 || !S_ISCHR(st.st_mode)) return 0;
  return st.st_rdev == rdev;
}

static int is_fake_fd(int fd) {
  struct stat st;
  int saved = errno;
  int r = fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && is_fake_path_rdev(st.st_rdev);
  errno = saved;
  return r;
}

/* Returns the errno FAKE_ST_FAIL asks for on this call, or 0. */
static int wanted_failure(const char *what, int op) {
  const char *spec = getenv("FAKE_ST_FAIL");
  if (!spec) return 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(item, ':');
    if (!colon) continue;
    *colon = '\0';
    int err = (int)strtol(colon + 1, NULL, 0);
    if (strcmp(item, what) == 0) return err;
    if (op >= 0 && strcmp(what, "op") == 0 && item[0] >= '0' && item[0] <= '9' &&
        strtol(item, NULL, 10) == op)
      return err;
  }
  return 0;
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  static int (*real_ioctl)(int, unsigned long, ...);
  if (!real_ioctl) real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
  if (!is_fake_fd(fd)) return real_ioctl(fd, request, arg);

  int err;
  const struct drive_state *state = drive_state();
  if (request == MTIOCTOP) {
    const struct mtop *op = arg;
    log_line("MTIOCTOP op=%d count=0x%x\n", op->mt_op, (unsigned)op->mt_count);
    err = wanted_failure("op", op->mt_op);
    /* st_int_ioctl refuses every operation without a ready tape. */
    if (!err) err = state->unready_errno;
  } else if (request == MTIOCGET) {
    struct mtget *g = arg;
    log_line("MTIOCGET\n");
    err = wanted_failure("get", -1);
    if (!err) {
      memset(g, 0, sizeof *g);
      g->mt_type = env_long("FAKE_ST_TYPE", MT_ISSCSI2);
      g->mt_resid = env_long("FAKE_ST_RESID", 0);
      g->mt_dsreg = env_long("FAKE_ST_DSREG", 0);
      g->mt_gstat = env_long("FAKE_ST_GSTAT", state->gstat);
      g->mt_erreg = env_long("FAKE_ST_ERREG", 0);
      g->mt_fileno = (int)env_long("FAKE_ST_FILENO", state->fileno);
      g->mt_blkno = (int)env_long("FAKE_ST_BLKNO", state->blkno);
    }
  } else if (request == MTIOCPOS) {
    struct mtpos *p = arg;
    log_line("MTIOCPOS\n");
    err = wanted_failure("pos", -1);
    if (!err) p->mt_blkno = env_long("FAKE_ST_POS", 0);
  } else {
    log_line("ioctl 0x%lx\n", request);
    err = ENOTTY;
  }
  if (err) {
    errno = err;
    return -1;
  }
  return 0;
}

/* open() and friends: log opens of the fake device, redirect sysfs reads. */
static const char *rewrite_path(const char *path, char *buf, size_t size) {
  const char *root = getenv("FAKE_ST_SYSFS");
  if (root && *root && strncmp(path, sysfs_prefix, sizeof sysfs_prefix - 1) == 0) {
    snprintf(buf, size, "%s/%s", root, path + sizeof sysfs_prefix - 1);
    return buf;
  }
  return path;
}

/* Logs an open of the fake device and returns the errno st's open would
 * fail with (0: none): without a ready tape, only O_NONBLOCK opens. */
static int log_open(int dir_fd, const char *path, int flags) {
  struct stat st;
  int saved = errno;
  int err = 0;
  if (fstatat(dir_fd, path, &st, 0) == 0 && S_ISCHR(st.st_mode) && is_fake_path_rdev(st.st_rdev)) {
    int acc = flags & O_ACCMODE;
    log_line("open %s%s\n", acc == O_RDONLY ? "rdonly" : acc == O_WRONLY ? "wronly" : "rdwr",
             (flags & O_NONBLOCK) ? " nonblock" : "");
    if (!(flags & O_NONBLOCK)) err = drive_state()->unready_errno;
  }
  errno = saved;
  return err;
}

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

static int forward_open(const char *name, const char *path, int flags, mode_t mode) {
  char buf[4096];
  open_fn real = (open_fn)dlsym(RTLD_NEXT, name);
  path = rewrite_path(path, buf, sizeof buf);
  int err = log_open(AT_FDCWD, path, flags);
  if (err) {
    errno = err;
    return -1;
  }
  return real(path, flags, mode);
}

/* tapekit opens devices with openat(2) (a confined open needs a directory);
 * mt-st uses open(2). Both must reach the same log. */
static int forward_openat(const char *name, int dir_fd, const char *path, int flags, mode_t mode) {
  char buf[4096];
  openat_fn real = (openat_fn)dlsym(RTLD_NEXT, name);
  if (path[0] == '/') path = rewrite_path(path, buf, sizeof buf);
  int err = log_open(dir_fd, path, flags);
  if (err) {
    errno = err;
    return -1;
  }
  return real(dir_fd, path, flags, mode);
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return forward_open("open", path, flags, mode);
}

int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return forward_open("open64", path, flags, mode);
}

int __open_2(const char *path, int flags) { return forward_open("open", path, flags, 0); }

int __open64_2(const char *path, int flags) { return forward_open("open64", path, flags, 0); }

int openat(int dir_fd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return forward_openat("openat", dir_fd, path, flags, mode);
}

int openat64(int dir_fd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return forward_openat("openat64", dir_fd, path, flags, mode);
}

int __openat_2(int dir_fd, const char *path, int flags) {
  return forward_openat("openat", dir_fd, path, flags, 0);
}

int __openat64_2(int dir_fd, const char *path, int flags) {
  return forward_openat("openat64", dir_fd, path, flags, 0);
}
