#!/usr/bin/env bats
# Shows buffer's extensions for long, shared runs: reading a multi-volume
# set as one input (-i with --next-volume), the --timeout watchdog on a hung
# input or output, and the --input-rate/--output-rate limits. No test
# measures time: the rates themselves are shown by bench/bench-buffer.
bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
  export DATA=$BATS_FILE_TMPDIR/data
  random_mib 5 11 >"$DATA"
}

# Everything here is a tapekit extension: skipped against buffer 1.19
# (TK_ORIGINAL=1 BUFFER=/usr/bin/buffer, as in buffer.bats).
setup() {
  tk_trace_test_lines_only
  [ -z "${TK_ORIGINAL:-}" ] || skip "tapekit extension"
}

# The buffer processes whose command line names this test's directory:
# after a run, none may be left.
leftovers() { pgrep -af "$BUFFER .*$BATS_TEST_TMPDIR" || true; }

# Writes $1 bytes of the data across 1m virtual tapes vol1.tap, vol2.tap,
# ... with --next-volume, each rewound; prints how many.
write_volumes() {
  head -c "$1" "$DATA" >in
  "$MT" -f v.tap vt-create 1m
  "$BUFFER" -s 10k -i in -o v.tap --next-volume \
    'v=vol$((BUFFER_VOLUME - 1)).tap; mv v.tap $v; mv v.tap.state $v.state; mt -f v.tap vt-create 1m' \
    2>/dev/null || return 1
  local n
  n=$(find . -maxdepth 1 -name 'vol*.tap' | wc -l)
  mv v.tap "vol$((n + 1)).tap"
  mv v.tap.state "vol$((n + 1)).tap.state"
  for ((i = 1; i <= n + 1; i++)); do "$MT" -f "vol$i.tap" rewind; done
  echo $((n + 1))
}

# Loads volume N into the drive r.tap, as an operator would; exits 0 with
# nothing loaded when there is no volume N (the drive stays at its end).
LOAD='v=vol$BUFFER_VOLUME.tap; [ -e $v ] || exit 0; mv $v r.tap; mv $v.state r.tap.state'

@test "buffer: -i with --next-volume reads a multi-volume set back as one stream" {
  cd "$BATS_TEST_TMPDIR"
  local volumes
  volumes=$(write_volumes 3000000)
  [ "$volumes" -ge 3 ] || fail "expected several volumes, got $volumes"
  mv vol1.tap r.tap
  mv vol1.tap.state r.tap.state
  run --separate-stderr bash -c '"$0" -s 10k -i r.tap --next-volume "$1" | sha256sum | cut -d" " -f1' \
    "$BUFFER" "$LOAD"
  assert_success
  assert_output "$(sha in)"
  assert_equal "${stderr_lines[0]}" "buffer (reader): end of data on r.tap after 921600 bytes; running the volume change command"
  assert_equal "${stderr_lines[1]}" "buffer (reader): reading volume 2"
  # After the last volume the command loads nothing: an empty volume ends it.
  assert_equal "${stderr_lines[-1]}" "buffer (reader): volume $((volumes + 1)) of r.tap has no data: end of input"
}

@test "buffer: an input volume ends at its filemark; the command gets BUFFER_VOLUME, BUFFER_BYTES and BUFFER_INPUT" {
  cd "$BATS_TEST_TMPDIR"
  # One tape, two files: each is a volume to read.
  head -c 30000 "$DATA" | "$BUFFER" -s 10k -o r.tap
  head -c 50000 "$DATA" | tail -c 20000 | "$BUFFER" -s 10k -o r.tap
  "$MT" -f r.tap rewind
  run --separate-stderr bash -c '"$0" -s 10k -i r.tap --next-volume "echo \$BUFFER_VOLUME \$BUFFER_BYTES \$BUFFER_INPUT >>seen" | sha256sum | cut -d" " -f1' "$BUFFER"
  assert_success
  assert_output "$(head -c 50000 "$DATA" | sha)"
  assert_equal "$(cat seen)" "2 30000 r.tap
3 50000 r.tap"
}

