#!/usr/bin/env bats
# Runs inside the guest that tests/real-drive.bats boots (tests/st-guest
# --drives 2 --protect 1 --changer): /dev/nst0 holds a blank 32 MB tape,
# /dev/nst1 a write-protected one, /dev/nst2 is the changer's drive (emptied
# by setup_file), all three tgt's "IET VIRTUAL-TAPE" under the
# kernel's own st driver. Shows that mt behaves as mt-st 1.7 on the same
# drive in the same state (standard output, standard error, exit status and
# the state it leaves), and that buffer, reblock and rmt move records to
# and from it byte for byte. Each test puts the drive in the state it needs.
#
# tgt's drive answers no LOG SENSE, READ ATTRIBUTE, SECURITY PROTOCOL IN,
# LOCATE or ERASE, a READ POSITION that knows no position, and an all-zero
# compression page.
bats_require_minimum_version 1.5.0
load ../test_helper

MT_ST=${MT_ST:-/bin/mt-st}
TAPE=/dev/nst0
PROTECTED=/dev/nst1
EMPTY=/dev/nst2

# The changer's sg node (peripheral type 8).
changer() {
  local dev
  for dev in /sys/class/scsi_generic/*; do
    [ "$(cat "$dev/device/type")" != 8 ] || { echo "/dev/${dev##*/}"; return 0; }
  done
  return 1
}

# The changer's drive is emptied first: tgt's changer thinks it empty (st
# sees a cleaning cartridge in it), so a tape loaded from slot 1 and put back
# leaves it empty for st too. Only this order worked: once st had opened the
# drive with the cleaning cartridge, tgt never finished the load; without
# the status while the tape is in, st's blocking opens of the empty drive
# waited for it to become ready instead of failing with ENOMEDIUM.
setup_file() {
  [ -n "${TK_GUEST:-}" ] || return 0
  local sg
  sg=$(changer)
  timeout 60 mtx -f "$sg" load 1 0 >/dev/null &&
    timeout 60 "$MT_ST" -f "$EMPTY" status >/dev/null &&
    timeout 60 mtx -f "$sg" unload 1 0 >/dev/null
}

setup() {
  tk_trace_test_lines_only
  [ -n "${TK_GUEST:-}" ] || skip "runs inside tests/st-guest (tests/real-drive.bats)"
  cd "$BATS_TEST_TMPDIR" || return 1
  unset TAPEKIT_MT_DENSITY_TABLE
}

TAPECTL=$TK_PLAIN_TEST_BIN/tapectl

# Under TCG every process costs about 0.1 s: a drive's state is set by one
# tapectl (tests/helpers) run, and each row runs four programs.

# Prints tapectl's words that leave /dev/nst0 in variable-block mode at BOT
# of a tape holding files of the given numbers of 1000-byte records ("3 2 0
# 4": four files, the third empty), each closed by a filemark.
layout() {
  local records words="op load : op setblk 0 : op rewind : write"
  for records in "$@"; do
    while [ "$records" -gt 0 ]; do words+=" 1000"; records=$((records - 1)); done
    words+=" fm"
  done
  echo "$words : op rewind"
}

# Runs mt-st with "$@", then ours, each after tapectl has run with the words
# in $state (unless empty) on ${DRIVE:-/dev/nst0}. Fails, showing the difference, unless
# standard output, standard error, the exit status and mt-st's status of
# the drive afterwards are identical.
state="op nop"
# A command to run the two in, where they might wait for ever.
guard=()
same_as_mt_st() {
  local who status kind drive=${DRIVE:-$TAPE} words
  read -r -a words <<<"$state"
  for who in theirs ours; do
    if [ -n "$state" ]; then
      "$TAPECTL" -n "$drive" "${words[@]}" >setup.out 2>&1 || { echo "tapectl $drive $state failed:"; cat setup.out; return 1; }
    fi
    status=0
    if [ "$who" = theirs ]; then
      "${guard[@]}" "$MT_ST" "$@" >"$who.out" 2>"$who.err" || status=$?
    else
      "${guard[@]}" "$MT" "$@" >"$who.out" 2>"$who.err" || status=$?
    fi
    echo "$status" >>"$who.err"
    "$MT_ST" -f "$drive" status >"$who.after" 2>&1 || true
  done
  for kind in out err after; do
    if ! cmp -s "theirs.$kind" "ours.$kind"; then
      echo "mt $* (after tapectl $state): $kind differs (mt-st <, ours >; the last line of err is the exit status):"
      diff "theirs.$kind" "ours.$kind"
      return 1
    fi
  done
}

