#!/usr/bin/env bats
# Shows that mt's drive-health commands (tapealert, capacity, cartridge,
# encryption, --json health) report what tools no one here wrote report for
# the same drive: Debian's sg_logs, sg_read_attr and sg_inq (sg3-utils),
# tapeinfo (mtx) and stenc, each run against the same LTO drive faked by
# tests/shim/fake_st.c in the same state. The shim answers SG_IO on the
# faked node (/dev/zero) with pages laid out from SPC-4 and SSC-4; the other
# tools open that node themselves and send their own CDBs, so the shim
# intercepts their open and ioctl calls as it does mt's.
#
# Every tool listed can be driven through the shim: sg3-utils and stenc send
# SG_IO to any node; tapeinfo first asks SG_GET_VERSION_NUM, SG_SET_TIMEOUT
# and SCSI_IOCTL_GET_IDLUN, which the shim answers as the sg driver would.
# stenc insists on running as root (and appends to /var/log/stenc when it
# changes keys, which these tests never ask): its comparisons are skipped
# for other users.
#
# run-suites: no leak check
# (mt runs one command and exits: a leak cannot grow.)
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  unset TAPE
  forget_fake_drive
}

# The active flags sg_logs -p 0x2e lists, as "NAME" lines.
sg_logs_flags() { fake sg_logs -p 0x2e /dev/zero | grep -v '^  Reserved parameter code' | sed -n 's/^  \(.*\): 1$/\1/p'; }
# The parameters sg_logs -p 0x2e lists by code, and those mt names as not
# decoded, as "0xCODE" lines. sg_logs lists flags 61-64 (0x3d-0x40) by code
# too: its table ends before them, but they are flags.
sg_logs_unknown() {
  local code
  fake sg_logs -p 0x2e /dev/zero | sed -n 's/^  Reserved parameter code \(0x[0-9a-f]*\), flag: [01]$/\1/p' |
    while read -r code; do [ $((code)) -le 64 ] || echo "$code"; done
}
mt_unknown() { fake "$MT" -f /dev/zero "$1" | sed -n 's/^parameters not decoded: //p' | tr ' ' '\n' | sed 's/^0x0*\([0-9a-f]\)/0x\1/'; }

# The active flags mt tapealert lists, as "NAME" lines and as numbers.
mt_flag_names() { fake "$MT" -f /dev/zero tapealert | sed -n 's/^TapeAlert [0-9]*: \(.*\) ([A-Za-z]*)$/\1/p'; }
mt_flag_numbers() { fake "$MT" -f /dev/zero tapealert | sed -n 's/^TapeAlert \([0-9]*\):.*/\1/p'; }

@test "health: tapealert names the flags sg_logs -p 0x2e finds set, and tapeinfo numbers them alike" {
  local alerts
  for alerts in "" 3 3,20 1,4,9,19,37,55,60; do
    export FAKE_ST_ALERTS=$alerts
    assert_equal "$(mt_flag_names)" "$(sg_logs_flags)"
    assert_equal "$(mt_flag_numbers)" \
      "$(fake tapeinfo -f /dev/zero | sed -n 's/^TapeAlert\[\([0-9]*\)\].*/\1/p')"
    assert_equal "$(mt_flag_numbers | paste -sd,)" "$alerts"
  done
}

@test "health: a vendor-specific TapeAlert parameter is skipped and named as sg_logs lists it; the flags beside it still count" {
  export FAKE_ST_ALERTS=3,20 FAKE_ST_ODD=0x2e-vendor
  assert_equal "$(mt_flag_names)" "$(sg_logs_flags)"
  assert_equal "$(mt_flag_numbers | paste -sd,)" 3,20
  assert_equal "$(mt_unknown tapealert)" "$(sg_logs_unknown)"
  assert_equal "$(sg_logs_unknown)" 0x8001
  fake run -1 --separate-stderr "$MT" -f /dev/zero tapealert --fail-on critical
  assert_output "TapeAlert 3: Hard error (Warning)
TapeAlert 20: Cleaning required (Critical)
parameters not decoded: 0x8001"
  assert_equal "$stderr" ""
  fake run -0 "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '[.tapealert[].number, .tapealert_unknown_codes]' <<<"$output")" '[3,20,[32769]]'
  FAKE_ST_ALERTS=3 fake run -0 "$MT" -f /dev/zero tapealert --fail-on critical
  FAKE_ST_ALERTS= fake run -0 "$MT" -f /dev/zero tapealert
  assert_output "no TapeAlert flag is active
parameters not decoded: 0x8001"
}

