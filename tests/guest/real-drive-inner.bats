#!/usr/bin/env bats
# Runs inside the guest that tests/real-drive.bats boots (tests/st-guest
# --drives 2 --protect 1 --changer --slot-mb 1): /dev/nst0 holds a blank
# 32 MB tape, /dev/nst1 a write-protected one, /dev/nst2 is the changer's
# drive (emptied by setup_file) and its slots hold three blank 1 MiB
# cartridges, all tgt's "IET VIRTUAL-TAPE" under the kernel's own st driver.
# Shows that mt behaves as mt-st 1.7 on the same drive in the same state
# (standard output, standard error, exit status and the state it leaves),
# that buffer, reblock and rmt move records to and from it byte for byte,
# across the end of a medium too, and that Bacula's mtx-changer decides
# with our mt as with mt-st. Each test puts the drive in the state it needs
# and leaves the changer's drive empty.
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
  # Compared in bash: a cmp a file is three processes a row.
  local theirs ours
  for kind in out err after; do
    IFS= read -r -d '' theirs <"theirs.$kind" || true
    IFS= read -r -d '' ours <"ours.$kind" || true
    if [[ $theirs != "$ours" ]]; then
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

# --- a changer driven as Bacula drives it --------------------------------

# Runs Bacula's mtx-changer (package bacula-sd) with each line of standard
# input as its command words after the changer's control device, once with
# mt-st as the `mt` it finds in PATH and once with ours, each pass from the
# same state (the changer's drive empty). Fails unless both give the same
# output, exit statuses and debug log (the times cut off), and leave the
# drive in the same state. The configuration has mtx-changer take the drive
# offline before an unload and log each retry: were "ONLINE" missing from
# mt's status after a load, it would log a retry once a second for 300 s
# (the timeout cuts that short).
mtx_changer_same_as_with_mt_st() {
  local sg who line words status
  local -a lines
  sg=$(changer)
  mapfile -t lines
  sed -i -e 's/^offline=.*/offline=1/' -e 's/^debug_log=.*/debug_log=1/' -e 's/^debug_level=.*/debug_level=100/' \
    /etc/bacula/scripts/mtx-changer.conf
  mkdir -p theirs-bin ours-bin
  ln -sf "$MT_ST" theirs-bin/mt
  ln -sf "$MT" ours-bin/mt
  for who in theirs ours; do
    rm -f /var/lib/bacula/mtx.log
    for line in "${lines[@]}"; do
      read -r -a words <<<"$line"
      echo "== $line" >>"$who.out"
      status=0
      PATH=$PWD/$who-bin:$PATH timeout 30 /etc/bacula/scripts/mtx-changer "$sg" "${words[@]}" >>"$who.out" 2>&1 ||
        status=$?
      echo "exit $status" >>"$who.out"
    done
    "$MT_ST" -f "$EMPTY" status >>"$who.out" 2>&1
    sed 's/^[0-9]*-[0-9:.]* //' /var/lib/bacula/mtx.log >"$who.log"
  done
  diff theirs.out ours.out || { echo "mtx-changer's answers differ (mt-st <, ours >)"; return 1; }
  diff theirs.log ours.log || { echo "mtx-changer's debug logs differ (mt-st <, ours >)"; return 1; }
}

