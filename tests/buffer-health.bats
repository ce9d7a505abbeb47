#!/usr/bin/env bats
# buffer uses its output drive's health (issue 26 §5): to a drive that
# reports its capacity (a .tap with one, tapekit's rmt in front of one, a
# local st drive) --interval, --progress and --json show how full the tape
# is and the time to its end at the current rate, beside the input's ETA;
# at the end the summary names the TapeAlert flags the drive had raised
# before the run and raised during it. A run that reports nothing asks the
# drive nothing, as 1.19. Outputs that are no drive (files, pipes, other
# rmt servers) show nothing of it and are asked nothing that could upset
# them.
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  unset TAPE RSH_STANDIN_SERVER
  forget_fake_drive
  export RSH=$BATS_TEST_DIRNAME/rsh-standin
  # 6 MiB that takes about 2 s at -u 5000 (16 KiB blocks): several intervals.
  head -c 6m /dev/zero | tr '\0' 'x' >in
}

# The interval objects of a --json run's stderr (in the file $1).
intervals() { jq -c 'select(.event == "interval")' "$1"; }

# No interval object of the stderr file $1 has a tape field.
no_tape_fields() {
  intervals "$1" | jq -e -s 'map(has("tape_used_percent") or has("tape_end_s") or has("tape_maximum_bytes")) | any | not' >/dev/null ||
    fail "tape fields: $(cat "$1")"
}

# Each interval object's tape fields agree with its own counts: what went
# out since the start came off the remaining capacity (within the MiB the
# drive reports in and the image's record headers), the percentage is the
# used part, and the time to the end is the remaining bytes at the period's
# rate. $1: the stderr file; $2: the capacity at the start, in bytes.
assert_tape_fields_consistent() {
  local lines
  lines=$(intervals "$1" | jq -c 'select(.rate_out > 0)')
  [ -n "$lines" ] || fail "no interval with output: $(cat "$1")"
  jq -e --argjson start "$2" '
    (.tape_maximum_bytes == 8388608)
    and ((($start - .bytes_out) - .tape_remaining_bytes | fabs) <= 1048576)
    and (((100 * (.tape_maximum_bytes - .tape_remaining_bytes) / .tape_maximum_bytes) - .tape_used_percent | fabs) <= 0.1)
    and (((.tape_remaining_bytes / .rate_out) - .tape_end_s | fabs) <= 0.1)' <<<"$lines" >/dev/null ||
    fail "tape fields disagree with the counts: $lines"
}

@test "buffer-health: --json intervals to a .tap with a capacity say how full it is and when it ends" {
  "$MT" -f t.tap vt-create 8m
  "$BUFFER" -s 16k -u 5000 --interval 0.3 --json -i in -o t.tap 2>err
  assert_tape_fields_consistent err 8388608
  # The input's ETA is still there, beside the tape's end.
  intervals err | jq -e 'select(.rate_out > 0) | has("eta_s")' >/dev/null
}

@test "buffer-health: --interval lines name the tape's fill and the time to its end before the ETA" {
  "$MT" -f t.tap vt-create 8m
  run -0 --separate-stderr "$BUFFER" -s 16k -u 5000 --interval 0.3 -i in -o t.tap
  local line
  line=$(grep -E -m1 'out [1-9]' <<<"$stderr") || fail "no interval line with output: $stderr"
  assert_regex "$line" '  tape [0-9]+% full, [0-9]+:[0-9]{2}:[0-9]{2} to its end  ETA [0-9]+:'
  # The fill grows with what went out.
  local first last
  first=$(grep -oE 'tape [0-9]+%' <<<"$stderr" | head -1 | tr -dc 0-9)
  last=$(grep -oE 'tape [0-9]+%' <<<"$stderr" | tail -1 | tr -dc 0-9)
  [ "$last" -gt "$first" ] || fail "the tape's fill did not grow: $stderr"
}