@test "health: a TapeAlert page longer than 8192 bytes is asked for whole, as sg_logs does, and read to its end" {
  export FAKE_ST_ALERTS=3,20 FAKE_ST_ODD=0x2e-long FAKE_ST_LOG=$PWD/calls.log
  assert_equal "$(mt_flag_names)" "$(sg_logs_flags)"
  assert_equal "$(mt_flag_numbers | paste -sd,)" 3,20
  assert_equal "$(mt_unknown tapealert)" "$(sg_logs_unknown)"
  assert_equal "$(sg_logs_unknown | wc -l)" 40
  fake run -0 "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '[.tapealert[].number, (.tapealert_unknown_codes | length, .[39])]' <<<"$output")" '[3,20,40,32809]'
  FAKE_ST_ALERTS=20 fake run -1 "$MT" -f /dev/zero tapealert --fail-on critical
  # The page's length first, then the page, as sg_logs asks.
  : >calls.log
  fake "$MT" -f /dev/zero tapealert >/dev/null
  assert_equal "$(grep -c '^SG_IO 0x4d' calls.log)" 2
  : >calls.log
  fake sg_logs -p 0x2e /dev/zero >/dev/null
  assert_equal "$(grep -c '^SG_IO 0x4d' calls.log)" 2
}

@test "health: tapealert gives number, name and severity a line, or says none is active; exit 0" {
  FAKE_ST_ALERTS=3,20 fake run -0 --separate-stderr "$MT" -f /dev/zero tapealert
  assert_output "TapeAlert 3: Hard error (Warning)
TapeAlert 20: Cleaning required (Critical)"
  assert_equal "$stderr" ""
  fake run -0 "$MT" -f /dev/zero tapealert
  assert_output "no TapeAlert flag is active"
  FAKE_ST_ALERTS=10 fake run -0 "$MT" -f /dev/zero tapealert
  assert_output "TapeAlert 10: No removal (Information)"
}

@test "health: tapealert --fail-on exits 1 when a flag that severe or worse is active" {
  local alerts level want
  while read -r alerts level want; do
    [ "$alerts" = - ] && alerts=
    FAKE_ST_ALERTS=$alerts fake run "$MT" -f /dev/zero tapealert --fail-on "$level"
    assert_equal "$alerts $level: $status" "$alerts $level: $want"
    FAKE_ST_ALERTS=$alerts fake run "$MT" --fail-on="$level" -f /dev/zero tapealert
    assert_equal "$alerts $level before: $status" "$alerts $level before: $want"
  done <<'ROWS'
- critical 0
- warning 0
10 warning 0
3 critical 0
3 warning 1
20 critical 1
20 warning 1
10,3 warning 1
ROWS
}

@test "health: a bad --fail-on, or --fail-on with another command, is a usage error (exit 1)" {
  fake run -1 --separate-stderr "$MT" -f /dev/zero tapealert --fail-on fatal
  assert_equal "$stderr" "mt: --fail-on fatal: not critical or warning"
  fake run -1 --separate-stderr "$MT" -f /dev/zero tapealert extra
  assert_equal "$stderr" "mt: tapealert: unexpected argument 'extra' (tapealert takes --fail-on critical|warning)"
  fake run -1 --separate-stderr "$MT" --fail-on critical -f /dev/zero status
  assert_equal "$stderr" "mt: --fail-on applies to tapealert only"
}

# "PARTITION REMAINING MAXIMUM" lines from sg_logs -p 0x31 and from mt capacity.
sg_logs_capacity() {
  fake sg_logs -p 0x31 /dev/zero | awk -F': ' '
    /Main partition remaining/ { r0 = $2 } /Main partition maximum/ { m0 = $2 }
    /Alternate partition remaining/ { r1 = $2 } /Alternate partition maximum/ { m1 = $2 }
    END { print 0, r0, m0; if (r1 != "" || m1 != "") print 1, r1, m1 }'
}
mt_capacity() {
  fake "$MT" -f /dev/zero capacity |
    sed -n 's/^partition \([0-9]\): \([0-9]*\) MiB remaining of \([0-9]*\) MiB maximum.*/\1 \2 \3/p'
}

