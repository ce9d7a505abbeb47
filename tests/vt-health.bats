#!/usr/bin/env bats
# Shows that a virtual tape carries what a cartridge carries (issue 26 §4):
# mt's drive-health commands answer for a .tap from its image and the
# cartridge memory its drive state keeps (load count, lifetime MiB,
# barcode, manufacture date); TapeAlert flags rise where a drive raises
# them, and vt-alert raises and clears them; reading the TapeAlert page
# clears them; and the report is the same through tapekit's rmt, over the
# rsh stand-in and over the test sshd (§6).
#
# run-suites: plain pass only
# (The sanitizer pass reaches the same code elsewhere: every virtual-tape
# command in tape.bats, the health pages of a .tap read by buffer in
# buffer-health.bats, and rmt's health request in health-remote.bats.)
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  unset TAPE RSH_STANDIN_SERVER
  export RSH=$BATS_TEST_DIRNAME/rsh-standin
}

teardown() { stop_test_sshd; }

# One field of the cartridge memory, from --json health.
cartridge() { "$MT" --json -f "$1" health | jq -c ".cartridge | $2"; }

# size bytes of data in 64 KiB records, through tapekit's writer.
write_mib() { head -c "$2" /dev/zero | tr '\0' 'x' >data && "$BUFFER" -s 64k -i data -o "$PWD/$1"; }

@test "vt-health: each load counts once: the first open after vt-create, a load after unload, an image replaced behind the drive's back" {
  "$MT" -f x.tap vt-create 0
  # Setting the tab or a flag does not load the cartridge.
  "$MT" -f x.tap vt-protect 0
  "$MT" -f x.tap vt-alert 1
  "$MT" -f x.tap status >/dev/null
  assert_equal "$(cartridge x.tap .load_count)" 1
  "$MT" -f x.tap rewind
  assert_equal "$(cartridge x.tap .load_count)" 1
  "$MT" -f x.tap offline
  run -1 "$MT" -f x.tap rewind
  "$MT" -f x.tap load
  assert_equal "$(cartridge x.tap .load_count)" 2
  # A load of a loaded cartridge loads nothing.
  "$MT" -f x.tap load
  assert_equal "$(cartridge x.tap .load_count)" 2
  write_mib x.tap 65536
  cp x.tap copy
  touch -d '2001-01-01' copy
  cp -p copy x.tap
  assert_equal "$(cartridge x.tap .load_count)" 3
}

@test "vt-health: MiB written and read in the medium's life grow by what was written and read" {
  "$MT" -f x.tap vt-create 0
  assert_equal "$(cartridge x.tap '[.mib_written, .mib_read]')" "[0,0]"
  write_mib x.tap $((3 * 1048576))
  assert_equal "$(cartridge x.tap '[.mib_written, .mib_read]')" "[3,0]"
  "$MT" -f x.tap rewind
  "$BUFFER" -s 64k -i "$PWD/x.tap" -o got
  cmp data got
  assert_equal "$(cartridge x.tap '[.mib_written, .mib_read]')" "[3,3]"
  write_mib x.tap $((2 * 1048576))
  assert_equal "$(cartridge x.tap '[.mib_written, .mib_read]')" "[5,3]"
  run -0 "$MT" -f x.tap cartridge
  assert_line "MiB written in medium life: 5"
  assert_line "MiB read in medium life: 3"
}

@test "vt-health: vt-create's --barcode and --manufactured reach the cartridge memory; by default no barcode and today's date" {
  "$MT" -f a.tap vt-create 0 --barcode ABC123L8 --manufactured 2026-12-04
  run -0 "$MT" -f a.tap cartridge
  assert_line "barcode: ABC123L8"
  assert_line "manufacture date: 20261204"
  assert_line "medium manufacturer: TAPEKIT"
  assert_line --regexp "^medium serial number: TK[0-9A-F]+$"
  "$MT" -f b.tap vt-create 1M --manufactured=1999-02-28 --barcode=CLN001L1
  assert_equal "$(cartridge b.tap '[.barcode, .manufacture_date]')" '["CLN001L1","19990228"]'
  "$MT" -f c.tap vt-create 0
  assert_equal "$(cartridge c.tap '[.barcode, .manufacture_date]')" "[null,\"$(date -u +%Y%m%d)\"]"
  # Two cartridges never share a serial number.
  [ "$(cartridge a.tap .medium_serial_number)" != "$(cartridge c.tap .medium_serial_number)" ]
  # Each bad option, then its value (none for the first).
  local bad
  for bad in "--barcode" "--barcode=has space" "--barcode=123456789012345678901234567890123" \
    "--manufactured=2026-13-01" "--manufactured=20261204" "--colour=red"; do
    run -1 --separate-stderr "$MT" -f d.tap vt-create 0 "$bad"
    assert_equal "$stderr" "mt: vt-create: '$bad' is not --barcode LABEL (1 to 32 printable characters, no space) or --manufactured YYYY-MM-DD"
    [ ! -e d.tap ]
  done
  run -1 --separate-stderr "$MT" -f d.tap vt-create 0 --barcode "has space"
  assert_equal "$stderr" "mt: vt-create: '--barcode has space' is not --barcode LABEL (1 to 32 printable characters, no space) or --manufactured YYYY-MM-DD"
}