@test "buffer: a remote input read in volumes is reopened ready to read, each volume whole" {
  cd "$BATS_TEST_TMPDIR"
  # One remote tape, two files: each is a volume; the reopened connection
  # reads ahead as the first did (never past the filemark).
  head -c 30000 "$DATA" | "$BUFFER" -s 10k -o r.tap
  head -c 50000 "$DATA" | tail -c 20000 | "$BUFFER" -s 10k -o r.tap
  "$MT" -f r.tap rewind
  run --separate-stderr env RSH="$BATS_TEST_DIRNAME/rsh-standin" \
    bash -c '"$0" -s 10k -i "localhost:$PWD/r.tap" --next-volume "echo \$BUFFER_BYTES >>seen" | sha256sum | cut -d" " -f1' "$BUFFER"
  assert_success
  assert_output "$(head -c 50000 "$DATA" | sha)"
  assert_equal "$(cat seen)" "30000
50000"
}

@test "buffer: a failing input volume change writes out what was read, then exits 254 and says why" {
  cd "$BATS_TEST_TMPDIR"
  head -c 30000 "$DATA" >in
  run --separate-stderr bash -c '"$0" -s 4k -i in --next-volume "exit 3" >out' "$BUFFER"
  assert_equal "$status" 254
  assert_equal "${stderr_lines[1]}" "buffer (reader): volume change command failed (exit status 3); 30000 bytes were read"
  assert_equal "$(sha out)" "$(sha in)"
}

@test "buffer: an input volume that cannot be opened is named as the first open would be, after what was read" {
  cd "$BATS_TEST_TMPDIR"
  head -c 30000 "$DATA" >in
  run --separate-stderr bash -c '"$0" -s 4k -i in --next-volume "mv in in.1" >out' "$BUFFER"
  assert_equal "$status" 254
  assert_equal "${stderr_lines[1]}" "buffer (reader): cannot open volume 2; 30000 bytes were read"
  assert_equal "${stderr_lines[2]}" "buffer: cannot open input file: No such file or directory"
  assert_equal "${stderr_lines[3]}" "filename: in"
  assert_equal "$(sha out)" "$(sha in.1)"
}

@test "buffer: an output volume that cannot be opened is named as the first open would be, after what was written" {
  cd "$BATS_TEST_TMPDIR"
  head -c 300000 "$DATA" >in
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=100000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i in -o "$PWD/vol" \
    --next-volume 'mv vol vol.1; mkdir vol'
  assert_equal "$status" 254
  assert_equal "${stderr_lines[1]}" "buffer (writer): cannot open volume 2; 100000 bytes were written"
  assert_equal "${stderr_lines[2]}" "buffer: cannot open output file: Is a directory"
  assert_equal "${stderr_lines[3]}" "filename: $PWD/vol"
  assert_equal "$(sha vol.1)" "$(head -c 100000 in | sha)"
}

@test "buffer: a stop during an output volume change still says what reached each volume" {
  cd "$BATS_TEST_TMPDIR"
  head -c 300000 "$DATA" >in
  # The command asks the writer (its parent) to abandon the queue, as the
  # reader does at a second signal, and succeeds: the next volume is never
  # opened, and the stop must not be silent.
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=100000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i in -o "$PWD/vol" \
    --next-volume 'kill -USR1 $PPID'
  assert_equal "$status" 254
  assert_equal "${stderr_lines[1]}" "buffer (writer): told by the reader to abandon the queue; 100000 bytes reached $PWD/vol (volume 1: 100000, volume 2: 0), 200000 queued bytes were not written"
  assert_equal "$(sha vol)" "$(head -c 100000 in | sha)"
}

@test "buffer: --next-volume with neither -o nor -i is refused before anything starts" {
  run --separate-stderr "$BUFFER" --next-volume true </dev/null
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "buffer: --next-volume needs -o, or -i to read volumes: standard output and input cannot be reopened"
}

@test "buffer: --timeout ends a run whose consumer stalled, naming the output, 254, nothing left" {
  cd "$BATS_TEST_TMPDIR"
  mkfifo sink
  # Held open for reading and never read: the pipe fills, then writes block.
  exec 8<>sink
  run --separate-stderr timeout 30 "$BUFFER" --timeout 1 -s 64k -i "$DATA" -o "$BATS_TEST_TMPDIR/sink"
  exec 8>&-
  assert_equal "$status" 254
  assert_regex "$stderr" "^buffer \\(writer\\): the output hung: no block reached $BATS_TEST_TMPDIR/sink in 1 second \\(--timeout\\); [0-9]+ bytes reached $BATS_TEST_TMPDIR/sink, [0-9]+ queued bytes were not written$"
  assert_equal "$(leftovers)" ""
}

