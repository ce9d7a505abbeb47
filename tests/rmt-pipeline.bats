#!/usr/bin/env bats
# Shows that pipelined rmt between tapekit's client and tapekit's rmt keeps
# tape semantics: a write that fails mid-window cancels every later write in
# flight, so the tools know exactly what reached the tape and --next-volume
# goes on with nothing lost or written twice; read-ahead stops at a filemark,
# so the tape is where plain reads would leave it; and any other server is
# spoken to request by request, as before. Through the rsh stand-in and
# through a real sshd (tests/sshd-helper).
bats_require_minimum_version 1.5.0

load test_helper

setup_file() { start_file_sshd; }

teardown_file() { stop_test_sshd; }

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  export RSH=$BATS_TEST_DIRNAME/rsh-standin RMT=$TK_BIN/rmt
  # Every request and reply the server saw, to show what was pipelined.
  export RSH_STANDIN_SERVER="$TK_BIN/rmt --debug-log $BATS_TEST_TMPDIR/rmt.debug"
  random_mib 1 7 >in
}

# The volume change command: the full tape goes aside as fullN.tap, a blank
# one of the same small capacity takes its place.
change_tape='n=$(ls | grep -c "^full.*tap$"); mv v.tap full$n.tap; mv v.tap.state full$n.tap.state; mt -f v.tap vt-create 200k'

# Reads every volume back, in order, through plain local reads.
read_volumes() {
  local f
  : >back
  for f in full0.tap full1.tap full2.tap full3.tap full4.tap full5.tap full6.tap v.tap; do
    [ -e "$f" ] || continue
    "$MT" -f "$f" rewind
    "$BUFFER" -s 10k -i "$f" >>back
  done
}

@test "pipelined rmt: a full .tap mid-window cancels the writes after it and the count is what the tape holds" {
  "$MT" -f v.tap vt-create 200k
  run --separate-stderr "$BUFFER" -s 10k -i in -o "localhost:$PWD/v.tap"
  assert_equal "$status" 254
  # Whether writes were still in flight when the tape filled depends on
  # timing; the counts must be exact either way ("rmt cancels" below pins
  # the cancelling itself).
  grep -q '^E28$' rmt.debug
  assert_regex "${stderr_lines[-1]}" "^buffer \\(writer\\): [0-9]+ bytes reached localhost:$PWD/v\\.tap, [0-9]+ queued bytes were not written$"
  [[ "${stderr_lines[-1]}" =~ \):\ ([0-9]+)\ bytes\ reached ]]
  local reached=${BASH_REMATCH[1]}
  assert_equal "$((reached % 10240))" 0
  "$MT" -f v.tap rewind
  "$BUFFER" -s 10k -i v.tap >back
  assert_equal "$(stat -c %s back)" "$reached"
  assert_equal "$(sha back)" "$(head -c "$reached" in | sha)"
}

@test "pipelined rmt: buffer --timeout names a server that stopped answering and counts only the writes it acknowledged" {
  "$MT" -f v.tap vt-create 0
  # An endless input at a paced rate: the writer is mid-window when the
  # server stops. timeout: a run that never ends must fail, not hang.
  timeout -k 5 120 "$BUFFER" -s 10k --timeout 3 --output-rate 2m -i /dev/zero \
    -o "localhost:$PWD/v.tap" 2>err &
  local pid=$! reader="" writer="" server="" i
  for i in $(seq 300); do
    reader=$(pgrep -P "$pid" -x buffer) && writer=$(pgrep -P "$reader" -x buffer) &&
      server=$(pgrep -P "$writer" -x rmt) && [ "$(grep -c '^A10240$' rmt.debug)" -gt 100 ] && break
    sleep 0.1
  done
  [ -n "$server" ] || fail "no server: $(cat err)"
  kill -STOP "$server"
  local ended=0
  wait "$pid" || ended=$?
  kill -CONT "$server" 2>/dev/null || true
  assert_equal "$ended" 254
  run cat err
  assert_line --regexp "^buffer \(writer\): the output hung: no block reached localhost:$PWD/v.tap in 3 seconds \(--timeout\); [0-9]+ bytes reached localhost:$PWD/v.tap, up to [0-9]+ more may have \([0-9]+ records? (was|were) in flight, not acknowledged\), [0-9]+ queued bytes were not written$"
  # What the server acknowledged lies in the range said, whatever it had
  # sent when it stopped.
  local line reached doubt acknowledged
  line=$(grep 'the output hung' err)
  reached=$(sed -E 's/.*; ([0-9]+) bytes reached .*/\1/' <<<"$line")
  doubt=$(sed -E 's/.*, up to ([0-9]+) more may have .*/\1/' <<<"$line")
  acknowledged=$(( $(grep -c '^A10240$' rmt.debug) * 10240 ))
  [ "$reached" -le "$acknowledged" ] || fail "$reached bytes said to have reached it, $acknowledged acknowledged"
  [ "$acknowledged" -le $((reached + doubt)) ] || fail "$acknowledged acknowledged, beyond $reached + $doubt"
}