@test "vt-health: capacity reports a sized image's remaining and maximum MiB, and an unlimited one as unlimited" {
  "$MT" -f s.tap vt-create 100M
  run -0 "$MT" -f s.tap capacity
  assert_output "partition 0: 100 MiB remaining of 100 MiB maximum (0.0% used)"
  write_mib s.tap $((10 * 1048576))
  run -0 "$MT" -f s.tap capacity
  assert_output "partition 0: 89 MiB remaining of 100 MiB maximum (11.0% used)"
  assert_equal "$("$MT" --json -f s.tap health | jq -c .capacity)" \
    '[{"partition":0,"remaining_mib":89,"maximum_mib":100}]'
  "$MT" -f u.tap vt-create 0
  write_mib u.tap 65536
  run -0 "$MT" -f u.tap capacity
  assert_output "partition 0: unlimited (a virtual tape without a capacity)"
  assert_equal "$("$MT" --json -f u.tap health | jq -c .capacity)" \
    '[{"partition":0,"remaining_mib":null,"maximum_mib":null,"unlimited":true}]'
}

@test "vt-health: reading a damaged record raises Hard error and Read failure; reading the page clears them" {
  # A good record, then one flagged bad (SIMH: length word | 0x80000000).
  printf '\x04\0\0\0GOOD\x04\0\0\0\x03\0\0\x80BAD\0\x03\0\0\x80' >b.tap
  run -0 "$MT" -f b.tap tapealert
  assert_output "no TapeAlert flag is active"
  run ! "$BUFFER" -s 64k -i "$PWD/b.tap" -o got
  run -0 "$MT" -f b.tap tapealert
  assert_output "TapeAlert 3: Hard error (Warning)
TapeAlert 5: Read failure (Critical)"
  run -0 "$MT" -f b.tap tapealert
  assert_output "no TapeAlert flag is active"
}

@test "vt-health: early warning and the end of the medium raise no TapeAlert flag: they are positions, as on a drive" {
  # 1 MiB: early warning at 7/8, 917504 bytes; a 64 KiB record spans 65544.
  "$MT" -f f.tap vt-create 1M
  "$TK_PLAIN_TEST_BIN/tapectl" f.tap write $(printf '65536 %.0s' $(seq 14)) : status >status
  grep -qw EOT status || fail "the 14th record did not pass early warning: $(cat status)"
  run -0 "$MT" -f f.tap tapealert
  assert_output "no TapeAlert flag is active"
  # Written on to the physical end.
  run -1 "$TK_PLAIN_TEST_BIN/tapectl" f.tap op eom : write $(printf '65536 %.0s' $(seq 4))
  assert_line --index -1 ENOSPC
  run -0 "$MT" -f f.tap tapealert
  assert_output "no TapeAlert flag is active"
}

@test "vt-health: a write refused for write protection raises Write protect" {
  "$MT" -f p.tap vt-create 0
  "$MT" -f p.tap vt-protect 1
  run -1 "$MT" -f p.tap weof
  run -0 "$MT" -f p.tap tapealert
  assert_output "TapeAlert 9: Write protect (Critical)"
  # Unprotected, the same command raises nothing.
  "$MT" -f p.tap vt-protect 0
  run -0 "$MT" -f p.tap weof
  run -0 "$MT" -f p.tap tapealert
  assert_output "no TapeAlert flag is active"
}

