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
 *   FAKE_ST_SYSDEV  directory that replaces /sys/dev/char in open()
 *   FAKE_ST_LOADING file: until it exists the drive is loading, and an open
 *                   without O_NONBLOCK waits, as st's waits for the tape to
 *                   become ready (checked every 10 ms; "open ... loading"
 *                   is logged once the wait starts)
 *
 * SG_IO: the fake drive is an LTO drive that answers SCSI commands, its
 * pages laid out from SPC-4 and SSC-4 (not from tapekit's parsers):
 * INQUIRY (standard data, VPD pages 0x00, 0x80, 0xB1 and 0xB2), LOG SENSE pages 0x00,
 * 0x2E (TapeAlert) and 0x31 (Tape Capacity), READ ATTRIBUTE (attribute
 * values) and SECURITY PROTOCOL IN 0x20 pages 0x0020 and 0x0021; anything
 * else gets CHECK CONDITION, ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE.
 * SG_GET_VERSION_NUM says sg 3.5.36. "SG_IO 0xOP" lines go to FAKE_ST_LOG.
 *   FAKE_ST_INQUIRY    bytes 8-35 of the standard INQUIRY data, the vendor (8),
 *                      product (16) and revision (4) fields, taken as they
 *                      are (any byte but NUL: bash's $'\xff\e') and padded
 *                      with spaces (default "IBM     ULT3580-TD8     Q3F4")
 *   FAKE_ST_ALERTS     active TapeAlert flags, "3,20" (default: none)
 *   FAKE_ST_TAS        the TapeAlert flags VPD page 0xB2 lists as supported,
 *                      "3,20" or none (default: default_tas)
 *   FAKE_ST_MAS        the manufacturer-assigned serial number of VPD page
 *                      0xB1, right-aligned in 16 bytes; empty: all spaces
 *                      (default 10WT012345)
 *   FAKE_ST_CAPACITY   "REMAINING:MAXIMUM" MiB of partition 0, then
 *                      ",REMAINING:MAXIMUM" of partition 1 if partitioned
 *                      (default 5000000:11444224)
 *   FAKE_ST_MAM        the cartridge memory, "ID=VALUE;ID=VALUE" with ID in
 *                      hex (0x0806=CLN001L8); the format and size of each
 *                      are SPC-4's for that ID; an ID SPC-4 does not name
 *                      is binary, 8 bytes, if VALUE is a number, else ASCII
 *                      of VALUE's length; "none": no attributes
 *                      (default: a full LTO-8 set, see default_mam)
 *   FAKE_ST_ENCRYPTION on (encrypt, decrypt, algorithm 1, key instance 5),
 *                      off (the default) or none (no encryption: ILLEGAL
 *                      REQUEST)
 *   FAKE_ST_MISSING    what the drive lacks (ILLEGAL REQUEST, INVALID FIELD
 *                      IN CDB): any of 0x2e, 0x31, attr, spin, mas, tas
 *                      (the VPD pages 0xB1 and 0xB2, then not in page 0x00's
 *                      list either), comma-separated
 *   FAKE_ST_MALFORMED  what the drive gets wrong: 0x2e (page length past the
 *                      data), 0x31 (the last capacity parameter's length
 *                      past the page end), attr (an attribute
 *                      running past the list), spin (a 4-byte status page),
 *                      tas (VPD page 0xB2 with a page length of 4, as tgt's)
 *   FAKE_ST_ODD        what the drive sends that is well formed but unusual,
 *                      comma-separated: 0x2e-vendor (a vendor-specific
 *                      parameter 0x8001, value 1, between flags 19 and 20),
 *                      0x2e-long (vendor-specific parameters 0x8002 on,
 *                      248 bytes each, after flag 64: a 10 KiB page),
 *                      0x31-wide (the main partition's remaining capacity
 *                      in an 8-byte parameter),
 *                      attr-text (the barcode in TEXT format), attr-load4
 *                      (a 4-byte load count), mas-nul (VPD page 0xB1 as 64
 *                      NULs, as tgt's)
 *   FAKE_ST_SG         none: SG_IO fails with ENOTTY (no SCSI device);
 *                      eperm: with EPERM
 * With FAKE_ST_STATE=no-tape, READ ATTRIBUTE and LOG SENSE page 0x31 get
 * CHECK CONDITION, NOT READY, MEDIUM NOT PRESENT; TapeAlert still answers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <scsi/sg.h>
#include <sys/ioctl.h>
#include <sys/mtio.h>
#include <sys/stat.h>
#include <unistd.h>

static const char sysfs_prefix[] = "/sys/class/scsi_tape/";
static const char sysdev_prefix[] = "/sys/dev/char/";

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


/* ---- SG_IO: the LTO drive's SCSI answers ---- */

static int in_list(const char *env, const char *word) {
  const char *v = getenv(env);
  if (!v) return 0;
  size_t n = strlen(word);
  for (const char *p = v; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, word, n) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v; }
static void put32(unsigned char *p, unsigned long v) { put16(p, (unsigned)(v >> 16) & 0xffff); put16(p + 2, (unsigned)v & 0xffff); }
static void put64(unsigned char *p, unsigned long long v) { put32(p, (unsigned long)(v >> 32)); put32(p + 4, (unsigned long)(v & 0xffffffffUL)); }

/* Fixed-format sense data (SPC-4 4.5.3) and the CHECK CONDITION status. */
static int check_condition(sg_io_hdr_t *h, unsigned key, unsigned asc, unsigned ascq) {
  unsigned char sense[18] = {0};
  sense[0] = 0x70;
  sense[2] = (unsigned char)key;
  sense[7] = 10;
  sense[12] = (unsigned char)asc;
  sense[13] = (unsigned char)ascq;
  size_t n = h->mx_sb_len < sizeof sense ? h->mx_sb_len : sizeof sense;
  if (h->sbp && n) memcpy(h->sbp, sense, n);
  h->sb_len_wr = (unsigned char)n;
  h->status = 0x02;
  h->masked_status = 0x01;
  h->driver_status = 0x08; /* DRIVER_SENSE */
  h->resid = (int)h->dxfer_len;
  return 0;
}

static int illegal_field(sg_io_hdr_t *h) { return check_condition(h, 0x5, 0x24, 0x00); }

static int no_medium(void) { return drive_state()->unready_errno == ENOMEDIUM; }

/* Returns the reply as the allocation length allows, resid counting the rest. */
static int reply(sg_io_hdr_t *h, const unsigned char *data, size_t len, size_t alloc) {
  size_t n = len < alloc ? len : alloc;
  if (n > h->dxfer_len) n = h->dxfer_len;
  if (h->dxferp && n) memcpy(h->dxferp, data, n);
  h->resid = (int)(h->dxfer_len - n);
  return 0;
}

/* The TapeAlert flags an LTO drive of this kind may list as supported:
 * not all 64 (the obsolete loader flags 40-46 are left out, as are some
 * reserved ones), so that a reader sees gaps. */
static const char default_tas[] =
    "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,25,26,27,29,30,31,32,"
    "33,34,35,36,37,38,39,49,51,52,53,54,55,56,57,58,59,60";

/* VPD pages 0x00, 0x80, 0xB1 (SSC-4 8.4.3) and 0xB2 (SSC-4 8.4.4). */
static size_t vpd_page(unsigned page, unsigned char *d, int *bad) {
  d[0] = 0x01;
  d[1] = (unsigned char)page;
  int no_mas = in_list("FAKE_ST_MISSING", "mas"), no_tas = in_list("FAKE_ST_MISSING", "tas");
  if (page == 0x00) {
    unsigned char *p = d + 4;
    *p++ = 0x00;
    *p++ = 0x80;
    if (!no_mas) *p++ = 0xb1;
    if (!no_tas) *p++ = 0xb2;
    put16(d + 2, (unsigned)(p - d - 4));
    return (size_t)(p - d);
  }
  if (page == 0x80) { d[3] = 10; memcpy(d + 4, "1068000123", 10); return 14; }
  if (page == 0xb1 && !no_mas) {
    /* Right-aligned ASCII, spaces where the drive has none (SSC-4); with
     * FAKE_ST_ODD=mas-nul, 64 NULs, as tgt sends it. */
    if (in_list("FAKE_ST_ODD", "mas-nul")) { put16(d + 2, 64); return 68; }
    const char *mas = getenv("FAKE_ST_MAS");
    if (!mas) mas = "10WT012345";
    size_t n = strlen(mas) < 16 ? strlen(mas) : 16;
    put16(d + 2, 16);
    memset(d + 4, ' ', 16);
    memcpy(d + 4 + 16 - n, mas, n);
    return 20;
  }
  if (page == 0xb2 && !no_tas) {
    const char *tas = getenv("FAKE_ST_TAS");
    if (!tas) tas = default_tas;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", strcmp(tas, "none") == 0 ? "" : tas);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
      long flag = strtol(item, NULL, 10);
      if (flag >= 1 && flag <= 64) d[4 + (flag - 1) / 8] |= (unsigned char)(0x80 >> ((flag - 1) % 8));
    }
    /* 8 bytes of flags and 4 reserved; FAKE_ST_MALFORMED=tas: a page
     * length of 4, as tgt sends it. */
    if (in_list("FAKE_ST_MALFORMED", "tas")) { put16(d + 2, 4); return 8; }
    put16(d + 2, 12);
    return 16;
  }
  *bad = 1;
  return 0;
}

static size_t inquiry_data(const unsigned char *cdb, unsigned char *d, int *bad) {
  memset(d, 0, 96);
  if (cdb[1] & 1) return vpd_page(cdb[2], d, bad); /* EVPD */
  d[0] = 0x01; /* sequential-access device */
  d[1] = 0x80; /* removable medium */
  d[2] = 0x06; /* SPC-4 */
  d[3] = 0x02;
  d[4] = 91;
  memcpy(d + 8, "IBM     ", 8);
  memcpy(d + 16, "ULT3580-TD8     ", 16);
  memcpy(d + 32, "Q3F4", 4);
  const char *fields = getenv("FAKE_ST_INQUIRY");
  if (fields) {
    size_t n = strlen(fields);
    memset(d + 8, ' ', 28);
    memcpy(d + 8, fields, n < 28 ? n : 28);
  }
  return 96;
}

static size_t tapealert_page(unsigned char *d) {
  d[0] = 0x2e;
  d[1] = 0;
  unsigned char *p = d + 4;
  char buf[16];
  for (unsigned flag = 1; flag <= 64; ++flag, p += 5) {
    if (flag == 20 && in_list("FAKE_ST_ODD", "0x2e-vendor")) {
      put16(p, 0x8001);
      p[2] = 0x03;
      p[3] = 1;
      p[4] = 1;
      p += 5;
    }
    put16(p, flag);
    p[2] = 0x03; /* FORMAT AND LINKING 11b: binary format list */
    p[3] = 1;
    snprintf(buf, sizeof buf, "%u", flag);
    p[4] = (unsigned char)in_list("FAKE_ST_ALERTS", buf);
  }
  if (in_list("FAKE_ST_ODD", "0x2e-long")) {
    for (unsigned code = 0x8002; code < 0x8002 + 40; ++code) {
      put16(p, code);
      p[2] = 0x03;
      p[3] = 248;
      memset(p + 4, 0xa5, 248);
      p += 4 + 248;
    }
  }
  put16(d + 2, (unsigned)(p - d - 4));
  if (in_list("FAKE_ST_MALFORMED", "0x2e")) put16(d + 2, (unsigned)(p - d - 4) + 40);
  return (size_t)(p - d);
}

static size_t capacity_page(unsigned char *d) {
  const char *spec = getenv("FAKE_ST_CAPACITY");
  unsigned long v[4] = {5000000, 0, 11444224, 0};
  int parts = 1;
  if (spec && *spec) {
    unsigned long r0 = 0, m0 = 0, r1 = 0, m1 = 0;
    int n = sscanf(spec, "%lu:%lu,%lu:%lu", &r0, &m0, &r1, &m1);
    v[0] = r0; v[2] = m0;
    if (n == 4) { v[1] = r1; v[3] = m1; parts = 2; }
  }
  d[0] = 0x31;
  d[1] = 0;
  unsigned char *p = d + 4;
  for (unsigned code = 1; code <= 4; ++code) {
    if (parts == 1 && (code == 2 || code == 4)) continue;
    int wide = code == 1 && in_list("FAKE_ST_ODD", "0x31-wide");
    put16(p, code);
    p[2] = 0x00;
    p[3] = wide ? 8 : 4;
    if (wide) put64(p + 4, v[code - 1]);
    else put32(p + 4, v[code - 1]);
    p += 4 + p[3];
    if (code == 3 && in_list("FAKE_ST_MALFORMED", "0x31")) p[-5] = 12;
  }
  put16(d + 2, (unsigned)(p - d - 4));
  return (size_t)(p - d);
}

/* SPC-4 7.4.2: each attribute's format and size. */
struct mam_kind { unsigned id; int ascii; unsigned size; };
static const struct mam_kind mam_kinds[] = {
    {0x0000, 0, 8}, {0x0001, 0, 8}, {0x0003, 0, 8}, {0x0220, 0, 8}, {0x0221, 0, 8}, {0x0400, 1, 8}, {0x0401, 1, 32},
    {0x0405, 0, 1}, {0x0406, 1, 8}, {0x0408, 0, 1}, {0x0806, 1, 32},
};
static const char default_mam[] =
    "0x0003=42;0x0220=1500000;0x0221=2500000;0x0400=FUJIFILM;0x0401=CQ1234567890;"
    "0x0405=0x5e;0x0406=20230115;0x0408=0x00;0x0806=ABC123L8";

static size_t attribute_list(const unsigned char *cdb, unsigned char *d, size_t room) {
  const char *spec = getenv("FAKE_ST_MAM");
  if (!spec) spec = default_mam;
  if (strcmp(spec, "none") == 0) spec = "";
  unsigned first = ((unsigned)cdb[8] << 8) | cdb[9];
  static char buf[16384];
  snprintf(buf, sizeof buf, "%s", spec);
  unsigned char *p = d + 4;
  char *save = NULL;
  for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
    char *eq = strchr(item, '=');
    if (!eq) continue;
    *eq = '\0';
    unsigned id = (unsigned)strtoul(item, NULL, 16);
    const char *value = eq + 1;
    const struct mam_kind *k = NULL;
    for (size_t i = 0; i < sizeof mam_kinds / sizeof mam_kinds[0]; ++i)
      if (mam_kinds[i].id == id) k = &mam_kinds[i];
    struct mam_kind other = {id, 0, 8};
    if (!k) {
      char *end = NULL;
      (void)strtoull(value, &end, 0);
      if (!*value || *end) { other.ascii = 1; other.size = (unsigned)strlen(value); }
      k = &other;
    }
    unsigned size = k->size;
    int format = k->ascii ? 1 : 0;
    if (id == 0x0806 && in_list("FAKE_ST_ODD", "attr-text")) format = 2;
    if (id == 0x0003 && in_list("FAKE_ST_ODD", "attr-load4")) size = 4;
    if (id < first || (size_t)(p - d) + 5 + size > room) continue;
    put16(p, id);
    p[2] = (unsigned char)(0x80 | format);
    put16(p + 3, size);
    if (k->ascii) {
      memset(p + 5, ' ', size);
      size_t n = strlen(value);
      memcpy(p + 5, value, n < size ? n : size);
    } else {
      unsigned long long v = strtoull(value, NULL, 0);
      if (size == 1) p[5] = (unsigned char)v;
      else if (size == 4) put32(p + 5, (unsigned long)v);
      else put64(p + 5, v);
    }
    p += 5 + size;
  }
  unsigned long avail = (unsigned long)(p - d - 4);
  if (in_list("FAKE_ST_MALFORMED", "attr") && avail >= 5) {
    /* The last attribute claims more bytes than the list holds. */
    unsigned char *q = d + 4, *last = q;
    while (q < p) { last = q; q += 5 + (((unsigned)q[3] << 8) | q[4]); }
    put16(last + 3, (((unsigned)last[3] << 8) | last[4]) + 16);
  }
  put32(d, avail);
  return (size_t)(p - d);
}

static size_t encryption_page(unsigned specific, unsigned char *d, int *bad) {
  const char *mode = getenv("FAKE_ST_ENCRYPTION");
  int on = mode && strcmp(mode, "on") == 0;
  memset(d, 0, 64);
  if (specific == 0x0020) { /* Data Encryption Status, SSC-4 8.5.2.4 */
    put16(d, 0x0020);
    put16(d + 2, 20);
    d[4] = 0x42;          /* I_T nexus scope: all I_T nexuses; key scope: public */
    d[5] = on ? 2 : 0;    /* encryption mode: encrypt / disable */
    d[6] = on ? 2 : 0;    /* decryption mode: decrypt / disable */
    d[7] = on ? 1 : 0;    /* algorithm index */
    put32(d + 8, on ? 5 : 0); /* key instance counter */
    if (in_list("FAKE_ST_MALFORMED", "spin")) put16(d + 2, 4);
    return 24;
  }
  if (specific == 0x0021) { /* Next Block Encryption Status, SSC-4 8.5.2.5 */
    put16(d, 0x0021);
    put16(d + 2, 12);
    d[12] = 0x02;         /* not a logical block yet (at BOT): unable to tell */
    return 16;
  }
  *bad = 1;
  return 0;
}

static int fake_sg_io(sg_io_hdr_t *h) {
  const char *sg = getenv("FAKE_ST_SG");
  if (sg && strcmp(sg, "none") == 0) { errno = ENOTTY; return -1; }
  if (sg && strcmp(sg, "eperm") == 0) { errno = EPERM; return -1; }
  if (!h || h->interface_id != 'S' || !h->cmdp || h->cmd_len < 6) { errno = EINVAL; return -1; }
  const unsigned char *cdb = h->cmdp;
  log_line("SG_IO 0x%02x\n", cdb[0]);
  h->status = h->masked_status = h->host_status = h->driver_status = 0;
  h->sb_len_wr = 0;
  h->resid = 0;
  static unsigned char d[65536];
  memset(d, 0, sizeof d);
  int bad = 0;
  size_t len;
  switch (cdb[0]) {
    case 0x12: /* INQUIRY */
      len = inquiry_data(cdb, d, &bad);
      if (bad) return illegal_field(h);
      return reply(h, d, len, ((size_t)cdb[3] << 8) | cdb[4]);
    case 0x03: /* REQUEST SENSE: no sense */
      d[0] = 0x70;
      d[7] = 10;
      return reply(h, d, 18, cdb[4]);
    case 0x4d: { /* LOG SENSE */
      unsigned page = cdb[2] & 0x3f;
      size_t alloc = ((size_t)cdb[7] << 8) | cdb[8];
      if (page == 0x00) {
        unsigned char *p = d + 4;
        *p++ = 0x00;
        if (!in_list("FAKE_ST_MISSING", "0x2e")) *p++ = 0x2e;
        if (!in_list("FAKE_ST_MISSING", "0x31")) *p++ = 0x31;
        put16(d + 2, (unsigned)(p - d - 4));
        return reply(h, d, (size_t)(p - d), alloc);
      }
      if (page == 0x2e && !in_list("FAKE_ST_MISSING", "0x2e"))
        return reply(h, d, tapealert_page(d), alloc);
      if (page == 0x31 && !in_list("FAKE_ST_MISSING", "0x31")) {
        if (no_medium()) return check_condition(h, 0x2, 0x3a, 0x00);
        return reply(h, d, capacity_page(d), alloc);
      }
      return illegal_field(h);
    }
    case 0x8c: { /* READ ATTRIBUTE */
      if (h->cmd_len < 16 || (cdb[1] & 0x1f) != 0x00 || in_list("FAKE_ST_MISSING", "attr"))
        return illegal_field(h);
      if (no_medium()) return check_condition(h, 0x2, 0x3a, 0x00);
      size_t alloc = ((size_t)cdb[10] << 24) | ((size_t)cdb[11] << 16) | ((size_t)cdb[12] << 8) | cdb[13];
      return reply(h, d, attribute_list(cdb, d, sizeof d), alloc);
    }
    case 0xa2: { /* SECURITY PROTOCOL IN */
      const char *mode = getenv("FAKE_ST_ENCRYPTION");
      if (h->cmd_len < 12 || cdb[1] != 0x20 || in_list("FAKE_ST_MISSING", "spin") ||
          (mode && strcmp(mode, "none") == 0))
        return illegal_field(h);
      size_t alloc = ((size_t)cdb[6] << 24) | ((size_t)cdb[7] << 16) | ((size_t)cdb[8] << 8) | cdb[9];
      len = encryption_page(((unsigned)cdb[2] << 8) | cdb[3], d, &bad);
      if (bad) return illegal_field(h);
      return reply(h, d, len, alloc);
    }
    default:
      return check_condition(h, 0x5, 0x20, 0x00);
  }
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
  if (request == SG_IO) return fake_sg_io(arg);
  if (request == SG_GET_VERSION_NUM) {
    *(int *)arg = 30536;
    return 0;
  }
  if (request == SG_SET_TIMEOUT) return 0;
  if (request == 0x5382) { /* SCSI_IOCTL_GET_IDLUN: host 0, channel 0, id 0, lun 0 */
    memset(arg, 0, 2 * sizeof(int));
    return 0;
  }
  if (request == SG_GET_SCSI_ID) {
    memset(arg, 0, sizeof(struct sg_scsi_id));
    ((struct sg_scsi_id *)arg)->scsi_type = 0x01;
    return 0;
  }
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
  root = getenv("FAKE_ST_SYSDEV");
  if (root && *root && strncmp(path, sysdev_prefix, sizeof sysdev_prefix - 1) == 0) {
    snprintf(buf, size, "%s/%s", root, path + sizeof sysdev_prefix - 1);
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
    if (!(flags & O_NONBLOCK)) {
      const char *loaded = getenv("FAKE_ST_LOADING");
      if (loaded && *loaded && access(loaded, F_OK) != 0) {
        log_line("open loading\n");
        while (access(loaded, F_OK) != 0) usleep(10000);
      }
      err = drive_state()->unready_errno;
    }
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
