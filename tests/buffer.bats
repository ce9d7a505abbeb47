#!/usr/bin/env bats
# Shows that buffer is a drop-in for buffer 1.19 (same options, reports, exit
# statuses, byte-identical data) and what it adds: no leaks after kill -9,
# draining on signals, volume changes on a full medium, non-blocking fds.
# The IPC checks look at the whole IPC namespace; run-suites gives this
# file one of its own, so that another suite's buffer 1.19 cannot show.
# run-suites: own IPC namespace
# run-suites: no leak check
# (options, reports, signals and exit statuses of short runs: a leak that
# grows with the data would be per block, and buffer's blocks are
# leak-checked in buffer-outputs, -volumes, -words, -record and -health.
# The exit check was a fifth of this file's sanitizer pass: 50 s of CPU,
# 39 s without.)
bats_require_minimum_version 1.5.0
load test_helper
load buffer_helper

setup_file() {
  export DATA=$BATS_FILE_TMPDIR/data
  random_mib "$TK_BIG_MB" 7 >"$DATA"
  export DATA_SHA
  DATA_SHA=$(sha "$DATA")
  head -c 3000000 "$DATA" >"$BATS_FILE_TMPDIR/small"
  export SMALL=$BATS_FILE_TMPDIR/small
}

# buffer OPTIONS < data | sha256: identical to the input.
assert_identity() {
  run --separate-stderr bash -c "\"$BUFFER\" $* <\"$DATA\" | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$DATA_SHA"
}

# Run the suite against the original with TK_ORIGINAL=1 BUFFER=/usr/bin/buffer:
# tests of what tapekit adds or fixes are skipped there.
tapekit_only() { [ -z "${TK_ORIGINAL:-}" ] || skip "tapekit extension or fix"; }

# Masks the rate field of -S records, which depends on timing.
mask_rates() { tr '\r' '\n' | sed -E 's/, +[0-9?]+K\/s/, RATEK\/s/'; }

# Kills process $1 and its children (a writer a test holds stopped) with
# SIGKILL after 30 s unless wait_buffer stops it first: a buffer that never
# finishes must fail the test, not hang it. Its sleep ends with it, and it
# holds none of bats' descriptors nor the test's FIFO (fd 7): a plain
# (sleep 30; kill ...) & left the sleep running once the subshell was
# killed, and bats waited for the last one before it ended the file.
start_watchdog() {
  local target=$1
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep 30 &
    sleeper=$!
    wait "$sleeper" && kill_tree "$target"
  ) </dev/null >/dev/null 2>&1 3>&- 7>&- &
  WATCHDOG_PID=$!
}

@test "buffer: default options pass the data through unchanged" {
  assert_identity ""
}

@test "buffer: 256k blocks pass the data through unchanged" {
  assert_identity -s 256k
}

@test "buffer: odd block size and few blocks pass the data through unchanged" {
  assert_identity -s 3000 -b 7
}

@test "buffer: 512k blocks in a 64m queue pass the data through unchanged" {
  assert_identity -s 512k -m 64m
}

@test "buffer: -p batching with small blocks passes the data through unchanged" {
  assert_identity -p 50 -s 4k -b 100
}

@test "buffer: a queue larger than 1.19 allowed (4096 blocks) passes the data unchanged" {
  tapekit_only
  assert_identity -s 1k -b 4096 -p 85
}

@test "buffer: -u 0 and -B on block-aligned data pass the data through unchanged" {
  tapekit_only
  assert_identity -u 0 -B -s 1m -m 8m
}

@test "buffer: -i and -o files give an identical copy" {
  run "$BUFFER" -s 32k -m 2m -i "$DATA" -o "$BATS_TEST_TMPDIR/copy"
  assert_success
  assert_equal "$(sha "$BATS_TEST_TMPDIR/copy")" "$DATA_SHA"
}

@test "buffer: between two pipes the data arrive unchanged" {
  run bash -c "cat \"$DATA\" | \"$BUFFER\" -s 256k -m 8m | cat | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$DATA_SHA"
}

@test "buffer: a bursty producer into a slow, stalling consumer loses nothing" {
  local mib=$(( TK_BIG_MB < 32 ? TK_BIG_MB : 32 ))
  run bash -c "head -c ${mib}m \"$DATA\" | pacer --chunk 1m --burst 8m --pause 100 |
    \"$BUFFER\" -s 64k -m 4m -p 75 | pacer --chunk 64k --rate 400m --burst 2m --pause 40 |
    sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$(head -c "${mib}m" "$DATA" | sha)"
}

@test "buffer: one-byte blocks pass data through unchanged" {
  run bash -c "head -c 20000 \"$DATA\" | \"$BUFFER\" -s 1 -b 10 | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$(head -c 20000 "$DATA" | sha)"
}

@test "buffer: every write is exactly one block, the last one short" {
  # One trace file a task (-ff): no call is cut in two by another's.
  run bash -c "cat \"$SMALL\" | ASAN_OPTIONS=detect_leaks=0 strace -ff -e trace=write -o \"$BATS_TEST_TMPDIR/trace\" \"$BUFFER\" -s 64k >/dev/null"
  assert_success
  run bash -c "cat \"$BATS_TEST_TMPDIR\"/trace.* | grep -E 'write\\(1,' | sed -E 's/.*= //' | sort | uniq -c | sort -rn"
  # 3000000 = 45 x 65536 + 50880
  assert_line --index 0 --regexp '^ +45 65536$'
  assert_line --index 1 --regexp '^ +1 50880$'
}

@test "buffer: -z is -s where it stands, so a later -s sets the block size and -m checks against it" {
  run bash -c "cat \"$SMALL\" | ASAN_OPTIONS=detect_leaks=0 strace -ff -e trace=write -o \"$BATS_TEST_TMPDIR/trace\" \"$BUFFER\" -z 10k -s 20k >/dev/null 2>/dev/null"
  assert_success
  run bash -c "cat \"$BATS_TEST_TMPDIR\"/trace.* | grep -E 'write\\(1,' | sed -E 's/.*= //' | sort | uniq -c | sort -rn"
  # 3000000 = 146 x 20480 + 9920
  assert_line --index 0 --regexp '^ +146 20480$'
  run --separate-stderr "$BUFFER" -z 100k -m 100k </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "max_shmem 102400 too low"
}

@test "buffer: -S and -t records equal buffer 1.19's for the same input" {
  local opts
  # -s 256k with 1.19's -m 1m is a short queue: the note on it goes to a
  # terminal only, never into the records a script parses.
  for opts in "-S 1m -t -s 256k" "-z 256k -s 256k -t" "-S 10k -t" "-z 100k -t" "-z 10k -s 20k -t" \
    "-z 10k -s 20k -S 5k -t" "-t" "-S 500 -t" "-S 64k -s 4k -b 9 -t"; do
    diff <(/usr/bin/buffer $opts <"$SMALL" 2>&1 >/dev/null | mask_rates) \
         <("$BUFFER" $opts <"$SMALL" 2>&1 >/dev/null | mask_rates) ||
      fail "reports differ for: $opts"
  done
}

# What buffer says on standard error when it is a terminal (script(1)
# gives the run one), its standard output thrown away.
stderr_on_terminal() {
  script -qec "echo hi | $BUFFER $* 2>&1 >/dev/null" /dev/null </dev/null | tr -d '\r'
}