@test "health: a capacity parameter of another length is skipped and named; sg_logs shows the same capacities" {
  export FAKE_ST_ODD=0x31-wide
  local theirs
  theirs=$(fake sg_logs -p 0x31 /dev/zero)
  refute_regex "$theirs" "Main partition remaining"
  fake run -0 --separate-stderr "$MT" -f /dev/zero capacity
  assert_output "partition 0: $(sed -n 's/^  Main partition maximum capacity (in MiB): //p' <<<"$theirs") MiB maximum
parameters not decoded: 0x0001"
  assert_equal "$stderr" ""
  fake run -0 "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '[.capacity, .capacity_unknown_codes]' <<<"$output")" \
    '[[{"partition":0,"remaining_mib":null,"maximum_mib":11444224}],[1]]'
}

@test "health: capacity reports each partition's remaining and maximum MiB as sg_logs -p 0x31 does" {
  local capacity
  for capacity in 5000000:11444224 0:2400000 11444224:11444224 100:200,50:100; do
    export FAKE_ST_CAPACITY=$capacity
    assert_equal "$(mt_capacity)" "$(sg_logs_capacity)"
    [ -n "$(mt_capacity)" ] || fail "no capacity for $capacity"
  done
  FAKE_ST_CAPACITY=100:200,50:100 fake run -0 "$MT" -f /dev/zero capacity
  assert_output "partition 0: 100 MiB remaining of 200 MiB maximum (50.0% used)
partition 1: 50 MiB remaining of 100 MiB maximum (50.0% used)"
}

# "FIELD=VALUE" lines, sorted, from sg_read_attr and from mt cartridge; hex
# numbers lose their 0x and leading zeros (sg_read_attr prints 0x0, mt 0x00).
# shellcheck disable=SC2016
hex_number='function unhex(v) { sub(/^0x0*/, "", v); return v == "" ? "0" : v }'
sg_read_attr_fields() {
  fake sg_read_attr /dev/zero | sed -e 's/ *$//' | awk -F': ' "$hex_number"'
    /^  Barcode:/ { print "barcode=" $2 }
    /^  Medium serial number:/ { print "serial=" $2 }
    /^  Medium manufacturer:/ { print "manufacturer=" $2 }
    /^  Medium manufacture date:/ { print "date=" $2 }
    /^  Medium type:/ { print "type=" unhex($2) }
    /^  Medium density code:/ { print "density=" unhex($2) }
    /^  Load count:/ { print "loads=" $2 }
    /^  Total MiB written in medium life:/ { print "written=" $2 }
    /^  Total MiB read in medium life:/ { print "read=" $2 }
    /^  Remaining capacity in partition \[MiB\]:/ { print "remaining=" $2 }
    /^  Maximum capacity in partition \[MiB\]:/ { print "maximum=" $2 }' | sort
}
mt_cartridge_fields() {
  fake "$MT" -f /dev/zero cartridge | awk -F': ' "$hex_number"'
    /^barcode:/ { print "barcode=" $2 }
    /^medium serial number:/ { print "serial=" $2 }
    /^medium manufacturer:/ { print "manufacturer=" $2 }
    /^manufacture date:/ { print "date=" $2 }
    /^medium type:/ { print "type=" unhex($2) }
    /^density code:/ { print "density=" unhex($2) }
    /^load count:/ { print "loads=" $2 }
    /^MiB written in medium life:/ { print "written=" $2 }
    /^MiB read in medium life:/ { print "read=" $2 }
    /^MiB remaining in partition:/ { print "remaining=" $2 }
    /^MiB maximum in partition:/ { print "maximum=" $2 }' | sort
}

@test "health: cartridge reports the MAM attributes sg_read_attr reports, and leaves absent ones out" {
  local mam
  for mam in "" "0x0806=CLN001L8;0x0003=7" "0x0401=X9;0x0408=0x01;0x0405=0x60;0x0221=12345678901"; do
    if [ -n "$mam" ]; then export FAKE_ST_MAM=$mam; else unset FAKE_ST_MAM; fi
    assert_equal "$(mt_cartridge_fields)" "$(sg_read_attr_fields)"
  done
  unset FAKE_ST_MAM
  assert_equal "$(mt_cartridge_fields | wc -l)" 9
  FAKE_ST_MAM="0x0806=CLN001L8;0x0003=7" fake run -0 "$MT" -f /dev/zero cartridge
  assert_output "barcode: CLN001L8
load count: 7"
  FAKE_ST_MAM=none fake run -0 "$MT" -f /dev/zero cartridge
  assert_output "the cartridge memory holds none of these attributes"
}

