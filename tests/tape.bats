#!/usr/bin/env bats
# tape: shows that a SIMH .tap image behaves like a tape on the Linux st
# driver (tape-semantics.md §4.4-4.7, design.md "The virtual tape"): position,
# status bits and data after every kind of spacing, reading and writing, the
# drive state kept between opens, capacity, protection and the lock; and that
# the images are SIMH images, checked against readers and writers built in
# perl from the format description alone (no tapekit code) and SIMH's mtdump.
#
# Positioning goes through mt (the way users drive a tape); tapectl (a test
# helper over open_tape) writes and reads the records and prints the raw
# status: "file=F block=B" then the status bits in mt-st's order.
#
# run-suites: no leak check
# (mt and tapectl run one operation and exit; the same lib/tape code serving
# a long-lived rmt is leak-checked in rmt.bats. The exit check was 40% of
# this file's sanitizer pass: 102 s, 59 s without.)
bats_require_minimum_version 1.5.0
load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  holder=
  scratch=
}

# A failed lock test must not leave its holder sleeping.
teardown() {
  if [ -n "$holder" ]; then kill -KILL "$holder" 2>/dev/null || true; fi
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
}

# The reference tape: three files of mixed record sizes, each closed by the
# filemark st writes on close, then rewound. Objects (logical addresses):
#   F0: 100@0 200@1 301@2 FM@3 | F1: 10@4 20@5 FM@6 | F2: 5@7 65536@8 FM@9 | EOD@10
three_files() {
  tapectl t.tap write 100 200 301 &&
    tapectl t.tap write 10 20 &&
    tapectl t.tap write 5 65536 &&
    tapectl t.tap op rewind
}

# Positions the reference tape with mt; the mt exit status must be $1.
mt_on() {
  local want=$1
  shift
  run "-$want" "$MT" -f t.tap "$@"
}

at() {
  run tapectl t.tap status
  assert_success
  assert_output "$1"
}

# Reads $1 records; their sizes (or errors), one line each, must be $2 joined
# by spaces (joined here: a bash and a paste per call were most of it).
reads() {
  local n=$1 want=$2
  run tapectl t.tap read "$n"
  assert_equal "${output//$'\n'/ }" "$want"
}

# An independent SIMH reader: prints each object (size, TM), "!" after a
# record whose content is not tapectl's pattern, and fails on bad framing.
simh_dump() {
  perl -e '
    open(my $f, "<:raw", $ARGV[0]) or die; local $/; my $b = <$f>; my ($p, @out) = (0);
    while ($p + 4 <= length $b) {
      my $w = unpack("V", substr($b, $p, 4)); $p += 4;
      if ($w == 0) { push @out, "TM"; next }
      last if $w == 0xFFFFFFFF;
      my $n = $w & 0xFFFFFF; my $d = substr($b, $p, $n); $p += $n + ($n & 1);
      die "pad byte not 0 at $p\n" if ($n & 1) && substr($b, $p - 1, 1) ne "\0";
      die "trailing length differs at $p\n" unless unpack("V", substr($b, $p, 4)) == $w;
      $p += 4;
      my $want = join("", map { chr(($_ * 7 + $n * 13) % 251) } 0 .. $n - 1);
      push @out, $n . ($d eq $want ? "" : "!");
    }
    die "trailing bytes\n" if $p != length $b;
    print "@out\n";' "$1"
}

# An independent SIMH writer: objects given as words, e.g. "r5" (record of 5
# bytes of tapectl's pattern, padded), "u5" (unpadded), "b3" (flagged bad),
# "tm", "gap", "eom", "junk".
simh_build() {
  local out=$1
  shift
  perl -e '
    sub rec { my ($n, $w, $pad) = @_;
      my $d = join("", map { chr(($_ * 7 + $n * 13) % 251) } 0 .. $n - 1);
      $d .= "\0" if $pad && $n % 2; return pack("V", $w) . $d . pack("V", $w) }
    for (@ARGV) {
      if (/^r(\d+)$/) { print rec($1, $1, 1) }
      elsif (/^u(\d+)$/) { print rec($1, $1, 0) }
      elsif (/^b(\d+)$/) { print rec($1, $1 | 0x80000000, 1) }
      elsif ($_ eq "tm") { print pack("V", 0) }
      elsif ($_ eq "gap") { print pack("V", 0xFFFFFFFE) }
      elsif ($_ eq "eom") { print pack("V", 0xFFFFFFFF) }
      elsif ($_ eq "junk") { print "junk" }
      else { die "bad object $_\n" }
    }' "$@" >"$out"
}

# --- spacing forward -----------------------------------------------------

@test "tape: fsf 1 from BOT lands after the first filemark at file 1 block 0 with EOF" {
  three_files
  mt_on 0 fsf 1
  at "file=1 block=0 EOF ONLINE IM_REP_EN"
  reads 1 "10"
}

@test "tape: fsf 2 from BOT lands at the start of the third file" {
  three_files
  mt_on 0 fsf 2
  at "file=2 block=0 EOF ONLINE IM_REP_EN"
  reads 1 "5"
}

@test "tape: fsf onto the last filemark leaves the tape at EOD, where reads return 0 once then EIO" {
  three_files
  mt_on 0 fsf 3
  at "file=3 block=0 EOF ONLINE IM_REP_EN"
  reads 2 "0 EIO"
  at "file=3 block=-1 EOD ONLINE IM_REP_EN"
}

