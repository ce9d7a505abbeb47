#!/usr/bin/env bats
# Shows that lib/tape's remote backend (driven by the rmt-client helper)
# starts the remote shell as rsh clients do and distrusts the server: bounded
# reply lines, no read reply larger than asked, F ends the link, errors keep
# their errno (rmt-protocol.md §12.7).
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  export RSH=$BATS_TEST_DIRNAME/rsh-standin
  export RSH_STANDIN_LOG=$BATS_TEST_TMPDIR/rsh.log
  printf '0123456789' >data
}

# A fake server that answers with the bytes $1 whatever it is asked.
# A server that answers with the canned replies $1, after the answer every
# server gives the client's first request (R0, before any open: E9).
fake_server() {
  printf 'E9\nBad file descriptor\n%s' "$1" >canned
  printf '#!/bin/sh\ncat %s\nexec cat >/dev/null\n' "$PWD/canned" >fake
  chmod +x fake
  export RSH_STANDIN_SERVER=$PWD/fake
}

@test "remote backend: user@host runs RSH host -l user /etc/rmt" {
  run rmt-client "root@localhost:$PWD/data" r read 4
  assert_equal "$status" 0
  assert_output 0123
  assert_equal "$(cat rsh.log)" "localhost -l root /etc/rmt"
}

@test "remote backend: RSH may carry arguments and RMT names the server" {
  printf '#!/bin/sh\necho "$@" >%s/args\nshift\nexec %s "$@"\n' "$PWD" "$RSH" >wrap
  chmod +x wrap
  RSH="$PWD/wrap -x" RMT=/usr/sbin/rmt run rmt-client "localhost:$PWD/data" r read 4
  assert_equal "$status" 0
  assert_output 0123
  assert_equal "$(cat args)" "-x localhost /usr/sbin/rmt"
}

@test "remote backend: a newline in the remote path is refused before connecting" {
  run rmt-client "localhost:$PWD/da"$'\n'"ta" r read 4
  assert_equal "$status" 1
  assert_output --partial "No such file or directory"
  assert_file_not_exists rsh.log
}

@test "remote backend: a read reply larger than asked is refused" {
  fake_server "A0"$'\n'"A100"$'\n'"$(head -c 100 /dev/zero | tr '\0' x)"
  run rmt-client localhost:x r read 10
  assert_equal "$status" 1
  assert_output "rmt-client: read localhost:x: server sent 100 bytes for 10: Input/output error"
}

@test "remote backend: a negative count in a read reply is a protocol error" {
  # A-1 is a status field's "unknown" (rmt-dump's sF and sB), never a count.
  fake_server "A0"$'\n'"A-1"$'\n'
  run rmt-client localhost:x r read 10
  assert_equal "$status" 1
  assert_output "rmt-client: read localhost:x: protocol error: negative count in reply (A-1): Protocol error: Input/output error"
}

@test "remote backend: status takes a v1 server's negative fields: -1 is unknown, a 32-bit register its bits" {
  # O, the version probe and GNU's framing question (A1 twice from a v1
  # server), then sE sT sD sR sf sF sB as a 32-bit rmt-dump sends them at end
  # of data: mt_dsreg 0x93000000 and mt_gstat 0x81010000 (EOF ONLINE
  # IM_REP_EN) as negative longs, file and block -1; then tapekit's identify
  # request, which rmt-dump refuses (no compression field is asked); then C.
  fake_server "A0"$'\n'"A1"$'\n'"A1"$'\n'"A0"$'\n'"A114"$'\n'"A-1828716544"$'\n'"A0"$'\n'"A-2130640896"$'\n'"A-1"$'\n'"A-1"$'\n'"E22"$'\n'"Invalid argument"$'\n'"A0"$'\n'
  run rmt-client localhost:x r status
  assert_equal "$status" 0
  assert_output "type 114 file -1 block -1 size 0 density 147 EOF ONLINE"
}

@test "remote backend: an overlong reply line is a protocol error" {
  fake_server "A0"$'\n'"A$(printf '%0100d' 5)"$'\n'
  run rmt-client localhost:x r read 10
  assert_equal "$status" 1
  assert_output --partial "protocol error: reply line too long"
}

