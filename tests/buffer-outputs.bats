#!/usr/bin/env bats
# buffer beyond 1.19's outputs: the queue on a file (--queue-file), several
# outputs (--tee, --keep-going), inline digests (--hash) and read-backs
# (--verify).
bats_require_minimum_version 1.5.0
load test_helper
load buffer_helper

setup_file() {
  export SMALL=$BATS_FILE_TMPDIR/small
  random_mib 3 11 | head -c 3000000 >"$SMALL"
}

# The hex digest buffer printed for NAME (optionally ", volume N") in $stderr.
digest_for() {
  sed -nE "s|^buffer \\(writer\\): [a-z0-9]+ of $1: ([0-9a-f]+) \\([0-9]+ bytes\\)\$|\\1|p" <<<"$stderr"
}

# Points assert_line and assert_output at what the last run printed on stderr.
check_stderr() {
  output=$stderr
  lines=("${stderr_lines[@]}")
}

# The processes still mapping a queue file in $1 (deleted, so by /proc only).
queue_mappers() { grep -l "$1/.*(deleted)" /proc/[0-9]*/maps 2>/dev/null || true; }

@test "buffer: --queue-file in a directory passes the data unchanged and the directory stays empty" {
  mkdir "$BATS_TEST_TMPDIR/q"
  run --separate-stderr bash -c "\"$BUFFER\" -s 10k -m 1m --queue-file \"$BATS_TEST_TMPDIR/q\" <\"$SMALL\" | sha256sum"
  assert_success
  assert_output "$(sha "$SMALL")  -"
  assert_equal "$(ls -A "$BATS_TEST_TMPDIR/q")" ""
}

@test "buffer: a named --queue-file has no name while buffer runs, and an existing file is refused untouched" {
  start_stalled_buffer --queue-file "$BATS_TEST_TMPDIR/queue"
  assert_file_not_exists "$BATS_TEST_TMPDIR/queue"
  [ -n "$(queue_mappers "$BATS_TEST_TMPDIR")" ] || fail "no process maps the queue file"
  exec 7>&-
  wait "$REAP_PID"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" "some data"
  echo precious >"$BATS_TEST_TMPDIR/kept"
  run --separate-stderr "$BUFFER" --queue-file "$BATS_TEST_TMPDIR/kept" </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: queue file $BATS_TEST_TMPDIR/kept (give a new name or a directory): File exists"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/kept")" precious
}

@test "buffer: kill -9 of the reader with a queue file leaves no file and no process behind" {
  mkdir "$BATS_TEST_TMPDIR/q"
  start_stalled_buffer --queue-file "$BATS_TEST_TMPDIR/q"
  kill -9 "$READER"
  wait "$REAP_PID" || true
  exec 7>&-
  run cat "$BATS_TEST_TMPDIR/reaped"
  assert_line "$READER signal 9"
  assert_line "$WRITER exit 254"
  assert_equal "$(ls -A "$BATS_TEST_TMPDIR/q")" ""
  assert_equal "$(queue_mappers "$BATS_TEST_TMPDIR/q")" ""
}

@test "buffer: kill -9 of the writer with a queue file leaves no file and no process behind" {
  start_stalled_buffer --queue-file "$BATS_TEST_TMPDIR/queue"
  kill -9 "$WRITER"
  wait "$REAP_PID" || true
  exec 7>&-
  run cat "$BATS_TEST_TMPDIR/reaped"
  assert_line "$READER exit 254"
  assert_file_not_exists "$BATS_TEST_TMPDIR/queue"
  assert_equal "$(queue_mappers "$BATS_TEST_TMPDIR")" ""
}

@test "buffer: -m beyond memory is allowed with --queue-file, and a file system too small says so before any data moves" {
  local ram
  ram=$(awk '/^MemTotal/ {print int($2 / 1048576) + 2}' /proc/meminfo)
  run --separate-stderr "$BUFFER" -m "${ram}g" </dev/null
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "Cannot handle that many blocks, aborting!"
  assert_regex "${stderr_lines[1]}" "^buffer: a queue of .* is more than this machine's .* of memory: make -m smaller$"
  mkdir "$BATS_TEST_TMPDIR/q"
  run --separate-stderr env TK_MEDIUM_PATH="$BATS_TEST_TMPDIR/q" TK_MEDIUM_BYTES=1000000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -m "${ram}g" --queue-file "$BATS_TEST_TMPDIR/q" \
    -o "$BATS_TEST_TMPDIR/out" <"$SMALL"
  assert_equal "$status" 255
  assert_regex "$stderr" "^buffer: reserve [0-9]+ bytes for the queue in $BATS_TEST_TMPDIR/q: No space left on device\$"
  assert_file_not_exists "$BATS_TEST_TMPDIR/out"
}