@test "vt-health: vt-alert raises flag N, clears it with -N, clears all with clear; flags outlast an unload" {
  "$MT" -f v.tap vt-create 0
  "$MT" -f v.tap vt-alert 20 3 64
  "$MT" -f v.tap vt-alert -3
  # The clearing rule is the page's read: an unload and a load keep them.
  "$MT" -f v.tap offline
  "$MT" -f v.tap load
  run -0 "$MT" -f v.tap tapealert
  assert_output "TapeAlert 20: Cleaning required (Critical)
TapeAlert 64: Reserved (Information)"
  "$MT" -f v.tap vt-alert 20 21
  "$MT" -f v.tap vt-alert clear
  run -0 "$MT" -f v.tap tapealert
  assert_output "no TapeAlert flag is active"
  local bad
  for bad in 0 65 -0 x 1x; do
    run -1 --separate-stderr "$MT" -f v.tap vt-alert "$bad"
    assert_equal "$stderr" "mt: vt-alert: '$bad' is not a flag N or -N (1 to 64) or clear"
  done
  run -1 --separate-stderr "$MT" -f v.tap vt-alert
  assert_equal "$stderr" "mt: vt-alert takes flags to raise (N), to clear (-N), or clear"
  : >plain
  run -1 --separate-stderr "$MT" -f plain vt-alert 20
  assert_equal "$stderr" "mt: vt-alert: plain is not a virtual tape (mt vt-create makes one)"
}

@test "vt-health: tapealert --fail-on critical exits 1 after vt-alert 20, --fail-on warning 0 for an Information flag" {
  "$MT" -f v.tap vt-create 0
  run -0 "$MT" -f v.tap tapealert --fail-on critical
  "$MT" -f v.tap vt-alert 20
  run -1 "$MT" -f v.tap tapealert --fail-on critical
  assert_output "TapeAlert 20: Cleaning required (Critical)"
  "$MT" -f v.tap vt-alert 19
  run -0 "$MT" -f v.tap tapealert --fail-on warning
  assert_output "TapeAlert 19: Nearing media life (Information)"
}

@test "vt-health: --json health on a virtual tape holds every section and the status" {
  "$MT" -f j.tap vt-create 50M --barcode J00001L9 --manufactured 2025-06-30
  "$MT" -f j.tap vt-alert 20
  run -0 --separate-stderr "$MT" --json -f j.tap health
  assert_equal "$stderr" ""
  assert_equal "$(jq -c 'keys' <<<"$output")" \
    '["capacity","capacity_unknown_codes","cartridge","device","drive","encryption","status","tapealert","tapealert_unknown_codes"]'
  assert_equal "$(jq -c '[.tapealert_unknown_codes, .capacity_unknown_codes]' <<<"$output")" '[[],[]]'
  # No serial number of either kind (the manufacturer's page blank, as SSC
  # has a drive without one answer); every flag supported, as vt-alert
  # raises any.
  assert_equal "$(jq -c '.drive | del(.tapealert_supported)' <<<"$output")" \
    '{"vendor":"TAPEKIT","product":"VIRTUAL TAPE","revision":"0001","manufacturer_assigned_serial_number":""}'
  assert_equal "$(jq -c '.drive.tapealert_supported | [length, first, last]' <<<"$output")" '[64,1,64]'
  assert_equal "$(jq -c .tapealert <<<"$output")" '[{"number":20,"name":"Cleaning required","severity":"Critical"}]'
  assert_equal "$(jq -c .capacity <<<"$output")" '[{"partition":0,"remaining_mib":50,"maximum_mib":50}]'
  assert_equal "$(jq -c '.cartridge | del(.medium_serial_number)' <<<"$output")" \
    '{"barcode":"J00001L9","medium_manufacturer":"TAPEKIT","manufacture_date":"20250630","medium_type":0,"density_code":0,"load_count":1,"mib_written":0,"mib_read":0}'
  assert_equal "$(jq -c .encryption <<<"$output")" null
  assert_equal "$(jq -c .status <<<"$output")" "$("$MT" --json -f j.tap status | jq -c .)"
  run -0 "$MT" -f j.tap encryption
  assert_output "encryption: not supported"
}

# same_report of x.tap, here and through tapekit's rmt over the rsh
# stand-in, its TapeAlert flags set to $@ again before each report (reading
# the page clears them).
same_tap_report() { same_report x.tap "localhost:$PWD/x.tap" "$MT" -f x.tap vt-alert "$@"; }

@test "vt-health: through tapekit's rmt over the rsh stand-in, a virtual tape's report is the local one, state by state" {
  "$MT" -f x.tap vt-create 20M --barcode REM001L8
  same_tap_report clear
  write_mib x.tap $((2 * 1048576))
  same_tap_report 3 20
  "$MT" -f x.tap vt-protect 1
  same_tap_report 9 19
  "$MT" -f x.tap vt-alert 20
  run -1 "$MT" -f "localhost:$PWD/x.tap" tapealert --fail-on critical
  assert_output "TapeAlert 20: Cleaning required (Critical)"
  # The remote read cleared the flag too.
  run -0 "$MT" -f x.tap tapealert
  assert_output "no TapeAlert flag is active"
}