@test "tape: fsf past the last filemark fails with EIO at EOD with the file count exact and block -1" {
  three_files
  run --separate-stderr -2 "$MT" -f t.tap fsf 4
  assert_equal "$stderr" "t.tap: Input/output error"
  at "file=3 block=-1 EOD ONLINE IM_REP_EN"
  reads 1 "EIO"
}

@test "tape: fsfm 1 from BOT lands before the first filemark with block -1" {
  three_files
  mt_on 0 fsfm 1
  at "file=0 block=-1 ONLINE IM_REP_EN"
  reads 2 "0 10"
}

@test "tape: fsr 2 from BOT skips two records" {
  three_files
  mt_on 0 fsr 2
  at "file=0 block=2 ONLINE IM_REP_EN"
  reads 1 "301"
}

@test "tape: fsr across a filemark fails with EIO just after the filemark" {
  three_files
  mt_on 2 fsr 5
  at "file=1 block=0 EOF ONLINE IM_REP_EN"
  reads 1 "10"
}

@test "tape: fsr into EOD fails with EIO and sets EOD" {
  three_files
  mt_on 0 fsf 3
  mt_on 2 fsr 1
  at "file=3 block=-1 EOD ONLINE IM_REP_EN"
  run tapectl t.tap tell
  assert_output "10"
}

@test "tape: eod lands at end of data with the file count, block -1, EOD and no EOF" {
  three_files
  mt_on 0 eod
  at "file=3 block=-1 EOD ONLINE IM_REP_EN"
  reads 1 "EIO"
}

@test "tape: the EOD bit survives between runs, as mt status shows" {
  three_files
  mt_on 0 eod
  run "$MT" -f t.tap status
  assert_success
  assert_line "File number=3, block number=-1, partition=0."
  assert_line " EOD ONLINE IM_REP_EN"
}

# --- spacing backward ----------------------------------------------------

@test "tape: bsf 1 after a filemark lands before it with block -1" {
  three_files
  mt_on 0 fsf 1
  mt_on 0 bsf 1
  at "file=0 block=-1 ONLINE IM_REP_EN"
  reads 1 "0"
  at "file=1 block=0 EOF ONLINE IM_REP_EN"
}

@test "tape: bsf at BOT fails with EIO and stays at BOT" {
  three_files
  mt_on 2 bsf 1
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
}

@test "tape: bsf 2 from EOD lands before the second filemark" {
  three_files
  mt_on 0 eod
  mt_on 0 bsf 2
  at "file=1 block=-1 ONLINE IM_REP_EN"
  reads 2 "0 5"
}

@test "tape: bsfm 1 inside a file lands at the start of that file" {
  three_files
  mt_on 0 fsf 1
  mt_on 0 fsr 1
  mt_on 0 bsfm 1
  at "file=1 block=0 EOF ONLINE IM_REP_EN"
  reads 1 "10"
}

@test "tape: bsr 1 inside a file steps back one record" {
  three_files
  mt_on 0 fsr 2
  mt_on 0 bsr 1
  at "file=0 block=1 ONLINE IM_REP_EN"
  reads 1 "200"
}

@test "tape: bsr just after a filemark fails with EIO on the BOT side of it" {
  three_files
  mt_on 0 fsf 1
  mt_on 2 bsr 1
  at "file=0 block=-1 ONLINE IM_REP_EN"
  reads 2 "0 10"
}

@test "tape: bsr at BOT fails with EIO and stays at BOT" {
  three_files
  mt_on 2 bsr 1
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
}

@test "tape: rewind from the middle returns to BOT" {
  three_files
  mt_on 0 fsf 2
  mt_on 0 fsr 1
  mt_on 0 rewind
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
  reads 1 "100"
}

@test "tape: retension ends at BOT" {
  three_files
  mt_on 0 eod
  mt_on 0 retension
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
}

# --- logical addresses ---------------------------------------------------

@test "tape: tell counts records and filemarks before the position" {
  three_files
  mt_on 0 fsf 2
  run "$MT" -f t.tap tell
  assert_output "At block 7."
  mt_on 0 eod
  run "$MT" -f t.tap tell
  assert_output "At block 10."
}

@test "tape: seek N lands at logical address N with unknown file and block" {
  three_files
  mt_on 0 eod
  mt_on 0 seek 4
  at "file=-1 block=-1 ONLINE IM_REP_EN"
  reads 1 "10"
  run tapectl t.tap tell
  assert_output "5"
}

@test "tape: seek forward from the middle and back again finds the same records" {
  three_files
  mt_on 0 seek 8
  reads 1 "65536"
  mt_on 0 seek 1
  reads 1 "200"
}

@test "tape: seek 0 is BOT" {
  three_files
  mt_on 0 fsf 2
  mt_on 0 seek 0
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
}

@test "tape: seek beyond the end of data fails with EIO at EOD" {
  three_files
  mt_on 2 seek 11
  at "file=-1 block=-1 EOD ONLINE IM_REP_EN"
}

@test "tape: a filemark read after seek gives block 0 and EOF with the file still unknown" {
  three_files
  mt_on 0 seek 2
  reads 2 "301 0"
  at "file=-1 block=0 EOF ONLINE IM_REP_EN"
}

# --- reading -------------------------------------------------------------

@test "tape: reading the whole tape gives each record, 0 at each filemark, 0 at EOD then EIO" {
  three_files
  reads 12 "100 200 301 0 10 20 0 5 65536 0 0 EIO"
}