@test "pipelined rmt: buffer --timeout hangs up at once on a server that stopped in the middle of a reply" {
  # The replies pass through head, which lets through those to the first
  # exchange (R0's E9, 23 bytes), the open, the version probe and the
  # pipeline (9 bytes) and to five records (7 each), then two bytes of the
  # sixth's; a byte more comes every 2 s and
  # the reply never ends. A client that waited for it after the watchdog's
  # stop (each byte renewing the wait) would run until the hang guard, 124.
  # cat takes the rest of the replies, so that rmt keeps taking requests
  # and the writer waits for that reply, not for room in the link.
  printf '#!/bin/sh\n%s | { stdbuf -o0 head -c 69; { while sleep 2; do printf 0; done; } & exec cat >/dev/null; }\n' \
    "$TK_BIN/rmt" >stalling-rmt
  chmod +x stalling-rmt
  RSH_STANDIN_SERVER=$PWD/stalling-rmt run --separate-stderr timeout -k 5 60 \
    "$BUFFER" -s 10k --timeout 3 -i /dev/zero -o "localhost:$PWD/out"
  assert_equal "$status" 254
  local hung="^buffer \\(writer\\): the output hung: no block reached localhost:$PWD/out in 3 seconds \\(--timeout\\); 51200 bytes reached localhost:$PWD/out, up to ([0-9]+) more may have \\(([0-9]+) records? (was|were) in flight, not acknowledged\\), [0-9]+ queued bytes were not written\$"
  [[ "${stderr_lines[-1]}" =~ $hung ]] || fail "${stderr_lines[-1]}"
  assert_equal "${BASH_REMATCH[1]}" "$((BASH_REMATCH[2] * 10240))"
}

@test "pipelined rmt: buffer --timeout gives up at once on a remote input whose server stopped in the middle of a record" {
  # As above, reading: the replies stop 200000 bytes in, inside a record,
  # and a byte more comes every 2 s.
  printf '#!/bin/sh\n%s | { stdbuf -o0 head -c 200000; while sleep 2; do printf 0; done; }\n' "$TK_BIN/rmt" >stalling-rmt
  chmod +x stalling-rmt
  random_mib 3 8 >big
  RSH_STANDIN_SERVER=$PWD/stalling-rmt run --separate-stderr timeout -k 5 60 \
    "$BUFFER" -s 10k --timeout 3 -i "localhost:$PWD/big" -o back
  assert_equal "$status" 254
  assert_equal "${stderr_lines[0]}" "buffer (reader): the input hung: no data came from localhost:$PWD/big in 3 seconds (--timeout); what was read is written out"
  # A stop, not a lost connection (which would wait for the shell to end).
  refute_regex "$stderr" "failed to read input"
  assert_equal "$(sha back)" "$(head -c "$(stat -c %s back)" big | sha)"
}

