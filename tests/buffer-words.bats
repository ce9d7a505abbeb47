#!/usr/bin/env bats
# Shows that buffer says what happened and what to do (issue 11): records
# larger than the reader, options that point at the one to change, stops that
# say why, status lines in one unit family with both rates and an ETA, --json,
# and the --high-water/--low-water pair seen in the order of the writes.
# Left out of the sanitizer pass (suite time): the words are formatting; the
# ring, the writer and the watermarks run under the sanitizers in
# buffer.bats, buffer-outputs.bats and buffer-volumes.bats.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0
load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR"
}

@test "buffer: a tape record larger than the reader names its size and the -s (and -m) that reads it" {
  head -c 4000000 /dev/zero | "$BUFFER" -s 2000000 -m 5m -o big.tap
  "$MT" -f big.tap rewind
  run --separate-stderr "$BUFFER" -s 10k -i big.tap
  assert_equal "$status" 254
  assert_equal "${stderr_lines[0]}" "buffer (reader): failed to read input: Cannot allocate memory"
  assert_equal "${stderr_lines[1]}" "buffer (reader): read big.tap (2000000-byte record, 1048576-byte buffer): record larger than 1048576 bytes (the larger of -s and 1 MiB); -s 2000000 -m 2032800 (or more) reads it"
  "$MT" -f big.tap rewind
  run --separate-stderr "$BUFFER" -s 1500000 -m 16m -i big.tap
  assert_equal "$status" 254
  assert_equal "${stderr_lines[1]}" "buffer (reader): read big.tap (2000000-byte record, 1500000-byte buffer): record larger than -s 1500000 bytes; -s 2000000 reads it"
  # What it says works.
  "$MT" -f big.tap rewind
  run bash -c '"$0" -s 2000000 -m 2032800 -i big.tap 2>/dev/null | wc -c' "$BUFFER"
  assert_success
  assert_output 4000000
}

@test "buffer: a block too big for -m keeps 1.19's line, then names -m and the value that fits" {
  run --separate-stderr "$BUFFER" -s 2m </dev/null
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "Cannot handle blocks that big, aborting!"
  assert_equal "${stderr_lines[1]}" "buffer: one block of -s 2097152 needs -m 2129952 or more (-m is 1048576 by default)"
  run --separate-stderr "$BUFFER" -m 100k -s 100k </dev/null
  assert_equal "${stderr_lines[1]}" "buffer: one block of -s 102400 needs -m 135200 or more (-m is 102400)"
  run --separate-stderr bash -c 'echo hi | "$0" -s 2m -m 2129952' "$BUFFER"
  assert_success
  assert_output hi
}

@test "buffer: a queue larger than memory keeps 1.19's line, then says how big and which option to make smaller" {
  run --separate-stderr "$BUFFER" -m 1000g </dev/null
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "Cannot handle that many blocks, aborting!"
  assert_regex "${stderr_lines[1]}" "^buffer: a queue of 1000\.0 GiB \([0-9]+ blocks of 10240 bytes\) is more than this machine's [0-9.]+ [KMGT]iB of memory: make -m smaller$"
  run --separate-stderr "$BUFFER" -s 1m -b 16777216 </dev/null
  assert_equal "$status" 255
  assert_regex "${stderr_lines[1]}" "make -b smaller$"
}

@test "buffer: --interval 0 is refused with a message that does not offer 0" {
  run --separate-stderr "$BUFFER" --interval 0 </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: invalid --interval '0': seconds from 0.1 to 86400 (0.5 is half a second)"
}

@test "buffer: an --interval shorter than the lines' tenth of a second is refused, not printed in a loop" {
  run --separate-stderr timeout 10 "$BUFFER" --interval 1e-300 </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: invalid --interval '1e-300': seconds from 0.1 to 86400 (0.5 is half a second)"
  run --separate-stderr timeout 10 "$BUFFER" --interval 0.1 </dev/null
  assert_success
}

@test "buffer: a failed host:path open says the error once, and offers --force-local only where a local file could be" {
  run --separate-stderr bash -c 'echo hi | RSH=/bin/false "$0" -o nohost:/no/such/dir/x' "$BUFFER"
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "buffer: cannot open output file: Input/output error"
  assert_equal "${stderr_lines[1]}" "filename: nohost:/no/such/dir/x"
  assert_equal "${stderr_lines[2]}" "buffer: open nohost:/no/such/dir/x: connection lost; the remote shell /bin/false for nohost ended with exit status 1"
  assert_equal "${#stderr_lines[@]}" 3
}