@test "health: a TEXT barcode, a 4-byte load count and the partition's capacities read as sg_read_attr reads them" {
  export FAKE_ST_ODD=attr-text,attr-load4
  local mam
  for mam in "" "0x0806=CLN001L8;0x0003=7;0x0000=1000;0x0001=2000"; do
    if [ -n "$mam" ]; then export FAKE_ST_MAM=$mam; else unset FAKE_ST_MAM; fi
    assert_equal "$(mt_cartridge_fields)" "$(sg_read_attr_fields)"
  done
  fake run -0 --separate-stderr "$MT" -f /dev/zero cartridge
  assert_output "barcode: CLN001L8
load count: 7
MiB remaining in partition: 1000
MiB maximum in partition: 2000"
  assert_equal "$stderr" ""
  fake run -0 "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '.cartridge' <<<"$output")" \
    '{"barcode":"CLN001L8","load_count":7,"remaining_mib":1000,"maximum_mib":2000}'
}

# The value sg_read_attr dumps in hex for an attribute it has no name for:
# a number (binary) or its ASCII column (text).
sg_read_attr_number() {
  local hex
  hex=$(fake sg_read_attr /dev/zero | sed -n "/attribute $1:/{n;p}" |
    awk '{ for (i = 2; i <= NF && $i ~ /^[0-9a-f][0-9a-f]$/; ++i) printf "%s", $i }')
  printf '%d\n' "0x$hex"
}
sg_read_attr_text() { fake sg_read_attr /dev/zero | sed -n "/attribute $1:/{n;p}" | awk '{ print $NF }'; }

@test "health: cartridge reports an attribute it has no name for by its number, with the value sg_read_attr dumps" {
  export FAKE_ST_MAM="0x0806=CLN001L8;0x1234=77;0x1235=hello"
  fake run -0 --separate-stderr "$MT" -f /dev/zero cartridge
  assert_output "barcode: CLN001L8
attribute 0x1234: $(sg_read_attr_number 0x1234)
attribute 0x1235: $(sg_read_attr_text 0x1235)"
  assert_line "attribute 0x1234: 77"
  assert_line "attribute 0x1235: hello"
  assert_equal "$stderr" ""
  fake run -0 "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '.cartridge.attributes' <<<"$output")" '[{"id":4660,"value":77},{"id":4661,"value":"hello"}]'
}

@test "health: a cartridge memory longer than 8192 bytes is asked for again at the length it gives, and read whole" {
  local long
  long=$(printf '%*s' 9000 '' | tr ' ' x)
  export FAKE_ST_MAM="0x0806=CLN001L8;0x1235=$long;0x0003=7" FAKE_ST_LOG=$PWD/calls.log
  fake run -0 --separate-stderr "$MT" -f /dev/zero cartridge
  assert_equal "$stderr" ""
  assert_equal "${#lines[@]}" 3
  assert_line --index 0 "barcode: CLN001L8"
  assert_line --index 1 "load count: 7"
  [ "${lines[2]}" = "attribute 0x1235: $long" ] || fail "attribute 0x1235 is ${#lines[2]} characters long"
  assert_equal "$(grep -c '^SG_IO 0x8c' calls.log)" 2
  # sg_read_attr reads the list whole when asked for enough; at its
  # default 8192 bytes it stops before the load count.
  assert_equal "$(fake sg_read_attr -m 65535 /dev/zero | grep -c '^  Load count: 7$')" 1
  assert_equal "$(fake sg_read_attr /dev/zero | grep -c '^  Load count:')" 0
}

@test "health: health reports the unit serial number sg_inq -p 0x80 and tapeinfo report" {
  local serial
  serial=$(fake sg_inq -p 0x80 /dev/zero | sed -n 's/^  Unit serial number: //p')
  assert_equal "$serial" 1068000123
  assert_equal "$(fake tapeinfo -f /dev/zero | sed -n "s/^SerialNumber: '\(.*\)'$/\1/p")" "$serial"
  fake run -0 --separate-stderr "$MT" -f /dev/zero health
  assert_line --index 1 "drive serial number: $serial"
  assert_equal "$stderr" ""
  fake run -0 "$MT" --json -f /dev/zero health
  assert_equal "$(jq -r .drive.serial_number <<<"$output")" "$serial"
}