@test "buffer-health: outputs that are no drive get no tape fields, and an image without a limit none either" {
  "$BUFFER" -s 16k -u 5000 --interval 0.3 --json -i in -o out 2>err
  [ -n "$(intervals err)" ] || fail "no interval: $(cat err)"
  no_tape_fields err
  run -1 grep tapealert err
  "$MT" -f u.tap vt-create 0
  "$BUFFER" -s 16k -u 5000 --interval 0.3 --json -i in -o u.tap 2>err
  [ -n "$(intervals err)" ] || fail "no interval: $(cat err)"
  no_tape_fields err
  # The drive answers for its TapeAlert page: none raised.
  jq -e 'select(.event == "summary") | .tapealert == {"before": [], "during": []}' err
}

# The --next-volume command that moves the full t.tap aside as volN.tap
# and makes a fresh t.tap of capacity $1 for the next volume, and, when
# that is volume $2, raises flag $3 on it: a drive that raises a flag while
# the run goes on.
next_image() {
  echo 'n=$((BUFFER_VOLUME - 1)); mv t.tap vol$n.tap && mv t.tap.state vol$n.tap.state &&' \
    "mt -f t.tap vt-create $1 && { [ \$BUFFER_VOLUME != ${2:-0} ] || mt -f t.tap vt-alert ${3:-0}; }"
}

@test "buffer-health: the summary names the flags raised before the run and those raised during it" {
  # 6 MiB onto 5 MiB, then an image that comes with flag 3.
  "$MT" -f t.tap vt-create 5m
  "$MT" -f t.tap vt-alert 20
  run -0 --separate-stderr "$BUFFER" -s 16k --interval 60 -i in -o t.tap --next-volume "$(next_image 8m 2 3)"
  grep -qx 'buffer: the drive asks for cleaning: before the run the drive had raised TapeAlert 20, Cleaning required (Critical)' <<<"$stderr" ||
    fail "no line for flag 20: $stderr"
  grep -qx 'buffer: during the run the drive raised TapeAlert 3, Hard error (Warning)' <<<"$stderr" ||
    fail "no line for flag 3: $stderr"
  # Reading the flags cleared them, as SSC says: the next run finds none.
  "$MT" -f t.tap rewind
  head -c 1m in >small
  run -0 --separate-stderr "$BUFFER" -s 16k --interval 60 -i small -o t.tap
  run -1 grep TapeAlert <<<"$stderr"
}

@test "buffer-health: a volume's flags are read before it is changed, so a clean run still names them" {
  # Volume 2 comes with flag 3 and is swapped, full, for a fresh image that
  # has none: only a read before volume 2's close sees it.
  "$MT" -f t.tap vt-create 2m
  run -0 --separate-stderr "$BUFFER" -s 16k --json -i in -o t.tap --next-volume \
    "$(next_image '$([ $BUFFER_VOLUME = 2 ] && echo 2m || echo 8m)' 2 3)"
  jq -e -s 'map(select(.event == "summary"))[0] | .volume == 3 and .tapealert ==
    {"before": [], "during": [{"flag": 3, "name": "Hard error", "severity": "Warning"}]}' <<<"$stderr" ||
    fail "summary: $stderr"
}

@test "buffer-health: --json's summary lists the flags as objects" {
  "$MT" -f t.tap vt-create 5m
  "$MT" -f t.tap vt-alert 21
  run -0 --separate-stderr "$BUFFER" -s 16k --json -i in -o t.tap --next-volume "$(next_image 8m 2 3)"
  jq -e -s 'map(select(.event == "summary"))[0].tapealert ==
    {"before": [{"flag": 21, "name": "Cleaning requested", "severity": "Warning"}],
     "during": [{"flag": 3, "name": "Hard error", "severity": "Warning"}]}' <<<"$stderr" ||
    fail "summary: $stderr"
}