# Each line of standard input is a command for same_as_mt_st (words split
# as the shell splits them).
table_same_as_mt_st() {
  local line words
  while read -r line; do
    [ -n "$line" ] || continue
    eval "words=($line)"
    same_as_mt_st "${words[@]}" || return 1
  done
}

@test "real drive: mt status at BOT of a blank tape is mt-st's" {
  state=$(layout)
  same_as_mt_st -f "$TAPE" status
}

@test "real drive: mt status after writes and after reads is mt-st's" {
  state="$(layout) : write 1000 1000 1000"
  same_as_mt_st -f "$TAPE" status
  state="$(layout 4 1) : read 2"
  same_as_mt_st -f "$TAPE" status
  state="$(layout 4 1) : read 5"
  same_as_mt_st -f "$TAPE" status
}

@test "real drive: mt weof and status after filemarks are mt-st's" {
  state=$(layout)
  table_same_as_mt_st <<EOF2
-f $TAPE weof
-f $TAPE weof 3
-f $TAPE eof 2
-f $TAPE weof 0
EOF2
  state="$(layout) : op weof 2"
  same_as_mt_st -f "$TAPE" status
}

@test "real drive: mt fsf, bsf, fsr, bsr, fsfm, bsfm and asf land where mt-st's do" {
  state=$(layout 3 2 0 4)
  table_same_as_mt_st <<EOF2
-f $TAPE fsf
-f $TAPE fsf 2
-f $TAPE fsf 3
-f $TAPE fsf 4
-f $TAPE fsf 9
-f $TAPE fsr 2
-f $TAPE fsr 3
-f $TAPE fsr 5
-f $TAPE bsf
-f $TAPE bsr
-f $TAPE asf 2
-f $TAPE fsfm 1
-f $TAPE bsfm 1
EOF2
  state="$(layout 3 2 0 4) : op fsf 2"
  table_same_as_mt_st <<EOF2
-f $TAPE bsf
-f $TAPE bsf 2
-f $TAPE bsf 5
-f $TAPE bsfm 1
-f $TAPE fsfm 1
-f $TAPE bsr
-f $TAPE status
EOF2
  state="$(layout 3 2 0 4) : op fsf 1 : op fsr 1"
  table_same_as_mt_st <<EOF2
-f $TAPE bsr
-f $TAPE bsr 2
-f $TAPE bsr 3
-f $TAPE fsr 1
-f $TAPE status
EOF2
}

@test "real drive: mt eod and rewind are mt-st's, status after them too" {
  state=$(layout 3 2)
  table_same_as_mt_st <<EOF2
-f $TAPE eod
-f $TAPE seod
-f $TAPE rewind
EOF2
  state="$(layout 3 2) : op eom"
  table_same_as_mt_st <<EOF2
-f $TAPE status
-f $TAPE rewind
-f $TAPE fsf 1
-f $TAPE bsf 1
EOF2
}

@test "real drive: mt wset is refused as mt-st's is" {
  state=$(layout)
  same_as_mt_st -f "$TAPE" wset 1
}

@test "real drive: mt setblk in fixed and variable mode, and status in each, are mt-st's" {
  state=$(layout)
  table_same_as_mt_st <<EOF2
-f $TAPE setblk 512
-f $TAPE setblk 65536
-f $TAPE setblk 0
-f $TAPE setblk 3
-f $TAPE defblksize 1024
EOF2
  state="$(layout) : op setblk 1024"
  same_as_mt_st -f "$TAPE" status
  state="$(layout) : op setblk 1024 : write 4096 : op rewind"
  table_same_as_mt_st <<EOF2
-f $TAPE fsr 2
-f $TAPE fsf 1
-f $TAPE status
EOF2
  "$MT_ST" -f "$TAPE" setblk 0
}

@test "real drive: mt tell and seek get tgt's refusal as mt-st's do" {
  state="$(layout 3 2) : op fsf 1"
  table_same_as_mt_st <<EOF2
-f $TAPE tell
-f $TAPE seek 2
-f $TAPE seek 0
EOF2
}