@test "buffer: a --queue-file larger than the file size limit (ulimit -f) says so before any data moves, not killed by SIGXFSZ" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr bash -c 'ulimit -f 100; exec "$0" -m 1m --queue-file q -i "$1" -o out' "$BUFFER" "$SMALL"
  assert_equal "$status" 255
  assert_regex "$stderr" "^buffer: reserve [0-9]+ bytes for the queue in q: File too large\$"
  assert_file_not_exists out
}

@test "buffer: --tee writes the same records to every output: a file, a .tap and standard output" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr bash -c "\"$BUFFER\" -s 10k -i \"$SMALL\" -o copy --tee v.tap --tee - | sha256sum"
  assert_success
  assert_output "$(sha "$SMALL")  -"
  assert_equal "$(sha copy)" "$(sha "$SMALL")"
  "$MT" -f v.tap rewind
  assert_equal "$("$BUFFER" -s 10k -i v.tap | sha256sum | cut -d' ' -f1)" "$(sha "$SMALL")"
}

@test "buffer: a failing --tee output is named and stops the others, exit 254" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o copy --tee /dev/full
  assert_equal "$status" 254
  assert_equal "${stderr_lines[0]}" "buffer (writer): write of data failed: /dev/full: No space left on device"
  assert_regex "${stderr_lines[1]}" '^buffer \(writer\): 10240 bytes reached copy, 0 bytes reached /dev/full, [0-9]+ queued bytes were not written$'
  assert_equal "$(stat -c %s copy)" 10240
}

@test "buffer: with --keep-going the other outputs get everything when one fails, and the run still ends 254" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o copy --tee /dev/full --tee copy2 --keep-going
  assert_equal "$status" 254
  assert_equal "$stderr" "buffer (writer): write of data failed: /dev/full: No space left on device; 0 bytes reached it; the other outputs go on (--keep-going)"
  assert_equal "$(sha copy)" "$(sha "$SMALL")"
  assert_equal "$(sha copy2)" "$(sha "$SMALL")"
  # -o itself may be the one that fails.
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o /dev/full --tee copy3 --keep-going
  assert_equal "$status" 254
  check_stderr
  assert_line --index 0 "buffer (writer): write of data failed: /dev/full: No space left on device; 0 bytes reached it; the other outputs go on (--keep-going)"
  assert_equal "$(sha copy3)" "$(sha "$SMALL")"
}

@test "buffer: --hash sha256, md5 and xxh128 print what sha256sum, md5sum and xxhsum -H2 print for each output" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o copy --hash sha256 --tee v.tap
  assert_success
  assert_equal "$(digest_for copy)" "$(sha "$SMALL")"
  assert_equal "$(digest_for v.tap)" "$(sha "$SMALL")"
  check_stderr
  assert_line "buffer (writer): sha256 of copy: $(sha "$SMALL") (3000000 bytes)"
  run --separate-stderr "$BUFFER" -i "$SMALL" -o copy --hash md5
  assert_equal "$(digest_for copy)" "$(md5sum <"$SMALL" | cut -d' ' -f1)"
  run --separate-stderr "$BUFFER" -i "$SMALL" -o copy --hash xxh128
  assert_equal "$(digest_for copy)" "$(xxhsum -H2 <"$SMALL" | cut -d' ' -f1)"
}

@test "buffer: with --next-volume --hash gives each volume's digest and the whole's" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=1000000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i "$SMALL" -o "$PWD/vol" --hash sha256 \
    --next-volume 'n=$(ls | grep -c "^vol\."); mv vol vol.$n'
  assert_success
  assert_equal "$(digest_for "$PWD/vol, volume 1")" "$(sha vol.0)"
  assert_equal "$(digest_for "$PWD/vol, volume 2")" "$(sha vol.1)"
  assert_equal "$(digest_for "$PWD/vol, volume 3")" "$(sha vol)"
  assert_equal "$(digest_for "$PWD/vol")" "$(sha "$SMALL")"
}