@test "pipelined rmt: --next-volume carries the cancelled writes to the next tape, nothing lost or written twice" {
  "$MT" -f v.tap vt-create 200k
  run --separate-stderr "$BUFFER" -s 10k -i in -o "localhost:$PWD/v.tap" --next-volume "$change_tape"
  assert_success
  [ -e full2.tap ] || fail "expected several volumes: $(ls)"
  read_volumes
  assert_equal "$(stat -c %s back)" "$(stat -c %s in)"
  assert_equal "$(sha back)" "$(sha in)"
}

@test "pipelined rmt: buffer --hash with --next-volume stays pipelined and digests exactly what reached each remote volume" {
  "$MT" -f v.tap vt-create 200k
  run --separate-stderr "$BUFFER" -s 10k -i in -o "localhost:$PWD/v.tap" --hash sha256 --next-volume "$change_tape"
  assert_success
  # The blocks stay queued until acknowledged, so a digest never needs a
  # record taken back: the writes are pipelined with --hash too.
  grep -q '^i "29805" "1"$' rmt.debug
  local f volume=0
  for f in full0.tap full1.tap full2.tap full3.tap full4.tap full5.tap full6.tap v.tap; do
    [ -e "$f" ] || continue
    volume=$((volume + 1))
    "$MT" -f "$f" rewind
    "$BUFFER" -s 10k -i "$f" >"back$volume"
    assert_regex "$stderr" "volume $volume: $(sha "back$volume") \\($(stat -c %s "back$volume") bytes\\)"
  done
  [ "$volume" -ge 3 ] || fail "expected several volumes: $(ls)"
  assert_regex "$stderr" "v\\.tap: $(sha in) \\($(stat -c %s in) bytes\\)"
}

@test "pipelined rmt: a remote -o or --tee without -m or -b gets a queue as large as the pipeline's window, since blocks stay queued until acknowledged" {
  "$MT" -f v.tap vt-create 0
  run --separate-stderr "$BUFFER" -d -s 256k -o "localhost:$PWD/v.tap" </dev/null
  assert_success
  # 64 MiB of 256 KiB blocks, and one for the reader to fill meanwhile.
  assert_regex "$stderr" "buffer: blocks = 257, blocksize = 262144,"
  "$MT" -f t.tap vt-create 0
  run --separate-stderr "$BUFFER" -d -s 256k -o "$PWD/local" --tee "localhost:$PWD/t.tap" </dev/null
  assert_success
  assert_regex "$stderr" "buffer: blocks = 257, blocksize = 262144,"
  # -m (or -b) is the user's choice, and -p and the water marks are shares
  # of the queue 1.19 would have; a local output keeps 1.19's queue.
  run --separate-stderr "$BUFFER" -d -s 256k -m 1m -o "localhost:$PWD/v.tap" </dev/null
  assert_regex "$stderr" "buffer: blocks = 3, blocksize = 262144,"
  run --separate-stderr "$BUFFER" -d -s 256k -p 75 -o "localhost:$PWD/v.tap" </dev/null
  assert_regex "$stderr" "buffer: blocks = 3, blocksize = 262144,"
  run --separate-stderr "$BUFFER" -d -s 256k -o "$PWD/local" </dev/null
  assert_regex "$stderr" "buffer: blocks = 3, blocksize = 262144,"
}

@test "pipelined rmt: a full remote --tee under --keep-going counts only the records it acknowledged, and -o goes on whole" {
  "$MT" -f v.tap vt-create 200k
  # The rmt takes its requests at 1 MB/s, as over a slow link, so that
  # writes are in flight when the tape fills and the server cancels them.
  printf '%s\n' '#!/bin/bash' \
    "exec $TK_BIN/rmt --debug-log $PWD/rmt.debug < <(exec $TK_PLAIN_TEST_BIN/pacer --rate 1m --chunk 4k --partial 1)" \
    >paced-rmt
  chmod +x paced-rmt
  # More than the pipeline's first window, so the tape's answer comes while
  # writing, not only at the close.
  random_mib 4 3 >big
  RSH_STANDIN_SERVER=$PWD/paced-rmt run --separate-stderr "$BUFFER" -s 10k -i big -o "$PWD/out" \
    --tee "localhost:$PWD/v.tap" --keep-going
  assert_failure 254
  grep -q '^E125$' rmt.debug || fail "no write was in flight when the tape filled"
  [[ $stderr =~ "write of data failed: localhost:$PWD/v.tap: No space left on device; "([0-9]+)" bytes reached it" ]] ||
    fail "no drop line: $stderr"
  local reached=${BASH_REMATCH[1]}
  "$MT" -f v.tap rewind
  "$BUFFER" -s 10k -i v.tap >back
  assert_equal "$(stat -c %s back)" "$reached"
  assert_equal "$(sha back)" "$(head -c "$reached" big | sha)"
  assert_equal "$(sha out)" "$(sha big)"
}