@test "real drive: mt compression gets tgt's EIO as mt-st's does" {
  state=$(layout)
  table_same_as_mt_st <<EOF2
-f $TAPE compression
-f $TAPE compression 1
-f $TAPE compression 0
EOF2
}

@test "real drive: mt offline and load, and what follows them, are mt-st's (tgt keeps the tape in)" {
  state=$(layout 2)
  same_as_mt_st -f "$TAPE" offline
  state="$(layout 2) : op offline"
  table_same_as_mt_st <<EOF2
-f $TAPE status
-f $TAPE rewind
-f $TAPE fsf 1
-f $TAPE load
EOF2
  "$MT_ST" -f "$TAPE" load || true
}

@test "real drive: mt erase gets tgt's refusal as mt-st's does" {
  state=$(layout 2)
  same_as_mt_st -f "$TAPE" erase
}

@test "real drive: mt densities and setdensity are mt-st's" {
  export TAPEKIT_MT_DENSITY_TABLE=1.7
  state=$(layout)
  table_same_as_mt_st <<EOF2
-f $TAPE densities
-f $TAPE setdensity 0
-f $TAPE setdensity 0x44
-f $TAPE status
EOF2
  "$MT_ST" -f "$TAPE" setdensity 0 || true
}

@test "real drive: mt drvbuffer, stoptions, stsetoptions, stclearoptions and the timeouts are mt-st's" {
  state=$(layout)
  table_same_as_mt_st <<EOF2
-f $TAPE drvbuffer 1
-f $TAPE stoptions buffer-writes async-writes read-ahead
-f $TAPE stsetoptions can-bsr no-blklimits
-f $TAPE stclearoptions can-bsr no-blklimits
-f $TAPE stsetoptions debug
-f $TAPE stclearoptions debug
-f $TAPE stwrthreshold 64
-f $TAPE sttimeout 900
-f $TAPE stlongtimeout 14400
-f $TAPE stsetcln 0x1234
-f $TAPE stoptions buffer-writes async-writes read-ahead can-bsr
EOF2
}

@test "real drive: mt lock, unlock and retension are mt-st's" {
  state=$(layout 1)
  table_same_as_mt_st <<EOF2
-f $TAPE lock
-f $TAPE unlock
-f $TAPE retension
EOF2
}

@test "real drive: a write-protected tape: status, weof and setblk are mt-st's" {
  DRIVE=$PROTECTED
  state="op rewind"
  table_same_as_mt_st <<EOF2
-f $PROTECTED status
-f $PROTECTED weof
-f $PROTECTED wset 1
-f $PROTECTED erase
-f $PROTECTED setblk 512
-f $PROTECTED fsf 1
-f $PROTECTED eod
-f $PROTECTED rewind
EOF2
}

@test "real drive: a drive the changer emptied: status, setblk and load are mt-st's" {
  DRIVE=$EMPTY
  state=
  guard=(timeout 60)
  # Commands that open the drive without O_NONBLOCK are left out: st waits
  # there for tgt's empty drive to become ready (mt-st as long as ours).
  table_same_as_mt_st <<EOF2
-f $EMPTY status
-f $EMPTY setblk 512
-f $EMPTY load
-f $EMPTY status
EOF2
}

# --- fake_st against the real driver -------------------------------------

# mt-st's output and exit status for "$@" on fake_st's drive (in state
# $FAKE_ST_STATE), device names spelled as /dev/zero's.
on_fake_st() {
  local status=0
  LD_PRELOAD=$TK_TEST_LIB/fake_st.so "$MT_ST" "$@" 2>&1 || status=$?
  echo "exit $status"
}
on_real_st() {
  local device=$1 status=0 output
  shift
  output=$("$MT_ST" -f "$device" "$@" 2>&1) || status=$?
  [ -z "$output" ] || printf '%s\n' "${output//"$device"//dev/zero}"
  echo "exit $status"
}