@test "tape: a record larger than the buffer fails with ENOMEM and is skipped" {
  three_files
  run bash -c "tapectl t.tap read 3 150 | paste -sd' '"
  assert_output "100 ENOMEM ENOMEM"
  at "file=0 block=3 ONLINE IM_REP_EN"
  reads 1 "0"
}

@test "tape: reading at the end of data not after a filemark fails with EIO at once" {
  tapectl t.tap write 7 8 : op bsr 1
  tapectl t.tap op rewind
  reads 3 "7 8 EIO"
}

# --- writing -------------------------------------------------------------

@test "tape: closing after a write adds exactly one filemark" {
  tapectl t.tap write 100
  run stat -c %s t.tap
  assert_output "112"
  at "file=1 block=0 EOF ONLINE IM_REP_EN"
  run simh_dump t.tap
  assert_output "100 TM"
}

@test "tape: a write in the middle of the tape truncates everything after it" {
  three_files
  mt_on 0 fsf 1
  tapectl t.tap write 7
  mt_on 0 rewind
  reads 8 "100 200 301 0 7 0 0 EIO"
}

@test "tape: a write among records already read ahead is what later reads find, back and forth" {
  tapectl t.tap write $(seq 1000 1099) : op rewind
  run bash -c "tapectl t.tap read 10 : op bsr 3 : read 1 : op fsr 5 : read 1 : write 2000 : op bsr 2 : read 3 | paste -sd' '"
  assert_output "1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1007 1013 1013 2000 EIO"
}

@test "tape: small records read around fsr and bsr in one open come back intact and in order" {
  # 700 odd-sized records span several read-ahead windows.
  tapectl t.tap write $(seq 701 2 2099) : op rewind
  run bash -c "tapectl t.tap read 400 : op bsr 250 : read 3 : op fsr 200 : read 2 : op bsr 1 : read 1 | tail -n 6 | paste -sd' '"
  assert_output "1001 1003 1005 1407 1409 1409"
  run bash -c "tapectl t.tap op rewind : read 701 | paste -sd' '"
  assert_output "$(seq 701 2 2099 | paste -sd' ') 0"
}

@test "tape: fsf and eod read only the length words of the records they pass" {
  tapectl t.tap write $(yes 20000 | head -n 50) : op rewind
  # LeakSanitizer cannot run under ptrace.
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -qq -P "$PWD/t.tap" -e trace=pread64,preadv,preadv2 -e raw=all -o trace tapectl t.tap op fsf 1 : op rewind : op eom
  run bash -c "awk -F', ' '{ print \$3 }' trace | sort | uniq -c | awk '{ print \$1 \" of \" \$2 }'"
  assert_output "102 of 0x8"
}

@test "tape: weof after writes ends the file and close adds no second filemark" {
  three_files
  mt_on 0 fsf 1
  run tapectl t.tap write 33 44 : op weof 1 : status
  assert_output "file=2 block=0 EOF ONLINE IM_REP_EN"
  run simh_dump t.tap
  assert_output "100 200 301 TM 33 44 TM"
}

@test "tape: mt weof in the middle of a file writes a filemark there and ends the data" {
  three_files
  mt_on 0 fsr 1
  mt_on 0 weof 1
  at "file=1 block=0 EOF ONLINE IM_REP_EN"
  run simh_dump t.tap
  assert_output "100 TM"
}

@test "tape: rewinding right after a write first writes the filemark" {
  run tapectl t.tap write 9 : op rewind : read 4
  assert_output - <<'EOF'
9
0
0
EIO
EOF
}

@test "tape: bsf right after a write writes the filemark and spaces back over it too" {
  tapectl t.tap write 1 2
  run tapectl t.tap write 3 : op bsf 1 : status
  assert_output "file=0 block=-1 ONLINE IM_REP_EN"
  run simh_dump t.tap
  assert_output "1 2 TM 3 TM"
}

@test "tape: weof 0 after a write only flushes, and close then adds no filemark" {
  run tapectl t.tap write 7 : op weof 0 : status
  assert_output "file=0 block=1 ONLINE IM_REP_EN"
  run simh_dump t.tap
  assert_output "7"
}

@test "tape: a write followed by bsr closes without a filemark" {
  run -0 tapectl t.tap write 7 8 : op bsr 1
  assert_output ""
  run simh_dump t.tap
  assert_output "7 8"
}

@test "tape: O_TRUNC is ignored: writing truncates from the position, not from BOT" {
  three_files
  mt_on 0 fsf 1
  tapectl -t t.tap write 7
  run simh_dump t.tap
  assert_output "100 200 301 TM 7 TM"
}

@test "tape: a missing image opened for writing is a blank cartridge and is created" {
  run tapectl new.tap status : write 5
  assert_output "file=0 block=0 BOT ONLINE IM_REP_EN"
  run simh_dump new.tap
  assert_output "5 TM"
}

@test "tape: a missing image opened for reading fails with ENOENT" {
  run -2 tapectl none.tap status
  assert_output "open: ENOENT"
}

@test "tape: a new image is a SCSI-2 drive at BOT in partition 0 with variable blocks" {
  "$MT" -f n.tap vt-create 0
  run tapectl n.tap drive : status
  assert_output - <<'EOF'
type=0x72 partition=0 blksize=0 density=0x0 compression=0
file=0 block=0 BOT ONLINE IM_REP_EN
EOF
}

@test "tape: an image without a state file is a loaded cartridge at BOT" {
  three_files
  mt_on 0 eod
  rm t.tap.state
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
  reads 1 "100"
}

