#!/usr/bin/env bats
# Shows that mt, buffer, reblock and rmt behave on the kernel's real st
# driver as they do on fake_st and virtual tapes: one guest (tests/st-guest:
# Debian 12's kernel under QEMU, drives and a changer emulated by a private
# tgtd on 127.0.0.1) runs tests/guest/real-drive-inner.bats, and each of its
# tests is reported here under its own name. A guest that cannot be
# started fails every test with the reason; nothing is skipped.
#
# The guest is booted once, in setup_file; it is one CPU busy for about two
# and a half minutes, so the sanitizer pass does not boot a second (the
# programs it runs are the plain build's). Its limit is far beyond that:
# with two make tests side by side on two CPUs a guest took over 600 s.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0
load test_helper

INNER=$BATS_TEST_DIRNAME/guest/real-drive-inner.bats

# TK_REAL_DRIVE_TAP=FILE replays a TAP file the guest wrote before instead
# of booting one (to work on this file).
setup_file() {
  local dir=$BATS_FILE_TMPDIR status=0
  SECONDS=0
  if [ -n "${TK_REAL_DRIVE_TAP:-}" ]; then
    cp "$TK_REAL_DRIVE_TAP" "$dir/inner.tap" && : >"$dir/guest.err" || status=125
  else
    TK_BUILD=$TK_BUILD "$BATS_TEST_DIRNAME/st-guest" --drives 2 --protect 1 --changer --slot-mb 1 --timeout 1500 \
      "$INNER" >"$dir/inner.tap" 2>"$dir/guest.err" || status=$?
  fi
  echo "$status" >"$dir/guest.status"
  echo "$SECONDS" >"$dir/guest.seconds"
}