@test "remote backend: an E reply keeps the server's errno and message line" {
  fake_server "A0"$'\n'"E28"$'\n'"No space left on device"$'\n'"A0"$'\n'
  run rmt-client localhost:x w write 5 <data
  assert_equal "$status" 1
  assert_output "rmt-client: write localhost:x: No space left on device"
}

@test "remote backend: an F reply ends the connection" {
  fake_server "A0"$'\n'"F5"$'\n'"going away"$'\n'
  run rmt-client localhost:x r read 10
  assert_equal "$status" 1
  assert_output --partial "server gave up: going away"
}

@test "remote backend: a server's message is shown with its control bytes escaped, so it cannot forge a line or a terminal title" {
  # OSC 0 (set the window title), BEL, CR, DEL and a byte that is no UTF-8.
  fake_server "A0"$'\n'"F5"$'\n'$'\e]0;owned\agoing away\r\x7f\xff'$'\n'
  run --separate-stderr rmt-client localhost:x r read 10
  assert_equal "$status" 1
  assert_equal "$stderr" 'rmt-client: read localhost:x: server gave up: \033]0;owned\007going away\015\177\377: Input/output error'
}

@test "remote backend: reblock quotes a server's message with its control bytes escaped too" {
  fake_server "A0"$'\n'"F5"$'\n'$'\e]0;owned\agoing away\r'$'\n'
  run --separate-stderr "$REBLOCK" -i localhost:x -o out
  assert_equal "$status" 1
  assert_equal "$stderr" 'reblock: pipeline localhost:x: server gave up: \033]0;owned\007going away\015: Input/output error'
}

@test "remote backend: a W reply shorter than the record is ENOSPC" {
  fake_server "A0"$'\n'"A3"$'\n'"A0"$'\n'
  run rmt-client localhost:x w write 5 <data
  assert_equal "$status" 1
  assert_output "rmt-client: write localhost:x: No space left on device"
}

@test "remote backend: a server that hangs up after C (GNU rmt) closes cleanly" {
  RSH_STANDIN_SERVER=/usr/sbin/rmt-tar run rmt-client "localhost:$PWD/data" r read 4
  assert_equal "$status" 0
  assert_output 0123
}

@test "remote backend: a failed remote shell is a clear open error" {
  RSH=/bin/false run rmt-client localhost:x r read 4
  assert_equal "$status" 1
  assert_output --partial "rmt-client: open localhost:x: connection lost"
}

@test "remote backend: seeks land where asked on our rmt, rmt-dump and rmt-tar" {
  local server
  for server in "$TK_BIN/rmt --log none" /usr/sbin/rmt-dump /usr/sbin/rmt-tar; do
    RSH_STANDIN_SERVER=$server run rmt-client "localhost:$PWD/data" r \
      seek 2 0 seek 3 1 read 2 seek -1 2 read 5 seek 1 0 read 1
    assert_equal "$status" 0
    assert_output $'2\n5\n569\n91\n1'
  done
}

# A remote shell that never answers: it adds its pid to hang.pid, then
# sleeps under a name unique to this test, so that a leftover is easy to find.
hanging_shell() {
  HANG_MARK=tk-hang-$$-$BATS_TEST_NUMBER
  printf '#!/bin/bash\n%s\necho $$ >>%s\nexec -a %s sleep 1000\n' \
    "${1:-}" "$PWD/hang.pid" "$HANG_MARK" >hang
  chmod +x hang
}

teardown() {
  # Only on failure (the old code left them running): the shells, by pid.
  local pid
  if [ -s hang.pid ]; then
    while read -r pid; do
      if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    done <hang.pid
  fi
  return 0
}