# The manufacturer-assigned serial number sg_vpd -p mas prints, without
# the padding it prints too; and the flags sg_vpd -p tas finds supported,
# as "3,20".
sg_vpd_mas() { fake sg_vpd -p mas /dev/zero | sed -n 's/^  Manufacturer-assigned serial number: *//p' | sed 's/ *$//'; }
sg_vpd_tas() {
  local hex
  fake sg_vpd -p tas /dev/zero | grep -o '[0-9A-F][0-9A-F]h: 1' | while read -r hex _; do
    echo $((16#${hex%h:}))
  done | paste -sd,
}
mt_json() { fake "$MT" --json -f /dev/zero health | jq -r "$1"; }

@test "health: health reports the manufacturer-assigned serial number sg_vpd -p mas reports, an empty one as empty" {
  local mas
  for mas in 10WT012345 X9 ""; do
    export FAKE_ST_MAS=$mas
    assert_equal "$(sg_vpd_mas)" "$mas"
    assert_equal "$(mt_json .drive.manufacturer_assigned_serial_number)" "$mas"
    fake run -0 --separate-stderr "$MT" -f /dev/zero health
    assert_line --index 2 "manufacturer-assigned serial number: ${mas:-empty}"
    assert_equal "$stderr" ""
  done
  # tgt's page: 64 NULs, an empty serial number to sg_vpd too.
  export FAKE_ST_ODD=mas-nul
  assert_equal "$(fake sg_vpd -p mas -H /dev/zero | grep -c '00 00 00 00  00 00 00 00')" 4
  assert_equal "$(sg_vpd_mas)" ""
  fake run -0 "$MT" -f /dev/zero health
  assert_line --index 2 "manufacturer-assigned serial number: empty"
  assert_equal "$(fake "$MT" --json -f /dev/zero health | jq -c .drive.manufacturer_assigned_serial_number)" '""'
}

@test "health: health lists the TapeAlert flags supported that sg_vpd -p tas finds, as runs" {
  local tas want
  while IFS='|' read -r tas want; do
    export FAKE_ST_TAS=$tas
    [ "$tas" != default ] || unset FAKE_ST_TAS
    assert_equal "$(mt_json '.drive.tapealert_supported | map(tostring) | join(",")')" "$(sg_vpd_tas)"
    fake run -0 --separate-stderr "$MT" -f /dev/zero health
    assert_line --index 3 "TapeAlert flags supported: $want"
    assert_equal "$stderr" ""
  done <<'ROWS'
default|1-23, 25-27, 29-39, 49, 51-60
3,20|3, 20
1,2,3,64|1-3, 64
64|64
none|none
ROWS
  assert_equal "$(FAKE_ST_TAS=none fake "$MT" --json -f /dev/zero health | jq -c .drive.tapealert_supported)" "[]"
}

@test "health: a VPD page the drive does not list is one line naming it, null in JSON; the others still answer" {
  FAKE_ST_MISSING=mas,tas fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '.drive | [.manufacturer_assigned_serial_number, .tapealert_supported, .serial_number]' <<<"$output")" \
    '[null,null,"1068000123"]'
  assert_equal "$(jq -r .status.bot <<<"$output")" true
  assert_equal "$stderr" "mt: /dev/zero: INQUIRY VPD page 0xb1: the drive does not support it (VPD page 0x00 does not list it)
mt: /dev/zero: INQUIRY VPD page 0xb2: the drive does not support it (VPD page 0x00 does not list it)"
  # sg_vpd finds neither listed, and the drive refuses both.
  run -0 --separate-stderr env LD_PRELOAD="$FAKE_ST" FAKE_ST_MISSING=mas,tas sg_vpd /dev/zero
  refute_output --partial "[mas]"
  refute_output --partial "[tas]"
  FAKE_ST_MISSING=mas fake run sg_vpd -p mas /dev/zero
  assert_failure
  FAKE_ST_MISSING=tas fake run -0 --separate-stderr "$MT" -f /dev/zero health
  assert_line --index 2 "manufacturer-assigned serial number: 10WT012345"
  refute_line --partial "TapeAlert flags supported"
  assert_equal "$stderr" "mt: /dev/zero: INQUIRY VPD page 0xb2: the drive does not support it (VPD page 0x00 does not list it)"
}

@test "health: a TapeAlert supported flags page too short for its flags (tgt's) is named with its length, as sg_vpd finds it; no flag is invented" {
  export FAKE_ST_MALFORMED=tas
  run -0 --separate-stderr env LD_PRELOAD="$FAKE_ST" sg_vpd -p tas /dev/zero
  assert_equal "$stderr" "TapeAlert supported flags length too short=8"
  refute_output --partial "Flag01h"
  fake run -0 --separate-stderr "$MT" -f /dev/zero health
  refute_line --partial "TapeAlert flags supported"
  assert_equal "$stderr" "mt: /dev/zero: INQUIRY VPD page 0xb2, byte 2: page length 4 is too short for the 64 flags (8 bytes needed)"
  fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c .drive.tapealert_supported <<<"$output")" null
  assert_equal "$(jq -r .drive.manufacturer_assigned_serial_number <<<"$output")" 10WT012345
}