@test "buffer-health: without a report asked for, buffer is 1.19: it says nothing and leaves the flags to tapeinfo" {
  "$MT" -f t.tap vt-create 8m
  "$MT" -f t.tap vt-alert 20
  run -0 --separate-stderr "$BUFFER" -s 16k -i in -o t.tap
  assert_equal "$stderr" ""
  # Not read, so not cleared: the next reader of the page finds the flag.
  run -0 "$MT" -f t.tap tapealert
  assert_output "TapeAlert 20: Cleaning required (Critical)"
  "$MT" -f t.tap rewind
  cmp in <("$BUFFER" -s 16k -i t.tap)
}

@test "buffer-health: through tapekit's rmt the remote drive's capacity and flags are shown; through rmt-tar nothing is asked" {
  "$MT" -f t.tap vt-create 8m
  "$MT" -f t.tap vt-alert 20
  "$BUFFER" -s 16k -u 5000 --interval 0.3 --json -i in -o "localhost:$PWD/t.tap" 2>err
  # The capacity is sampled with no write in flight (at the start): the
  # fields follow the bytes sent since.
  assert_tape_fields_consistent err 8388608
  jq -e 'select(.event == "summary") | .tapealert.before == [{"flag": 20, "name": "Cleaning required", "severity": "Critical"}]' err
  "$MT" -f t.tap rewind
  cmp in <("$BUFFER" -s 16k -i "localhost:$PWD/t.tap")
  # Parallel streams: the questions go down one of them, in turn.
  "$MT" -f t.tap rewind
  "$MT" -f t.tap vt-alert 21
  timeout 120 "$BUFFER" -s 16k --streams 3 --json -i in -o "localhost:$PWD/t.tap" 2>err
  jq -e 'select(.event == "summary") | .tapealert.before[0].flag == 21' err
  "$MT" -f t.tap rewind
  cmp in <("$BUFFER" -s 16k -i "localhost:$PWD/t.tap")
  # GNU tar's and dump's rmt: the run is as before, and no health request
  # reached them (what they were sent is logged on its way).
  local server
  for server in /usr/sbin/rmt-tar /usr/sbin/rmt-dump; do
    printf '#!/bin/sh\ntee -a "%s/requests.log" | exec %s\n' "$PWD" "$server" >server
    chmod +x server
    : >requests.log
    RSH_STANDIN_SERVER=$PWD/server run -0 --separate-stderr "$BUFFER" -s 16k --interval 60 --json \
      -i in -o "localhost:$PWD/plain"
    cmp in plain
    run -1 grep -c 'tape_used\|tapealert' <<<"$stderr"
    run -1 grep -c 'i29811' requests.log
  done
}

@test "buffer-health: a local st drive is asked through SG_IO: fill, time to the end, and its flags" {
  FAKE_ST_ALERTS=20 FAKE_ST_CAPACITY=100:400 LD_PRELOAD=$FAKE_ST \
    "$BUFFER" -s 16k -u 5000 --interval 0.3 --json -i in -o /dev/zero 2>err
  # 100 of 400 MiB left at the start: 75 % and more used.
  local line
  line=$(intervals err | jq -c 'select(.rate_out > 0)' | head -1)
  [ -n "$line" ] || fail "no interval with output: $(cat err)"
  jq -e '.tape_maximum_bytes == 419430400 and .tape_used_percent >= 75 and .tape_used_percent < 77
         and (.tape_remaining_bytes == 104857600 - .bytes_out)' <<<"$line" || fail "$line"
  jq -e 'select(.event == "summary") | .tapealert.before[0].flag == 20' err
}

@test "buffer-health: --progress on a terminal keeps the tape's fill and time to its end on its status line" {
  "$MT" -f t.tap vt-create 8m
  # script(1) gives buffer a terminal for its stderr; the input lasts about 2 s.
  run bash -c "script -qec '\"$BUFFER\" -s 16k -u 5000 --progress -i in -o t.tap' /dev/null | tr '\r' '\n'"
  assert_success
  assert_line --regexp '  fill +[0-9]+%  0:00:0[0-9]  tape file 0  tape [0-9]+% full, [0-9]+:[0-9]{2}:[0-9]{2} to its end  ETA [0-9:]+.\[K$'
}