@test "buffer: --json's summary carries the digest of -o and of each --tee, equal to sha256sum of the input" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o copy --tee copy2 --hash sha256 --json
  assert_success
  local want
  want=$(sha "$SMALL")
  # The writer's digest lines are objects too.
  jq -e --arg want "$want" '.event == "digest" and .output == "copy" and .digest == $want
         and .bytes == 3000000' <<<"${stderr_lines[0]}" >/dev/null ||
    fail "digest object: ${stderr_lines[0]}"
  jq -e --arg want "$want" '.event == "summary" and .digest.algorithm == "sha256"
         and .digest.total == $want and .digest.volumes == [$want]
         and .digest.tees == [{"name": "copy2", "total": $want}]' <<<"${stderr_lines[-1]}" >/dev/null ||
    fail "summary object: ${stderr_lines[-1]}"
  # -o dropped (--keep-going): only the output that got everything has one.
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o /dev/full --tee copy3 --keep-going --hash md5 --json
  assert_equal "$status" 254
  jq -e --arg want "$(md5sum <"$SMALL" | cut -d' ' -f1)" '.digest == {"algorithm": "md5",
         "tees": [{"name": "copy3", "total": $want}]}' <<<"${stderr_lines[-1]}" >/dev/null ||
    fail "summary object: ${stderr_lines[-1]}"
}

@test "buffer: under --json every line of stderr is one JSON object in UTF-8, whatever bytes an output's name holds" {
  cd "$BATS_TEST_TMPDIR"
  # A name that is not UTF-8 and whose second line is a summary object.
  local name=$'x\xff\n{"event":"summary","digest":{"algorithm":"sha256","total":"fake"}}\ny'
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o copy --tee "$name" --force-local \
    --hash sha256 --verify --json
  assert_success
  iconv -f UTF-8 -t UTF-8 <<<"$stderr" >/dev/null || fail "not UTF-8: $stderr"
  local line events=()
  for line in "${stderr_lines[@]}"; do
    jq -e 'type == "object"' <<<"$line" >/dev/null || fail "not one JSON object: $line"
    events+=("$(jq -r .event <<<"$line")")
  done
  assert_equal "${events[*]}" "digest digest message summary"
  # The name comes back byte for byte where jq can say it: \u00ff is the byte 0xff.
  jq -e '.output | startswith("x\u00ff\n{") and endswith("}\ny")' \
    <<<"${stderr_lines[1]}" >/dev/null || fail "tee's digest object: ${stderr_lines[1]}"
  jq -e '.digest.total != "fake" and (.digest.tees | length) == 1' <<<"${stderr_lines[-1]}" \
    >/dev/null || fail "summary object: ${stderr_lines[-1]}"
  # A stop's last words are objects as well.
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o /dev/full --hash sha256 --json
  assert_equal "$status" 254
  iconv -f UTF-8 -t UTF-8 <<<"$stderr" >/dev/null || fail "not UTF-8: $stderr"
  for line in "${stderr_lines[@]}"; do
    jq -e 'type == "object"' <<<"$line" >/dev/null || fail "not one JSON object: $line"
  done
  jq -e '.event == "message" and (.text | test("^buffer \\(writer\\): write of data failed: /dev/full"))' \
    <<<"${stderr_lines[0]}" >/dev/null || fail "first line: ${stderr_lines[0]}"
}

@test "buffer: --json's summary gives each .tap volume's digest and the whole's with --next-volume" {
  cd "$BATS_TEST_TMPDIR"
  "$MT" -f v.tap vt-create 1m
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o "$PWD/v.tap" --hash sha256 --json \
    --next-volume "n=\$(ls vol*.tap 2>/dev/null | wc -l); mv v.tap vol\$n.tap && \"$MT\" -f v.tap vt-create 1m"
  assert_success
  local summary=${stderr_lines[-1]} volumes=()
  "$MT" -f v.tap rewind
  for image in vol0.tap vol1.tap vol2.tap v.tap; do
    volumes+=("$("$BUFFER" -s 10k -i "$image" | sha)")
  done
  jq -e --arg want "$(sha "$SMALL")" '.volume == 4 and .digest.total == $want
         and (.digest | has("tees") | not)' <<<"$summary" >/dev/null || fail "summary object: $summary"
  assert_equal "$(jq -r '.digest.volumes[]' <<<"$summary")" "$(printf '%s\n' "${volumes[@]}")"
}

@test "buffer: a writer killed with -9 leaves --json's summary without a digest, and the reader ends" {
  start_stalled_buffer --hash sha256 --json
  kill -9 "$WRITER"
  wait "$REAP_PID" || true
  exec 7>&-
  run cat "$BATS_TEST_TMPDIR/reaped"
  assert_line "$READER exit 254"
  local summary
  summary=$(tail -n 1 "$BATS_TEST_TMPDIR/err")
  jq -e '.event == "summary" and (has("digest") | not)' <<<"$summary" >/dev/null ||
    fail "summary object: $summary"
}