@test "health: a node that answers SCSI commands but not st's ioctls (an sg node) reports every section, the status null, and names the st node" {
  # The sg driver refuses MTIOCGET with EPERM; sysfs links the drive's st
  # device beside it as "tape".
  export FAKE_ST_FAIL=get:1
  fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c .status <<<"$output")" null
  assert_equal "$(jq -r '.drive.serial_number, .capacity[0].partition, .cartridge.barcode' <<<"$output" | paste -sd' ')" "1068000123 0 ABC123L8"
  assert_equal "$stderr" "mt: /dev/zero: no tape status here (MTIOCGET: Operation not permitted): not an st node"
  local rdev
  rdev=$(stat -c '%t:%T' /dev/zero)
  mkdir -p "sysdev/$((16#${rdev%:*})):$((16#${rdev#*:}))/device/tape"
  printf 'MAJOR=9\nMINOR=0\nDEVNAME=st0\n' >"sysdev/$((16#${rdev%:*})):$((16#${rdev#*:}))/device/tape/uevent"
  FAKE_ST_SYSDEV=$PWD/sysdev fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$stderr" "mt: /dev/zero: no tape status here (MTIOCGET: Operation not permitted): the drive's st node, /dev/nst0, has it"
  # The text report has no status to miss.
  fake run -0 --separate-stderr "$MT" -f /dev/zero health
  assert_line --index 0 "drive: IBM ULT3580-TD8 Q3F4"
  assert_equal "$stderr" ""
  # A failure of the drive's own is still one.
  FAKE_ST_FAIL=get:5 fake run -2 --separate-stderr "$MT" -f /dev/zero health
  assert_equal "$stderr" "/dev/zero: Input/output error"
}

@test "health: encryption agrees with stenc --detail, on and off; a drive without it is 'not supported'" {
  [ "$(id -u)" = 0 ] || skip "stenc runs only as root"
  local state
  for state in on off; do
    export FAKE_ST_ENCRYPTION=$state
    fake run -0 "$MT" -f /dev/zero encryption
    theirs=$(fake stenc -f /dev/zero --detail)
    local mode kic alg
    mode=$(sed -n 's/^Drive Encryption: *//p' <<<"$theirs")
    kic=$(sed -n 's/^Key Instance Counter: *//p' <<<"$theirs")
    alg=$(sed -n 's/^Encryption Algorithm: *//p' <<<"$theirs")
    if [ "$mode" = on ]; then
      assert_line "encryption mode: encrypt (2)"
      assert_line "decryption mode: decrypt (2)"
    else
      assert_equal "$mode" off
      assert_line "encryption mode: disable (0)"
      assert_line "decryption mode: disable (0)"
    fi
    assert_line "key instance counter: $kic"
    assert_line "algorithm index: ${alg:-0}"
  done
  export FAKE_ST_ENCRYPTION=none
  # shellcheck disable=SC2016
  run -0 bash -c 'LD_PRELOAD=$0 stenc -f /dev/zero --detail 2>&1' "$FAKE_ST"
  assert_output --partial "Illegal Request"
  fake run -0 "$MT" -f /dev/zero encryption
  assert_output "encryption: not supported"
}

@test "health: --json health names the drive sg_inq and tapeinfo name and holds every section and the status" {
  local inq
  inq=$(fake sg_inq /dev/zero)
  FAKE_ST_ALERTS=20 FAKE_ST_ENCRYPTION=on fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$stderr" ""
  assert_equal "$(jq -r .drive.vendor <<<"$output")" "$(sed -n 's/^ Vendor identification: *//p' <<<"$inq" | sed 's/ *$//')"
  assert_equal "$(jq -r .drive.product <<<"$output")" "$(sed -n 's/^ Product identification: *//p' <<<"$inq" | sed 's/ *$//')"
  assert_equal "$(jq -r .drive.revision <<<"$output")" "$(sed -n 's/^ Product revision level: *//p' <<<"$inq")"
  # tapeinfo quotes the same fields untrimmed.
  local info
  info=$(fake tapeinfo -f /dev/zero)
  assert_equal "$(jq -r .drive.vendor <<<"$output")" "$(sed -n "s/^Vendor ID: '\(.*\)'$/\1/p" <<<"$info" | sed 's/ *$//')"
  assert_equal "$(jq -r .drive.product <<<"$output")" "$(sed -n "s/^Product ID: '\(.*\)'$/\1/p" <<<"$info" | sed 's/ *$//')"
  assert_equal "$(jq -r .drive.revision <<<"$output")" "$(sed -n "s/^Revision: '\(.*\)'$/\1/p" <<<"$info")"
  assert_equal "$(jq -c .tapealert <<<"$output")" '[{"number":20,"name":"Cleaning required","severity":"Critical"}]'
  assert_equal "$(jq -c .capacity <<<"$output")" '[{"partition":0,"remaining_mib":5000000,"maximum_mib":11444224}]'
  assert_equal "$(jq -r .cartridge.barcode <<<"$output")" ABC123L8
  assert_equal "$(jq -r .cartridge.load_count <<<"$output")" 42
  assert_equal "$(jq -c .encryption <<<"$output")" \
    '{"encryption_mode":"encrypt","decryption_mode":"decrypt","algorithm_index":1,"key_instance_counter":5}'
  assert_equal "$(jq -c .status <<<"$output")" "$(fake "$MT" --json -f /dev/zero status | jq -c .)"
  FAKE_ST_ENCRYPTION=none fake run -0 "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c .encryption <<<"$output")" null
}