@test "buffer: a remote path the rmt cannot open gets 1.19's two lines and no third that repeats them" {
  run --separate-stderr bash -c 'echo hi | RSH="$1" "$0" -o tapehost:/no/such/dir/x' "$BUFFER" "$BATS_TEST_DIRNAME/rsh-standin"
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: cannot open output file: No such file or directory"$'\n'"filename: tapehost:/no/such/dir/x"
}

@test "buffer: a remote input given after -o that cannot be opened gets 1.19's two lines, the output closed unwritten" {
  # The output is opened first, as 1.19 opened them in this order.
  echo kept >out
  run --separate-stderr env RSH="$BATS_TEST_DIRNAME/rsh-standin" "$BUFFER" -o out -i tapehost:/no/such/dir/x
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: cannot open input file: No such file or directory"$'\n'"filename: tapehost:/no/such/dir/x"
  assert_equal "$(stat -c %s out)" 0
}

@test "buffer: underruns are not counted while the writer waits for -p, and the summary explains them" {
  run --separate-stderr bash -c "head -c 1m /dev/zero | pacer --chunk 64k --burst 256k --pause 100 | \"$BUFFER\" -s 64k -p 50 --progress >/dev/null"
  assert_success
  assert_regex "$stderr" ', 0 writer underruns \(waits of the output on an empty queue\), '
}

@test "buffer: --interval gives an ETA for a regular-file input and for --size" {
  head -c 1m /dev/zero >in
  run --separate-stderr "$BUFFER" -s 16k -u 20000 --interval 0.2 -i in -o out
  assert_success
  assert_regex "${stderr_lines[0]}" '  ETA [0-9]+:[0-9]{2}:[0-9]{2}$'
  run --separate-stderr bash -c 'cat in | "$0" -s 16k -u 20000 --interval 0.2 --size 1m >out' "$BUFFER"
  assert_success
  assert_regex "${stderr_lines[0]}" '  ETA [0-9]+:[0-9]{2}:[0-9]{2}$'
  # An input given after -o is opened once the output is: its length counts.
  run --separate-stderr "$BUFFER" -s 16k -u 20000 --interval 0.2 -o out -i in
  assert_success
  assert_regex "${stderr_lines[0]}" '  ETA [0-9]+:[0-9]{2}:[0-9]{2}$'
  run --separate-stderr bash -c 'cat in | "$0" -s 16k -u 20000 --interval 0.2 >out' "$BUFFER"
  assert_success
  refute_regex "${stderr_lines[0]}" 'ETA'
}

@test "buffer: --size takes a whole tape's length, beyond 1 TiB, and refuses what no input is" {
  run --separate-stderr bash -c 'echo hi | "$0" --size 18t --json' "$BUFFER"
  assert_success
  assert_output hi
  while IFS='|' read -r value expected; do
    run --separate-stderr "$BUFFER" --size "$value" </dev/null
    assert_equal "$status" 255
    assert_equal "$stderr" "$expected"
  done <<'EOF_CASES'
-1|buffer: invalid --size '-1': negative
9999999t|buffer: invalid --size '9999999t': too large
1.5t|buffer: invalid --size '1.5t': a size is a whole number, without a fraction: 1.5t is 1649267441664
EOF_CASES
}

@test "buffer: --json makes each interval line and the summary one JSON object" {
  head -c 1m /dev/zero >in
  run --separate-stderr "$BUFFER" -s 16k -u 20000 --interval 0.2 --json -i in -o out
  assert_success
  [ "${#stderr_lines[@]}" -ge 2 ] || fail "no interval line"
  local line
  for line in "${stderr_lines[@]}"; do
    jq -e 'type == "object"' <<<"$line" >/dev/null || fail "not one JSON object: $line"
  done
  jq -e '.event == "interval" and .volume == 1 and .total_bytes == 1048576 and (.rate_in | type) == "number"
         and (.rate_out | type) == "number" and (.fill_percent | type) == "number" and has("eta_s")
         and (.underruns | type) == "number"' <<<"${stderr_lines[0]}" >/dev/null ||
    fail "interval object: ${stderr_lines[0]}"
  jq -e '.event == "summary" and .bytes_in == 1048576 and .bytes_out == 1048576 and .volume == 1
         and (.rate_out | type) == "number" and (has("digest") | not)' <<<"${stderr_lines[-1]}" >/dev/null ||
    fail "summary object: ${stderr_lines[-1]}"
  # Without --interval, --json alone gives the summary object.
  run --separate-stderr bash -c 'echo hi | "$0" --json >/dev/null' "$BUFFER"
  assert_success
  assert_equal "${#stderr_lines[@]}" 1
  jq -e '.event == "summary" and .bytes_out == 3' <<<"$stderr" >/dev/null || fail "$stderr"
}