@test "pipelined rmt: reblock counts only the records that reached a full remote .tap" {
  "$MT" -f v.tap vt-create 200k
  run --separate-stderr "$REBLOCK" -s 10k -i in -o "localhost:$PWD/v.tap"
  assert_failure
  [[ "$stderr" =~ after\ ([0-9]+)\ full\ records ]] || fail "$stderr"
  local records=${BASH_REMATCH[1]}
  "$MT" -f v.tap rewind
  "$BUFFER" -s 10k -i v.tap >back
  assert_equal "$(stat -c %s back)" "$((records * 10240))"
  assert_equal "$(sha back)" "$(head -c "$((records * 10240))" in | sha)"
}

# Three tar archives, one per file of t.tap, and a local copy of the tape.
three_archives() {
  local i
  for i in 1 2 3; do
    mkdir -p "src$i"
    head -c $((i * 150000)) in >"src$i/part$i"
    tar -c -b 20 -f - -C "src$i" . | "$BUFFER" -s 10k -o "$1/t.tap"
  done
  "$MT" -f "$1/t.tap" rewind
}

# A server whose request stream ends after $1 bytes, as when the link is cut
# in the middle of a record: rmt answers the W it cannot finish with E5 and
# ends. stdbuf: head writes through stdio, which would hold the first
# requests back until it had a buffer's worth, and the open would wait.
cut_requests_server() {
  printf '#!/bin/sh\nstdbuf -o0 head -c %s | %s --debug-log %s\n' "$1" "$TK_BIN/rmt" "$PWD/cut.debug" >cut-rmt
  chmod +x cut-rmt
  rm -f cut.debug out
}

@test "pipelined rmt: a request stream cut mid-record leaves buffer and reblock counting exactly what reached the file" {
  local cut size
  # Within the first record, and after some, with replies still due.
  for cut in 5000 50001 150000 250000; do
    cut_requests_server "$cut"
    RSH_STANDIN_SERVER=$PWD/cut-rmt run --separate-stderr "$BUFFER" -s 10k -i in -o "localhost:$PWD/out"
    assert_equal "$status" 254
    grep -qx 'E5' cut.debug || fail "cut at $cut: rmt did not refuse a record: $(cat cut.debug)"
    size=$(stat -c %s out)
    assert_regex "${stderr_lines[-1]}" "^buffer \\(writer\\): $size bytes reached localhost:$PWD/out, [0-9]+ queued bytes were not written\$"
    # 1.19's line, when the failure met a write, counts the same.
    if [[ "$stderr" == *"total written"* ]]; then
      assert_regex "$stderr" "total written +$((size / 1024))K"
    fi
    assert_equal "$(sha out)" "$(head -c "$size" in | sha)"

    cut_requests_server "$cut"
    RSH_STANDIN_SERVER=$PWD/cut-rmt run --separate-stderr "$REBLOCK" -s 10k -i in -o "localhost:$PWD/out"
    assert_failure
    grep -qx 'E5' cut.debug || fail "cut at $cut: rmt did not refuse a record: $(cat cut.debug)"
    [[ "$stderr" =~ after\ ([0-9]+)\ full\ records ]] || fail "$stderr"
    assert_equal "$((BASH_REMATCH[1] * 10240))" "$(stat -c %s out)"
  done
}