@test "buffer: a queue of fewer than 8 blocks is named once on a terminal, with the -m that holds 32, and never elsewhere" {
  tapekit_only
  # buffer 1.19's default -m 1m holds three 256 KiB blocks.
  run stderr_on_terminal -s 256k
  assert_output "buffer: note: -m 1048576 (the default) holds a queue of only 3 blocks of 262144 bytes, too few to keep the output streaming when the input pauses; -m 9m holds 32"
  # Not a terminal (cron mail, a script reading -S or -z records): nothing.
  run --separate-stderr bash -c 'echo hi | "$0" -s 256k' "$BUFFER"
  assert_success
  assert_output hi
  assert_equal "$stderr" ""
  run --separate-stderr bash -c 'echo hi | "$0" -s 256k -z 256k' "$BUFFER"
  assert_equal "$(grep -c 'note:' <<<"$stderr")" 0
  # What it says holds 32 blocks (35: -d shows them), and draws no note.
  run stderr_on_terminal -s 256k -m 9m -d
  assert_equal "$(grep -c 'note:' <<<"$output")" 0
  grep -qx 'buffer: blocks = 35, blocksize = 262144, percent = 0' <<<"$output" || fail "$output"
  run stderr_on_terminal -s 1m -m 7m
  assert_output "buffer: note: -m 7340032 holds a queue of only 6 blocks of 1048576 bytes, too few to keep the output streaming when the input pauses; -m 33m holds 32"
  # Nine blocks (of 100 KiB in the default 1 MiB) are enough; so is -b,
  # which says how many outright.
  run stderr_on_terminal -s 100k
  assert_output ""
  run stderr_on_terminal -s 256k -b 3
  assert_output ""
  # Under --json it is a message object like any other line.
  run --separate-stderr bash -c 'echo hi | "$0" -s 256k --json >/dev/null' "$BUFFER"
  jq -e 'select(.event == "message") | .text | startswith("buffer: note: -m 1048576 (the default)")' <<<"${stderr_lines[0]}" >/dev/null ||
    fail "${stderr_lines[0]}"
}

@test "buffer: empty input reports zero with buffer 1.19's exact bytes" {
  run bash -c "\"$BUFFER\" -S 10k -t </dev/null 2>&1 >/dev/null | od -c"
  assert_success
  assert_output "$(printf '          0K,          0K/s\r\nKilobytes Out 0\n' | od -c)"
  assert_output "$(/usr/bin/buffer -S 10k -t </dev/null 2>&1 >/dev/null | od -c)"
}

@test "buffer: -t counts bytes even when the block size is not a multiple of 1K (1.19 printed 0)" {
  tapekit_only
  run --separate-stderr "$BUFFER" -s 1000 -t <"$SMALL"
  assert_success
  assert_equal "$stderr" "Kilobytes Out 2929"
}

@test "buffer: -B pads one byte to a whole 512-byte block of NULs" {
  printf 1 | "$BUFFER" -B -s 512 >"$BATS_TEST_TMPDIR/out"
  assert_equal "$(stat -c %s "$BATS_TEST_TMPDIR/out")" 512
  assert_equal "$(head -c 1 "$BATS_TEST_TMPDIR/out")" 1
  assert_equal "$(tail -c 511 "$BATS_TEST_TMPDIR/out" | tr -d '\0' | wc -c)" 0
}

@test "buffer: -B pads only the last block (10000 bytes -> 12288)" {
  run bash -c "head -c 10000 \"$DATA\" | \"$BUFFER\" -B -s 4096 | wc -c"
  assert_output 12288
  run bash -c "head -c 10000 \"$DATA\" | \"$BUFFER\" -B -s 4096 | head -c 10000 | cmp - <(head -c 10000 \"$DATA\") && \
    head -c 10000 \"$DATA\" | \"$BUFFER\" -B -s 4096 | tail -c 2288 | tr -d '\\0' | wc -c"
  assert_success
  assert_output 0
}

@test "buffer: -B adds nothing to block-aligned or empty input" {
  run bash -c "head -c 8192 \"$DATA\" | \"$BUFFER\" -B -s 4096 | wc -c"
  assert_output 8192
  run bash -c "\"$BUFFER\" -B -s 4096 </dev/null | wc -c"
  assert_output 0
}

@test "buffer: -o /dev/full names the output, says bytes written=-1 as 1.19 and exits 254" {
  tapekit_only
  run --separate-stderr "$BUFFER" -o /dev/full <"$SMALL"
  assert_equal "$status" 254
  assert_equal "$(/usr/bin/buffer -o /dev/full <"$SMALL" >/dev/null 2>&1; echo $?)" 254
  assert_equal "${stderr_lines[0]}" "buffer (writer): write of data failed: /dev/full: No space left on device"
  assert_equal "${stderr_lines[1]}" "bytes to write=10240, bytes written=-1, total written          0K"
  assert_equal "$(/usr/bin/buffer -o /dev/full <"$SMALL" 2>&1 >/dev/null | sed -n 2p)" "${stderr_lines[1]}"
  assert_regex "${stderr_lines[2]}" '^buffer \(writer\): 0 bytes reached /dev/full, [0-9]+ queued bytes were not written$'
}

@test "buffer: a consumer that stops reading (head -c 1000) ends the run quietly with 254" {
  run --separate-stderr timeout 30 bash -c "\"$BUFFER\" <\"$DATA\" | head -c 1000 | wc -c; exit \${PIPESTATUS[0]}"
  assert_equal "$status" 254
  assert_output 1000
  assert_equal "$stderr" ""
}

@test "buffer: a full medium without --next-volume reports the bytes that reached it" {
  tapekit_only
  run --separate-stderr env TK_MEDIUM_PATH="$BATS_TEST_TMPDIR/vol" TK_MEDIUM_BYTES=100000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i "$SMALL" -o "$BATS_TEST_TMPDIR/vol"
  assert_equal "$status" 254
  assert_equal "${stderr_lines[0]}" "buffer (writer): write of data failed: $BATS_TEST_TMPDIR/vol: No space left on device"
  assert_equal "${stderr_lines[1]}" "bytes to write=10240, bytes written=7840, total written         97K"
  assert_regex "${stderr_lines[2]}" "^buffer \\(writer\\): 100000 bytes reached .*/vol, [0-9]+ queued bytes were not written$"
  assert_equal "$(head -c 100000 "$SMALL" | sha)" "$(sha "$BATS_TEST_TMPDIR/vol")"
}

@test "buffer: an output that reaches the file size limit (ulimit -f) ends as at a full medium, with the bytes it holds" {
  tapekit_only
  # 105 KiB: the eleventh 10 KiB block gets half in, then EFBIG (and SIGXFSZ).
  run --separate-stderr bash -c 'ulimit -f 105; exec "$0" -s 10k -i "$1" -o "$2"' \
    "$BUFFER" "$SMALL" "$BATS_TEST_TMPDIR/vol"
  assert_equal "$status" 254
  assert_equal "${stderr_lines[0]}" "buffer (writer): write of data failed: $BATS_TEST_TMPDIR/vol: File too large"
  assert_equal "${stderr_lines[1]}" "bytes to write=10240, bytes written=5120, total written        105K"
  assert_regex "${stderr_lines[2]}" "^buffer \\(writer\\): 107520 bytes reached .*/vol, [0-9]+ queued bytes were not written$"
  assert_equal "$(stat -c %s "$BATS_TEST_TMPDIR/vol")" 107520
  assert_equal "$(head -c 107520 "$SMALL" | sha)" "$(sha "$BATS_TEST_TMPDIR/vol")"
}

@test "buffer: --next-volume changes volumes where the file size limit (ulimit -f) ends one and loses nothing" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  # 1000 KiB volumes: 1024000, 1024000 and the last 952000 bytes.
  printf '%s\n' 'n=$(ls | grep -c "^vol\.")' 'mv vol vol.$n' >next-volume
  run --separate-stderr bash -c 'ulimit -f 1000; exec "$0" -s 10k -i "$1" -o "$PWD/vol" \
    --next-volume "sh next-volume"' "$BUFFER" "$SMALL"
  assert_success
  assert_equal "$(stat -c %s vol.0) $(stat -c %s vol.1) $(stat -c %s vol)" "1024000 1024000 952000"
  assert_equal "$(cat vol.0 vol.1 vol | sha256sum | cut -d' ' -f1)" "$(sha "$SMALL")"
  assert_equal "${stderr_lines[0]}" "buffer (writer): end of medium on $PWD/vol after 1024000 bytes; running the volume change command"
  assert_equal "${stderr_lines[1]}" "buffer (writer): continuing on volume 2"
}