@test "buffer: --timeout ends a run whose consumer stalled in the middle of a block" {
  cd "$BATS_TEST_TMPDIR"
  mkfifo sink
  exec 8<>sink
  # 10000-byte blocks fill no pipe exactly: the last write that blocks has
  # sent part of its block, so the watchdog's signal makes write(2) return
  # that part rather than fail with EINTR.
  run --separate-stderr timeout 30 "$BUFFER" --timeout 1 -s 10000 -i "$DATA" -o "$BATS_TEST_TMPDIR/sink"
  exec 8>&-
  assert_equal "$status" 254
  assert_regex "$stderr" "^buffer \\(writer\\): the output hung: no block reached $BATS_TEST_TMPDIR/sink in 1 second \\(--timeout\\); [0-9]+ bytes reached $BATS_TEST_TMPDIR/sink, [0-9]+ queued bytes were not written$"
  assert_equal "$(leftovers)" ""
}

@test "buffer: --timeout ends a run whose producer stalled, naming the input; what was read is written out" {
  cd "$BATS_TEST_TMPDIR"
  mkfifo source
  exec 7<>source
  head -c 50000 "$DATA" >&7
  run --separate-stderr timeout 30 "$BUFFER" --timeout 1 -s 64k -i "$BATS_TEST_TMPDIR/source" -o out
  exec 7>&-
  assert_equal "$status" 254
  assert_equal "$stderr" "buffer (reader): the input hung: no data came from $BATS_TEST_TMPDIR/source in 1 second (--timeout); what was read is written out"
  assert_equal "$(sha out)" "$(head -c 50000 "$DATA" | sha)"
  assert_equal "$(leftovers)" ""
}

@test "buffer: --timeout leaves a slow but steady consumer alone" {
  # The writer waits on the pipe for about two seconds in all, a block
  # at a time; no single write takes the timeout.
  run --separate-stderr timeout 60 bash -c '"$0" --timeout 1 -s 16k -i "$1" | pacer --chunk 16k --rate 2m | sha256sum | cut -d" " -f1' \
    "$BUFFER" "$DATA"
  assert_success
  assert_output "$(sha "$DATA")"
  assert_equal "$stderr" ""
}

@test "buffer: --timeout leaves a slow but steady producer alone" {
  run --separate-stderr timeout 60 bash -c 'head -c 2000000 "$1" | pacer --chunk 4k --rate 1m | "$0" --timeout 1 -s 16k | sha256sum | cut -d" " -f1' \
    "$BUFFER" "$DATA"
  assert_success
  assert_output "$(head -c 2000000 "$DATA" | sha)"
  assert_equal "$stderr" ""
}

@test "buffer: bogus --timeout, --input-rate and --output-rate values are refused, naming the option" {
  local row option value message
  while IFS='|' read -r option value message; do
    run --separate-stderr "$BUFFER" "$option" "$value" </dev/null
    assert_equal "$status" 255
    assert_equal "$stderr" "buffer: invalid $option '$value': $message"
  done <<'ROWS'
--input-rate|0|bytes per second, at least 1
--input-rate|abc|not a number
--input-rate|1.5m|a size is a whole number, without a fraction: 1.5m is 1572864
--output-rate|-1|not a number
--output-rate|10x|unknown unit (use b, k, m, g or t)
--output-rate|0|bytes per second, at least 1
--timeout|-1|seconds from 0 to 86400
--timeout|90000|seconds from 0 to 86400
--timeout|1.5|not a whole number
ROWS
}

@test "buffer: data passes intact under input and output rate limits, from a pipe and from a tape" {
  cd "$BATS_TEST_TMPDIR"
  head -c 1000000 "$DATA" >in
  run bash -c '"$0" -s 10k --input-rate 8m --output-rate 6m <in | sha256sum | cut -d" " -f1' "$BUFFER"
  assert_success
  assert_output "$(sha in)"
  "$BUFFER" -s 3000 -i in -o t.tap
  "$MT" -f t.tap rewind
  run bash -c '"$0" -s 10k --input-rate 8m -i t.tap | sha256sum | cut -d" " -f1' "$BUFFER"
  assert_success
  assert_output "$(sha in)"
}