@test "real drive: fake_st's loaded, end-of-data and empty drives are what the real st reports in those states" {
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  assert_equal "$(on_real_st "$TAPE" status)" "$(FAKE_ST_STATE='' on_fake_st -f /dev/zero status)"
  # fake_st's end of data is a fast one (no file number): st's fast-eod.
  "$TAPECTL" "$TAPE" write 1000 fm 1000 fm : op rewind
  "$MT_ST" -f "$TAPE" stsetoptions fast-eod
  "$MT_ST" -f "$TAPE" eod
  "$MT_ST" -f "$TAPE" stclearoptions fast-eod
  run on_real_st "$TAPE" status
  "$MT_ST" -f "$TAPE" rewind
  assert_output "$(FAKE_ST_STATE=eod on_fake_st -f /dev/zero status)"
  local command
  for command in status "setblk 512"; do
    # shellcheck disable=SC2086 # the command's words
    assert_equal "$(on_real_st "$EMPTY" $command)" "$(FAKE_ST_STATE=no-tape on_fake_st -f /dev/zero $command)"
  done
}

@test "real drive: a missing device is mt-st's error" {
  table_same_as_mt_st <<EOF2
-f /dev/nst9 status
-f /dev/nst9 rewind
EOF2
}

@test "real drive: mt through tapekit's rmt (rsh stand-in) prints and does what mt-st does locally" {
  # Ours gets the drive as localhost:/dev/nst0 through a wrapper.
  cat >remote-mt <<EOF2
#!/bin/sh
shift 2
exec "$MT" -f "localhost:$TAPE" --rsh-command="$BATS_TEST_DIRNAME/../rsh-standin" "\$@"
EOF2
  chmod +x remote-mt
  # shellcheck disable=SC2030 # this test's own mt
  local MT=$PWD/remote-mt
  state="$(layout 2 0 1) : op fsf 1"
  table_same_as_mt_st <<EOF2
-f $TAPE status
-f $TAPE fsf 1
-f $TAPE bsf 1
-f $TAPE fsr 1
-f $TAPE eod
-f $TAPE rewind
-f $TAPE weof 2
-f $TAPE setblk 1024
EOF2
  # tgt's EIO, named as the client named the drive.
  run -2 "$MT" -f "$TAPE" compression 1
  assert_output "localhost:$TAPE: Input/output error"
  "$MT_ST" -f "$TAPE" setblk 0
}

# --- buffer, reblock and rmt on the drive --------------------------------

# Makes src/ (three files, 600 KB in all, fixed times) and, from it, the
# archive a local GNU tar -b 64 writes (src.tar).
make_src() {
  mkdir -p src/sub
  head -c 400000 /dev/urandom >src/a.bin
  head -c 200001 /dev/urandom >src/sub/b.bin
  echo hello >src/c.txt
  find src -exec touch -h -d @86400 {} +
  tar -c -b 64 --sort=name --owner=0 --group=0 -f src.tar -C src .
}

# Prints the sizes of the records of the file at /dev/nst0's position, one a
# line, reading one record a read.
record_sizes() {
  "$TAPECTL" "$TAPE" read "${1:-100}" 1048576 | sed -n '/^0$/q; s/ corrupt$//p'
}

@test "real drive: tar | buffer -o /dev/nst0 writes one record a block; buffer -i reads it back byte for byte" {
  make_src
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  "$BUFFER" -s 32k -o "$TAPE" <src.tar
  "$MT_ST" -f "$TAPE" rewind
  run record_sizes
  assert_equal "$(sort -u <<<"$output")" 32768
  assert_equal "${#lines[@]}" $(( $(stat -c %s src.tar) / 32768 ))
  "$MT_ST" -f "$TAPE" rewind
  "$BUFFER" -s 32k -i "$TAPE" >back.tar
  cmp src.tar back.tar
}

@test "real drive: reblock -o /dev/nst0 writes records of exactly -s; dd reads them back byte for byte" {
  make_src
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  "$REBLOCK" -s 10k -o "$TAPE" <src.tar
  "$MT_ST" -f "$TAPE" rewind
  dd if="$TAPE" of=back.tar bs=64k status=none
  cmp src.tar back.tar
  "$MT_ST" -f "$TAPE" rewind
  run record_sizes 200
  local size full last
  size=$(stat -c %s src.tar)
  full=$((size / 10240)) last=$((size % 10240))
  assert_equal "$(sed -n "1,${full}p" <<<"$output" | sort -u)" 10240
  assert_equal "$(sed -n "$((full + 1)),\$p" <<<"$output")" "$last"
}