@test "buffer: --next-volume changes volumes at a full medium and loses nothing" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=1000000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i "$SMALL" -o "$PWD/vol" \
    --next-volume 'n=$(ls | grep -c "^vol\."); mv vol vol.$n'
  assert_success
  # 3000000 bytes: exactly three full volumes.
  assert_equal "$(cat vol.0 vol.1 vol | sha256sum | cut -d' ' -f1)" "$(sha "$SMALL")"
  assert_equal "$(stat -c %s vol.0) $(stat -c %s vol.1) $(stat -c %s vol)" "1000000 1000000 1000000"
  assert_equal "${stderr_lines[0]}" "buffer (writer): end of medium on $PWD/vol after 1000000 bytes; running the volume change command"
  assert_equal "${stderr_lines[1]}" "buffer (writer): continuing on volume 2"
}

@test "buffer: a --next-volume command meets the file size limit as any program does: SIGXFSZ is ignored in buffer only" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr bash -c 'ulimit -f 100; exec "$0" -s 10k -i "$1" -o "$PWD/vol" \
    --next-volume "head -c 200000 /dev/zero >big"' "$BUFFER" "$SMALL"
  assert_equal "$status" 254
  # The command's head dies of SIGXFSZ (25), itself or as the shell's child
  # (which then says "File size limit exceeded").
  run grep -E '^buffer \(writer\): volume change command failed \((killed by signal 25|exit status 153)\); 102400 bytes were written$' <<<"$stderr"
  assert_success
}

@test "buffer: a failing volume change command stops with 254 and says why" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=100000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i "$SMALL" -o "$PWD/vol" --next-volume 'exit 3'
  assert_equal "$status" 254
  assert_equal "${stderr_lines[1]}" "buffer (writer): volume change command failed (exit status 3); 100000 bytes were written"
}

@test "buffer: kill -9 of the reader: the writer says so, exits nonzero, nothing is left" {
  tapekit_only
  start_stalled_buffer
  kill -9 "$READER"
  wait "$REAP_PID" || true
  exec 7>&-
  run cat "$BATS_TEST_TMPDIR/reaped"
  assert_line "$READER signal 9"
  assert_line "$WRITER exit 254"
  run cat "$BATS_TEST_TMPDIR/err"
  assert_output --partial "buffer (writer): the reader process died"
  assert_equal "$(ipc_snapshot)" "$(cat "$BATS_TEST_TMPDIR/ipc.before")"
}

@test "buffer: kill -9 of the writer: the reader says so, exits 254, nothing is left" {
  tapekit_only
  start_stalled_buffer
  kill -9 "$WRITER"
  wait "$REAP_PID" || true
  exec 7>&-
  # The reader reaps its own writer; reap sees the reader.
  run cat "$BATS_TEST_TMPDIR/reaped"
  assert_line "$READER exit 254"
  run cat "$BATS_TEST_TMPDIR/err"
  assert_output "buffer (reader): the writer process ended (killed by signal 9); 0 bytes were written"
  assert_equal "$(ipc_snapshot)" "$(cat "$BATS_TEST_TMPDIR/ipc.before")"
}

# Feeds 100 KiB and keeps the input open, with a writer slowed to one block
# per 50 ms; waits until the reader has read all of it (its read count grew
# by 100 KiB since it blocked on the empty FIFO).
start_draining_buffer() {
  mkfifo "$BATS_TEST_TMPDIR/in"
  exec 7<>"$BATS_TEST_TMPDIR/in"
  head -c 102400 "$DATA" >"$BATS_TEST_TMPDIR/sent"
  setsid "$BUFFER" -s 10k -u 50000 "$@" -i "$BATS_TEST_TMPDIR/in" -o "$BATS_TEST_TMPDIR/out" \
    2>"$BATS_TEST_TMPDIR/err" &
  BUFFER_PID=$!
  start_watchdog "$BUFFER_PID"
  local i baseline=
  for i in $(seq 100); do
    pgrep -P "$BUFFER_PID" -x buffer >/dev/null && break
    sleep 0.05
  done
  sleep 0.2
  baseline=$(awk '/^rchar/ {print $2}' /proc/"$BUFFER_PID"/io)
  cat "$BATS_TEST_TMPDIR/sent" >&7
  for i in $(seq 200); do
    [ "$(awk '/^rchar/ {print $2}' /proc/"$BUFFER_PID"/io)" -ge $((baseline + 102400)) ] && return
    sleep 0.05
  done
  fail "buffer did not read its input"
}

# Waits until file $1 (a background buffer's standard error) holds $2: the
# signal that made it say so has been taken, and the next one sent cannot
# merge with it while it is still pending.
wait_until_said() {
  local _
  for _ in $(seq 600); do
    grep -qF -- "$2" "$1" && return 0
    sleep 0.05
  done
  fail "never said \"$2\": $(cat "$1")"
}

# Waits until process $1 is blocked in system call number $2 (on x86-64:
# 0 read, 61 wait4) and, when $3 is given, on a descriptor open on file $3.
wait_in_syscall() {
  local pid=$1 number=$2 file=${3:-} call fd _
  for _ in $(seq 600); do
    if read -r call fd _ 2>/dev/null <"/proc/$pid/syscall" && [ "$call" = "$number" ] &&
      { [ -z "$file" ] || [ "$(readlink "/proc/$pid/fd/$((fd))")" = "$file" ]; }; then
      return 0
    fi
    sleep 0.05
  done
  fail "process $pid is not in system call $number${file:+ on $file}: $(cat "/proc/$pid/syscall" 2>&1)"
}

# Waits until process $1 (sent SIGSTOP) is stopped.
wait_stopped() {
  local _
  for _ in $(seq 600); do
    [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
    sleep 0.05
  done
  fail "process $1 did not stop"
}

# Waits until process $1 has taken the SIGINT sent to it: none is pending,
# for the process or its main thread (ShdPnd, SigPnd).
wait_sigint_taken() {
  local key mask pending _
  for _ in $(seq 600); do
    pending=
    while read -r key mask; do
      case $key in SigPnd: | ShdPnd:) if (((0x$mask & 2) != 0)); then pending=1; fi ;; esac
    done <"/proc/$1/status"
    [ -n "$pending" ] || return 0
    sleep 0.05
  done
  fail "process $1 did not take its SIGINT"
}

# The exit status of the background buffer.
wait_buffer() {
  status=0
  wait "$BUFFER_PID" || status=$?
  kill "$WATCHDOG_PID" 2>/dev/null || true
  exec 7>&-
}

@test "buffer: SIGTERM writes out every queued byte, then exits 254" {
  tapekit_only
  start_draining_buffer
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  assert_equal "$(sha "$BATS_TEST_TMPDIR/out")" "$(sha "$BATS_TEST_TMPDIR/sent")"
}

@test "buffer: SIGTERM says a stop was asked for, how much is queued, and ends with why the run ended" {
  tapekit_only
  start_draining_buffer
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  run cat "$BATS_TEST_TMPDIR/err"
  assert_line --index 0 --regexp "^buffer: SIGTERM: stopping; reading has stopped, writing out the [0-9]+ bytes still queued \([0-9]+ blocks?\); a second signal abandons them$"
  assert_line --index 1 "buffer: stopped by SIGTERM after the queue was written out: 102400 bytes reached $BATS_TEST_TMPDIR/out, all that was read"
  assert_equal "${#lines[@]}" 2
}