@test "remote backend: a .tap name on rmt-dump or rmt-tar is refused and nothing is created there" {
  local server
  for server in /usr/sbin/rmt-dump /usr/sbin/rmt-tar; do
    run "$BUFFER" --rmt-command="$server" -o "localhost:$PWD/oops.tap" <data
    assert_equal "$status" 255
    assert_output --partial "open localhost:$PWD/oops.tap: the rmt on localhost ($server) is not tapekit's, so $PWD/oops.tap would be a plain file there, not a virtual tape"
    assert_output --partial "Wrong medium type"
    run "$MT" --rmt-command="$server" -f "localhost:$PWD/oops.tap" status
    assert_equal "$status" 1
    assert_output --partial "the rmt on localhost ($server) is not tapekit's"
    RMT=$server run "$REBLOCK" -o "localhost:$PWD/oops.tap" <data
    assert_equal "$status" 1
    assert_output --partial "--plain-remote"
    assert_file_not_exists oops.tap
    # Other names are plain files on every rmt, as before.
    "$BUFFER" --rmt-command="$server" -o "localhost:$PWD/plain.tar" <data
    cmp data plain.tar
    rm plain.tar
  done
}

@test "remote backend: --plain-remote writes a .tap name on rmt-dump as the plain file it is there" {
  "$BUFFER" --plain-remote --rmt-command=/usr/sbin/rmt-dump -o "localhost:$PWD/b.tap" <data
  cmp data b.tap
  RMT=/usr/sbin/rmt-dump "$REBLOCK" --plain-remote -s 4 -i data -o "localhost:$PWD/r.tap"
  cmp data r.tap
  run "$MT" --plain-remote --rmt-command=/usr/sbin/rmt-dump -f "localhost:$PWD/r.tap" rewind
  assert_equal "$status" 2  # rmt-dump: no tape operations on a file
  assert_output --partial "Inappropriate ioctl"
}

@test "remote backend: a .tap name on tapekit's rmt is still a virtual tape, with the right op numbers" {
  # The identity question comes before O; O resets the server's numbering,
  # so a rewind must not go out as v1's 5 (a Linux weof) afterwards.
  "$BUFFER" -o "localhost:$PWD/t.tap" <data
  "$MT" -f "localhost:$PWD/t.tap" rewind
  run "$MT" -f t.tap status
  assert_equal "$status" 0
  assert_output --partial "File number=0, block number=0"
  run "$MT" -f t.tap fsf 2
  assert_equal "$status" 2  # one filemark only: the rewind wrote none
  "$MT" -f t.tap rewind
  "$BUFFER" -i "localhost:$PWD/t.tap" >back
  cmp data back
}

@test "remote backend: a remote shell that never answers times out, naming the host, and is not left behind" {
  hanging_shell
  # mt, reblock and buffer wait out their 1 s side by side, not one after
  # another; each must have ended its shell by the time it exits.
  timeout 60 "$MT" --rsh-command="$PWD/hang" --connect-timeout 1 -f "farhost:$PWD/x" status >mt.out 2>&1 &
  local mt=$!
  TAPEKIT_CONNECT_TIMEOUT=1 RSH=$PWD/hang timeout 60 "$REBLOCK" -i farhost:/dev/nst0 -o out >reblock.out 2>&1 &
  local reblock=$!
  timeout 60 "$BUFFER" --rsh-command="$PWD/hang" --connect-timeout=1 -o farhost:/dev/nst0 <data >buffer.out 2>&1 &
  local buffer=$!
  status=0
  wait "$mt" || status=$?
  assert_equal "$status" 1
  run cat mt.out
  assert_output "mt: open farhost:$PWD/x: no answer from remote shell $PWD/hang for farhost within 1 s (--connect-timeout or TAPEKIT_CONNECT_TIMEOUT sets the limit): Connection timed out"
  status=0
  wait "$reblock" || status=$?
  assert_equal "$status" 1
  run cat reblock.out
  assert_output --partial "no answer from remote shell $PWD/hang for farhost within 1 s"
  status=0
  wait "$buffer" || status=$?
  assert_equal "$status" 255
  run cat buffer.out
  assert_output --partial "no answer from remote shell $PWD/hang for farhost within 1 s"
  # All three shells started, and none is left.
  assert_equal "$(wc -l <hang.pid)" 3
  run pgrep -f "$HANG_MARK"
  assert_equal "$status" 1
}

