#!/usr/bin/env bats
# Shows that every fault is answered (issue 23 §4): tests/fault-sweep fails
# the system calls of a representative run of each program one at a time,
# under tests/shim/fault.c, and checks that the program ends, says what
# failed and where, and leaves exactly the data it says arrived. A fast
# subset runs here; the full sweep (every call with every errno) runs with
# TK_FAULT_FULL=1.
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  SWEEP=$BATS_TEST_DIRNAME/fault-sweep
  SHIM=$TK_TEST_LIB/fault.so
}

sweep() { run "$SWEEP" --dir "$BATS_TEST_TMPDIR/sweep" "$@"; }

@test "fault.so: counts each family's calls and fails the one asked for" {
  head -c 30000 /dev/urandom >in
  TK_FAULT_PROG=reblock TK_FAULT_LOG=$PWD/count.log LD_PRELOAD=$SHIM "$REBLOCK" -s 10k -i in -o out
  run grep -x 'count 0 write 3' count.log
  assert_success
  run --separate-stderr env TK_FAULT_PROG=reblock TK_FAULT=write:2:EIO TK_FAULT_LOG=$PWD/fault.log \
    LD_PRELOAD="$SHIM" "$REBLOCK" -s 10k -i in -o out
  assert_failure 1
  assert_equal "$stderr" "reblock: write out after 1 full record of 10240 bytes: Input/output error"
  run grep -x "hit 0 write 2 EIO w $PWD/out" fault.log
  assert_success
}

@test "fault.so: leaves alone a program other than TK_FAULT_PROG" {
  head -c 30000 /dev/urandom >in
  TK_FAULT_PROG=buffer TK_FAULT=write:1:EIO TK_FAULT_LOG=$PWD/fault.log LD_PRELOAD=$SHIM \
    "$REBLOCK" -s 10k -i in -o out
  cmp in out
  assert_file_not_exists fault.log
}

@test "fault-sweep: a write lost without a word fails the sweep" {
  sweep --case buffer-file write:1:drop@0.1
  assert_failure 1
  assert_line --partial "FAIL buffer-file write:1:drop@0.1"
  assert_line --partial "exit 0, but out differs from the input"
  assert_line "1 cases, 1 failed, 0 known"
}

@test "fault-sweep: a read error taken for the end of the input fails the sweep" {
  sweep --case buffer-file read:1:drop@0
  assert_failure 1
  assert_line --partial "exit 0, but out differs from the input"
}

@test "fault-sweep: a record lost on its way into an image fails the sweep" {
  sweep --case reblock-write pwrite:1:drop@0
  assert_failure 1
  assert_line --partial "exit 0, but the image reads back different"
}

@test "buffer: every fault of the fast subset is answered (file, pipe, .tap, remote)" {
  # Each case runs in one pass (suite time): the sanitizer pass, several
  # times slower, takes the one that reaches most of lib/, the remote link
  # to rmt writing a virtual tape; the plain pass the others.
  if [ -n "${TK_SANITIZED:-}" ]; then
    sweep buffer-remote
  else
    sweep buffer-file buffer-pipe buffer-tap
  fi
  assert_success
  assert_line --regexp '^buffer: [1-9][0-9]* cases \(site, errno\), 0 failed'
}

@test "buffer: a link to rmt failing with writes in flight says exactly what reached the image" {
  # A record goes to the link as one writev (its W header and the block,
  # uncopied): the third, sent while the paced rmt has yet to answer the
  # two before it.
  sweep --case buffer-remote writev:3:EIO@0.1
  assert_success
  assert_line "buffer: 1 cases (site, errno), 0 failed, 0 known, 0 not reached"
}

@test "rmt: every fault of the fast subset is answered, serving tar's writes and reads" {
  # The writes under the sanitizers (they reach the reads' code too), the
  # reads in the plain pass.
  if [ -n "${TK_SANITIZED:-}" ]; then
    sweep rmt-tar
  else
    sweep rmt-tar-read
  fi
  assert_success
  assert_line --regexp '^rmt: [1-9][0-9]* cases \(site, errno\), 0 failed'
}

@test "reblock: every fault of the fast subset is answered (to and from a .tap)" {
  # The plain pass only (suite time): the sanitizer pass sweeps the remote
  # link and the server, which reach the most of lib/.
  [ -z "${TK_SANITIZED:-}" ] || skip "the plain pass sweeps reblock"
  sweep reblock-write reblock-read
  assert_success
  assert_line --regexp '^reblock: [1-9][0-9]* cases \(site, errno\), 0 failed'
}

@test "mt: every fault of the fast subset is answered (weof, verify, vt-create on a .tap)" {
  [ -z "${TK_SANITIZED:-}" ] || skip "the plain pass sweeps mt"
  sweep mt-weof mt-verify mt-vt-create
  assert_success
  assert_line --regexp '^mt: [1-9][0-9]* cases \(site, errno\), 0 failed'
}

@test "every program whose file reaches the size limit (ulimit -f) says so and what arrived, never dying of SIGXFSZ" {
  # buffer to a file, a .tap and rmt; rmt under tar; reblock to a .tap and a
  # file; mt weof: each output meets a real RLIMIT_FSIZE, which sends SIGXFSZ
  # with the EFBIG.
  [ -z "${TK_SANITIZED:-}" ] || skip "the plain pass sweeps the file size limit"
  sweep --fsize
  assert_success
  assert_line "buffer: 3 cases (site, errno), 0 failed, 0 known, 0 not reached"
  assert_line "rmt: 1 cases (site, errno), 0 failed, 0 known, 0 not reached"
  assert_line "reblock: 2 cases (site, errno), 0 failed, 0 known, 0 not reached"
  assert_line "mt: 1 cases (site, errno), 0 failed, 0 known, 0 not reached"
}

@test "fault-sweep: EFBIG on a write is answered as a full medium, with what arrived" {
  sweep --case buffer-file write:3:EFBIG@0.1
  assert_success
  assert_line "buffer: 1 cases (site, errno), 0 failed, 0 known, 0 not reached"
  sweep --case reblock-write pwrite:1:EFBIG@0
  assert_success
  assert_line "reblock: 1 cases (site, errno), 0 failed, 0 known, 0 not reached"
}

@test "every fault of the full sweep is answered (TK_FAULT_FULL=1)" {
  [ -n "${TK_FAULT_FULL:-}" ] || skip "the full sweep runs with TK_FAULT_FULL=1"
  sweep --full
  assert_success
}