@test "buffer: a signal after the whole input was read is announced too, and the run ends with why" {
  tapekit_only
  head -c 102400 "$DATA" >"$BATS_TEST_TMPDIR/sent"
  # The input comes through a FIFO this test writes and closes, and the
  # writer is held stopped until the signal has been taken: the reader sees
  # the end of the input with every block still queued, and the run cannot
  # end before the signal. Nothing but this test holds the FIFO open.
  mkfifo "$BATS_TEST_TMPDIR/in"
  exec 7<>"$BATS_TEST_TMPDIR/in"
  setsid "$BUFFER" -s 10k -i "$BATS_TEST_TMPDIR/in" -o "$BATS_TEST_TMPDIR/out" \
    2>"$BATS_TEST_TMPDIR/err" 7>&- &
  BUFFER_PID=$!
  start_watchdog "$BUFFER_PID"
  # The reader reads only once the writer has opened the output.
  wait_in_syscall "$BUFFER_PID" 0 "$BATS_TEST_TMPDIR/in"
  local writer
  writer=$(pgrep -P "$BUFFER_PID" -x buffer)
  kill -STOP "$writer"
  wait_stopped "$writer"
  cat "$BATS_TEST_TMPDIR/sent" >&7
  exec 7>&-
  # The reader has seen the end of the input and waits for the writer.
  wait_in_syscall "$BUFFER_PID" 61
  kill -TERM "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "SIGTERM: stopping"
  kill -CONT "$writer"
  wait_buffer
  assert_equal "$status" 254
  assert_equal "$(sha "$BATS_TEST_TMPDIR/out")" "$(sha "$BATS_TEST_TMPDIR/sent")"
  run cat "$BATS_TEST_TMPDIR/err"
  assert_line --index 0 --regexp "^buffer: SIGTERM: stopping; the input has ended, writing out the [0-9]+ bytes still queued \([0-9]+ blocks?\); a second signal abandons them$"
  assert_line --index 1 "buffer: stopped by SIGTERM after the queue was written out: 102400 bytes reached $BATS_TEST_TMPDIR/out, all that was read"
  assert_equal "${#lines[@]}" 2
}

@test "buffer: SIGINT to the process group (Ctrl-C) drains the queue too" {
  tapekit_only
  start_draining_buffer
  kill -INT -- "-$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  assert_equal "$(sha "$BATS_TEST_TMPDIR/out")" "$(sha "$BATS_TEST_TMPDIR/sent")"
}

@test "buffer: after a signal, -t prints no final record and no Kilobytes Out line, as 1.19" {
  tapekit_only
  start_draining_buffer -t -S 10k
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  run cat "$BATS_TEST_TMPDIR/err"
  refute_output --partial "Kilobytes Out"
  # A final record ends in "\r\n"; the stop's own words are lines of their own.
  refute_output --partial $'\r\n'
  # The stop's two lines, each after the progress records ("...\r") printed
  # before it, and nothing else.
  local records=$'^( +[0-9]+K, +[0-9]+K/s\r)*'
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --regexp "${records}buffer: SIGTERM: stopping; reading has stopped, writing out the [0-9]+ bytes still queued \([0-9]+ blocks?\); a second signal abandons them\$"
  assert_line --index 1 --regexp "${records}buffer: stopped by SIGTERM after the queue was written out: 102400 bytes reached $BATS_TEST_TMPDIR/out, all that was read\$"
}

@test "buffer: after a read error, -t prints what 1.19 prints: the error alone" {
  tapekit_only
  run --separate-stderr "$BUFFER" -i . -t -S 1k
  assert_equal "$status" 254
  assert_equal "$stderr" "buffer (reader): failed to read input: Is a directory"
  # 1.19's first line is the same (a second one, when its semaphore race hits, is a 1.19 bug).
  assert_equal "$(/usr/bin/buffer -i . -t -S 1k 2>&1 >/dev/null | head -1)" "$stderr"
}

@test "buffer: a second SIGTERM abandons the queue and exits 254" {
  tapekit_only
  start_draining_buffer -u 300000  # a drain of 3 s, which the second signal must interrupt
  kill -TERM "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "SIGTERM: stopping"
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  [ "$(stat -c %s "$BATS_TEST_TMPDIR/out")" -lt 102400 ] || fail "the queue was not abandoned"
  run grep -E '^buffer: a second SIGTERM: abandoning the [0-9]+ bytes still queued \([0-9]+ blocks?\)$' "$BATS_TEST_TMPDIR/err"
  assert_success
}

@test "buffer: a second SIGTERM ends a long -u pause at once, as 1.19's SIGHUP to its writer did" {
  tapekit_only
  # One block is written, then the writer pauses for an hour; the queue
  # still holds the rest. The second signal must not wait for the pause.
  start_draining_buffer -u 3600000000
  kill -TERM "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "SIGTERM: stopping"
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  assert_equal "$(stat -c %s "$BATS_TEST_TMPDIR/out")" 10240
  run cat "$BATS_TEST_TMPDIR/err"
  assert_line --regexp "^buffer \(writer\): (interrupted by a second SIGTERM|told by the reader to abandon the queue); 10240 bytes reached .*/out, 92160 queued bytes were not written$"
}

@test "buffer: SIGTERM to the writer alone also stops the input and drains the queue" {
  tapekit_only
  start_draining_buffer
  kill -TERM "$(pgrep -P "$BUFFER_PID" -x buffer)"
  wait_buffer
  assert_equal "$status" 254
  assert_equal "$(sha "$BATS_TEST_TMPDIR/out")" "$(sha "$BATS_TEST_TMPDIR/sent")"
}

@test "buffer: two SIGTERMs to the writer alone abandon the queue" {
  tapekit_only
  start_draining_buffer -u 300000  # a drain of 3 s, which the second signal must interrupt
  local writer
  writer=$(pgrep -P "$BUFFER_PID" -x buffer)
  kill -TERM "$writer"
  wait_until_said "$BATS_TEST_TMPDIR/err" "SIGTERM: stopping"
  kill -TERM "$writer"
  wait_buffer
  assert_equal "$status" 254
  [ "$(stat -c %s "$BATS_TEST_TMPDIR/out")" -lt 102400 ] || fail "the queue was not abandoned"
  run cat "$BATS_TEST_TMPDIR/err"
  assert_line --regexp "^buffer \(writer\): interrupted by a second SIGTERM; [0-9]+ bytes reached .*/out, [0-9]+ queued bytes were not written$"
}

@test "buffer: a second signal never kills the writer: a stopped writer, continued, closes and counts" {
  tapekit_only
  start_draining_buffer
  local writer
  writer=$(pgrep -P "$BUFFER_PID" -x buffer)
  kill -STOP "$writer"
  kill -TERM "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "SIGTERM: stopping"
  kill -TERM "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "a second SIGTERM"
  sleep 0.5
  # 1.19-style (and tapekit before): the second signal SIGKILLed the writer.
  kill -0 "$writer" || fail "the writer was killed by the second signal"
  kill -CONT "$writer"
  wait_buffer
  assert_equal "$status" 254
  run cat "$BATS_TEST_TMPDIR/err"
  assert_line --regexp "^buffer \(writer\): told by the reader to abandon the queue; [0-9]+ bytes reached .*/out, [0-9]+ queued bytes were not written$"
  [[ "$output" =~ queue\;\ ([0-9]+)\ bytes ]]
  assert_equal "${BASH_REMATCH[1]}" "$(stat -c %s "$BATS_TEST_TMPDIR/out")"
}