# An INQUIRY whose vendor, product and revision hold ESC, CR, LF, DEL and a
# byte that is no UTF-8 (0xff), each field padded to its width. (The
# cartridge memory's ASCII attributes are refused with such bytes.)
hostile_drive() {
  export FAKE_ST_INQUIRY=$'IBM\e[2J '$'ULT\r\nFAKE\xff      '$'Q3\e\x7f'
  export FAKE_ST_MAS=$'S\e[7mN'
}

@test "health: --json health is valid JSON whatever bytes the drive sends: controls and non-UTF-8 bytes as \\u00XX" {
  hostile_drive
  fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$stderr" ""
  assert_output --partial '"drive":{"vendor":"IBM\u001b[2J","product":"ULT\u000d\u000aFAKE\u00ff","revision":"Q3\u001b\u007f","serial_number":"1068000123","manufacturer_assigned_serial_number":"S\u001b[7mN",'
  run -0 jq -r .drive.product <<<"$output"
  assert_output $'ULT\r\nFAKE\u00ff'
}

@test "health: text health shows a drive's control bytes as \\ooo escapes: nothing starts a line or a terminal sequence" {
  hostile_drive
  fake run -0 --separate-stderr "$MT" -f /dev/zero health
  assert_equal "$stderr" ""
  assert_line --index 0 'drive: IBM\033[2J ULT\015\012FAKE\377 Q3\033\177'
  assert_line --index 2 'manufacturer-assigned serial number: S\033[7mN'
  refute_output --partial $'\e'
  refute_output --partial $'\r'
}

@test "health: a page the drive lacks is one line naming it; health's other sections still answer" {
  FAKE_ST_MISSING=0x2e fake run -2 --separate-stderr "$MT" -f /dev/zero tapealert
  assert_output ""
  assert_equal "$stderr" "mt: /dev/zero: LOG SENSE page 0x2e: the drive does not support it (ILLEGAL REQUEST, asc 0x24 ascq 0x00)"
  # sg_logs agrees that the page is not there.
  FAKE_ST_MISSING=0x2e fake run sg_logs -p 0x2e /dev/zero
  assert_failure
  FAKE_ST_MISSING=0x31,attr fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '[.capacity, .cartridge]' <<<"$output")" "[null,null]"
  assert_equal "$(jq -c .tapealert <<<"$output")" "[]"
  assert_equal "$(jq -r .status.bot <<<"$output")" true
  assert_equal "$stderr" "mt: /dev/zero: LOG SENSE page 0x31: the drive does not support it (ILLEGAL REQUEST, asc 0x24 ascq 0x00)
mt: /dev/zero: READ ATTRIBUTE: the drive does not support it (ILLEGAL REQUEST, asc 0x24 ascq 0x00)"
  FAKE_ST_MISSING=attr fake run -2 --separate-stderr "$MT" -f /dev/zero cartridge
  assert_equal "$stderr" "mt: /dev/zero: READ ATTRIBUTE: the drive does not support it (ILLEGAL REQUEST, asc 0x24 ascq 0x00)"
}