@test "real drive: Bacula's mtx-changer makes the same decisions with our mt as with mt-st: slots, list, load, loaded, unload" {
  # Each call costs 2 to 5 s in the guest: one volume's calls, once.
  mtx_changer_same_as_with_mt_st <<EOF2
slots
list
load 2 $EMPTY 0
loaded 0 $EMPTY 0
unload 2 $EMPTY 0
EOF2
  # What the passes did, so that two broken passes cannot agree.
  grep -qx 'Loading media from Storage Element 2 into drive 0...done' ours.out
  grep -qx 'Unloading drive 0 into Storage Element 2...done' ours.out
  grep -q 'Doing mtx -f .* load slot=2 drv=0' ours.log
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

# mt-st's status as the words of mt_json_status_words: "FILE BLOCK
# BLOCK-SIZE DENSITY-CODE BIT..." with the bits in mt-st's order.
mt_st_status_words() {
  local file block size density bits
  read -r file block size density bits < <("$MT_ST" -f "$1" status | awk '
    /^File number=/ { gsub(/[^-0-9,]/, ""); split($0, n, ","); file = n[1]; block = n[2] }
    /^Tape block size/ { size = $4; density = $8 }
    /^General status bits/ { getline; bits = $0 }
    END { print file, block, size, density bits }')
  echo "$file $block $size $((density)) $bits"
}
mt_json_status_words() {
  "$MT" --json -f "$1" status |
    jq -r '[.file, .block, .block_size, .density_code]
           + [to_entries[] | select(.value == true) | .key | ascii_upcase] | join(" ")'
}

@test "real drive: mt --json status gives the position, block size, density and status bits mt-st prints" {
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind : write 1000 1000 fm 1000 fm : op rewind : op fsf 1 : read 1
  assert_equal "$(mt_json_status_words "$TAPE")" "$(mt_st_status_words "$TAPE")"
  "$MT_ST" -f "$TAPE" rewind
  assert_equal "$(mt_json_status_words "$PROTECTED")" "$(mt_st_status_words "$PROTECTED")"
  assert_equal "$(mt_json_status_words "$EMPTY")" "$(mt_st_status_words "$EMPTY")"
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

@test "real drive: in fixed-block mode (setblk 512) buffer, reblock and GNU tar through rmt write the archive and read it back byte for byte" {
  make_src
  local rsh=$BATS_TEST_DIRNAME/../rsh-standin
  "$TAPECTL" "$TAPE" op load : op setblk 512 : op rewind
  "$BUFFER" -s 10k -o "$TAPE" <src.tar
  "$REBLOCK" -s 10k -o "$TAPE" <src.tar
  tar -c -b 64 --sort=name --owner=0 --group=0 --rsh-command="$rsh" -f "localhost:$TAPE" -C src .
  "$MT" -f "$TAPE" rewind
  "$BUFFER" -s 10k -i "$TAPE" >back.tar
  "$REBLOCK" -s 10k -i "$TAPE" >back2.tar
  mkdir out
  tar -x -b 64 --rsh-command="$rsh" -f "localhost:$TAPE" -C out
  "$MT" -f "$TAPE" setblk 0
  cmp src.tar back.tar
  cmp src.tar back2.tar
  diff -r src out
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

# --- the end of a medium, and the seeds' pipelines -------------------------

# The changer's cartridges are 1 MiB (real-drive.bats: --slot-mb 1): tgt's
# drive reaches early warning at their end, and st then fails every other
# write with ENOSPC.

# The command buffer --next-volume runs at the end of each medium, as a
# site would write it: say where the drive is (mt-st's status and ours,
# kept per volume to compare), take the drive offline, put the cartridge
# back in its slot and load the next one.
next_cartridge() {
  local sg
  sg=$(changer)
  echo "$MT_ST -f $EMPTY status >theirs.ew\$BUFFER_VOLUME 2>&1; $MT -f $EMPTY status >ours.ew\$BUFFER_VOLUME 2>&1;" \
    "$MT -f $EMPTY offline && mtx -f $sg unload \$((BUFFER_VOLUME - 1)) 0 && mtx -f $sg load \$BUFFER_VOLUME 0"
}

# Puts the cartridge in the changer's drive back in slot $1, then reads each
# of slots 1 to $1 back into vol1, vol2, ... (one read a record, to the
# filemark), leaving the drive empty.
read_back_slots() {
  local sg slot last=$1
  sg=$(changer)
  timeout 60 mtx -f "$sg" unload "$last" 0 >/dev/null
  for ((slot = 1; slot <= last; slot++)); do
    timeout 60 mtx -f "$sg" load "$slot" 0 >/dev/null
    dd if="$EMPTY" of="vol$slot" bs=1M status=none
    timeout 60 mtx -f "$sg" unload "$slot" 0 >/dev/null
  done
}

# Fails unless buffer's standard error ($stderr) gives each of volumes 1 to
# $1 the digest and size of what read back from it (vol1, ...), and the
# output $2 the digest and size of the input (in), and the volumes joined
# are the input: every byte on exactly one tape.
volumes_are_the_input() {
  local n=$1 output=$2 v
  for ((v = 1; v <= n; v++)); do
    [ -s "vol$v" ] || { echo "volume $v is empty"; return 1; }
    assert_regex "$stderr" "$output, volume $v: $(sha "vol$v") \\($(stat -c %s "vol$v") bytes\\)"
  done
  assert_regex "$stderr" "$output: $(sha in) \\($(stat -c %s in) bytes\\)"
  for ((v = 1; v <= n; v++)); do cat "vol$v"; done | cmp - in
}

@test "real drive: at each full medium buffer --next-volume has mtx load the next cartridge; every byte is on one tape, as buffer's summary counts it" {
  head -c 2500000 /dev/urandom >in
  timeout 60 mtx -f "$(changer)" load 1 0 >/dev/null
  run --separate-stderr timeout 300 "$BUFFER" -s 32k -o "$EMPTY" --hash sha256 --next-volume "$(next_cartridge)" <in
  assert_success
  read_back_slots 3
  volumes_are_the_input 3 "$EMPTY"
  # Where the drive stood after each full volume was closed: both mt the same.
  grep -q '^SCSI 2 tape drive:$' theirs.ew2
  cmp theirs.ew2 ours.ew2
  cmp theirs.ew3 ours.ew3
}

@test "real drive: through tapekit's rmt too, each full cartridge is closed, the next loaded, every byte on one tape" {
  head -c 2500000 /dev/urandom >in
  timeout 60 mtx -f "$(changer)" load 1 0 >/dev/null
  run --separate-stderr timeout 300 "$BUFFER" -s 32k -o "localhost:$EMPTY" \
    --rsh-command="$BATS_TEST_DIRNAME/../rsh-standin" --hash sha256 --next-volume "$(next_cartridge)" <in
  assert_success
  read_back_slots 3
  volumes_are_the_input 3 "localhost:$EMPTY"
}

# What 24 writes of 64 KiB records in one open of $1 met, from the first
# that passed early warning on, four of them: a write's status bits, after
# the errno name when it failed ("EOT ONLINE IM_REP_EN",
# "ENOSPC EOD ONLINE IM_REP_EN", ...), one a line.
early_warning_writes() {
  local -a words=()
  local i
  for i in $(seq 24); do words+=(write 65536 : status :); done
  "$TAPECTL" "$1" op setblk 0 : "${words[@]}" op nop 2>&1 |
    awk '!/=/ { failed = $0 " "; next } { sub(/^file=[-0-9]+ block=[-0-9]+ /, ""); print failed $0; failed = "" }' |
    awk '/EOT/ { on = 1 } on' | head -4
}

@test "real drive: a virtual tape meets early warning as the real st does: EOT, then ENOSPC at end of data, alternating" {
  local sg
  sg=$(changer)
  timeout 60 mtx -f "$sg" load 1 0 >/dev/null
  run early_warning_writes "$EMPTY"
  timeout 60 mtx -f "$sg" unload 1 0 >/dev/null
  assert_equal "${#lines[@]}" 4
  assert_equal "${lines[0]}" "EOT ONLINE IM_REP_EN"
  assert_equal "${lines[1]}" "ENOSPC EOD ONLINE IM_REP_EN"
  local real=$output
  "$MT" -f e.tap vt-create 1M
  run early_warning_writes e.tap
  assert_equal "$output" "$real"
}

@test "real drive: the seed's cpio | ssh host buffer -S 1024 -p 85 -s 32768 -o /dev/nst0 writes 32 KiB records that read back" {
  make_src
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  (cd src && find . -depth | cpio -o -H crc --quiet) >src.cpio
  "$BATS_TEST_DIRNAME/../rsh-standin" localhost "$BUFFER -S 1024 -p 85 -s 32768 -o $TAPE" <src.cpio 2>progress
  "$MT_ST" -f "$TAPE" rewind
  run record_sizes
  assert_equal "$(sed '$d' <<<"$output" | sort -u)" 32768
  assert_equal "${lines[-1]}" $(( $(stat -c %s src.cpio) % 32768 ))
  "$MT_ST" -f "$TAPE" rewind
  mkdir out
  "$BUFFER" -s 32768 -i "$TAPE" | (cd out && cpio -i -d --quiet)
  diff -r src out
}

@test "real drive: tar -b 256 | buffer and dump -b 256 | buffer write 128 and 256 KiB records that tar and restore read back" {
  make_src
  local loop
  "$TAPECTL" "$TAPE" op load : op setblk 0 : op rewind
  tar -c -b 256 -f - -C src . | "$BUFFER" -s 128k -p 85 -o "$TAPE"
  mke2fs -q -F -t ext4 -d src fs.img 8m
  loop=$(losetup -f --show fs.img)
  dump -0 -q -b 256 -f - "$loop" 2>dump.err | "$BUFFER" -s 256k -o "$TAPE" || { losetup -d "$loop"; cat dump.err; return 1; }
  losetup -d "$loop"
  "$MT_ST" -f "$TAPE" rewind
  run record_sizes
  assert_equal "$(sort -u <<<"$output")" 131072
  "$MT_ST" -f "$TAPE" rewind
  "$MT_ST" -f "$TAPE" fsf 1
  run record_sizes
  assert_equal "$(sort -u <<<"$output")" 262144
  "$MT_ST" -f "$TAPE" rewind
  mkdir tar-out dump-out
  tar -x -b 256 -f "$TAPE" -C tar-out
  diff -r src tar-out
  "$MT_ST" -f "$TAPE" fsf 1
  (cd dump-out && "$BUFFER" -s 256k -i "$TAPE" | restore -r -y -b 256 -f -)
  diff -r -x lost+found -x restoresymtable src dump-out
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

# --- health on the real drive: INQUIRY and the VPD pages, beside sg3-utils ---

# A field of sg_inq's report ($2 names it) from its output in $1, trailing
# blanks cut.
inq_field() { sed -n "s/^ $2: *//p" <<<"$1" | sed 's/ *$//'; }

@test "real drive: mt health names tgt's drive as sg_inq and sg_vpd do, its blank manufacturer-assigned serial number as empty, and each page it lacks or sends malformed in one line" {
  "$TAPECTL" "$TAPE" op load : op rewind
  local inq mas
  inq=$(sg_inq "$TAPE")
  mas=$(sg_vpd -p mas "$TAPE" | sed -n 's/^  Manufacturer-assigned serial number: *//p' | sed 's/ *$//')
  assert_equal "$mas" ""
  # tgt's TapeAlert supported flags page is 4 bytes long: sg_vpd decodes
  # no flag from it.
  run -0 --separate-stderr sg_vpd -p tas "$TAPE"
  assert_equal "$stderr" "TapeAlert supported flags length too short=8"
  refute_output --partial "Flag01h"
  run -0 --separate-stderr "$MT" -f "$TAPE" health
  assert_output "drive: $(inq_field "$inq" 'Vendor identification') $(inq_field "$inq" 'Product identification') $(inq_field "$inq" 'Product revision level')
drive serial number: $(sg_vpd -p sn "$TAPE" | sed -n 's/^  Unit serial number: *//p')
manufacturer-assigned serial number: empty
encryption: not supported"
  assert_equal "$stderr" "mt: $TAPE: INQUIRY VPD page 0xb2, byte 2: page length 4 is too short for the 64 flags (8 bytes needed)
mt: $TAPE: LOG SENSE page 0x2e: the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)
mt: $TAPE: LOG SENSE page 0x31: the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)
mt: $TAPE: READ ATTRIBUTE: the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)"
}

@test "real drive: mt --json health holds tgt's identity as sg_inq and sg_vpd give it, null for each page it lacks, and mt --json status's status" {
  "$TAPECTL" "$TAPE" op load : op rewind
  local inq
  inq=$(sg_inq "$TAPE")
  run -0 --separate-stderr "$MT" --json -f "$TAPE" health
  assert_equal "$(jq -c .drive <<<"$output")" "$(jq -cn --arg v "$(inq_field "$inq" 'Vendor identification')" \
    --arg p "$(inq_field "$inq" 'Product identification')" --arg r "$(inq_field "$inq" 'Product revision level')" \
    --arg s "$(sg_vpd -p sn "$TAPE" | sed -n 's/^  Unit serial number: *//p')" \
    '{vendor: $v, product: $p, revision: $r, serial_number: $s, manufacturer_assigned_serial_number: "", tapealert_supported: null}')"
  assert_equal "$(jq -c '[.tapealert, .tapealert_unknown_codes, .capacity, .capacity_unknown_codes, .cartridge, .encryption]' <<<"$output")" \
    "[null,null,null,null,null,null]"
  assert_equal "$(jq -c .status <<<"$output")" "$("$MT" --json -f "$TAPE" status | jq -c .)"
  assert_equal "$(wc -l <<<"$stderr")" 4
}

@test "real drive: mt health on the drive's sg node reports what the st node does; --json's status is null, with one line naming the st node" {
  "$TAPECTL" "$TAPE" op load : op rewind
  local dev sg='' theirs
  for dev in /sys/class/scsi_generic/*; do
    [ ! -e "$dev/device/scsi_tape/${TAPE#/dev/}" ] || sg=/dev/${dev##*/}
  done
  [ -n "$sg" ] || fail "no sg node for $TAPE"
  theirs=$("$MT" -f "$TAPE" health 2>&1)
  run -0 "$MT" -f "$sg" health
  assert_output "${theirs//$TAPE:/$sg:}"
  run -0 --separate-stderr "$MT" --json -f "$sg" health
  assert_equal "$(jq -c .status <<<"$output")" null
  assert_equal "$(jq -c 'del(.device, .status)' <<<"$output")" "$("$MT" --json -f "$TAPE" health 2>/dev/null | jq -c 'del(.device, .status)')"
  assert_equal "$(grep -v ': INQUIRY VPD\|: LOG SENSE\|: READ ATTRIBUTE' <<<"$stderr")" \
    "mt: $sg: no tape status here (MTIOCGET: Operation not permitted): the drive's st node, $TAPE, has it"
  run -2 "$MT" -f "$sg" tapealert
  assert_output "mt: $sg: LOG SENSE page 0x2e: the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)"
  run -0 "$MT" -f "$sg" encryption
  assert_output "encryption: not supported"
}