@test "buffer: a second signal abandons the queue while the output pipe is stalled in the middle of a block" {
  tapekit_only
  mkfifo "$BATS_TEST_TMPDIR/sink"
  # Held open for reading and never read. 10000-byte blocks fill no pipe
  # exactly, so the write that blocks has sent part of its block, and the
  # abandon signal makes write(2) return that part rather than fail.
  exec 8<>"$BATS_TEST_TMPDIR/sink"
  setsid "$BUFFER" -s 10000 -i "$SMALL" -o "$BATS_TEST_TMPDIR/sink" 2>"$BATS_TEST_TMPDIR/err" &
  BUFFER_PID=$!
  start_watchdog "$BUFFER_PID"
  sleep 0.5
  kill -INT "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "SIGINT: stopping"
  kill -INT "$BUFFER_PID"
  status=0
  wait "$BUFFER_PID" || status=$?
  kill "$WATCHDOG_PID" 2>/dev/null || true
  exec 8>&-
  # 137: still blocked when the test's watchdog killed it 30 s later.
  assert_equal "$status" 254
  run cat "$BATS_TEST_TMPDIR/err"
  assert_line --regexp "^buffer \\(writer\\): told by the reader to abandon the queue; [0-9]+ bytes reached .*/sink, [0-9]+ queued bytes were not written$"
}

@test "buffer: a third signal kills only a writer that made no progress, and claims no more than it had written" {
  tapekit_only
  start_draining_buffer
  local writer
  writer=$(pgrep -P "$BUFFER_PID" -x buffer)
  kill -STOP "$writer"
  kill -TERM "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "SIGTERM: stopping"
  kill -TERM "$BUFFER_PID"
  wait_until_said "$BATS_TEST_TMPDIR/err" "a second SIGTERM"
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  run cat "$BATS_TEST_TMPDIR/err"
  assert_line --regexp "^buffer \(reader\): the writer made no progress after it was told to stop and was killed; at most [0-9]+ bytes reached .*/out$"
  [[ "$output" =~ at\ most\ ([0-9]+)\ bytes ]]
  assert_equal "${BASH_REMATCH[1]}" "$(stat -c %s "$BATS_TEST_TMPDIR/out")"
}

@test "buffer: SIGTERM while the output is still opening (a FIFO nobody reads) ends the run with one line" {
  tapekit_only
  mkfifo "$BATS_TEST_TMPDIR/fifo"
  echo data | "$BUFFER" -o "$BATS_TEST_TMPDIR/fifo" 2>"$BATS_TEST_TMPDIR/err" &
  BUFFER_PID=$!
  start_watchdog "$BUFFER_PID"
  # The writer waits in the FIFO's open.
  local i writer
  for i in $(seq 600); do
    writer=$(pgrep -P "$BUFFER_PID" -x buffer) &&
      [ "$(cat /proc/"$writer"/wchan 2>/dev/null)" = wait_for_partner ] && break
    sleep 0.05
  done
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "buffer: stopped by SIGTERM while $BATS_TEST_TMPDIR/fifo was still being opened; nothing was read"
}

@test "buffer: -o before -i opens the output first, as 1.19 did: a peer that opens two FIFOs in that order is served" {
  cd "$BATS_TEST_TMPDIR"
  mkfifo to-peer from-peer
  # The peer opens what buffer writes to before what buffer reads from:
  # a buffer that opened its input first would wait for it for ever.
  { exec 5<to-peer 6>from-peer; cat <&5 >got 6>&- & exec 5<&-; cat "$SMALL" >&6; exec 6>&-; wait; } 3>&- &
  local peer=$!
  run timeout 60 "$BUFFER" -o to-peer -i from-peer
  [ "$status" -eq 0 ] || kill "$peer"
  assert_success
  wait "$peer"
  cmp "$SMALL" got
}

@test "buffer: -o before -i reads a .tap input record by record, as with -i first" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  "$BUFFER" -s 64k -i "$SMALL" -o t.tap
  "$MT" -f t.tap rewind
  "$BUFFER" -s 64k -o back -i t.tap
  cmp "$SMALL" back
}

@test "buffer: -o before -i with an input that is not there fails as 1.19 does, the output left as it was (1.19 emptied it)" {
  cd "$BATS_TEST_TMPDIR"
  echo kept >out
  run --separate-stderr "$BUFFER" -o out -i missing
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: cannot open input file: No such file or directory
filename: missing"
  [ -n "${TK_ORIGINAL:-}" ] || assert_equal "$(cat out)" kept
}

@test "buffer: SIGTERM while the input given after -o is still opening (a FIFO nobody writes) ends the run with one line" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  mkfifo fifo
  "$BUFFER" -o out -i fifo 2>err &
  BUFFER_PID=$!
  start_watchdog "$BUFFER_PID"
  # The reader waits in the FIFO's open once the writer has opened out.
  local i
  for i in $(seq 600); do
    [ "$(cat /proc/"$BUFFER_PID"/wchan 2>/dev/null)" = wait_for_partner ] && break
    sleep 0.05
  done
  assert_file_exists out
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  assert_equal "$(cat err)" "buffer: stopped by SIGTERM while fifo was still being opened; nothing was read"
  assert_equal "$(stat -c %s out)" 0
}

@test "buffer: --no-drain discards the queue on SIGTERM, as buffer 1.19" {
  tapekit_only
  start_draining_buffer --no-drain
  kill -TERM "$BUFFER_PID"
  wait_buffer
  assert_equal "$status" 254
  [ "$(stat -c %s "$BATS_TEST_TMPDIR/out")" -lt 102400 ] || fail "the queue was written out"
  run grep -E '^buffer: SIGTERM: stopping; --no-drain: the [0-9]+ bytes still queued \([0-9]+ blocks?\) are abandoned$' "$BATS_TEST_TMPDIR/err"
  assert_success
}

@test "buffer: non-blocking stdin and stdout (as ssh leaves them) just work" {
  tapekit_only
  run bash -c "cat \"$SMALL\" | nonblock \"$BUFFER\" -s 64k | pacer --chunk 4k --rate 50m | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$(sha "$SMALL")"
}

@test "buffer: a normal run leaves no IPC object behind" {
  local before
  before=$(ipc_snapshot)
  run "$BUFFER" -m 16m -i "$SMALL" -o /dev/null
  assert_success
  assert_equal "$(ipc_snapshot)" "$before"
}

@test "buffer: nothing named is created: no System V IPC, no file in /dev/shm" {
  tapekit_only
  run bash -c "ASAN_OPTIONS=detect_leaks=0 strace -f -e trace=shmget,semget,msgget,openat,open,mknod,mknodat \
    -o \"$BATS_TEST_TMPDIR/trace\" \"$BUFFER\" -m 16m -i \"$SMALL\" -o /dev/null"
  assert_success
  run grep -E 'shmget|semget|msgget|/dev/shm|mknod' "$BATS_TEST_TMPDIR/trace"
  assert_failure
  # The trace did see the process at work (the test would pass vacuously otherwise).
  run grep -c "$SMALL" "$BATS_TEST_TMPDIR/trace"
  assert_output 1
}

@test "buffer: --interval prints interval lines and a closing summary" {
  tapekit_only
  run --separate-stderr bash -c "head -c 4m \"$DATA\" | pacer --chunk 64k --rate 16m | \"$BUFFER\" -s 64k --interval 0.1 >/dev/null"
  assert_success
  assert_regex "${stderr_lines[0]}" '^\[ *0\.0- *0\.[0-9] s\]  out [0-9.]+ [KMG]?i?B  [0-9.]+ [KMG]?i?B/s  in [0-9.]+ [KMG]?i?B/s  fill [0-9]+%$'
  assert_regex "${stderr_lines[-1]}" '^summary: 4\.0 MiB \(4194304 bytes\) in [0-9.]+ s, out [0-9.]+ [KMG]?i?B/s, in [0-9.]+ [KMG]?i?B/s, [0-9]+ writer underruns \(waits of the output on an empty queue\), peak fill [0-9]+%$'
}