# A server whose replies pass through head: after $1 bytes of them the
# reply channel closes, while rmt goes on writing every record sent to it
# until its input ends. Later connections (a read-back's) reach a plain rmt,
# or with $2 "down", nothing: the shell fails as ssh does for a host gone.
# Background jobs read /dev/null unless told otherwise: hence fd 4.
cut_replies_server() {
  cat >cut-replies <<EOF
#!/bin/sh
if [ -e "$PWD/cut.once" ]; then
  [ "$2" != down ] || exit 255
  exec "$TK_BIN/rmt"
fi
: >"$PWD/cut.once"
exec 3>&1 4<&0 >/dev/null
"$TK_BIN/rmt" <&4 3>&- 4<&- | { stdbuf -o0 head -c $1 >&3; exec cat >/dev/null 3>&-; } 4<&- &
exec 3>&- 4<&-
wait
EOF
  chmod +x cut-replies
  rm -f cut.once out
}

@test "pipelined rmt: when the reply channel closes, buffer says what was sent unconfirmed and a read-back counts it exactly" {
  # The replies to the first exchange (R0's E9, 23 bytes), the open, the
  # version probe and the pipeline (9 bytes) and to 13 records (7 each)
  # come; the rest are written but never told.
  cut_replies_server 123
  RSH_STANDIN_SERVER=$PWD/cut-replies run --separate-stderr "$BUFFER" -s 10k -i in -o "localhost:$PWD/out"
  assert_equal "$status" 254
  local size
  size=$(stat -c %s out)
  assert_regex "$stderr" "localhost:$PWD/out: [1-9][0-9]* more bytes were sent; the server did not confirm them; a read-back found them all"
  refute_regex "$stderr" "lost the last"
  assert_regex "${stderr_lines[-1]}" "^buffer \\(writer\\): $size bytes reached localhost:$PWD/out, [0-9]+ queued bytes were not written\$"
  assert_equal "$(sha out)" "$(head -c "$size" in | sha)"

  head -c 1024000 in >in.whole
  cut_replies_server 123
  RSH_STANDIN_SERVER=$PWD/cut-replies run --separate-stderr "$REBLOCK" -s 10k -i in.whole -o "localhost:$PWD/out"
  assert_failure
  assert_regex "$stderr" "the server did not confirm them, and a read-back found [0-9]+ of those bytes in the file"
  [[ "$stderr" =~ after\ ([0-9]+)\ full\ records ]] || fail "$stderr"
  assert_equal "$((BASH_REMATCH[1] * 10240))" "$(stat -c %s out)"
}

@test "pipelined rmt: when the reply channel closes and nothing can be read back, buffer and reblock count the confirmed writes and say the rest were sent, not lost" {
  cut_replies_server 123 down
  RSH_STANDIN_SERVER=$PWD/cut-replies run --separate-stderr "$BUFFER" -s 10k -i in -o "localhost:$PWD/out"
  assert_equal "$status" 254
  refute_regex "$stderr" "lost the last|read-back"
  local sent_re="localhost:$PWD/out: ([0-9]+) more bytes were sent; the server did not confirm them"
  [[ "$stderr" =~ $sent_re ]] || fail "$stderr"
  local sent=${BASH_REMATCH[1]}
  # 13 records were confirmed; every one sent reached the file.
  assert_regex "${stderr_lines[-1]}" "^buffer \\(writer\\): 133120 bytes reached localhost:$PWD/out, up to $sent more may have \\([0-9]+ records? (was|were) in flight, not acknowledged\\), [0-9]+ queued bytes were not written\$"
  assert_equal "$(stat -c %s out)" "$((133120 + sent))"

  # reblock counts the confirmed records, and says how many more were sent.
  head -c 1024000 in >in.whole
  cut_replies_server 123 down
  RSH_STANDIN_SERVER=$PWD/cut-replies run --separate-stderr "$REBLOCK" -s 10k -i in.whole -o "localhost:$PWD/out"
  assert_failure
  local more_re="; 13 records are on the tape, ([0-9]+) more \(([0-9]+) bytes\) were sent; the server did not confirm them after 13 full records of 10240 bytes: "
  [[ "$stderr" =~ $more_re ]] || fail "$stderr"
  assert_equal "$(stat -c %s out)" "$((133120 + BASH_REMATCH[2]))"
}

