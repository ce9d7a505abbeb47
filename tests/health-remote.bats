#!/usr/bin/env bats
# Shows that mt's drive-health reports reach a remote drive through
# tapekit's rmt (issue 26 §3): for the same states of the LTO drive faked by
# tests/shim/fake_st.c, the report from localhost:/dev/zero over the rsh
# stand-in, and over the test sshd, is the local drive's line for line; the
# drive's refusals cross the wire with their reason; rmt --read-only
# answers and --allow decides the open as for any other; and GNU tar's rmt
# (rmt-tar) and dump's (rmt-dump) are named and sent nothing but the
# probes every tapekit client sends them.
#
# run-suites: no leak check
# (mt runs one command and exits, and each rmt here serves one short
# session; rmt's request loop is checked for leaks in rmt.bats.)
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  unset TAPE RSH_STANDIN_SERVER
  forget_fake_drive
  export RSH=$BATS_TEST_DIRNAME/rsh-standin
}

teardown() { stop_test_sshd; }

# mt against the faked drive, here and through the rsh stand-in's rmt (the
# shim is preloaded into both mt and the rmt the stand-in starts).
here() { LD_PRELOAD=$FAKE_ST "$MT" -f /dev/zero "$@"; }
there() { LD_PRELOAD=$FAKE_ST "$MT" -f localhost:/dev/zero "$@"; }

# same_report of the faked drive, here and through the rsh stand-in.
same_fake_report() { same_report --fake /dev/zero localhost:/dev/zero; }

@test "health-remote: through tapekit's rmt each report is the local drive's, state by state" {
  same_fake_report
  FAKE_ST_ALERTS=3,20 FAKE_ST_CAPACITY=100:200,50:100 FAKE_ST_MAM="0x0806=CLN001L8;0x0003=7" \
    FAKE_ST_ENCRYPTION=on same_fake_report
  FAKE_ST_ALERTS=1,4,9,19,37,55,60 FAKE_ST_CAPACITY=0:2400000 FAKE_ST_MAM=none \
    FAKE_ST_ENCRYPTION=none same_fake_report
  # Pages with what mt does not decode, a page longer than 8192 bytes, and
  # attributes of other sizes, formats and numbers: the server asks the
  # drive for the whole page as mt does locally.
  FAKE_ST_ALERTS=3,20 FAKE_ST_ODD=0x2e-vendor,0x31-wide,attr-text,attr-load4 \
    FAKE_ST_MAM="0x0806=CLN001L8;0x0003=7;0x0000=1000;0x1234=77" same_fake_report
  FAKE_ST_ALERTS=20 FAKE_ST_ODD=0x2e-long same_fake_report
  # The VPD pages, one blank as tgt's.
  FAKE_ST_ODD=mas-nul FAKE_ST_TAS=3,20 same_fake_report
  FAKE_ST_ALERTS=3,20 FAKE_ST_ODD=0x2e-long run -0 there tapealert
  assert_line --index 1 "TapeAlert 20: Cleaning required (Critical)"
  assert_line --index 2 --regexp "^parameters not decoded: 0x8002 .* 0x8029$"
  run -0 there health
  assert_line --index 1 "drive serial number: 1068000123"
  # The report itself, not two alike failures.
  FAKE_ST_ALERTS=3,20 run -0 there tapealert
  assert_output "TapeAlert 3: Hard error (Warning)
TapeAlert 20: Cleaning required (Critical)"
  FAKE_ST_ALERTS=20 run -1 there tapealert --fail-on critical
  FAKE_ST_ALERTS=10 run -0 there tapealert --fail-on warning
}

@test "health-remote: the drive's refusals and malformed pages read remotely as locally, naming the command" {
  FAKE_ST_MISSING=0x2e run -2 --separate-stderr there tapealert
  assert_equal "$stderr" "mt: localhost:/dev/zero: LOG SENSE page 0x2e: the drive does not support it (ILLEGAL REQUEST, asc 0x24 ascq 0x00)"
  FAKE_ST_STATE=no-tape run -2 --separate-stderr there cartridge
  assert_equal "$stderr" "mt: localhost:/dev/zero: READ ATTRIBUTE: there is no cartridge in the drive (NOT READY, asc 0x3a ascq 0x00)"
  FAKE_ST_MALFORMED=0x31 run -2 --separate-stderr there capacity
  assert_equal "$stderr" "mt: localhost:/dev/zero: LOG SENSE page 0x31, byte 12: parameter 0x0003 of length 12 runs past the page end"
  # A drive without encryption says so, as locally.
  FAKE_ST_ENCRYPTION=none run -0 there encryption
  assert_output "encryption: not supported"
  # The server's reason comes in rmt's one short error line.
  FAKE_ST_SG=eperm run -2 --separate-stderr there tapealert
  assert_output ""
  assert_regex "$stderr" "^mt: localhost:/dev/zero: LOG SENSE page 0x2e: SG_IO on /dev/zero is not permitted"
  # health's other sections still answer.
  FAKE_ST_MISSING=0x31,attr LD_PRELOAD=$FAKE_ST run -0 --separate-stderr "$MT" --json -f localhost:/dev/zero health
  assert_equal "$(jq -c '[.capacity, .cartridge, .tapealert]' <<<"$output")" "[null,null,[]]"
  assert_equal "$(wc -l <<<"$stderr")" 2
}