@test "buffer: --progress keeps one status line up to date on a terminal, then the summary" {
  tapekit_only
  head -c 4m "$DATA" >"$BATS_TEST_TMPDIR/in"
  # script(1) gives buffer a terminal for its stderr; the input lasts a second.
  run bash -c "script -qec 'pacer --chunk 64k --rate 4m <\"$BATS_TEST_TMPDIR/in\" | \"$BUFFER\" -s 64k --progress >/dev/null' /dev/null | tr '\r' '\n'"
  assert_success
  assert_line --regexp '^ +[0-9.]+ [KMG]?i?B  out +[0-9.]+ [KMG]?i?B/s  in +[0-9.]+ [KMG]?i?B/s  fill +[0-9]+%  0:00:0[0-9].\[K$'
  assert_line --regexp '^summary: 4\.0 MiB \(4194304 bytes\) in '
}

@test "buffer: --progress without a terminal prints only the summary" {
  tapekit_only
  run --separate-stderr bash -c "head -c 1m \"$DATA\" | \"$BUFFER\" --progress >/dev/null"
  assert_success
  assert_equal "${#stderr_lines[@]}" 1
  assert_regex "$stderr" '^summary: 1\.0 MiB \(1048576 bytes\)'
}

@test "buffer: -Z seeks a character-device output back to 0 after each GiB, and only with -Z" {
  tapekit_only
  # --seccomp-bpf: strace stops buffer only at its lseeks, not at each of the
  # GiB's reads and writes (11.5 s a run without it, 1.6 s with).
  run bash -c "head -c 1100M /dev/zero | ASAN_OPTIONS=detect_leaks=0 strace --seccomp-bpf -f -e trace=lseek -o \"$BATS_TEST_TMPDIR/z\" \"$BUFFER\" -Z -s 1m -m 8m -o /dev/null"
  assert_success
  assert_equal "$(grep -c 'lseek(.*, 0, SEEK_SET)' "$BATS_TEST_TMPDIR/z")" 1
  run bash -c "head -c 1100M /dev/zero | ASAN_OPTIONS=detect_leaks=0 strace --seccomp-bpf -f -e trace=lseek -o \"$BATS_TEST_TMPDIR/z\" \"$BUFFER\" -s 1m -m 8m -o /dev/null"
  assert_success
  assert_equal "$(grep -c 'lseek(.*, 0, SEEK_SET)' "$BATS_TEST_TMPDIR/z")" 0
}

@test "buffer: the summary counts the writer's waits on an empty ring (underruns)" {
  tapekit_only
  run --separate-stderr bash -c "head -c 1m \"$DATA\" | pacer --chunk 64k --burst 256k --pause 100 | \"$BUFFER\" -s 64k --progress >/dev/null"
  assert_success
  assert_regex "$stderr" ', [1-9][0-9]* writer underruns'
}

# Usage errors: the status equals buffer 1.19's, the message names the thing.
@test "buffer: bad options exit 255 like buffer 1.19, naming the option" {
  tapekit_only
  while IFS='|' read -r args expected; do
    run --separate-stderr "$BUFFER" $args </dev/null
    assert_equal "$status" 255
    assert_equal "${stderr_lines[0]}" "$expected"
    run /usr/bin/buffer $args </dev/null
    assert_equal "$status" 255
  done <<'EOF'
-x|buffer: invalid option -- 'x'
-s|buffer: option requires an argument -- 's'
-s 0|blocksize 0 out of range
-s -5|blocksize -5 out of range
-z -1|blocksize -1 out of range
-?|buffer: invalid option -- '?'
-b 0|blocks 0 out of range
-p 101|percent 101 out of range
-m 1k|max_shmem 1024 too low
-s 100k -m 100k|max_shmem 102400 too low
-m 100k -s 100k|Cannot handle blocks that big, aborting!
extra|too many arguments
-i /nonexistent/x|buffer: cannot open input file: No such file or directory
-o /nonexistent/x|buffer: cannot open output file: No such file or directory
-i /dev/null -i /dev/null|buffer: -i given twice
EOF
}

@test "buffer: sizes read as 1.19 reads them: leading blanks skipped, -S at or below 0 means 10k" {
  diff <(/usr/bin/buffer -s ' 4k' -S -5 -t <"$SMALL" 2>&1 >/dev/null | mask_rates) \
       <("$BUFFER" -s ' 4k' -S -5 -t <"$SMALL" 2>&1 >/dev/null | mask_rates) ||
    fail "reports differ"
  run bash -c "\"\$0\" -s ' 4k' -S -5 <\"\$1\" 2>/dev/null | sha256sum | cut -d' ' -f1" "$BUFFER" "$SMALL"
  assert_output "$(sha "$SMALL")"
}

@test "buffer: a plus sign before a size is read as 1.19 reads it (-s +4k -S +8k -m +2m)" {
  diff <(/usr/bin/buffer -s +4k -S +8k -m +2m -t <"$SMALL" 2>&1 >/dev/null | mask_rates) \
       <("$BUFFER" -s +4k -S +8k -m +2m -t <"$SMALL" 2>&1 >/dev/null | mask_rates) ||
    fail "reports differ"
  run bash -c "\"\$0\" -z +4k <\"\$1\" 2>/dev/null | sha256sum | cut -d' ' -f1" "$BUFFER" "$SMALL"
  assert_success
  assert_output "$(sha "$SMALL")"
}

@test "buffer: -b, -p and -u skip leading blanks as 1.19 does" {
  local option
  for option in "-b| 5" "-p| 50" "-u|	10"; do
    run --separate-stderr bash -c "\"\$0\" \"\${1%%|*}\" \"\${1#*|}\" <\"\$2\" | sha256sum | cut -d' ' -f1" \
      "$BUFFER" "$option" "$SMALL"
    assert_success
    assert_output "$(sha "$SMALL")"
    assert_equal "$stderr" ""
  done
}

@test "buffer: a closed stdin or stdout exits 255 with buffer 1.19's message" {
  run --separate-stderr bash -c '"$0" <&-' "$BUFFER"
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: can't stat input file: Bad file descriptor"
  run --separate-stderr bash -c 'echo x | "$0" >&-' "$BUFFER"
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: can't stat output file: Bad file descriptor"
}

@test "buffer: a closed stderr keeps -S, -t and -d lines out of the -o file (1.19 wrote them into it)" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run bash -c '"$0" -S 10k -t -d -o out <"$1" 2>&-' "$BUFFER" "$SMALL"
  assert_success
  assert_equal "$(sha out)" "$(sha "$SMALL")"
}

@test "buffer: malformed sizes that 1.19 silently misread are refused with their value" {
  tapekit_only
  while IFS='|' read -r args expected; do
    run --separate-stderr "$BUFFER" $args </dev/null
    assert_equal "$status" 255
    assert_equal "$stderr" "$expected"
  done <<'EOF'
-s abc|buffer: invalid -s 'abc': not a number
-s 1.5k|buffer: invalid -s '1.5k': a size is a whole number, without a fraction: 1.5k is 1536
-S 10x|buffer: invalid -S '10x': unknown unit (use b, k, m, g or t)
-m 99999999999999999999|buffer: invalid -m '99999999999999999999': too large
-p 5%|buffer: invalid -p '5%': not a whole number
-s -1x|buffer: invalid -s '-1x': unknown unit (use b, k, m, g or t)
-s +--|buffer: invalid -s '+--': not a number
EOF
}

@test "buffer: -i - and -o - are standard input and output, not files named - (1.19 opened a file)" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run bash -c "printf abc | \"$BUFFER\" -i - -o -"
  assert_success
  assert_output abc
  assert_file_not_exists "$BATS_TEST_TMPDIR/-"
}

@test "buffer: an empty -i or -o name is no file, as for 1.19, not standard input or output" {
  tapekit_only
  local option role
  for option in -i -o; do
    [ "$option" = -i ] && role=input || role=output
    run --separate-stderr bash -c 'echo data | "$0" "$1" ""' "$BUFFER" "$option"
    assert_equal "$status" 255
    assert_equal "$output" ""
    assert_equal "${stderr_lines[0]}" "buffer: cannot open $role file: No such file or directory"
    assert_equal "${stderr_lines[1]}" "filename: "
    assert_equal "${stderr_lines[2]}" "buffer: $option '' names no file (- is standard $role)"
    run bash -c 'echo data | "$0" "$1" "" 2>/dev/null' /usr/bin/buffer "$option"
    assert_equal "$status" 255
  done
}