@test "remote backend: a closed standard input or output does not take the remote shell's pipes (mt <&-, buffer >&-)" {
  # With 0 or 1 closed, the pipes to the remote shell would be opened on
  # them, and the shell started with its input closed.
  export RSH_STANDIN_SERVER=$TK_BIN/rmt
  "$MT" -f "$PWD/t.tap" weof
  run "$MT" -f "localhost:$PWD/t.tap" status <&-
  assert_success
  assert_line "File number=1, block number=0, partition=0."
  run "$BUFFER" -s 4k -i data -o "localhost:$PWD/copy" >&-
  assert_success
  assert_equal "$(cat copy)" 0123456789
  run "$REBLOCK" -s 4k -i "localhost:$PWD/data" -o copy2 <&- >&-
  assert_success
  assert_equal "$(cat copy2)" 0123456789
}

@test "remote backend: a remote shell that ignores SIGTERM is killed after the connect timeout" {
  hanging_shell 'trap "" TERM'
  run timeout 60 "$MT" --rsh-command="$PWD/hang" --connect-timeout 1 -f farhost:/dev/nst0 status
  assert_equal "$status" 1
  assert_output --partial "within 1 s"
  run pgrep -f "$HANG_MARK"
  assert_equal "$status" 1
}

@test "remote backend: a TAPEKIT_CONNECT_TIMEOUT that is no number of seconds is refused" {
  TAPEKIT_CONNECT_TIMEOUT=soon run "$REBLOCK" -i "localhost:$PWD/data" -o out
  assert_equal "$status" 1
  assert_output "reblock: TAPEKIT_CONNECT_TIMEOUT='soon': not a number of seconds from 0 to 86400: Invalid argument"
  assert_file_not_exists rsh.log
  run "$MT" --connect-timeout=-1 -f "localhost:$PWD/data" status
  assert_equal "$status" 1
  assert_output --partial "--connect-timeout"
}

# A remote "device" that opens only when this test says: a FIFO, which the
# server's open waits on until a writer comes.
slow_device() {
  mkfifo slow
  export RMT="$TK_BIN/rmt --log none"
}

# Lets any server still waiting in the FIFO's open go (a writer that opens
# and closes at once: O_RDWR does not wait).
release_slow_device() {
  local fd
  exec {fd}<>slow
  exec {fd}>&-
}

@test "remote backend: the connect timeout ends at rmt's first answer; the device then opens as slowly as it must, told on a terminal" {
  slow_device
  # reblock on a terminal (script(1)): its standard error is the terminal.
  script -qefc "$REBLOCK --connect-timeout 1 -s 10 -i localhost:$PWD/slow -o got; echo status=\$?" \
    terminal.log </dev/null >/dev/null &
  local watcher=$!
  # Far past the connect timeout: the line that comes after 10 s of waiting.
  wait_for_line_while terminal.log "waiting for localhost:$PWD/slow to open, 1[0-9] s" "$watcher"
  # The drive is ready: the open returns, the data follows (bounded: a
  # client that gave up left no reader to take it).
  timeout 60 bash -c "printf '0123456789' >slow" || true
  wait "$watcher"
  run cat terminal.log
  assert_line --partial "waiting for localhost:$PWD/slow to open, 1"
  assert_line --partial "status=0"
  assert_equal "$(cat got)" 0123456789
}

@test "remote backend: --open-timeout gives up on a device that does not open, naming the option; without a terminal nothing is said while waiting" {
  slow_device
  run --separate-stderr timeout 60 "$REBLOCK" --open-timeout 1 -i "localhost:$PWD/slow" -o got
  release_slow_device
  assert_equal "$status" 1
  assert_equal "$stderr" "reblock: open localhost:$PWD/slow: the device did not open within 1 s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit): Connection timed out"
  TAPEKIT_OPEN_TIMEOUT=1 run --separate-stderr timeout 60 "$MT" -f "localhost:$PWD/slow" fsf 1
  release_slow_device
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: open localhost:$PWD/slow: the device did not open within 1 s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit): Connection timed out"
  run --separate-stderr "$BUFFER" --open-timeout x -i "localhost:$PWD/slow"
  assert_equal "$status" 255
  [[ $stderr == *"--open-timeout"* ]]
}