@test "real drive: in fixed-block mode (setblk 512) buffer writes and reads the archive back byte for byte" {
  make_src
  "$TAPECTL" "$TAPE" op load : op setblk 512 : op rewind
  "$BUFFER" -s 10k -o "$TAPE" <src.tar
  "$MT" -f "$TAPE" rewind
  "$BUFFER" -s 10k -i "$TAPE" >back.tar
  "$MT" -f "$TAPE" setblk 0
  cmp src.tar back.tar
}

@test "real drive: GNU tar through rmt (rsh stand-in) writes the bytes a local tar writes, one 32 KiB record a block, and reads them back" {
  make_src
  local rsh=$BATS_TEST_DIRNAME/../rsh-standin
  export RSH_STANDIN_LOG=$PWD/rsh.log
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  tar -c -b 64 --sort=name --owner=0 --group=0 --rsh-command="$rsh" -f "localhost:$TAPE" -C src .
  grep -q rmt rsh.log
  "$MT_ST" -f "$TAPE" rewind
  run record_sizes
  assert_equal "$(sort -u <<<"$output")" 32768
  "$MT_ST" -f "$TAPE" rewind
  dd if="$TAPE" of=back.tar bs=64k status=none
  cmp src.tar back.tar
  "$MT_ST" -f "$TAPE" rewind
  mkdir out
  tar -x -b 64 --rsh-command="$rsh" -f "localhost:$TAPE" -C out
  diff -r src out
}

@test "real drive: cpio through rmt writes a second file after a filemark and mt-gnu through rmt spaces to it" {
  make_src
  local rsh=$BATS_TEST_DIRNAME/../rsh-standin
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  "$BUFFER" -s 32k -o "$TAPE" <src.tar
  (cd src && find . -depth | cpio -o -H crc --quiet -C 10240 --rsh-command="$rsh" -F "localhost:$TAPE")
  (cd src && find . -depth | cpio -o -H crc --quiet -C 10240) >src.cpio
  mt-gnu -f "localhost:$TAPE" --rsh-command="$rsh" rewind
  mt-gnu -f "localhost:$TAPE" --rsh-command="$rsh" fsf 1
  run "$MT_ST" -f "$TAPE" status
  assert_line --index 1 "File number=1, block number=0, partition=0."
  dd if="$TAPE" of=back.cpio bs=64k status=none
  cmp src.cpio back.cpio
  "$MT_ST" -f "$TAPE" bsf 2
  "$MT_ST" -f "$TAPE" fsf 1
  mkdir out
  (cd out && cpio -i -d --quiet -C 10240 --rsh-command="$rsh" -F "localhost:$TAPE")
  diff -r src out
}

# --- what tgt's drive lacks ----------------------------------------------

@test "real drive: mt tapealert, capacity and cartridge say which command the drive refuses and exit 2; encryption says it is not supported" {
  "$TAPECTL" "$TAPE" op load : op rewind
  run -2 "$MT" -f "$TAPE" tapealert
  assert_output "mt: $TAPE: LOG SENSE page 0x2e: the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)"
  run -2 "$MT" -f "$TAPE" capacity
  assert_output "mt: $TAPE: LOG SENSE page 0x31: the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)"
  run -2 "$MT" -f "$TAPE" cartridge
  assert_output "mt: $TAPE: READ ATTRIBUTE: the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)"
  run -0 "$MT" -f "$TAPE" encryption
  assert_output "encryption: not supported"
}

@test "real drive: dump through rmt writes a level 0 dump that restore reads back through rmt" {
  make_src
  local rsh=$BATS_TEST_DIRNAME/../rsh-standin loop
  mke2fs -q -F -t ext4 -d src fs.img 8m
  loop=$(losetup -f --show fs.img)
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  RSH=$rsh dump -0 -q -b 32 -f "localhost:$TAPE" "$loop" 2>dump.err || { losetup -d "$loop"; cat dump.err; return 1; }
  losetup -d "$loop"
  "$MT_ST" -f "$TAPE" rewind
  run record_sizes
  assert_equal "$(sort -u <<<"$output")" 32768
  "$MT_ST" -f "$TAPE" rewind
  mkdir out
  (cd out && RSH=$rsh restore -r -y -b 32 -f "localhost:$TAPE")
  diff -r -x lost+found -x restoresymtable src out
}