@test "tape: erase removes the data after the position" {
  three_files
  mt_on 0 fsf 1
  mt_on 0 erase
  run simh_dump t.tap
  assert_output "100 200 301 TM"
}

# --- fixed block mode ----------------------------------------------------

@test "tape: in fixed-block mode one write of 1024 bytes makes two 512-byte records" {
  "$MT" -f f.tap vt-create 0
  "$MT" -f f.tap setblk 512
  run tapectl f.tap write 1024 : drive
  assert_output "type=0x72 partition=0 blksize=512 density=0x0 compression=0"
  run simh_dump f.tap
  assert_output "512! 512! TM"
}

@test "tape: in fixed-block mode a write that is not a multiple of the block size fails with EINVAL" {
  "$MT" -f f.tap vt-create 0
  "$MT" -f f.tap setblk 512
  run -1 tapectl f.tap write 1000
  assert_output "EINVAL"
}

@test "tape: in fixed-block mode a read spans blocks and stops at a filemark" {
  tapectl f.tap write 512 512 512
  "$MT" -f f.tap rewind
  "$MT" -f f.tap setblk 512
  run bash -c "tapectl f.tap read 3 1024 | paste -sd' '"
  assert_output "1024 corrupt 512 0"
  at_f="$(tapectl f.tap status)"
  assert_equal "$at_f" "file=1 block=0 EOF ONLINE IM_REP_EN"
}

@test "tape: in fixed-block mode a record of another size reads as EIO" {
  tapectl f.tap write 100
  "$MT" -f f.tap rewind
  "$MT" -f f.tap setblk 512
  run -1 tapectl f.tap read 1 512
  assert_output "EIO"
}

@test "tape: the block size persists between opens until setblk 0" {
  "$MT" -f f.tap vt-create 0
  "$MT" -f f.tap setblk 1024
  run tapectl f.tap drive
  assert_output "type=0x72 partition=0 blksize=1024 density=0x0 compression=0"
  "$MT" -f f.tap setblk 0
  run tapectl f.tap drive
  assert_output "type=0x72 partition=0 blksize=0 density=0x0 compression=0"
}

# --- drive settings ------------------------------------------------------

@test "tape: compression and density are kept in the drive and leave the data as written" {
  "$MT" -f c.tap vt-create 0
  "$MT" -f c.tap compression 1
  "$MT" -f c.tap setdensity 0x46
  tapectl c.tap write 300 301
  run tapectl c.tap drive
  assert_output "type=0x72 partition=0 blksize=0 density=0x46 compression=1"
  run simh_dump c.tap
  assert_output "300 301 TM"
  run "$MT" -f c.tap status
  assert_line "Tape block size 0 bytes. Density code 0x46 (LTO-4)."
}

@test "tape: lock, unlock and nop succeed without moving the tape" {
  three_files
  mt_on 0 fsr 1
  run tapectl t.tap op lock : op nop : op unlock : status
  assert_output "file=0 block=1 ONLINE IM_REP_EN"
}

@test "tape: offline ejects the cartridge until load puts it back at BOT" {
  three_files
  mt_on 0 fsf 1
  mt_on 0 offline
  run tapectl -n t.tap status
  assert_output "file=-1 block=-1 DR_OPEN IM_REP_EN"
  run -2 tapectl t.tap read 1
  assert_output "open: ENOMEDIUM"
  mt_on 0 load
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
}

@test "tape: partitions and setmarks are refused as by st without those options" {
  three_files
  run -1 tapectl t.tap op setpart 1 : op fss 1
  assert_output - <<'EOF'
EINVAL
EIO
EOF
}

# --- capacity ------------------------------------------------------------

@test "tape: with a capacity the data accepted before ENOSPC lies between half of it and it plus one record" {
  "$MT" -f c.tap vt-create 1M
  sizes=()
  for _ in $(seq 200); do sizes+=(10240); done
  run -1 tapectl c.tap write "${sizes[@]}"
  assert_output "ENOSPC"
  "$MT" -f c.tap rewind
  accepted=$(tapectl c.tap read 200 | grep -c '^10240$')
  bytes=$((accepted * 10240))
  [ "$bytes" -ge $((1048576 / 2)) ] && [ "$bytes" -le $((1048576 + 10240)) ] ||
    fail "accepted $bytes bytes"
}

@test "tape: past the early warning writes show EOT, then ENOSPC with EOD, then succeed again" {
  "$MT" -f c.tap vt-create 1M
  args=()
  for _ in $(seq 120); do args+=(write 10240 : status :); done
  run tapectl c.tap "${args[@]}" status
  first_enospc=$(printf '%s\n' "${lines[@]}" | grep -n -m1 '^ENOSPC$' | cut -d: -f1)
  [ -n "$first_enospc" ] || fail "no ENOSPC"
  assert_equal "${lines[first_enospc - 2]}" "file=0 block=$((first_enospc - 1)) EOT ONLINE IM_REP_EN"
  assert_equal "${lines[first_enospc]}" "file=0 block=$((first_enospc - 1)) EOD ONLINE IM_REP_EN"
  assert_equal "${lines[first_enospc + 1]}" "file=0 block=$first_enospc EOT ONLINE IM_REP_EN"
}