@test "buffer: an output that is the input file is refused before it is emptied (1.19 emptied it)" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  printf 'keep me' >f
  local args
  for args in "-i f -o $PWD/f" "-o f" "-i f --tee f"; do
    # shellcheck disable=SC2086 # the options are split on purpose
    run --separate-stderr "$BUFFER" $args <f
    assert_equal "$status" 255
    assert_equal "$stderr" "buffer: ${args#-i f }: input file is output file; opening it would empty it"
    assert_equal "$(cat f)" "keep me"
  done
}

@test "buffer: the output file is not truncated when a later option is invalid" {
  tapekit_only
  printf 'keep me' >"$BATS_TEST_TMPDIR/f"
  run "$BUFFER" -o "$BATS_TEST_TMPDIR/f" -s 0 </dev/null
  assert_equal "$status" 255
  assert_equal "$(cat "$BATS_TEST_TMPDIR/f")" "keep me"
}

@test "buffer: an input error still writes out what was read, then exits 254" {
  run --separate-stderr "$BUFFER" -i /tmp -o "$BATS_TEST_TMPDIR/out"
  assert_equal "$status" 254
  assert_equal "$stderr" "buffer (reader): failed to read input: Is a directory"
}

@test "buffer: g and t suffixes work (1.19 read -S 1g as 1 byte and printed every block)" {
  tapekit_only
  run bash -c "\"$BUFFER\" -S 1g -t <\"$SMALL\" 2>&1 >/dev/null | tr '\r\n' '|/'"
  assert_success
  assert_output --regexp '^ +2929K, +[0-9?]+K/s\|/Kilobytes Out 2929/$'
}

@test "buffer: grouped flags and attached values parse as getopt does (-tBs512)" {
  tapekit_only
  run bash -c "head -c 5000 \"$DATA\" | \"$BUFFER\" -tBs512 2>&1 >/dev/null"
  assert_success
  assert_output "Kilobytes Out 5"
  run bash -c "head -c 5000 \"$DATA\" | \"$BUFFER\" -tB -s512 2>/dev/null | wc -c"
  assert_output 5120
}

@test "buffer: values attached to short options are read as getopt reads them, whatever their characters" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  printf data >in
  run bash -c '"$0" -i./in -tBo"$PWD/out" 2>&1' "$BUFFER"
  assert_success
  assert_output "Kilobytes Out 10"
  assert_equal "$(stat -c %s out)" 10240
  # 1.19 reads -o=x as the file "=x"; a value after -o is a name, whatever it looks like.
  run bash -c 'printf data | "$0" -o=x && printf data | "$0" -o -s1.5k' "$BUFFER"
  assert_success
  assert_equal "$(cat =x)" data
  assert_equal "$(cat -- -s1.5k)" data
  run bash -c 'printf data | "$0" -o=y' /usr/bin/buffer
  assert_equal "$(cat =y)" data
  run --separate-stderr "$BUFFER" -s1.5k </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: invalid -s '1.5k': a size is a whole number, without a fraction: 1.5k is 1536"
  run --separate-stderr "$BUFFER" -t? </dev/null
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "buffer: invalid option -- '?'"
}

@test "buffer: a value given to an option that takes none is refused, as getopt_long refuses it" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  local option
  for option in --no-drain=false --verify=no --json=1 --help=x --progress=; do
    run --separate-stderr "$BUFFER" "$option" -o out </dev/null
    assert_equal "$status" 255
    assert_equal "${stderr_lines[0]}" "buffer: option '${option%%=*}' doesn't allow an argument"
    assert_file_not_exists out
  done
}

@test "buffer: a long option may be abbreviated as getopt_long allows, and an ambiguous one is refused by name" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr "$BUFFER" --inter=0 -o out </dev/null
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "buffer: invalid --interval '0': seconds from 0.1 to 86400 (0.5 is half a second)"
  mkdir q
  printf data | "$BUFFER" --js --queue-f q --no-d -o out 2>err.txt
  assert_equal "$(cat out)" data
  assert_equal "$(tail -n 1 err.txt | cut -c1)" "{"
  run --separate-stderr "$BUFFER" --in=1m -o out2 </dev/null
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "buffer: option '--in' is ambiguous; possibilities: '--input-rate' '--interval'"
  assert_file_not_exists out2
}

@test "buffer: -o x.tap writes one record per block and a filemark at the end" {
  tapekit_only
  head -c 25000 "$DATA" | "$BUFFER" -s 10k -o "$BATS_TEST_TMPDIR/a.tap"
  assert_equal "$(tap_records --reads 4 "$BATS_TEST_TMPDIR/a.tap")" "10240 10240 4520 0 "
}

@test "buffer: -B on a .tap makes the last record a whole block too" {
  tapekit_only
  head -c 25000 "$DATA" | "$BUFFER" -B -s 10k -o "$BATS_TEST_TMPDIR/a.tap"
  assert_equal "$(tap_records --reads 4 "$BATS_TEST_TMPDIR/a.tap")" "10240 10240 10240 0 "
}

@test "buffer: reading a tape whose records do not divide the block size loses no record" {
  # buffer 1.19 asked st for the rest of a block, less than a record: ENOMEM.
  head -c 100000 "$DATA" | "$BUFFER" -s 3000 -o "$BATS_TEST_TMPDIR/a.tap"
  "$MT" -f "$BATS_TEST_TMPDIR/a.tap" rewind
  run bash -c "\"$BUFFER\" -s 10k -i \"$BATS_TEST_TMPDIR/a.tap\" | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$(head -c 100000 "$DATA" | sha)"
}

@test "buffer: --next-volume spans full virtual tapes and loses nothing" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  head -c 1000000 "$DATA" >in
  "$MT" -f v.tap vt-create 200k
  run --separate-stderr "$BUFFER" -s 10k -i in -o v.tap \
    --next-volume 'n=$(ls | grep -c "^full.*tap$"); mv v.tap full$n.tap; mv v.tap.state full$n.tap.state; mt -f v.tap vt-create 200k'
  assert_success
  local f volumes=0
  for f in full0.tap full1.tap full2.tap full3.tap full4.tap full5.tap full6.tap v.tap; do
    [ -e "$f" ] || continue
    volumes=$((volumes + 1))
    "$MT" -f "$f" rewind
    "$BUFFER" -s 10k -i "$f" >>out
  done
  [ "$volumes" -ge 3 ] || fail "expected several volumes, got $volumes"
  assert_equal "$(sha out)" "$(sha in)"
}

# Runs buffer writing a paced 4 MB into $1 (a .tap) with a slow writer, in a
# session of its own; returns once more than one MiB has reached the image,
# so that a tape image's buffered window is part-way through.
start_slow_tap_buffer() {
  cd "$BATS_TEST_TMPDIR"
  head -c 4000000 "$DATA" >in
  mkfifo fin
  exec 7<>fin
  setsid "$BUFFER" -s 64k -m 8m -u 20000 -i fin -o "$1" 2>err &
  BUFFER_PID=$!
  start_watchdog "$BUFFER_PID"
  pacer --rate 20m <in >&7 &
  PACER_PID=$!
  local i
  for i in $(seq 200); do
    [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -gt 1048576 ] && return
    sleep 0.05
  done
  fail "nothing reached $1"
}

