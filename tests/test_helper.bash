# Shared set-up for every bats suite: assertions, the binaries under test and
# a private scratch directory.
#
# Every test sources this anew, so it forks nothing: a fork costs about 8 ms
# of CPU on the CI machines, and bats_load_library's load.bash files fork a
# dirname per source line (17 for the three libraries, 0.3 s of CPU a test,
# a third of the suite's). The libraries' src/ files are sourced directly,
# found in BATS_LIB_PATH as bats_load_library finds them.
tk_load_libraries() {
  local name dir file found dirs
  IFS=: read -r -a dirs <<<"${BATS_LIB_PATH:-/usr/lib/bats}"
  for name in bats-support bats-assert bats-file; do
    found=
    for dir in "${dirs[@]}"; do
      [ -f "$dir/$name/load.bash" ] || continue
      for file in "$dir/$name"/src/*.bash; do
        # shellcheck disable=SC1090 # the libraries are found at run time
        source "$file" || return 1
      done
      found=1
      break
    done
    [ -n "$found" ] || { echo "bats library $name not found in BATS_LIB_PATH" >&2; return 1; }
  done
}
tk_load_libraries || exit 1

# bats traces every command a test runs, in the test and in every function
# and subshell it calls (a DEBUG trap inherited through set -T), so that a
# failure can name its line: 0.17 ms a command, and each fork here costs
# twice as much (5 ms, not 2.5) while the trap runs in the child; 10 to 25 %
# of a file's CPU (mt.bats: 19.7 CPU-seconds to 14.7). Every setup() starts
# with this: the test's own lines stay traced, so a failure still names the
# line of the test; the helpers, assertions and subshells it calls run
# untraced, so a failure inside one names the line that called it (an
# assertion still prints what differed).
tk_trace_test_lines_only() {
  declare -ft "$BATS_TEST_NAME"
  set +T
}
setup() { tk_trace_test_lines_only; }

TK_BUILD=${TK_BUILD:-build}
[ "${TK_BUILD#/}" != "$TK_BUILD" ] || TK_BUILD=${BATS_TEST_DIRNAME%/*}/$TK_BUILD
TK_BIN=$TK_BUILD/bin
TK_TEST_BIN=$TK_BUILD/test-bin
# The sanitizer build has only the helpers that drive lib/ (Makefile,
# ASAN_HELPERS); the others come from the plain build, as do the shims
# (plain C, built once).
TK_PLAIN_TEST_BIN=${TK_BUILD%/asan}/test-bin
TK_TEST_LIB=${TK_BUILD%/asan}/test-lib
export PATH="$TK_BIN:$TK_TEST_BIN:$TK_PLAIN_TEST_BIN:$PATH"

# rmt checks at start that syslog takes its session log, and says on
# standard error when it does not (no /dev/log in a container): set and
# empty, this test-only variable skips the check, so that no test's stderr
# depends on the host's log daemon. Tests of the check set it to a socket.
export TAPEKIT_TEST_SYSLOG_SOCKET=

# A name is a virtual tape only where one was made (mt vt-create) or the
# opt-in names it; most of the suite writes new *.tap names as virtual
# tapes, so it opts in for them as an administrator would. Tests of the
# default (a *.tap name is the plain file rmt-tar makes) unset it.
export TAPEKIT_VIRTUAL_TAPES='*.tap'

# The remote shell that runs its command here (tests/rsh-standin), for
# host:path names without a network.
RSH_STANDIN=$BATS_TEST_DIRNAME/rsh-standin

# Each program under test can be swapped for the original, e.g.
# BUFFER=/usr/bin/buffer bats tests/buffer.bats, to show drop-in behaviour.
BUFFER=${BUFFER:-$TK_BIN/buffer}
MT=${MT:-$TK_BIN/mt}
RMT=${RMT:-$TK_BIN/rmt}
REBLOCK=${REBLOCK:-$TK_BIN/reblock}

# Megabytes of data for the heavy identity tests; smaller under sanitizers.
# 128 goes twice round the largest queue they use (-m 64m); each identity
# test's 200 was ~0.4 s more CPU, for buffer.bats' ~20 and reblock's.
if [ -n "${TK_SANITIZED:-}" ]; then TK_BIG_MB=${TK_BIG_MB:-24}; else TK_BIG_MB=${TK_BIG_MB:-128}; fi

# Writes N MiB of reproducible pseudo-random bytes (seeded by $2) to stdout.
random_mib() {
  local mib=$1 seed=${2:-1}
  openssl enc -aes-128-ctr -pass "pass:tapekit$seed" -nosalt -pbkdf2 </dev/zero 2>/dev/null |
    head -c "$((mib * 1048576))"
}

sha() { sha256sum "$@" | cut -d' ' -f1; }

# The records of .tap image IMAGE from BOT, as tapectl reads them:
#   tap_records IMAGE            those of its first file, one a line as a
#                                "size size" pair (like reblock.bats'
#                                writes.txt);
#   tap_records --reads N IMAGE  what each of N reads finds, on one line,
#                                each followed by a space: "10240 4520 0 "
#                                (0 at a filemark, an errno name where a
#                                read fails).
# All of tapectl's output is read, so that it ends at its last read, not by
# SIGPIPE.
tap_records() {
  local reads=2000 one_line=
  if [ "$1" = --reads ]; then
    reads=$2 one_line=1
    shift 2
  fi
  tapectl -r "$1" op rewind : read "$reads" | cut -d' ' -f1 |
    if [ -n "$one_line" ]; then
      tr '\n' ' '
    else
      awk 'done { next } $1 == 0 || $1 !~ /^[0-9]+$/ { done = 1; next } { print $1, $1 }'
    fi
}

# Moves the test to a disk where a virtual tape stages its writes (blocks
# reserved on ext4 or xfs): the test directory when it is one, else a
# directory under the build folder on the checkout's disk, in $scratch,
# which the suite's teardown removes.
on_disk() {
  case "$(stat -f -c %T .)" in
    ext2/ext3 | xfs) ;;
    *)
      mkdir -p "${TK_BUILD%/asan}/scratch"
      scratch=$(mktemp -d "${TK_BUILD%/asan}/scratch/test.XXXXXX") || return 1
      cd "$scratch" || return 1
      ;;
  esac
}

# Kills pid and its children (buffer's writer, the remote shell's rmt) at
# once, and waits until they are gone: a child that is no job of this shell
# may still be dying, lock held, when the kill returns. The children go
# first: buffer's writer, seeing its reader die, writes out and closes the
# tape (seen once in 12 runs under load), which is no killed writer at all.
kill_tree() {
  local pid=$1 children p
  children=$(pgrep -P "$pid" || true)
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL $children "$pid" 2>/dev/null || true
  for p in $pid $children; do
    for _ in $(seq 1000); do
      [ -e "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] || break
      sleep 0.01
    done
  done
}

# Forgets every setting of the faked st drive (tests/shim/fake_st.c) a test
# may have inherited from the environment, whatever the shim adds next.
forget_fake_drive() { unset "${!FAKE_ST_@}"; }

# The shim that fakes the drive, on /dev/zero unless FAKE_ST_DEVICE says
# otherwise.
FAKE_ST=$TK_TEST_LIB/fake_st.so

# Runs a command against the faked drive. Where the suite has set
# fake_calls_log to a file, the shim appends every call it answers to it
# (FAKE_ST_LOG), for tests of what is asked of the drive.
fake() {
  if [ -n "${fake_calls_log:-}" ]; then
    LD_PRELOAD=$FAKE_ST FAKE_ST_LOG=$fake_calls_log "$@"
  else
    LD_PRELOAD=$FAKE_ST "$@"
  fi
}

# same_report [--fake] HERE THERE [COMMAND...]: mt reports the same of the
# device HERE and the device THERE (a remote one): each health command's
# exit status and output, and --json health but for the device's name.
# --fake runs mt against the faked drive; COMMAND, when given, runs before
# each report.
same_report() {
  local mt=("$MT") here there command here_out there_out here_status there_status
  if [ "$1" = --fake ]; then
    mt=(fake "$MT")
    shift
  fi
  here=$1 there=$2
  shift 2
  for command in tapealert capacity cartridge encryption health; do
    here_status=0 there_status=0
    if [ $# -gt 0 ]; then "$@"; fi
    here_out=$("${mt[@]}" -f "$here" "$command" 2>&1) || here_status=$?
    if [ $# -gt 0 ]; then "$@"; fi
    there_out=$("${mt[@]}" -f "$there" "$command" 2>&1) || there_status=$?
    assert_equal "$command: $there_status" "$command: $here_status"
    assert_equal "$there_out" "$here_out"
  done
  if [ $# -gt 0 ]; then "$@"; fi
  here_out=$("${mt[@]}" --json -f "$here" health | jq -c 'del(.device, .status.device)')
  if [ $# -gt 0 ]; then "$@"; fi
  there_out=$("${mt[@]}" --json -f "$there" health | jq -c 'del(.device, .status.device)')
  assert_equal "$there_out" "$here_out"
  [ -n "$here_out" ] || fail "no JSON report"
}

# Starts a private sshd for this test (tests/sshd-helper) in $SSHDIR, which
# the test's teardown stops with stop_test_sshd; skips the test where sshd
# cannot run here (not root, no openssh-server).
start_test_sshd() {
  SSHDIR=$BATS_TEST_TMPDIR/sshd
  local rc=0
  "$BATS_TEST_DIRNAME/sshd-helper" start "$SSHDIR" >"$BATS_TEST_TMPDIR/sshd.out" 2>&1 || rc=$?
  [ "$rc" != 77 ] || skip "$(cat "$BATS_TEST_TMPDIR/sshd.out")"
  [ "$rc" = 0 ] || fail "$(cat "$BATS_TEST_TMPDIR/sshd.out")"
}
stop_test_sshd() {
  if [ -n "${SSHDIR:-}" ]; then "$BATS_TEST_DIRNAME/sshd-helper" stop "$SSHDIR"; fi
}

# For a suite whose tests share one sshd: its setup_file starts it with
# start_file_sshd [FORCED_COMMAND] (sshd-helper start) in $SSHDIR, and may
# put the WAN emulator in front with wan_file_sshd RTT RATE WINDOW
# (sshd-helper wan); its teardown_file stops both with stop_test_sshd. How
# that went is kept for needs_sshd.
start_file_sshd() {
  export SSHDIR=$BATS_FILE_TMPDIR/sshd
  local rc=0
  "$BATS_TEST_DIRNAME/sshd-helper" start "$SSHDIR" "$@" >"$BATS_FILE_TMPDIR/sshd.out" 2>&1 || rc=$?
  echo "$rc" >"$BATS_FILE_TMPDIR/sshd.status"
}
wan_file_sshd() {
  local rc
  rc=$(cat "$BATS_FILE_TMPDIR/sshd.status")
  [ "$rc" = 0 ] || return 0
  WANRELAY=$TK_PLAIN_TEST_BIN/wanrelay "$BATS_TEST_DIRNAME/sshd-helper" wan "$SSHDIR" "$@" \
    >>"$BATS_FILE_TMPDIR/sshd.out" 2>&1 || rc=$?
  echo "$rc" >"$BATS_FILE_TMPDIR/sshd.status"
}
# In a test of such a suite: skips the test where the sshd cannot run here
# (not root, no openssh-server) and fails it where it did not start. With
# the name of one of its ssh wrappers ($1: ssh, ssh-forced-wan, ...), makes
# that the remote shell (RSH) in place of the rsh stand-in.
needs_sshd() {
  local rc
  rc=$(cat "$BATS_FILE_TMPDIR/sshd.status")
  [ "$rc" != 77 ] || skip "$(cat "$BATS_FILE_TMPDIR/sshd.out")"
  [ "$rc" = 0 ] || fail "$(cat "$BATS_FILE_TMPDIR/sshd.out")"
  if [ -n "${1:-}" ]; then
    export RSH=$SSHDIR/$1
    unset RSH_STANDIN_SERVER
  fi
}

# Drops buffer's note on a short queue (-s 256k in 1.19's default -m 1m)
# from $stderr_lines, for tests about the lines that follow it.
without_queue_note() {
  # shellcheck disable=SC2034  # read by the calling test
  mapfile -t stderr_lines < <(grep -v '^buffer: note: -m ' <<<"$stderr")
}

# Runs a command as another (unprivileged) user, uid and gid $1; needs root.
as_user() {
  local uid=$1
  shift
  setpriv --reuid "$uid" --regid "$uid" --clear-groups "$@"
}

# Waits until file $1 has a line matching the grep pattern $2, or process $3
# has ended, for at most two minutes (a terminal's "waiting for ... to open,
# 10 s" line comes after ten).
wait_for_line_while() {
  local i
  for i in $(seq 1200); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || return 0
    sleep 0.1
  done
}