@test "health: a malformed page is one line naming the page and the byte, exit 2, never a figure" {
  local what command want
  while IFS='|' read -r what command want; do
    FAKE_ST_MALFORMED=$what fake run -2 --separate-stderr "$MT" -f /dev/zero "$command"
    assert_equal "$output" ""
    assert_equal "$stderr" "mt: /dev/zero: $want"
  done <<'ROWS'
0x2e|tapealert|LOG SENSE page 0x2e, byte 2: page length 360 runs past the 324 bytes returned
0x31|capacity|LOG SENSE page 0x31, byte 12: parameter 0x0003 of length 12 runs past the page end
attr|cartridge|READ ATTRIBUTE, byte 118: attribute 0x0806 of length 48 runs past the data end
spin|encryption|SECURITY PROTOCOL IN protocol 0x20 page 0x0020, byte 2: page length 4 leaves out the key instance counter (8 needed)
ROWS
  FAKE_ST_MALFORMED=0x2e,0x31,attr,spin fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '[.tapealert, .capacity, .cartridge, .encryption]' <<<"$output")" "[null,null,null,null]"
  assert_equal "$(wc -l <<<"$stderr")" 4
}

@test "health: a node that takes no SG_IO, or refuses it, is one line naming the command and why" {
  FAKE_ST_SG=none fake run -2 --separate-stderr "$MT" -f /dev/zero capacity
  assert_equal "$stderr" "mt: /dev/zero: LOG SENSE page 0x31: /dev/zero is not a SCSI device (SG_IO: Inappropriate ioctl for device)"
  FAKE_ST_SG=eperm fake run -2 --separate-stderr "$MT" -f /dev/zero tapealert
  assert_equal "$stderr" "mt: /dev/zero: LOG SENSE page 0x2e: SG_IO on /dev/zero is not permitted (Operation not permitted; it needs CAP_SYS_RAWIO or a device opened for writing)"
}

@test "health: a plain file cannot report drive health (exit 2)" {
  : >plain
  local command
  for command in tapealert capacity cartridge encryption health; do
    run -2 --separate-stderr "$MT" -f plain "$command"
    assert_equal "$stderr" "mt: plain is a plain file, not a tape drive: it cannot report drive health"
  done
  run -1 --separate-stderr "$MT" -f missing tapealert
  assert_equal "$stderr" "missing: No such file or directory"
}

@test "health: mt status on the faked drive stays byte-identical with mt-st's" {
  local ours theirs
  ours=$(FAKE_ST_ALERTS=20 fake "$MT" -f /dev/zero status)
  theirs=$(FAKE_ST_ALERTS=20 fake mt-st -f /dev/zero status)
  assert_equal "$ours" "$theirs"
}

@test "health: the page parsers survive their corpus and a short libFuzzer run" {
  [ -z "${TK_SANITIZED:-}" ] || skip "runs in the plain pass only"
  run make -s -C "$BATS_TEST_DIRNAME/.." BUILD="$TK_BUILD" "$TK_BUILD/fuzz/scsi_pages"
  assert_success
  mkdir corpus
  run "$TK_BUILD/fuzz/scsi_pages" -max_total_time="${TK_FUZZ_TIME:-5}" \
    -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 corpus "$BATS_TEST_DIRNAME/fuzz/corpus/scsi_pages"
  assert_success
  assert_output --regexp "stat::number_of_executed_units: +[1-9][0-9]*"
}

@test "health: mt -h lists the drive-health commands and --fail-on among tapekit's extensions" {
  run -0 --separate-stderr "$MT" -h
  local word
  for word in "tapealert \[--fail-on critical|warning\]" "capacity " "cartridge " "encryption " "health "; do
    sed -n '/^tapekit extensions:/,$p' <<<"$stderr" | grep -q "^  $word" || fail "-h does not list $word"
  done
}

@test "health: with no cartridge, TapeAlert still answers and what needs the cartridge says so" {
  export FAKE_ST_STATE=no-tape
  fake run -0 "$MT" -f /dev/zero tapealert
  assert_output "no TapeAlert flag is active"
  fake run -2 --separate-stderr "$MT" -f /dev/zero cartridge
  assert_equal "$stderr" "mt: /dev/zero: READ ATTRIBUTE: there is no cartridge in the drive (NOT READY, asc 0x3a ascq 0x00)"
  # sg_read_attr and sg_logs find the drive not ready too.
  fake run -2 sg_read_attr /dev/zero
  assert_output --partial "not ready"
  fake run -2 sg_logs -p 0x31 /dev/zero
  assert_output --partial "not ready"
  fake run -0 --separate-stderr "$MT" --json -f /dev/zero health
  assert_equal "$(jq -c '[.tapealert, .capacity, .cartridge]' <<<"$output")" "[[],null,null]"
  assert_equal "$(jq -r .status.dr_open <<<"$output")" true
}