@test "buffer: a second Ctrl-C on a .tap ends the tape at a record boundary, closed, and counts what is on it" {
  tapekit_only
  start_slow_tap_buffer v.tap
  local writer
  writer=$(pgrep -P "$BUFFER_PID" -x buffer)
  # The writer goes on writing after the first Ctrl-C and ends once the
  # queue is out. So that it is still there, with the queue part-way, for
  # the second: the reader is held stopped while the writer takes the
  # first (the input cannot end, so the writer waits for more once the
  # queue is out), then the writer is held stopped until the second.
  kill -STOP "$BUFFER_PID"
  wait_stopped "$BUFFER_PID"
  kill -INT -- "-$BUFFER_PID"
  wait_sigint_taken "$writer"
  kill -STOP "$writer"
  wait_stopped "$writer"
  kill -CONT "$BUFFER_PID"
  wait_until_said err "SIGINT: stopping"
  kill -INT -- "-$BUFFER_PID"
  wait_until_said err "a second SIGINT"
  kill -CONT "$writer"
  wait_buffer
  kill "$PACER_PID" 2>/dev/null || true
  assert_equal "$status" 254
  run "$MT" -f v.tap verify
  assert_success
  run cat err
  assert_line --regexp "^buffer \(writer\): interrupted by a second SIGINT; [0-9]+ bytes reached v\.tap, [0-9]+ queued bytes were not written$"
  [[ "$output" =~ SIGINT\;\ ([0-9]+)\ bytes ]]
  local reached=${BASH_REMATCH[1]}
  # Whole 64 KiB records, a prefix of the input, then the filemark close wrote.
  "$MT" -f v.tap rewind
  "$BUFFER" -s 64k -i v.tap >back
  assert_equal "$(stat -c %s back)" "$reached"
  assert_equal $((reached % 65536)) 0
  assert_equal "$(sha back)" "$(head -c "$reached" in | sha)"
  assert_equal "$(tap_records --reads $((reached / 65536 + 1)) v.tap | tr ' ' '\n' | sort -u | tr '\n' ' ')" "0 65536 "
}

@test "buffer: --next-volume whose command frees no room ends at the first volume that takes nothing, not in a loop" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  head -c 1000000 "$DATA" >in
  "$MT" -f v.tap vt-create 200k
  # The same full tape stays loaded; it may still take a record past its
  # early warning (as st allows), but then nothing: before, this looped.
  run --separate-stderr timeout 20 "$BUFFER" -s 10k -i in -o v.tap --next-volume true
  assert_equal "$status" 254
  local changes futile
  changes=$(grep -c 'running the volume change command' <<<"$stderr")
  [ "$changes" -le 2 ] || fail "$changes volume changes"
  futile=$((changes + 1))
  assert_equal "${stderr_lines[-2]}" "buffer (writer): volume $futile of v.tap took no data: a block of 10240 bytes did not fit: No space left on device"
  assert_regex "${stderr_lines[-1]}" "^buffer \\(writer\\): [0-9]+ bytes reached v\\.tap \\(volume 1: [0-9]+, .*volume $futile: 0\\), [0-9]+ queued bytes were not written$"
  [[ "${stderr_lines[-1]}" =~ :\ ([0-9]+)\ bytes\ reached ]]
  local reached=${BASH_REMATCH[1]} i
  # Each volume that took data is a file on the one image: all of it is there.
  "$MT" -f v.tap rewind
  for i in $(seq "$changes"); do "$BUFFER" -s 10k -i v.tap >>back; done
  assert_equal "$(stat -c %s back)" "$reached"
  assert_equal "$(sha back)" "$(head -c "$reached" in | sha)"
}

@test "buffer: --next-volume with a block larger than the medium is an error after one change" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  head -c 1000000 "$DATA" >in
  "$MT" -f v.tap vt-create 100k
  run --separate-stderr timeout 20 "$BUFFER" -s 300k -m 4m -i in -o v.tap \
    --next-volume 'mv v.tap old.tap; mv v.tap.state old.tap.state; mt -f v.tap vt-create 100k'
  assert_equal "$status" 254
  assert_equal "$(grep -c 'running the volume change command' <<<"$stderr")" 1
  assert_equal "${stderr_lines[2]}" "buffer (writer): volume 2 of v.tap took no data: a block of 307200 bytes did not fit: No space left on device"
  assert_regex "${stderr_lines[3]}" "^buffer \\(writer\\): 0 bytes reached v\\.tap \\(volume 1: 0, volume 2: 0\\), [0-9]+ queued bytes were not written$"
}

@test "buffer: the --next-volume command gets BUFFER_VOLUME, BUFFER_BYTES and BUFFER_OUTPUT" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=1000000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i "$SMALL" -o "$PWD/vol" \
    --next-volume 'echo "$BUFFER_VOLUME $BUFFER_BYTES $BUFFER_OUTPUT" >>seen; mv vol vol.$BUFFER_VOLUME'
  assert_success
  assert_equal "$(cat seen)" "2 1000000 $PWD/vol
3 2000000 $PWD/vol"
  assert_equal "$(cat vol.2 vol.3 vol | sha256sum | cut -d' ' -f1)" "$(sha "$SMALL")"
}

@test "buffer: -i of a damaged .tap names the damage and its offset" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  head -c 300000 "$DATA" | "$BUFFER" -s 10k -o a.tap
  # Nine whole records of 10240 + 8 bytes, then a cut one.
  truncate -s 100000 a.tap
  "$MT" -f a.tap rewind
  run --separate-stderr bash -c '"$0" -s 10k -i a.tap >out' "$BUFFER"
  assert_equal "$status" 254
  assert_equal "${stderr_lines[0]}" "buffer (reader): failed to read input: Input/output error"
  assert_equal "${stderr_lines[1]}" "buffer (reader): a.tap: record of 10240 bytes cut short by the end of the image at offset 92232 (mt verify shows the first damage)"
  # The records before the damage still reached the output.
  assert_equal "$(sha out)" "$(head -c 92160 "$DATA" | sha)"
}

@test "buffer: a new name with a colon is remote, and the failure says so; --force-local or an existing file makes it local" {
  tapekit_only
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr bash -c 'echo hi | RSH=/bin/false "$0" -o dump-10:00.tar' "$BUFFER"
  assert_equal "$status" 255
  assert_equal "${stderr_lines[2]}" "buffer: open dump-10:00.tar: connection lost; the remote shell /bin/false for dump-10 ended with exit status 1 (--force-local makes dump-10:00.tar a local file)"
  run bash -c 'echo hi | "$0" --force-local -o dump-10:00.tar' "$BUFFER"
  assert_success
  assert_equal "$(cat dump-10:00.tar)" hi
  # Once the file exists it is the local file, as it always was for 1.19.
  run bash -c 'RSH=/bin/false "$0" -i dump-10:00.tar' "$BUFFER"
  assert_success
  assert_output hi
  run bash -c 'echo again | RSH=/bin/false "$0" -o dump-10:00.tar' "$BUFFER"
  assert_success
  assert_equal "$(cat dump-10:00.tar)" again
  # A name with a "/" stays remote: a "tapehost:" link here must not take
  # over tapehost:/etc/hostname.
  ln -s / tapehost:
  run bash -c 'RSH=/bin/false "$0" -i tapehost:/etc/hostname' "$BUFFER"
  assert_equal "$status" 255
  refute_output "$(cat /etc/hostname)"
}

@test "buffer: -o and -i host:path reach a remote virtual tape through rmt" {
  tapekit_only
  local remote=localhost:$BATS_TEST_TMPDIR/r.tap
  head -c 300000 "$DATA" | RSH="$BATS_TEST_DIRNAME/rsh-standin" "$BUFFER" -s 10k -o "$remote"
  assert_equal "$(tap_records --reads 1 "$BATS_TEST_TMPDIR/r.tap")" "10240 "
  "$MT" -f "$BATS_TEST_TMPDIR/r.tap" rewind
  run bash -c "\"$BUFFER\" -s 10k -i \"$remote\" --rsh-command \"$BATS_TEST_DIRNAME/rsh-standin\" | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$(head -c 300000 "$DATA" | sha)"
}
