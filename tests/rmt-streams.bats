#!/usr/bin/env bats
# Shows that --streams N joins N remote shells into one rmt session on one
# tape: records reach the tape in the order written and come back in order
# (through the rsh stand-in, and through a real sshd behind the WAN emulator
# with an authorized_keys forced command "rmt --allow ..."); a join without
# the session's secret, or from another user, is refused and logged; a
# stream killed mid-transfer (the first one too, writing or reading) ends
# the run with the stream named and the exact count of records on the tape
# or read, leaving nothing running; a stream that cannot log in is left
# out with a warning; and servers without streams are spoken to over one
# connection, as before.
# bats' run sets $status, $output, $stderr and $lines, which the kill
# helpers read in the test that calls them (each @test is one subshell).
# shellcheck disable=SC2154,SC2030,SC2031
bats_require_minimum_version 1.5.0

load test_helper

setup_file() {
  export TAPES=$BATS_FILE_TMPDIR/tapes
  mkdir -p "$TAPES"
  export FORCED_LOG=$BATS_FILE_TMPDIR/forced.log
  start_file_sshd "$TK_BIN/rmt --allow $TAPES --log $FORCED_LOG"
  # A short round trip: the emulator's delays, not its timing, are the point.
  wan_file_sshd 10 200m 1m
}

teardown_file() { stop_test_sshd; }

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  export RSH=$BATS_TEST_DIRNAME/rsh-standin RMT=$TK_BIN/rmt
  export RSH_STANDIN_SERVER="$TK_BIN/rmt --log $BATS_TEST_TMPDIR/rmt.log"
  random_mib 1 11 >in
}

# needs_sshd, through the forced rmt --allow command behind the WAN
# emulator, with the forced command's log emptied for this test.
needs_forced_sshd() {
  needs_sshd ssh-forced-wan
  : >"$FORCED_LOG"
}

# Waits (bounded, generously: a loaded machine is slow to reap) until
# nothing of this file's sessions is left: no rmt of its forced command
# (the --allow directory is this file's own) and no ssh with its key. The
# meeting point is an abstract socket only an rmt of the session holds, and
# rmt starts no children, so no process left means no meeting point left
# (the machine's socket table would show every session, not this file's).
assert_nothing_left() {
  local _
  for _ in $(seq 1 600); do
    if ! pgrep -f "rmt --allow $TAPES" >/dev/null && ! pgrep -f -- "-i $SSHDIR/forced_key" >/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  pgrep -af "rmt --allow $TAPES|$SSHDIR/forced_key" >&2
  fail "processes of the session were left behind"
}

@test "streams: four streams write records in order and read them back byte for byte" {
  # Records of different contents in a known order: any reordering shows.
  "$BUFFER" -s 10k --streams 4 -i in -o "localhost:$PWD/s.tap"
  grep -q 'streams="4 streams"' rmt.log
  "$MT" -f s.tap rewind
  "$BUFFER" -s 10k -i s.tap >plain
  assert_equal "$(sha plain)" "$(sha in)"
  "$MT" -f s.tap rewind
  "$BUFFER" -s 10k --streams 4 -i "localhost:$PWD/s.tap" >back
  assert_equal "$(sha back)" "$(sha in)"
  # Read-ahead still stops at the filemark: the tape is after it.
  run "$MT" -f s.tap status
  assert_line "File number=1, block number=0, partition=0."
}