@test "tape: writes that meet the capacity itself fail with ENOSPC and then EIO, and the image stays within it" {
  "$MT" -f c.tap vt-create 100k
  args=()
  for _ in $(seq 20); do args+=(write 10240 :); done
  run -1 tapectl c.tap "${args[@]}" status
  assert_line --index $((${#lines[@]} - 2)) "EIO"
  assert_line --index 0 "ENOSPC"
  size=$(stat -c %s c.tap)
  [ "$size" -le $((102400 + 4)) ] || fail "image of $size bytes"
  run simh_dump c.tap
  assert_output --regexp '^(10240 )+TM$'
}

@test "tape: vt-create refuses to overwrite an image that holds data" {
  tapectl x.tap write 10
  run --separate-stderr -2 "$MT" -f x.tap vt-create 0
  assert_equal "$stderr" "x.tap: File exists"
  run simh_dump x.tap
  assert_output "10 TM"
}

# --- protection and locking ----------------------------------------------

@test "tape: a write-protected image refuses an open for writing with EROFS and still reads" {
  tapectl p.tap write 10
  "$MT" -f p.tap rewind
  "$MT" -f p.tap vt-protect 1
  run -2 tapectl p.tap write 5
  assert_output "open: EROFS"
  run -1 "$MT" -f p.tap weof
  run tapectl p.tap status : read 1
  assert_output - <<'EOF'
file=0 block=0 BOT WR_PROT ONLINE IM_REP_EN
10
EOF
  "$MT" -f p.tap vt-protect 0
  run tapectl p.tap write 5 : status
  assert_output "file=0 block=2 ONLINE IM_REP_EN"
}

@test "tape: a non-blocking open of a protected image for writing succeeds but writes get EACCES" {
  "$MT" -f p.tap vt-create 0
  "$MT" -f p.tap vt-protect 1
  run -1 tapectl -n -w p.tap write 5 : op weof 1
  assert_output - <<'EOF'
EACCES
EACCES
EOF
}

@test "tape: a read-only open refuses weof and erase with EACCES" {
  three_files
  run -1 tapectl -r t.tap op weof 1 : op erase 1
  assert_output - <<'EOF'
EACCES
EACCES
EOF
  run simh_dump t.tap
  assert_output "100 200 301 TM 10 20 TM 5 65536 TM"
}

@test "tape: a second open while the image is held gets EBUSY, and the lock dies with a SIGKILLed holder" {
  three_files
  tapectl t.tap hold ready 60 3>&- &
  holder=$!
  for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
  run -2 tapectl t.tap status
  assert_output "open: EBUSY"
  run --separate-stderr -1 "$MT" -f t.tap fsf 1
  assert_equal "$stderr" "t.tap: Device or resource busy"
  kill -KILL "$holder"
  wait "$holder" || true
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
}

# --- SIMH interoperability -----------------------------------------------

@test "tape: an image written here reads back in an independent SIMH reader" {
  three_files
  run simh_dump t.tap
  assert_success
  assert_output "100 200 301 TM 10 20 TM 5 65536 TM"
}

@test "tape: SIMH's mtdump lists an image written here at the offsets the format gives" {
  three_files
  run mtdump t.tap
  assert_success
  assert_output - <<'EOF'
Processing input file t.tap
Processing tape file 1
Obj 1, position 0, record 1, length = 100 (0x64)
Obj 2, position 108, record 2, length = 200 (0xC8)
Obj 3, position 316, record 3, length = 301 (0x12D)
Obj 4, position 626, end of tape file 1
Processing tape file 2
Obj 5, position 630, record 1, length = 10 (0xA)
Obj 6, position 648, record 2, length = 20 (0x14)
Obj 7, position 676, end of tape file 2
Processing tape file 3
Obj 8, position 680, record 1, length = 5 (0x5)
Obj 9, position 694, record 2, length = 65536 (0x10000)
Obj 10, position 66238, end of tape file 3
End of physical tape
EOF
}

@test "tape: the format description's example image reads as HELLO, WORLD!, a filemark, DATA and two filemarks" {
  printf '\x05\0\0\0HELLO\0\x05\0\0\0\x06\0\0\0WORLD!\x06\0\0\0\0\0\0\0\x04\0\0\0DATA\x04\0\0\0\0\0\0\0\0\0\0\0' >s.tap
  run bash -c "tapectl s.tap show 8 | paste -sd' '"
  assert_output "HELLO WORLD!  DATA    EIO"
  at_s=$(tapectl s.tap status)
  assert_equal "$at_s" "file=3 block=-1 EOD ONLINE IM_REP_EN"
}

@test "tape: a hand-built image with odd lengths, gaps, a bad record and an end-of-medium marker reads as the spec says" {
  simh_build h.tap r5 gap b3 r7 tm gap gap r4 eom junk
  run bash -c "tapectl h.tap read 6 | paste -sd' '"
  assert_output "5 EIO 7 0 4 EIO"
  at_h=$(tapectl h.tap status)
  assert_equal "$at_h" "file=1 block=1 EOD ONLINE IM_REP_EN"
}

@test "tape: records of an unpadded (E11) image read and space in both directions" {
  simh_build e.tap u5 u3 tm u7 tm
  reads_e=$(tapectl e.tap read 5 | paste -sd' ')
  assert_equal "$reads_e" "5 3 0 7 0"
  # bsr stops with EIO on the BOT side of the last filemark.
  run -1 tapectl e.tap op bsr 1 : op bsf 1 : op bsr 1 : read 1
  assert_output $'EIO\n3'
}

@test "tape: writing after the end-of-medium marker replaces it and the junk after it" {
  simh_build h.tap r4 tm eom junk
  tapectl h.tap op eom : write 6
  run simh_dump h.tap
  assert_output "4 TM 6 TM"
}

@test "tape: verify passes a sound image and names the offset of the first defect" {
  three_files
  run "$MT" -f t.tap verify
  assert_success
  cp t.tap cut.tap
  truncate -s 140 cut.tap
  run --separate-stderr -2 "$MT" -f cut.tap verify
  assert_equal "$stderr" "cut.tap: damaged at byte offset 108: record of 200 bytes cut short by the end of the image (object 2)"
}

@test "tape: verify reports a trailing length that does not match with the record's offset" {
  simh_build g.tap r4 r6 tm
  printf '\x07' | dd of=g.tap bs=1 seek=22 conv=notrunc status=none
  run --separate-stderr -2 "$MT" -f g.tap verify
  assert_equal "$stderr" "g.tap: damaged at byte offset 12: trailing length 0x00000007 does not match leading length 0x00000006 (object 2)"
}

@test "tape: a garbled length word reads as EIO and verify names it" {
  simh_build g.tap r4 tm
  printf '\x00\x00\x00\x7f' | dd of=g.tap bs=1 seek=12 conv=notrunc status=none
  reads_g=$(tapectl g.tap read 2 | paste -sd' ')
  assert_equal "$reads_g" "4 EIO"
  run --separate-stderr -2 "$MT" -f g.tap verify
  assert_equal "$stderr" "g.tap: damaged at byte offset 12: invalid record length word 0x7f000000 (object 2)"
}

@test "tape: weof stops at the capacity (plus room for a closing filemark) with ENOSPC" {
  "$MT" -f w.tap vt-create 1k
  run "$MT" -f w.tap weof 100000
  assert_equal "$status" 2
  # 1024 bytes of capacity and 64 of filemark reserve: 272 marks of 4 bytes.
  assert_equal "$(stat -c %s w.tap)" 1088
}

@test "tape: one weof request cannot write more than 2^20 filemarks (a full disk over rmt)" {
  "$MT" -f h.tap vt-create 0
  run "$MT" -f h.tap weof 2147483647
  assert_equal "$status" 2
  assert_equal "$(stat -c %s h.tap)" 0
  run "$MT" -f h.tap weof 1048576
  assert_success
  assert_equal "$(stat -c %s h.tap)" 4194304
}

@test "tape: after records fill the capacity exactly, closing still writes its filemark" {
  # Two 1000-byte records take 2 x 1008 image bytes: the capacity exactly.
  "$MT" -f c.tap vt-create 2016
  run tapectl c.tap write 1000 1000 1000
  assert_failure
  assert_line ENOSPC
  assert_equal "$(stat -c %s c.tap)" 2020
  run tapectl -r c.tap op rewind : read 3
  assert_equal "$(echo "$output" | cut -d' ' -f1 | tr '\n' ' ')" "1000 1000 0 "
}

# --- the drive's write buffer (appends staged into reserved blocks) ---

# Staging needs blocks reserved on ext4 or xfs: on_disk (test_helper.bash).
medium() {
  env TK_MEDIUM_PATH="$PWD/t.tap" LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$@"
}

@test "tape: appends reach the image in whole 1 MiB writes at 1 MiB-aligned offsets" {
  on_disk
  # 40 records of 64 KiB: 2.5 MiB of image in two whole windows and the rest
  # at close, instead of 41 writes at 8-byte-shifted offsets.
  run env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -f -qq -e trace=pwrite64,pwritev -e signal=none -o trace tapectl t.tap bench-write 65536 2621440
  assert_success
  run grep -cE 'pwrite64\(.*, 1048576, (0|1048576)\) += 1048576' trace
  assert_output 2
  run grep -cE '^[0-9]+ +pwrite' trace
  assert_output 3
  run simh_dump t.tap
  assert_output "$(printf '65536 %.0s' $(seq 40))TM"
}

@test "tape: status, spacing and reads after writes see every record (the buffer is flushed first)" {
  on_disk
  run tapectl t.tap write 100 200 : op bsr 1 : read 1 : op rewind : read 3 : status
  assert_output - <<'EOF2'
200
100
200
EIO
file=0 block=2 EOD ONLINE IM_REP_EN
EOF2
  run tapectl t.tap write 300 : status : op rewind : read 4
  assert_output - <<'EOF2'
file=0 block=3 ONLINE IM_REP_EN
100
200
300
0
EOF2
}

@test "tape: a disk that fills up fails the record that did not fit with ENOSPC, the image stays whole" {
  on_disk
  # The reserve is refused (fallocate finds no room), so records are written
  # as they come and the third meets the full disk itself.
  run medium TK_MEDIUM_BYTES=3000 tapectl t.tap write 1000 1000 1000
  assert_failure
  assert_output ENOSPC
  run simh_dump t.tap
  assert_output "1000 1000 TM"
}

@test "tape: a write failing inside reserved blocks fails with its own errno when only its record is lost" {
  on_disk
  # The second record fills the first 1 MiB window, whose write stops at
  # 700000 bytes: the first record is whole in the image, the second is not.
  run medium TK_MEDIUM_BYTES=700000 TK_MEDIUM_FALLOCATE=ignore tapectl t.tap write 600000 600000
  assert_failure
  assert_output ENOSPC
  run simh_dump t.tap
  assert_output "600000 TM"
}

@test "tape: a failed flush that loses acknowledged records says so with EIO and rolls the position back" {
  on_disk
  run medium TK_MEDIUM_BYTES=500000 TK_MEDIUM_FALLOCATE=ignore tapectl t.tap write 1000 600000 : status
  assert_failure
  assert_output EIO
  run simh_dump t.tap
  assert_output "1000"
  at "file=0 block=1 ONLINE IM_REP_EN"
  # The drive carries on, writing as it goes.
  run tapectl t.tap write 30
  assert_success
  run simh_dump t.tap
  assert_output "1000 30 TM"
}

@test "tape: buffer names the records a failed flush lost, and the image reads back as a prefix of the input" {
  on_disk
  random_mib 8 >data
  # Windows of 1 MiB: the third is cut at 2200000 bytes, after eight whole
  # 256 KiB records; buffer had handed over eleven.
  run --separate-stderr medium TK_MEDIUM_BYTES=2200000 TK_MEDIUM_FALLOCATE=ignore \
    "$BUFFER" -s 256k -i data -o "$PWD/t.tap"
  assert_failure
  without_queue_note
  assert_equal "${stderr_lines[0]}" "buffer (writer): write of data failed: $PWD/t.tap: Input/output error"
  # 1.19's count of what was written leaves out what the image lost.
  assert_regex "${stderr_lines[1]}" "^bytes to write=262144, bytes written=-1, total written +2048K$"
  assert_equal "${stderr_lines[2]}" "buffer (writer): $PWD/t.tap lost the last 786432 bytes it had accepted: No space left on device"
  assert_regex "${stderr_lines[3]}" "^buffer \\(writer\\): 2097152 bytes reached $PWD/t.tap, [0-9]+ queued bytes were not written$"
  run "$MT" -f t.tap verify
  assert_success
  "$MT" -f t.tap rewind
  run --separate-stderr "$BUFFER" -s 256k -i t.tap -o got
  assert_equal "$(stat -c %s got)" $((8 * 262144))
  assert_equal "$(sha got)" "$(head -c $((8 * 262144)) data | sha)"
}

@test "tape: the next writer completes a killed writer's close: cut record removed, filemark written, drive past it" {
  on_disk
  tapectl t.tap write 600000 600000 : hold ready 60 3>&- &
  holder=$!
  for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
  kill -KILL "$holder"
  wait "$holder" || true
  holder=
  # The first 1 MiB window reached the image; the second record is cut in it.
  assert_equal "$(stat -c %s t.tap)" 1048576
  # verify only reads: it shows the damage and what the next writer will do.
  run "$MT" -f t.tap verify
  assert_failure 2
  assert_line --index 0 "t.tap: damaged at byte offset 600008: record of 600000 bytes cut short by the end of the image (object 2)"
  assert_line --index 1 "t.tap: a write session was left unfinished (its writer killed, or power lost); the next open for writing completes it, removing the 448568 bytes cut short at offset 600008 and writing its filemark"
  assert_equal "$(stat -c %s t.tap)" 1048576
  # The next ordinary backup goes after it; nothing earlier is overwritten.
  run tapectl t.tap write 100
  assert_success
  run simh_dump t.tap
  assert_output "600000 TM 100 TM"
  run "$MT" -f t.tap verify
  assert_success
  assert_line --index 0 "t.tap: no structural errors"
  assert_line --index 1 "t.tap: the drive completed a write session whose writer never closed it (killed, or power lost): 448568 bytes of a record cut short were removed at offset 600008, the filemark its close would have written was written, and the drive was left at file 1"
}

@test "tape: a read-only open leaves a killed writer's session to the next writer and says so" {
  on_disk
  tapectl t.tap write 500 fm 600000 600000 : hold ready 60 3>&- &
  holder=$!
  for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
  kill -KILL "$holder"
  wait "$holder" || true
  holder=
  run --separate-stderr "$MT" -f t.tap status
  assert_success
  # Where the session began: file 1, its records not yet closed by a filemark.
  assert_equal "${lines[1]}" "File number=1, block number=0, partition=0."
  assert_equal "$stderr" "mt: t.tap: a write session was left unfinished (its writer killed, or power lost); the next open for writing completes it, removing the 448056 bytes cut short at offset 600520 and writing its filemark"
  assert_equal "$(stat -c %s t.tap)" 1048576
  run --separate-stderr "$MT" -f t.tap weof 0
  assert_success
  assert_equal "$stderr" "mt: t.tap: completed a write session left unfinished (its writer killed, or power lost): removed the 448056 bytes cut short at offset 600520, wrote the filemark its close would have written"
  run simh_dump t.tap
  assert_output "500 TM 600000 TM"
}

@test "tape: a writer that rewound and wrote again before it was killed is still recognised" {
  on_disk
  # The session's first record is replaced by the second burst's at BOT.
  tapectl t.tap write 500 : op rewind : write 600000 600000 : hold ready 60 3>&- &
  holder=$!
  for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
  kill -KILL "$holder"
  wait "$holder" || true
  holder=
  run --separate-stderr "$MT" -f t.tap weof 0
  assert_success
  assert_equal "$stderr" "mt: t.tap: completed a write session left unfinished (its writer killed, or power lost): removed the 448568 bytes cut short at offset 600008, wrote the filemark its close would have written"
  run simh_dump t.tap
  assert_output "600000 TM"
}

@test "tape: a killed writer's session is not completed on another file put in the image's place" {
  on_disk
  tapectl t.tap write 500 fm 600000 600000 : hold ready 60 3>&- &
  holder=$!
  for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
  kill -KILL "$holder"
  wait "$holder" || true
  holder=
  cp t.tap copy && mv copy t.tap
  run --separate-stderr "$MT" -f t.tap status
  assert_success
  assert_equal "$stderr" "mt: t.tap: another file has taken the image's name since, so nothing of it was cut: the image loads at BOT as a cartridge new to the drive"
  assert_equal "${lines[1]}" "File number=0, block number=0, partition=0."
  run tapectl -w t.tap status
  assert_success
  # Nothing was cut or added: the restored file is as it came.
  assert_equal "$(stat -c %s t.tap)" 1048576
  run "$MT" -f t.tap verify
  assert_failure 2
}

@test "tape: mt eod stops at damage in an image from elsewhere, and a write there replaces it" {
  tapectl t.tap write 1000 2000 >/dev/null
  truncate -s -100 t.tap
  run "$MT" -f t.tap eod
  assert_success
  run "$MT" -f t.tap status
  assert_line --index 1 "File number=0, block number=-1, partition=0."
  assert_line --partial "EOD"
  run tapectl t.tap write 100
  assert_success
  run simh_dump t.tap
  assert_output "1000 100 TM"
}

@test "tape: buffer says which records a failed flush at close lost" {
  on_disk
  random_mib 1 >data
  # Two 256 KiB records wait in the drive's buffer until close, whose write
  # stops at 300000 bytes: the first record is whole, the second lost.
  run --separate-stderr medium TK_MEDIUM_BYTES=300000 TK_MEDIUM_FALLOCATE=ignore \
    "$BUFFER" -s 256k -i <(head -c 524288 data) -o "$PWD/t.tap"
  assert_failure
  without_queue_note
  assert_equal "${stderr_lines[0]}" "buffer (writer): close of $PWD/t.tap failed: Input/output error"
  assert_equal "${stderr_lines[1]}" "buffer (writer): $PWD/t.tap lost the last 262144 bytes it had accepted: No space left on device"
  assert_equal "${stderr_lines[2]}" "buffer (writer): 262144 bytes reached $PWD/t.tap, 262144 queued bytes were not written"
  run simh_dump t.tap
  assert_output "262144!"
}

@test "tape: reblock's counts leave out the records a failed flush lost" {
  on_disk
  random_mib 3 >data
  run medium TK_MEDIUM_BYTES=2200000 TK_MEDIUM_FALLOCATE=ignore \
    "$REBLOCK" -t -s 256k -i data -o "$PWD/t.tap"
  assert_failure
  assert_line "8+0 records out"
  assert_line --regexp "^2097152 bytes "
  assert_line "reblock: write $PWD/t.tap (786432 bytes of records already accepted were lost: No space left on device) after 8 full records of 262144 bytes: Input/output error"
  "$MT" -f t.tap rewind
  run "$REBLOCK" -s 256k -i "$PWD/t.tap" -o got
  assert_equal "$(stat -c %s got)" 2097152
}

@test "tape: after a write and close, a read on reopening gets 0 past the closing filemark, then EIO" {
  # st_flush leaves ST_FM behind the mark it wrote; the no-rewind node keeps it.
  tapectl q.tap write 10
  run tapectl q.tap read 2
  assert_output - <<'EOF2'
0
EIO
EOF2
}

@test "tape: verify waits its turn: a held image is EBUSY, not damaged" {
  on_disk
  tapectl t.tap write 600000 600000 : hold ready 2 3>&- &
  holder=$!
  for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
  run --separate-stderr "$MT" -f t.tap verify
  assert_equal "$status" 1
  assert_equal "$stderr" "t.tap: Device or resource busy"
  # The writer closes after its 2 s hold, flushing its buffer.
  wait "$holder"
  holder=
  run "$MT" -f t.tap verify
  assert_success
}

@test "tape: an image replaced behind the drive's back is a new cartridge at BOT" {
  three_files
  "$MT" -f t.tap fsf 2
  at "file=2 block=0 EOF ONLINE IM_REP_EN"
  # Another tape's bytes copied over the image (same inode, position still inside it).
  tapectl o.tap write 400 500 600 700 >/dev/null
  sleep 0.01
  cat o.tap >t.tap
  at "file=0 block=0 BOT ONLINE IM_REP_EN"
  reads 2 "400 500"
}

@test "tape: an image name too long for its drive state is refused before anything is created" {
  long=$(printf 'x%.0s' $(seq 250)).tap
  run --separate-stderr "$REBLOCK" -s 10k -i /dev/null -o "$long"
  assert_failure
  assert_output ""
  [[ "$stderr" == *"$long.state would be too long a name"* ]]
  assert_equal "$(ls | grep -c xxxx)" 0
}

@test "tape: a file named .tap that is no image is refused by every tool, naming what it begins with" {
  printf 'hello, I am a text file and no tape\n' >oops.tap
  cp oops.tap before
  run --separate-stderr "$MT" -f oops.tap status
  assert_failure 1
  assert_equal "$stderr" "oops.tap: Wrong medium type
mt: oops.tap: not a SIMH tape image: invalid record length word 0x6c6c6568 at offset 0, the file begins \"hello, I\""
  run --separate-stderr "$BUFFER" -i oops.tap -o /dev/null
  assert_failure
  assert_equal "${stderr_lines[2]}" "buffer: oops.tap: not a SIMH tape image: invalid record length word 0x6c6c6568 at offset 0, the file begins \"hello, I\""
  run --separate-stderr "$REBLOCK" -s 10k -i /dev/null -o oops.tap
  assert_failure
  [[ "$stderr" == *"not a SIMH tape image"* ]]
  run "$MT" -f oops.tap verify
  assert_failure 2
  assert_output --partial "damaged at byte offset 0: not a SIMH tape image"
  # Nothing was written over it.
  cmp oops.tap before
}