# Passes when the inner test named as this one passed; otherwise fails with
# its diagnostics, or with why the guest did not run it.
inner_result() {
  local dir=$BATS_FILE_TMPDIR name=$BATS_TEST_DESCRIPTION line
  local status
  status=$(cat "$dir/guest.status")
  if [ "$status" = 125 ] || ! grep -q '^1\.\.' "$dir/inner.tap"; then
    echo "the guest did not run (st-guest exited $status):"
    cat "$dir/guest.err" "$dir/inner.tap"
    return 1
  fi
  # The TAP line whose test name (after "ok N ", before " in N ms") is it.
  line=$(awk -v name="$name" '/^(not )?ok [0-9]+ / {
      text = $0; sub(/^(not )?ok [0-9]+ /, "", text); sub(/ in [0-9]+ms$/, "", text)
      if (text == name) { print NR ":" $0; exit } }' "$dir/inner.tap")
  [ -n "$line" ] || {
    echo "the guest did not reach this test (st-guest exited $status; its last lines follow):"
    cat "$dir/guest.err"
    tail -5 "$dir/inner.tap"
    return 1
  }
  [[ ${line#*:} == "not ok"* ]] || return 0
  # Its diagnostics: the comment lines after it.
  sed -n "$((${line%%:*} + 1)),\$p" "$dir/inner.tap" | sed '/^[^#]/q' | sed '$ { /^[^#]/d }'
  return 1
}

@test "real drive: st-guest without its kernel fails, saying what is missing and how to make it" {
  run -125 env TK_GUEST_DIR="$BATS_TEST_TMPDIR/none" "$BATS_TEST_DIRNAME/st-guest" "$INNER"
  assert_output "st-guest: no guest kernel in $BATS_TEST_TMPDIR/none (make guest prepares it)"
}

@test "real drive: the guest boots, runs the inner file and every inner test has a test here" {
  local dir=$BATS_FILE_TMPDIR
  echo "guest: $(cat "$dir/guest.seconds") s, st-guest exited $(cat "$dir/guest.status")"
  [ "$(cat "$dir/guest.status")" != 125 ] || { cat "$dir/guest.err"; return 1; }
  diff <(sed -n 's/^@test "\(.*\)" {$/\1/p' "$INNER") \
    <(sed -n 's/^@test "\(real drive: .*\)" { inner_result; }$/\1/p' "$BATS_TEST_FILENAME")
}

@test "real drive: mt status at BOT of a blank tape is mt-st's" { inner_result; }
@test "real drive: mt status after writes and after reads is mt-st's" { inner_result; }
@test "real drive: mt weof and status after filemarks are mt-st's" { inner_result; }
@test "real drive: mt fsf, bsf, fsr, bsr, fsfm, bsfm and asf land where mt-st's do" { inner_result; }
@test "real drive: mt eod and rewind are mt-st's, status after them too" { inner_result; }
@test "real drive: mt wset is refused as mt-st's is" { inner_result; }
@test "real drive: mt setblk in fixed and variable mode, and status in each, are mt-st's" { inner_result; }
@test "real drive: mt tell and seek get tgt's refusal as mt-st's do" { inner_result; }
@test "real drive: mt compression gets tgt's EIO as mt-st's does" { inner_result; }
@test "real drive: mt offline and load, and what follows them, are mt-st's (tgt keeps the tape in)" { inner_result; }
@test "real drive: mt erase gets tgt's refusal as mt-st's does" { inner_result; }
@test "real drive: mt densities and setdensity are mt-st's" { inner_result; }
@test "real drive: mt drvbuffer, stoptions, stsetoptions, stclearoptions and the timeouts are mt-st's" { inner_result; }
@test "real drive: mt lock, unlock and retension are mt-st's" { inner_result; }
@test "real drive: a write-protected tape: status, weof and setblk are mt-st's" { inner_result; }
@test "real drive: a drive the changer emptied: status, setblk and load are mt-st's" { inner_result; }
@test "real drive: Bacula's mtx-changer makes the same decisions with our mt as with mt-st: slots, list, load, loaded, unload" { inner_result; }
@test "real drive: fake_st's loaded, end-of-data and empty drives are what the real st reports in those states" { inner_result; }
@test "real drive: mt --json status gives the position, block size, density and status bits mt-st prints" { inner_result; }
@test "real drive: a missing device is mt-st's error" { inner_result; }
@test "real drive: mt through tapekit's rmt (rsh stand-in) prints and does what mt-st does locally" { inner_result; }
@test "real drive: tar | buffer -o /dev/nst0 writes one record a block; buffer -i reads it back byte for byte" { inner_result; }
@test "real drive: reblock -o /dev/nst0 writes records of exactly -s; dd reads them back byte for byte" { inner_result; }
@test "real drive: in fixed-block mode (setblk 512) buffer, reblock and GNU tar through rmt write the archive and read it back byte for byte" { inner_result; }
@test "real drive: GNU tar through rmt (rsh stand-in) writes the bytes a local tar writes, one 32 KiB record a block, and reads them back" { inner_result; }
@test "real drive: cpio through rmt writes a second file after a filemark and mt-gnu through rmt spaces to it" { inner_result; }
@test "real drive: at each full medium buffer --next-volume has mtx load the next cartridge; every byte is on one tape, as buffer's summary counts it" { inner_result; }
@test "real drive: through tapekit's rmt too, each full cartridge is closed, the next loaded, every byte on one tape" { inner_result; }
@test "real drive: a virtual tape meets early warning as the real st does: EOT, then ENOSPC at end of data, alternating" { inner_result; }
@test "real drive: the seed's cpio | ssh host buffer -S 1024 -p 85 -s 32768 -o /dev/nst0 writes 32 KiB records that read back" { inner_result; }
@test "real drive: tar -b 256 | buffer and dump -b 256 | buffer write 128 and 256 KiB records that tar and restore read back" { inner_result; }
@test "real drive: mt tapealert, capacity and cartridge say which command the drive refuses and exit 2; encryption says it is not supported" { inner_result; }
@test "real drive: dump through rmt writes a level 0 dump that restore reads back through rmt" { inner_result; }
@test "real drive: mt health names tgt's drive as sg_inq and sg_vpd do, its blank manufacturer-assigned serial number as empty, and each page it lacks or sends malformed in one line" { inner_result; }
@test "real drive: mt --json health holds tgt's identity as sg_inq and sg_vpd give it, null for each page it lacks, and mt --json status's status" { inner_result; }
@test "real drive: mt health on the drive's sg node reports what the st node does; --json's status is null, with one line naming the st node" { inner_result; }