@test "pipelined rmt: read-ahead stops at the filemark, so mt status after buffer -i shows what plain reads leave" {
  three_archives "localhost:$PWD"
  "$MT" -f "localhost:$PWD/t.tap" fsf 1
  cp t.tap plain.tap
  "$MT" -f plain.tap fsf 1
  "$BUFFER" -s 10k -i "localhost:$PWD/t.tap" >second
  # Read ahead, then cancelled at the filemark.
  grep -q '^E125$' rmt.debug
  mkdir out2 && tar -x -f second -C out2
  cmp src2/part2 out2/part2
  # The same reads, plain and local: st's answers are what the image gives.
  "$BUFFER" -s 10k -i plain.tap >/dev/null
  run "$MT" -f "localhost:$PWD/t.tap" status
  assert_success
  assert_output "$("$MT" -f plain.tap status)"
  assert_line "File number=2, block number=0, partition=0."
  mkdir out3
  "$BUFFER" -s 10k -i "localhost:$PWD/t.tap" | tar -x -f - -C out3
  cmp src3/part3 out3/part3
}

@test "pipelined rmt: rmt-tar and rmt-dump are spoken to request by request and still round-trip" {
  local server
  for server in /usr/sbin/rmt-tar /usr/sbin/rmt-dump; do
    # A recording server: what the client sent, in order.
    printf '#!/bin/sh\ntee -a %s/sent | %s\n' "$PWD" "$server" >recorder
    chmod +x recorder
    rm -f sent plain.out
    RSH_STANDIN_SERVER=$PWD/recorder "$BUFFER" -s 10k -i in -o "localhost:$PWD/plain.out"
    cmp in plain.out
    RSH_STANDIN_SERVER=$PWD/recorder "$BUFFER" -s 10k -i "localhost:$PWD/plain.out" >back
    cmp in back
    # Never an acknowledgement: no pipeline was agreed.
    ! grep -aq 'i29806' sent || fail "$server was sent an acknowledgement"
  done
  # rmt-dump speaks v1, so it was asked and refused; rmt-tar never was asked.
  grep -aq 'i29805' sent
}

@test "pipelined rmt: over ssh, --next-volume and read-ahead keep every byte and the tape position" {
  needs_sshd ssh
  # Few connections: each ssh login is the slow part of this test.
  head -c 450000 in >in.part
  "$MT" -f v.tap vt-create 200k
  "$BUFFER" -s 10k -i in.part -o "root@localhost:$PWD/v.tap" --next-volume "$change_tape" 2>err
  [ -e full1.tap ] || fail "expected several volumes: $(ls)"
  read_volumes
  assert_equal "$(sha back)" "$(sha in.part)"
  three_archives "$PWD"
  "$MT" -f t.tap fsf 1
  cp t.tap plain.tap
  "$MT" -f plain.tap fsf 1
  "$BUFFER" -s 10k -i "root@localhost:$PWD/t.tap" >second
  "$BUFFER" -s 10k -i plain.tap >/dev/null
  assert_equal "$("$MT" -f t.tap status)" "$("$MT" -f plain.tap status)"
  mkdir out2 out3
  tar -x -f second -C out2
  cmp src2/part2 out2/part2
  "$BUFFER" -s 10k -i "root@localhost:$PWD/t.tap" | tar -x -f - -C out3
  cmp src3/part3 out3/part3
}