@test "streams: the open, the pipeline and the streams go out in one request, one round trip instead of three" {
  # One write(2) holding O, i29805 and i29807: the client did not wait for
  # the open's reply before asking the rest. The trace is of the client
  # alone: strace leaves each remote shell at its exec.
  ASAN_OPTIONS=detect_leaks=0 strace -f -b execve -qq -e trace=write -s 300 -o trace \
    "$BUFFER" -s 10k --streams 4 -i in -o "localhost:$PWD/s.tap"
  grep -q 'write([0-9]*, "O[^"]*s\.tap\\n[^"]*\\ni29805\\n1\\ni29807\\n4\\n"' trace
  "$MT" -f s.tap rewind
  ASAN_OPTIONS=detect_leaks=0 strace -f -b execve -qq -e trace=write -s 300 -o trace \
    "$BUFFER" -s 10k --streams 4 -i "localhost:$PWD/s.tap" >back
  grep -q 'write([0-9]*, "O[^"]*s\.tap\\n0 O_RDONLY\\ni29805\\n1\\ni29807\\n4\\n"' trace
  assert_equal "$(sha back)" "$(sha in)"
  # One stream writing a .tap: the open and the pipeline together.
  ASAN_OPTIONS=detect_leaks=0 strace -f -b execve -qq -e trace=write -s 300 -o trace \
    "$BUFFER" -s 10k -i in -o "localhost:$PWD/one.tap"
  grep -q 'write([0-9]*, "O[^"]*one\.tap\\n[^"]*\\ni29805\\n1\\n"' trace
  "$MT" -f one.tap rewind
  "$BUFFER" -s 10k -i one.tap >plain
  assert_equal "$(sha plain)" "$(sha in)"
}