@test "buffer: the --progress summary line shows the digest of each volume, the whole and each --tee" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=2000000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 10k -i "$SMALL" -o "$PWD/vol" --tee copy \
    --hash sha256 --progress --next-volume 'mv vol vol.0'
  assert_success
  local want
  want=$(sha "$SMALL")
  assert_regex "${stderr_lines[-1]}" "^summary: .*, 2 volumes, sha256 $want \\(volume 1 $(sha vol.0), volume 2 $(sha vol)\\), sha256 of copy $want\$"
}

@test "buffer: --verify reads every volume back and finds them equal, .tap files appended to included" {
  cd "$BATS_TEST_TMPDIR"
  "$BUFFER" -s 10k -i "$SMALL" -o v.tap
  run --separate-stderr "$BUFFER" -s 10k -i "$SMALL" -o v.tap --tee copy --verify
  assert_success
  check_stderr
  assert_line "buffer (writer): every output read back matches"
  "$MT" -f v.tap status | grep -q 'File number=2' || fail "the second run did not follow the first"
}

@test "buffer: --verify catches a volume the medium corrupted, names it, exits 254" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr env TK_CORRUPT_PATH="$PWD/copy" LD_PRELOAD="$TK_TEST_LIB/corrupt.so" \
    "$BUFFER" -s 10k -i "$SMALL" -o "$PWD/copy" --verify
  assert_equal "$status" 254
  check_stderr
  assert_line --partial "buffer (writer): verify of $PWD/copy failed: it differs from what was written: read back 3000000 bytes, sha256 $(sha copy); wrote 3000000 bytes, $(sha "$SMALL")"
  refute_line "buffer (writer): every output read back matches"
}

@test "buffer: bad --hash, --queue-file and --verify uses are refused before anything is opened" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr "$BUFFER" --hash sha1 -o out </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: invalid --hash 'sha1': sha256, md5 or xxh128"
  run --separate-stderr "$BUFFER" --verify </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: --verify needs -o: standard output cannot be read back"
  run --separate-stderr "$BUFFER" --verify -o out --tee - </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: --verify cannot read back --tee -: standard output"
  run --separate-stderr "$BUFFER" -o out --tee out </dev/null
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: --tee out and -o out are one file; nothing was opened or written"
  assert_file_not_exists out
}

@test "buffer: a --tee output that cannot be opened ends the run as 1.19's -o does, before any input is read" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr bash -c "\"$BUFFER\" -o copy --tee missing/x; echo \$?; wc -c" <"$SMALL"
  assert_equal "${lines[0]}" 255
  assert_equal "${lines[1]}" 3000000  # the input was left unread
  assert_equal "$stderr" "buffer: cannot open output file: No such file or directory
filename: missing/x"
}

@test "buffer: --verify refuses a FIFO as -o or --tee in one line naming it, before any input is read" {
  cd "$BATS_TEST_TMPDIR"
  mkfifo fifo
  # Held open both ways, so that no open of it blocks and nothing here waits
  # for the FIFO; timeout: a buffer that writes into it must fail, not hang.
  exec 7<>fifo
  run --separate-stderr bash -c "timeout -k 5 30 \"$BUFFER\" -o fifo --verify 7>&-; echo \$?; wc -c" <"$SMALL"
  assert_equal "${lines[0]}" 255
  assert_equal "${lines[1]}" 3000000  # the input was left unread
  assert_equal "$stderr" "buffer: --verify cannot read back -o fifo: it is a FIFO"
  run --separate-stderr bash -c "timeout -k 5 30 \"$BUFFER\" -o copy --tee fifo --verify 7>&-; echo \$?; wc -c" <"$SMALL"
  assert_equal "${lines[0]}" 255
  assert_equal "${lines[1]}" 3000000
  assert_equal "$stderr" "buffer: --verify cannot read back --tee fifo: it is a FIFO"
  assert_file_not_exists copy
  exec 7>&-
}