@test "pipelined rmt: records read ahead but not taken are spaced back over before the next request" {
  local i
  # More records than the read-ahead window reaches after three reads (it
  # at most doubles with each), so the read-ahead stops short of the filemark.
  for i in $(seq 40); do head -c 100 /dev/zero | tr '\0' "$((i % 10))"; done >records
  "$MT" -f t.tap vt-create 0
  rmt-client t.tap w $(for i in $(seq 40); do echo write 100; done) <records
  "$MT" -f t.tap rewind
  cp t.tap plain.tap
  # Three records taken, more read ahead; status and the next read must see
  # the tape after the third record, as plain reads leave it.
  run rmt-client "localhost:$PWD/t.tap" r ahead read 100 read 100 read 100 status read 100
  assert_success
  grep -q '^I "4"' rmt.debug  # bsr (protocol v1 numbering)
  assert_output "$(rmt-client plain.tap r read 100 read 100 read 100 status read 100)"
  assert_output --partial "file 0 block 3 "
}

# The server's side alone: requests in, the exact replies out.
serve_raw() {
  printf '%s' "$1" >requests
  "$RMT" --log none <requests >replies
  printf '%s' "$2" >expected
  cmp expected replies || { od -c replies | head -20; return 1; }
}

@test "pipelined rmt: rmt cancels the writes after a failed one until acknowledged, and only once agreed" {
  printf 'ab' >f
  # A write to a file open for reading fails; the next one is cancelled
  # unwritten, the one after the acknowledgement is carried out (and fails).
  serve_raw $'Of\n0\ni29805\n1\nW3\nabcW3\nabci29806\n0\nW3\nabcC\n' \
    $'A0\nA1\nE9\nBad file descriptor\nE125\nWrite cancelled after a failed write\nA1\nE9\nBad file descriptor\nA0\n'
  # Without the agreement nothing is cancelled; a later version is answered 1.
  serve_raw $'Of\n0\nW3\nabcW3\nabci29805\n7\n' \
    $'A0\nE9\nBad file descriptor\nE9\nBad file descriptor\nA1\n'
}

@test "pipelined rmt: rmt cancels the reads after one that returned 0 until acknowledged" {
  printf 'ab' >f
  serve_raw $'Of\n0\ni29805\n1\nR2\nR2\nR2\ni29806\n0\nR2\nOf\n0\nR2\nR2\nR2\n' \
    $'A0\nA1\nA2\nabA0\nE125\nRead cancelled after the end of a read-ahead\nA1\nA0\nA0\nA2\nabA0\nA0\n'
}

@test "pipelined rmt: a server killed mid-run is named after buffer 1.19's line, with how its remote shell ended and what is on the tape" {
  # The server is killed once a MiB is in the file; its remote shell then
  # ends with status 9.
  printf '#!/bin/bash\n%s --log none <&0 &\npid=$!\nexec 2>/dev/null\nwhile [ "$(stat -c %%s %s 2>/dev/null || echo 0)" -lt 1048576 ]; do sleep 0.05; done\nkill -9 $pid\nwait $pid\nexit 9\n' \
    "$TK_BIN/rmt" "$PWD/out" >dying-rmt
  chmod +x dying-rmt
  RSH_STANDIN_SERVER=$PWD/dying-rmt run --separate-stderr timeout 120 \
    "$BUFFER" -s 10k -i /dev/zero -o "localhost:$PWD/out"
  assert_equal "$status" 254
  assert_equal "${stderr_lines[0]}" "buffer (writer): write of data failed: localhost:$PWD/out: Input/output error"
  assert_equal "${stderr_lines[2]}" "buffer (writer): localhost:$PWD/out: connection lost; the remote shell $RSH for localhost ended with exit status 9"
  # What it counts as reached is in the file, and the file holds no more
  # than that and the writes it says may have reached it.
  [[ "${stderr_lines[-1]}" =~ ^buffer\ \(writer\):\ ([0-9]+)\ bytes\ reached\ [^,]*(,\ up\ to\ ([0-9]+)\ more\ may\ have)? ]] ||
    fail "${stderr_lines[-1]}"
  local reached=${BASH_REMATCH[1]} doubt=${BASH_REMATCH[3]:-0} size
  size=$(stat -c %s out)
  [ "$reached" -le "$size" ] && [ "$size" -le $((reached + doubt)) ] ||
    fail "$size bytes in the file; $reached said to have reached it, up to $doubt more"
}