@test "streams: after C the client closes every link before the reply comes, so the shells end as it travels" {
  # The trace of the client alone: C written on one link, then each of the
  # four links' write ends closed, all before the read that takes C's A0.
  ASAN_OPTIONS=detect_leaks=0 strace -f -b execve -qq -e trace=write,close,read -s 40 -o trace \
    "$BUFFER" -s 10k --streams 4 -i in -o "localhost:$PWD/s.tap"
  local c_fd
  c_fd=$(sed -n 's/^[0-9]* *write(\([0-9]*\), "C\\n", 2).*/\1/p' trace)
  [ -n "$c_fd" ]
  run awk -v fd="$c_fd" '
    $0 ~ "write\\(" fd ", \"C\\\\n\"" { after_c = 1; next }
    after_c && /close\(/ { closed++ }
    after_c && /read\([0-9]+, "A0\\n"/ { print closed; exit }' trace
  assert_output 4
  "$MT" -f s.tap rewind
  "$BUFFER" -s 10k -i s.tap >back
  assert_equal "$(sha back)" "$(sha in)"
}

@test "streams: reblock --streams 3 writes and reads in order" {
  "$REBLOCK" -s 4k --streams 3 -i in -o "localhost:$PWD/r.tap"
  grep -q 'streams="3 streams"' rmt.log
  "$MT" -f r.tap rewind
  "$REBLOCK" -s 4k --streams 3 -i "localhost:$PWD/r.tap" -o back
  assert_equal "$(sha back)" "$(sha in)"
}

@test "streams: --streams 1 uses one connection; a server without streams gets the data over the first, the others let go" {
  export RSH_STANDIN_LOG=$PWD/calls
  "$BUFFER" -s 10k --streams 1 -i in -o "localhost:$PWD/one.tap"
  assert_equal "$(wc -l <calls)" 1
  run ! grep -q 'i29807' rmt.log
  : >calls
  # The other shells log in beside the first, before the server is known.
  # Each waits until all four have come (or 10 s), since the client ends the
  # others as soon as it knows the server, which could otherwise come before
  # a loaded machine ran their first line. The first (lowest process id:
  # the client starts it first) serves; the others stay in a login that
  # never reads its input, so only the client ending them ends them.
  cat >rmt-dump-first <<EOF
#!/bin/sh
echo \$\$ >>"$PWD/servers"
i=0
while [ "\$(wc -l <"$PWD/servers")" -lt 4 ] && [ \$i -lt 1000 ]; do sleep 0.01; i=\$((i + 1)); done
[ "\$\$" != "\$(sort -n "$PWD/servers" | head -1)" ] || exec /usr/sbin/rmt-dump "\$@"
exec sleep 30
EOF
  chmod +x rmt-dump-first
  RSH_STANDIN_SERVER=$PWD/rmt-dump-first "$BUFFER" -s 10k --streams 4 -i in -o "localhost:$PWD/plain.out"
  assert_equal "$(wc -l <calls)" 4
  cmp in plain.out
  # Every server the shells started is gone, checked by process id (other
  # suites running beside this one start rmt-dump too), with a moment for
  # one that saw its input end to exit.
  assert_equal "$(wc -l <servers)" 4
  local pid tries
  for pid in $(cat servers); do
    for ((tries = 0; tries < 50; tries++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    run ! kill -0 "$pid"
  done
}

@test "streams: a remote shell that cannot log in is left out with one warning naming it, the others carry the backup" {
  # The third remote shell started is refused, as ssh is by a host that
  # turns a login away; the first is the connection that opens the tape.
  # The four start together, so "third" is by process id (the order the
  # client started them), once all four have come.
  cat >refusing-rsh <<EOF
#!/bin/sh
echo "\$\$ \$*" >>"$PWD/calls"
while [ "\$(wc -l <"$PWD/calls")" -lt 4 ]; do sleep 0.01; done
third=\$(cut -d' ' -f1 "$PWD/calls" | sort -n | sed -n 3p)
if [ "\$\$" = "\$third" ]; then
  echo "ssh: connect to host localhost port 22: Connection refused" >&2
  exit 255
fi
exec "$BATS_TEST_DIRNAME/rsh-standin" "\$@"
EOF
  chmod +x refusing-rsh
  run --separate-stderr "$BUFFER" -s 10k --streams 4 --rsh-command="$PWD/refusing-rsh" \
    -i in -o "localhost:$PWD/p.tap"
  assert_success
  assert_equal "$(wc -l <calls)" 4
  assert_regex "$stderr" "^ssh: connect to host localhost port 22: Connection refused
buffer: warning: open localhost:$PWD/p\\.tap: stream [234] of 4 could not join \\(connection lost; the remote shell $PWD/refusing-rsh for localhost ended with exit status 255\\); going on with 3 streams$"
  grep -q 'streams="3 of 4 streams"' rmt.log
  "$MT" -f p.tap rewind
  "$BUFFER" -s 10k -i p.tap >back
  assert_equal "$(sha back)" "$(sha in)"
  # And reading back, with the same shell refusing again.
  rm calls
  "$MT" -f p.tap rewind
  "$BUFFER" -s 10k --streams 4 --rsh-command="$PWD/refusing-rsh" -i "localhost:$PWD/p.tap" >back2 2>err
  grep -q "^buffer: warning: open localhost:$PWD/p\\.tap: stream [234] of 4 could not join" err
  assert_equal "$(sha back2)" "$(sha in)"
}

@test "streams: a remote shell whose login hangs is left out after --connect-timeout, ended, and the others carry the backup" {
  # As above, the third shell started, by process id; this one never
  # answers (a login stuck on a password prompt or a dead route).
  cat >stuck-rsh <<EOF
#!/bin/sh
echo "\$\$ \$*" >>"$PWD/calls"
while [ "\$(wc -l <"$PWD/calls")" -lt 4 ]; do sleep 0.01; done
third=\$(cut -d' ' -f1 "$PWD/calls" | sort -n | sed -n 3p)
[ "\$\$" != "\$third" ] || exec sleep 600
exec "$BATS_TEST_DIRNAME/rsh-standin" "\$@"
EOF
  chmod +x stuck-rsh
  run --separate-stderr "$BUFFER" -s 10k --streams 4 --connect-timeout 2 --rsh-command="$PWD/stuck-rsh" \
    -i in -o "localhost:$PWD/p.tap"
  assert_success
  assert_regex "$stderr" "^buffer: warning: open localhost:$PWD/p\\.tap: stream [234] of 4 could not join \\(no answer within 2 s \\(--connect-timeout\\)\\); going on with 3 streams$"
  grep -q 'streams="3 of 4 streams"' rmt.log
  # The stuck shell is ended (by its process id: the same test may run in
  # another suite beside this one).
  run ! kill -0 "$(cut -d' ' -f1 calls | sort -n | sed -n 3p)"
  "$MT" -f p.tap rewind
  "$BUFFER" -s 10k -i p.tap >back
  assert_equal "$(sha back)" "$(sha in)"
}

@test "streams: a host that refuses every login is told once, not once a stream" {
  # The other shells log in beside the first: what they say is held back
  # until the first connection stands, and dropped with them when it falls.
  cat >down-rsh <<'EOF'
#!/bin/sh
echo "ssh: connect to host $1 port 22: Connection refused" >&2
exit 255
EOF
  chmod +x down-rsh
  run --separate-stderr "$BUFFER" -s 10k --streams 4 --rsh-command="$PWD/down-rsh" \
    -i in -o "localhost:$PWD/p.tap"
  assert_equal "$status" 255
  assert_equal "$(grep -c 'Connection refused' <<<"$stderr")" 1
  assert_regex "$stderr" "connection lost; the remote shell $PWD/down-rsh for localhost ended with exit status 255"
}

@test "streams: a full .tap mid-window with streams: --next-volume carries on, nothing lost or written twice" {
  # shellcheck disable=SC2016 # run by buffer's shell, which expands it
  local change='n=$(ls | grep -c "^full.*tap$"); mv v.tap full$n.tap; mv v.tap.state full$n.tap.state; mt -f v.tap vt-create 200k'
  "$MT" -f v.tap vt-create 200k
  head -c 700000 in >part
  run --separate-stderr "$BUFFER" -s 10k --streams 3 -i part -o "localhost:$PWD/v.tap" --next-volume "$change"
  assert_success
  [ -e full1.tap ] || fail "expected several volumes: $(ls)"
  local f
  for f in full0.tap full1.tap full2.tap full3.tap v.tap; do
    [ -e "$f" ] || continue
    "$MT" -f "$f" rewind
    "$BUFFER" -s 10k -i "$f" >>back
  done
  assert_equal "$(sha back)" "$(sha part)"
}

@test "streams: --streams takes 1 to 16 or auto, and names a bad value" {
  run --separate-stderr "$BUFFER" --streams 0 -i in -o /dev/null
  assert_failure
  assert_equal "$stderr" "buffer: invalid --streams '0': 1 to 16, or auto"
  run --separate-stderr "$BUFFER" --streams 17 -i in -o /dev/null
  assert_failure
  assert_equal "$stderr" "buffer: invalid --streams '17': 1 to 16, or auto"
  run --separate-stderr "$REBLOCK" --streams many -i in -o /dev/null
  assert_equal "$status" 2
  assert_regex "$stderr" "--streams"
  run --separate-stderr "$REBLOCK" --streams 17 -i in -o /dev/null
  assert_equal "$status" 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid --streams '17': 1 to 16, or auto"
  # 16, the most, is taken (a local output has no use for it, and copies).
  run --separate-stderr "$BUFFER" -s 10k --streams 16 -i in -o b16
  assert_success
  assert_equal "$stderr" ""
  cmp in b16
  run --separate-stderr "$REBLOCK" -s 10k --streams 16 -i in -o r16
  assert_success
  assert_equal "$stderr" ""
  cmp in r16
  # auto over a link of no delay is one stream: the session is logged,
  # without a streams= field.
  "$BUFFER" -s 10k --streams auto -i in -o "localhost:$PWD/a.tap"
  grep -q 'a.tap' rmt.log
  run -1 grep -q 'streams=' rmt.log
}

@test "streams: auto sizes by the least of several round trips, not one delayed by a busy machine" {
  # The server holds back its second reply (the first identify exchange) by
  # 0.3 s, as a scheduling delay on a loaded machine might: taken alone,
  # that round trip would ask for the most streams auto gives.
  cat >slow-first-identify <<EOF
#!/bin/bash
"$TK_BIN/rmt" --log "$PWD/rmt.log" |
  { IFS= read -r a; printf '%s\n' "\$a"; IFS= read -r b; sleep 0.3; printf '%s\n' "\$b"; exec cat; }
EOF
  chmod +x slow-first-identify
  export RSH_STANDIN_SERVER=$PWD/slow-first-identify
  "$BUFFER" -s 10k --streams auto -i in -o "localhost:$PWD/a.tap"
  grep -q 'a.tap' rmt.log
  # Not the 8 the delayed exchange alone asks for. (On a quiet machine the
  # others ask for 1; on a loaded one, the stand-in's rmt, a grandchild whose
  # CPU waits auto cannot see, may make them ask for 2 or 3.)
  run ! grep -q 'streams="8 streams"' rmt.log
  "$MT" -f a.tap rewind
  "$BUFFER" -s 10k -i a.tap | cmp - in
}

# The remote shell's server from here on: tapekit's rmt, logging to rmt.log,
# whose identify exchanges each take 0.1 s, which as the link's round trip
# asks for the most streams auto gives. Only identify replies (A29803) are
# held back, and at the first other reply the rest passes as it is: a joined
# stream may carry a reply with binary data (buffer asks the drive for its
# TapeAlert page), which a line-by-line copy would wait in for ever.
serve_identify_late() {
  cat >slow-identify <<EOF
#!/bin/bash
"$TK_BIN/rmt" --log "$PWD/rmt.log" |
  { IFS= read -r a; printf '%s\n' "\$a"; for k in 1 2 3; do IFS= read -r b; [ "\$b" = A29803 ] || { printf '%s\n' "\$b"; exec cat; }; sleep 0.1; printf '%s\n' "\$b"; done; exec cat; }
EOF
  chmod +x slow-identify
  export RSH_STANDIN_SERVER=$PWD/slow-identify
}

@test "streams: auto does not count the time the remote shell waited for a CPU as the link's: a loaded host gets no more streams" {
  serve_identify_late
  # The link's 0.1 s asks for 8 streams ...
  "$BUFFER" -s 10k --streams auto -i in -o "localhost:$PWD/link.tap"
  grep -q 'streams="8 streams"' rmt.log || { cat rmt.log; false; }
  # ... but when the remote shell spent it waiting, runnable, for a CPU
  # (the starved shim's /proc/PID/schedstat), it is the host's delay.
  : >rmt.log
  LD_PRELOAD=$TK_TEST_LIB/starved.so "$BUFFER" -s 10k --streams auto -i in -o "localhost:$PWD/cpu.tap"
  grep -q 'cpu.tap' rmt.log
  run ! grep -q 'streams=' rmt.log
  "$MT" -f cpu.tap rewind
  "$BUFFER" -s 10k -i cpu.tap | cmp - in
}

@test "streams: auto does not take its own waits for a CPU while the reply was on its way for the host's delay" {
  # Under the shim the client loses its CPU for 60 ms, waiting runnable,
  # each time it writes a request (as on a loaded machine, where the woken
  # reader takes it) or yields: counted from the request's start, that is
  # 60 ms of the link's 0.1 s taken for CPU delay, and 6 streams rather than
  # the 8 the link needs. The reply came no later for it.
  serve_identify_late
  LD_PRELOAD=$TK_TEST_LIB/preempted.so "$BUFFER" -s 10k --streams auto -i in -o "localhost:$PWD/y.tap"
  grep -q 'streams="8 streams"' rmt.log || { cat rmt.log; false; }
  "$MT" -f y.tap rewind
  "$BUFFER" -s 10k -i y.tap | cmp - in
}

# An owner session waiting for two more streams, its log in owner.log: its
# join token in $token. Input goes through fd 7.
start_owner() {
  mkfifo owner.in
  exec 7<>owner.in
  "$RMT" --log "$PWD/owner.log" <owner.in >owner.out 7>&- &
  printf 'O%s\n1 O_WRONLY|O_CREAT|O_TRUNC\ni29805\n1\ni29807\n3\n' "$PWD/f" >&7
  local _
  for _ in $(seq 1 100); do
    [ "$(wc -c <owner.out)" -ge 59 ] && break
    sleep 0.05
  done
  token=$(tail -c 49 owner.out)
  [[ $token =~ ^[0-9a-f]{16}:[0-9a-f]{32}$ ]] || fail "no token: $(cat owner.out)"
}

@test "streams: a join with a wrong secret is refused (E13) and logged by both sides" {
  start_owner
  run --separate-stderr "$RMT" --log "$PWD/joiner.log" <<<"i29808
1:${token%%:*}:0123456789abcdef0123456789abcdef"
  exec 7>&-
  assert_success
  assert_equal "$output" $'E13\nJoin refused by the session'
  # The owner logs the refusal after it has sent it: its log is read once
  # it has ended (nobody joined, so the session went on with one stream).
  wait
  grep -q 'join refused: a wrong secret (uid [0-9]* pid [0-9]*)' owner.log
  grep -q 'streams="join refused: join: session [0-9a-f]* refused stream 2' joiner.log
}

@test "streams: a join from another user is refused and logged, the secret not sent" {
  [ "$(id -u)" = 0 ] || skip "needs root to run a joiner as another user"
  command -v setpriv >/dev/null || skip "setpriv missing"
  start_owner
  run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups "$RMT" --log none <<<"i29808
1:$token"
  exec 7>&-
  assert_equal "$output" $'E13\nJoin refused by the session'
  wait  # for the owner's log, as above
  grep -q 'join refused: another user: the session is uid 0'"'"'s (uid 65534 pid [0-9]*)' owner.log
}

@test "streams: over ssh through the WAN emulator, one forced rmt --allow command serves every stream" {
  needs_forced_sshd
  # Few logins: each is the slow part of this test.
  "$BUFFER" -s 10k --streams 3 -i in -o "root@localhost:$TAPES/w.tap"
  grep -q 'streams="3 streams"' "$FORCED_LOG"
  assert_equal "$(grep -c 'streams="joined as stream' "$FORCED_LOG")" 2
  "$MT" -f "$TAPES/w.tap" rewind
  "$BUFFER" -s 10k --streams 2 -i "root@localhost:$TAPES/w.tap" >back
  assert_equal "$(sha back)" "$(sha in)"
  assert_nothing_left
}

# The ssh of stream $1 (the order they started in: 1 is the first
# connection, the one that opened the tape) once it has carried records
# (a login alone reads about 40 kB): its pid in $victim.
find_victim() {
  local which=$1 read=0 _
  victim=''
  for _ in $(seq 1 300); do
    victim=$(pgrep -f -- "-i $SSHDIR/forced_key" | sort -n | sed -n "${which}p") &&
      read=$(awk '/^rchar/ { print $2 }' "/proc/$victim/io" 2>/dev/null) &&
      [ "${read:-0}" -gt 120000 ] && return 0
    sleep 0.1
  done
  fail "no records went through stream $which"
}

# The buffer started in the background as $1 ends within a minute (no
# hang), with status 254.
ends_with_254_soon() {
  run timeout 60 tail --pid="$1" -f /dev/null
  assert_success
  run wait "$1"
  assert_equal "$status" 254
}

# Writes 2 MiB through three streams, killing the ssh of stream $1 midway:
# the run must end within seconds naming it, and the tape must hold exactly
# the records the message counts.
kill_while_writing() {
  # A tape of its own: a virtual drive stays where the last session left it.
  local which=$1 tape=k$1.tap
  random_mib 2 12 >in2
  mkfifo feed
  "$BUFFER" -s 10k --streams 3 -i feed -o "root@localhost:$TAPES/$tape" 2>err 3>&- &
  local buffer_pid=$!
  exec 6>feed
  head -c 500000 in2 >&6
  find_victim "$which"
  kill -KILL "$victim"
  tail -c +500001 in2 >&6 || true
  exec 6>&-
  ends_with_254_soon "$buffer_pid"
  run cat err
  assert_regex "$output" "stream $which of 3 lost \\(connection lost; the remote shell $SSHDIR/ssh-forced-wan for localhost ended with killed by signal 9\\); ([0-9]+) records? (are|is) on the tape"
  [[ $output =~ \;\ ([0-9]+)\ record ]]
  local records=${BASH_REMATCH[1]}
  assert_line --regexp "^buffer \(writer\): $((records * 10240)) bytes reached root@localhost:$TAPES/k$which\.tap, [0-9]+ queued bytes were not written$"
  grep -q "end=\"stream $which of 3 lost after $records records" "$FORCED_LOG"
  "$MT" -f "$TAPES/$tape" rewind
  "$BUFFER" -s 10k -i "$TAPES/$tape" >back
  assert_equal "$(sha back)" "$(head -c "$((records * 10240))" in2 | sha)"
  assert_nothing_left
}

# Reads 8 MiB back through three streams into a pipe read slowly, killing
# the ssh of stream $1 midway: the run must end within seconds naming it
# and how many records were read, and have passed on exactly those.
kill_while_reading() {
  local which=$1 tape=r$1.tap
  # More than the read-ahead and buffer's memory hold, so that the kill
  # finds records still to come.
  random_mib 8 12 >in2
  "$BUFFER" -s 10k -i in2 -o "$TAPES/$tape"
  "$MT" -f "$TAPES/$tape" rewind
  mkfifo out
  "$BUFFER" -s 10k --streams 3 -i "root@localhost:$TAPES/$tape" -o out 2>err 3>&- &
  local buffer_pid=$!
  exec 6<out
  dd bs=10240 count=20 iflag=fullblock status=none <&6 >got
  find_victim "$which"
  kill -KILL "$victim"
  cat <&6 >>got
  exec 6<&-
  ends_with_254_soon "$buffer_pid"
  run cat err
  assert_regex "$output" "read root@localhost:$TAPES/r$which\\.tap: stream $which of 3 lost \\(connection lost; the remote shell $SSHDIR/ssh-forced-wan for localhost ended with killed by signal 9\\); ([0-9]+) records? (were|was) read"
  [[ $output =~ \;\ ([0-9]+)\ record ]]
  local records=${BASH_REMATCH[1]}
  [ "$records" -lt 819 ] || fail "all $records records were read before the kill"
  assert_equal "$(sha got)" "$(head -c "$((records * 10240))" in2 | sha)"
  assert_nothing_left
}

@test "streams: a session whose server died before it could say what the tape holds gives one count, a range, on every line" {
  "$MT" -f v.tap vt-create 0
  # An endless input at a paced rate, so that writes are in flight on every
  # stream. timeout: a run that never ends must fail, not hang.
  timeout -k 5 120 "$BUFFER" -s 10k --streams 3 --output-rate 2m -i /dev/zero \
    -o "localhost:$PWD/v.tap" 2>err 3>&- &
  local pid=$! reader="" writer="" i
  for i in $(seq 300); do
    reader=$(pgrep -P "$pid" -x buffer) && writer=$(pgrep -P "$reader" -x buffer) &&
      [ "$(pgrep -c -P "$writer" -x rmt)" -ge 3 ] && [ "$(stat -c %s v.tap)" -gt 1000000 ] && break
    sleep 0.1
  done
  [ -n "$writer" ] || fail "buffer did not start: $(cat err)"
  # The first connection's rmt holds the session: stopped, then killed, it
  # answers nothing more, not even what the tape holds.
  local server sent_before sent
  server=$(pgrep -o -P "$writer" -x rmt)
  kill -STOP "$server"
  sent_before=$(awk '/^wchar/ {print $2}' "/proc/$writer/io")
  for i in $(seq 300); do
    sent=$(awk '/^wchar/ {print $2}' "/proc/$writer/io")
    [ $((sent - sent_before)) -gt 40000 ] && break
    sleep 0.1
  done
  kill -KILL "$server"
  local ended=0
  wait "$pid" || ended=$?
  assert_equal "$ended" 254
  run cat err
  assert_regex "$output" "stream [0-9] of 3 lost \\([^)]*\\); at least ([0-9]+) records are on the tape, up to ([0-9]+) more may be"
  [[ $output =~ at\ least\ ([0-9]+)\ records\ are\ on\ the\ tape,\ up\ to\ ([0-9]+)\ more ]]
  local records=${BASH_REMATCH[1]} more=${BASH_REMATCH[2]}
  # buffer's own count is the same range, not the lower end alone.
  assert_line --regexp "^buffer \\(writer\\): $((records * 10240)) bytes reached localhost:$PWD/v\\.tap, up to $((more * 10240)) more may have \\($more records? (was|were) in flight, not acknowledged\\), [0-9]+ queued bytes were not written\$"
  refute_line --partial "lost the last"
}

@test "streams: one ssh of three killed mid-transfer ends the run naming it, with the exact records on the tape" {
  needs_forced_sshd
  kill_while_writing 2
}

@test "streams: losing the first connection, the one that opened the tape, while writing is named with the exact records on the tape" {
  needs_forced_sshd
  kill_while_writing 1
}

@test "streams: one ssh of three killed while reading ends the run naming it, with the records read passed on" {
  needs_forced_sshd
  kill_while_reading 2
}

@test "streams: losing the first connection while reading ends the run naming it, with the records read passed on" {
  needs_forced_sshd
  kill_while_reading 1
}