@test "buffer: one SIGTERM ends a --verify read-back that waits on its output, and the run fails saying so" {
  cd "$BATS_TEST_TMPDIR"
  # The first connection is rmt; the next one (the read-back) never answers.
  cat >rmt-once <<'EOF_SCRIPT'
#!/bin/sh
if [ -e served ]; then
  touch reading-back
  exec cat >/dev/null
fi
touch served
exec rmt
EOF_SCRIPT
  chmod +x rmt-once
  local remote=localhost:$PWD/r.tap
  # timeout: a read-back that goes on after the signal must fail the test, not hang it.
  RSH="$BATS_TEST_DIRNAME/rsh-standin" timeout -k 5 60 "$BUFFER" -s 10k -i "$SMALL" -o "$remote" \
    --rmt-command "$PWD/rmt-once" --connect-timeout 0 --verify 2>err &
  local pid=$! reader="" i
  for i in $(seq 300); do
    [ -e reading-back ] && reader=$(pgrep -P "$pid" -x buffer) && break
    sleep 0.1
  done
  [ -n "$reader" ] || fail "the read-back did not start: $(cat err)"
  kill -TERM "$reader"
  local ended=0
  wait "$pid" || ended=$?
  run cat err
  assert_equal "$ended" 254
  assert_line "buffer: SIGTERM: stopping; the input has ended, writing out the 0 bytes still queued (0 blocks); a second signal abandons them"
  assert_line "buffer (writer): read-back of $remote stopped by SIGTERM"
  refute_line --partial "every output read back matches"
}

@test "buffer: a --tee output may be a remote host:path, and --verify reads it back through rmt" {
  cd "$BATS_TEST_TMPDIR"
  local remote=localhost:$PWD/r.tap
  run --separate-stderr env RSH="$BATS_TEST_DIRNAME/rsh-standin" \
    "$BUFFER" -s 10k -i "$SMALL" -o copy --tee "$remote" --verify
  assert_success
  check_stderr
  assert_line "buffer (writer): sha256 of $remote: $(sha "$SMALL") (3000000 bytes)"
  assert_line "buffer (writer): every output read back matches"
}

@test "buffer: the summary and --json name the tape file written on a .tap, local or remote, and no file for a plain output" {
  cd "$BATS_TEST_TMPDIR"
  "$MT" -f t.tap vt-create 0
  # No-rewind: each run appends a file after the last one.
  run --separate-stderr "$BUFFER" -s 10k --interval 60 -i "$SMALL" -o t.tap
  assert_success
  assert_regex "${stderr_lines[-1]}" '^summary: .*, peak fill [0-9]+%, written as tape file 0$'
  run --separate-stderr "$BUFFER" -s 10k --json -i "$SMALL" -o t.tap
  jq -e '.event == "summary" and .tape_file == 1' <<<"${stderr_lines[-1]}" >/dev/null || fail "$stderr"
  RSH=$BATS_TEST_DIRNAME/rsh-standin RSH_STANDIN_SERVER=$TK_BIN/rmt \
    run --separate-stderr "$BUFFER" -s 10k --interval 60 -i "$SMALL" -o "localhost:$PWD/t.tap"
  assert_success
  assert_regex "${stderr_lines[-1]}" ', written as tape file 2$'
  run "$MT" -f t.tap status
  assert_line "File number=3, block number=0, partition=0."
  # A plain file has no file numbers: nothing is claimed.
  run --separate-stderr "$BUFFER" -s 10k --json -i "$SMALL" -o plain
  jq -e '.event == "summary" and (has("tape_file") | not)' <<<"${stderr_lines[-1]}" >/dev/null || fail "$stderr"
}

@test "buffer: --hash of 256 KiB blocks matches sha256sum, md5sum and xxhsum, and each volume's when a full medium cuts a block" {
  cd "$BATS_TEST_TMPDIR"
  local kind sum
  for kind in sha256 md5 xxh128; do
    case $kind in sha256) sum=sha256sum ;; md5) sum=md5sum ;; xxh128) sum="xxhsum -H2" ;; esac
    run --separate-stderr "$BUFFER" -s 256k -m 4m -i "$SMALL" -o copy --hash "$kind"
    assert_success
    assert_equal "$(digest_for copy)" "$($sum <"$SMALL" | cut -d' ' -f1)"
  done
  # Volumes of 1000000 bytes end inside a 256 KiB block: each volume's
  # digest has the part of the block that reached it.
  run --separate-stderr env TK_MEDIUM_PATH="$PWD/vol" TK_MEDIUM_BYTES=1000000 \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$BUFFER" -s 256k -m 4m -i "$SMALL" -o "$PWD/vol" --hash sha256 \
    --next-volume 'n=$(ls | grep -c "^vol\."); mv vol vol.$n'
  assert_success
  assert_equal "$(stat -c %s vol.0)" 1000000
  assert_equal "$(digest_for "$PWD/vol, volume 1")" "$(sha vol.0)"
  assert_equal "$(digest_for "$PWD/vol, volume 2")" "$(sha vol.1)"
  assert_equal "$(digest_for "$PWD/vol, volume 3")" "$(sha vol)"
  assert_equal "$(digest_for "$PWD/vol")" "$(sha "$SMALL")"
}