@test "buffer: --high-water and --low-water are checked and exclusive with -p" {
  while IFS='|' read -r args expected; do
    run --separate-stderr "$BUFFER" $args </dev/null
    assert_equal "$status" 255
    assert_equal "$stderr" "$expected"
  done <<'EOF_CASES'
--high-water 0|buffer: invalid --high-water '0': a percentage of the queue, 1 to 100
--low-water 100|buffer: invalid --low-water '100': a percentage of the queue, 0 to 99
--high-water 40 --low-water 50|buffer: --low-water 50 must be below --high-water 40
--high-water 30 --low-water 30|buffer: --low-water 30 must be below --high-water 30
-p 50 --high-water 80|buffer: -p and --high-water/--low-water are two ways to batch writes; give one
EOF_CASES
}

# Runs buffer under strace with a producer that sends one 16 KiB block every
# 25 ms and prints, in the order strace logged them, R for each block the
# reader read, W for each block the writer wrote (only they move 16384
# bytes; a call cut by another process's shows on its "resumed" line), and
# Z where the writer went to sleep on the ring's futex to wait for blocks.
trace_reads_and_writes() {
  head -c 640k /dev/zero >in
  pacer --chunk 16k --rate 640k <in |
    ASAN_OPTIONS=detect_leaks=0 strace -f -qq -s 0 -e trace=read,write,futex -e signal=none -o trace \
      "$BUFFER" -s 16k -b 8 "$@" >out
  awk '/= 16384$/ && /read/ {printf "R"}
       /= 16384$/ && /write/ {writer = $1; printf "W"}
       /futex\(/ && /FUTEX_WAIT/ && $1 == writer {printf "Z"}' trace
}

# Replays an R/W/Z order and prints the first write the marks forbid: one
# while the queue holds no more than LOW blocks, or one after the writer
# went to wait (at the start, or a Z) before the queue was back at HIGH.
# strace logs a call when it returns, before the process acts on it, so the
# queue counted from the log is at least what the writer saw when it
# decided: a write the count forbids was truly forbidden. Whether the writer
# stopped at the low mark is taken from its sleep, not from the count,
# which a read logged just after a write may have raised before the writer
# looked. Once the whole input is read, the rest drains.
first_write_against_marks() {
  awk -v high="$1" -v low="$2" -v total=40 '{
    waiting = 1
    for (i = 1; i <= length($0); i++) {
      c = substr($0, i, 1)
      if (c == "R") { read++; continue }
      if (c == "Z") { waiting = 1; continue }
      fill = read - written
      if (read < total && ((waiting && fill < high) || fill <= low)) { print i ": " substr($0, 1, i); exit }
      written++
      waiting = 0
    }
  }' <<<"$3"
}

@test "buffer: with --high-water 75 --low-water 25 the writer starts at 6 of 8 blocks and writes down to 2, in bursts" {
  local order
  order=$(trace_reads_and_writes --high-water 75 --low-water 25)
  assert_equal "$(stat -c %s out)" 655360
  assert_equal "${#order}" "$((80 + $(tr -cd Z <<<"$order" | wc -c)))"
  assert_equal "$(tr -cd W <<<"$order" | wc -c)" 40
  # It went back to sleep after a burst. How many bursts there are depends
  # on how the scheduler spaced the producer's blocks (on a loaded machine
  # two bursts can merge); that each one kept the marks is checked below.
  [ "$(tr -cd Z <<<"$order" | wc -c)" -ge 2 ] || fail "the writer never waited: $order"
  assert_equal "$(first_write_against_marks 6 2 "$order")" ""
  # Without the pair the writer follows the reader block by block, which the
  # marks forbid.
  order=$(trace_reads_and_writes)
  assert_equal "$(tr -cd W <<<"$order" | wc -c)" 40
  [ -n "$(first_write_against_marks 6 2 "$order")" ] || fail "the default writer kept the marks: $order"
}