@test "health-remote: a tapekit rmt older than the VPD questions leaves their answers out, as the unit serial number; the rest is the local report" {
  # A server from before queries 5 to 8 refuses them as any number it does
  # not know: the wrapper turns each into such a number on its way in,
  # byte by byte (some requests end in no newline).
  cat >older.pl <<'PERL'
$| = 1;
my ($recent, $line, $after) = ("", "", 0);
while (sysread(STDIN, my $c, 1)) {
  if ($after) {
    $line .= $c;
    next unless $c eq "\n";
    print($line =~ /^[5-8]\n$/ ? "99\n" : $line);
    ($after, $line) = (0, "");
    next;
  }
  print $c;
  $recent = substr($recent . $c, -7);
  $after = 1 if $recent eq "i29811\n";
}
PERL
  printf '#!/bin/sh\nperl %s | exec %s\n' "$PWD/older.pl" "$TK_BIN/rmt" >older
  chmod +x older
  export RSH_STANDIN_SERVER=$PWD/older
  run -0 --separate-stderr there health
  assert_equal "$stderr" ""
  assert_equal "${lines[0]}" "drive: IBM ULT3580-TD8 Q3F4"
  assert_equal "${lines[1]}" "no TapeAlert flag is active"
  LD_PRELOAD=$FAKE_ST run -0 --separate-stderr "$MT" --json -f localhost:/dev/zero health
  assert_equal "$stderr" ""
  assert_equal "$(jq -c .drive <<<"$output")" '{"vendor":"IBM","product":"ULT3580-TD8","revision":"Q3F4"}'
  assert_equal "$(jq -r .cartridge.barcode <<<"$output")" ABC123L8
  # Today's server answers them as the local drive does.
  unset RSH_STANDIN_SERVER
  run -0 there health
  assert_line --index 2 "manufacturer-assigned serial number: 10WT012345"
  assert_line --index 3 "TapeAlert flags supported: 1-23, 25-27, 29-39, 49, 51-60"
  FAKE_ST_MALFORMED=tas FAKE_ST_MISSING=mas run -0 --separate-stderr there health
  assert_equal "$stderr" "mt: localhost:/dev/zero: INQUIRY VPD page 0xb1: the drive does not support it (VPD page 0x00 does not list it)
mt: localhost:/dev/zero: INQUIRY VPD page 0xb2, byte 2: page length 4 is too short for the 64 flags (8 bytes needed)"
}

@test "health-remote: rmt --read-only answers; an --allow list that leaves the drive out refuses its open" {
  mkdir tapes
  FAKE_ST_ALERTS=20 RSH_STANDIN_SERVER="$TK_BIN/rmt --read-only" run -0 there tapealert
  assert_output "TapeAlert 20: Cleaning required (Critical)"
  FAKE_ST_ALERTS=20 RSH_STANDIN_SERVER="$TK_BIN/rmt --allow $PWD/tapes" run --separate-stderr there tapealert
  assert_failure
  assert_output ""
  # rmt's reason, through the remote shell's stderr, then mt's line.
  assert_equal "$stderr" "rmt: open /dev/zero: not allowed: Permission denied
localhost:/dev/zero: Permission denied"
}

@test "health-remote: over the test sshd, tapekit's rmt reports the drive as the local one does" {
  start_test_sshd
  # The far side's rmt gets the faked drive (and, in the sanitizer pass,
  # the sanitizers' options) through its command line: ssh carries no
  # environment.
  export RSH=$SSHDIR/ssh RMT="env ASAN_OPTIONS=${ASAN_OPTIONS:-} UBSAN_OPTIONS=${UBSAN_OPTIONS:-} \
LD_PRELOAD=$FAKE_ST FAKE_ST_ALERTS=3,20 FAKE_ST_ENCRYPTION=on $TK_BIN/rmt"
  run -0 "$MT" -f root@localhost:/dev/zero tapealert
  assert_output "TapeAlert 3: Hard error (Warning)
TapeAlert 20: Cleaning required (Critical)"
  local here_json there_json
  here_json=$(FAKE_ST_ALERTS=3,20 FAKE_ST_ENCRYPTION=on LD_PRELOAD=$FAKE_ST "$MT" --json -f /dev/zero health |
    jq -c 'del(.device, .status.device)')
  there_json=$("$MT" --json -f root@localhost:/dev/zero health | jq -c 'del(.device, .status.device)')
  assert_equal "$there_json" "$here_json"
  assert_equal "$(jq -r .encryption.encryption_mode <<<"$there_json")" encrypt
}

# A server wrapped so that every byte mt sends it is kept in requests.log.
logged_server() {
  printf '#!/bin/sh\ntee -a "%s/requests.log" | exec %s\n' "$PWD" "$1" >server
  chmod +x server
  export RSH_STANDIN_SERVER=$PWD/server
}

@test "health-remote: rmt-tar and rmt-dump are named, exit 2, and sent no health request" {
  local server name command
  while IFS='|' read -r server name; do
    logged_server "$server"
    : >requests.log
    for command in tapealert capacity cartridge encryption health; do
      run -2 --separate-stderr there "$command"
      assert_output ""
      assert_equal "$stderr" "mt: localhost:/dev/zero: the server on localhost is $name, which cannot report drive health (tapekit's rmt can: point --rmt-command or RMT at it)"
    done
    # The open, the version and framing probes, the identify request of v1
    # servers and the close: no health request.
    run grep -c 'i29811' requests.log
    assert_output 0
    run grep -q '^O/dev/zero' requests.log
    assert_success
    # The server is still of use: mt status goes through as before.
    run -0 there status
    assert_line --partial "File number="
  done <<'ROWS'
/usr/sbin/rmt-tar|GNU tar's rmt (rmt-tar)
/usr/sbin/rmt-dump|a version 1 rmt that is not tapekit's (dump's or star's)
ROWS
}