@test "vt-health: over the test sshd, tapekit's rmt reports a virtual tape as the local one does" {
  start_test_sshd
  export RSH=$SSHDIR/ssh RMT=$TK_BIN/rmt
  "$MT" -f x.tap vt-create 20M --barcode SSH001L8
  write_mib x.tap 1048576
  local here_json there_json
  "$MT" -f x.tap vt-alert 3 20
  here_json=$("$MT" --json -f x.tap health | jq -c 'del(.device, .status.device)')
  "$MT" -f x.tap vt-alert 3 20
  there_json=$("$MT" --json -f "root@localhost:$PWD/x.tap" health | jq -c 'del(.device, .status.device)')
  assert_equal "$there_json" "$here_json"
  assert_equal "$(jq -c '[.tapealert[].number, .cartridge.barcode, .capacity[0].remaining_mib]' <<<"$there_json")" \
    '[3,20,"SSH001L8",18]'
}

@test "vt-health: a state file from before the cartridge memory still loads; what it never knew stays out" {
  "$MT" -f o.tap vt-create 0
  write_mib o.tap 65536
  grep -Ev '^(load-count|bytes-written|bytes-read|barcode|manufactured|serial|tapealert) ' \
    o.tap.state >old
  mv old o.tap.state
  run -0 "$MT" -f o.tap status
  run -0 "$MT" -f o.tap cartridge
  assert_output "medium manufacturer: TAPEKIT
medium type: 0x00
density code: 0x00"
  "$MT" -f o.tap rewind
  "$BUFFER" -s 64k -i "$PWD/o.tap" -o got
  run -0 "$MT" -f o.tap cartridge
  refute_line --partial "load count"
  refute_line --partial "MiB"
  "$MT" -f o.tap vt-alert 20
  run -0 "$MT" -f o.tap tapealert
  assert_output "TapeAlert 20: Cleaning required (Critical)"
}

@test "vt-health: sg3_utils decode the virtual tape's pages as tapekit does: sg_inq, sg_logs -p 0x2e and 0x31, sg_read_attr, sg_vpd" {
  command -v sg_logs >/dev/null || skip "sg3-utils is not installed"
  "$MT" -f g.tap vt-create 20M --barcode ABC123L8 --manufactured 2026-12-04
  "$MT" -f g.tap vt-alert 3 20
  # tapectl prints the bytes Tape::health_data answers (scsi::HealthQuery).
  tapectl -n g.tap health 0 >inquiry.hex
  tapectl -n g.tap health 1 >tapealert.hex
  tapectl -n g.tap health 2 >capacity.hex
  tapectl -n g.tap health 3 >attributes.hex
  run -0 sg_inq --inhex=inquiry.hex
  assert_line --regexp "Peripheral device type: tape"
  assert_line --regexp "^ Vendor identification: TAPEKIT *$"
  assert_line --regexp "^ Product identification: VIRTUAL TAPE *$"
  run -0 sg_logs --in=tapealert.hex
  assert_equal "$(grep -c ': 1$' <<<"$output")" 2
  assert_line "  Hard error: 1"
  assert_line "  Cleaning required: 1"
  run -0 sg_logs --in=capacity.hex
  assert_line "  Main partition remaining capacity (in MiB): 20"
  assert_line "  Main partition maximum capacity (in MiB): 20"
  run -0 sg_read_attr --in=attributes.hex
  assert_line "  Load count: 1"
  assert_line "  Total MiB written in medium life: 0"
  assert_line --regexp "^  Medium manufacturer: TAPEKIT *$"
  assert_line "  Medium manufacture date: 20261204"
  assert_line --regexp "^  Barcode: ABC123L8 *$"
  tapectl -n g.tap health 6 >vpd0.hex
  tapectl -n g.tap health 7 >mas.hex
  tapectl -n g.tap health 8 >tas.hex
  run -0 sg_vpd --inhex=vpd0.hex
  assert_output "Supported VPD pages VPD page:
  Supported VPD pages [sv]
  Manufacturer assigned serial number (SSC) [mas]
  TapeAlert supported flags (SSC) [tas]"
  run -0 sg_vpd --inhex=mas.hex -p mas
  assert_line --regexp "^  Manufacturer-assigned serial number: *$"
  run -0 --separate-stderr sg_vpd --inhex=tas.hex -p tas
  assert_equal "$stderr" ""
  assert_equal "$(grep -o '[0-9A-F][0-9A-F]h: 1' <<<"$output" | wc -l)" 64
  run -0 "$MT" -f g.tap health
  assert_line --index 1 "manufacturer-assigned serial number: empty"
  assert_line --index 2 "TapeAlert flags supported: 1-64"
}
