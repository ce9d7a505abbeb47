#!/usr/bin/env bats
# Shows that the WAN emulator (tests/helpers/wanrelay) relays faithfully in
# function: bytes arrive intact both ways, an end of input crosses as a
# half-close, many connections share it, a bad option is refused by name and
# SIGTERM ends it leaving nothing behind. Its timing (round trip, rate,
# window) is shown by bench/bench-wan's calibration, never asserted here.
# Left out of the sanitizer pass (suite time): the sanitizer pass checks the remote backend and the streams in rmt-streams.bats and rmt-client.bats; here the time goes to logins.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  pids=()
}

teardown() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}

# Waits (bounded) for a helper to write its port to the file $1.
wait_for_port() {
  local _
  for _ in $(seq 1 100); do
    [ -s "$1" ] && return 0
    sleep 0.05
  done
  echo "no port in $1" >&2
  return 1
}

# wanprobe's server on a free port: $SERVER_PORT.
start_server() {
  wanprobe serve server.port >server.log 2>&1 3>&- &
  pids+=($!)
  wait_for_port server.port
  SERVER_PORT=$(cat server.port)
}

# The relay in front of $SERVER_PORT with the options given: $RELAY_PORT, $RELAY_PID.
start_relay() {
  wanrelay "$@" --port-file relay.port 0 "$SERVER_PORT" >relay.out 2>relay.err 3>&- &
  RELAY_PID=$!
  pids+=("$RELAY_PID")
  wait_for_port relay.port
  RELAY_PORT=$(cat relay.port)
}

@test "wanrelay: bytes arrive intact both ways, and each end of input ends the other side" {
  start_server
  start_relay --rtt 10 --rate 200m --window 256k
  random_mib 3 21 >in
  # The echo ends only when the server saw the client's end of input and the
  # server's own end came back: a lost half-close hangs until the timeout.
  timeout 30 wanprobe echo "$RELAY_PORT" <in >out
  assert_equal "$(sha out)" "$(sha in)"
}

@test "wanrelay: prints the port it picked and writes the same to its port file" {
  start_server
  start_relay --rtt 1
  assert_equal "$(cat relay.out)" "$RELAY_PORT"
  [ "$RELAY_PORT" -gt 0 ]
}

@test "wanrelay: twelve connections at once each get their own bytes back" {
  start_server
  start_relay --rtt 10 --rate 100m --window 64k
  local i clients=()
  random_mib 2 7 | split -b 174763 - in.
  for i in in.*; do
    timeout 30 wanprobe echo "$RELAY_PORT" <"$i" >"out${i#in}" 3>&- &
    clients+=($!)
  done
  for i in "${clients[@]}"; do wait "$i"; done
  for i in in.*; do
    assert_equal "$(sha "out${i#in}")" "$(sha "$i")"
  done
  assert_equal "$(cat out.* | sha)" "$(random_mib 2 7 | sha)"
}

@test "wanrelay: a connection to a port nobody listens on is closed, not left hanging" {
  SERVER_PORT=$(wanprobe serve x.port >/dev/null 2>&1 3>&- & pid=$!; wait_for_port x.port && cat x.port; kill $pid)
  start_relay --rtt 1
  run timeout 10 wanprobe echo "$RELAY_PORT" </dev/null
  assert [ "$status" -ne 124 ]
}

@test "wanrelay: an unknown option is refused by name with status 2" {
  run --separate-stderr wanrelay --bogus 5 0 1
  assert_equal "$status" 2
  assert_equal "${stderr_lines[0]}" "wanrelay: unknown option --bogus"
}

@test "wanrelay: a malformed rate, window or round trip is refused naming the option" {
  local args
  for args in "--rate 10x" "--window lots" "--rtt -5" "--window 0"; do
    # shellcheck disable=SC2086
    run --separate-stderr wanrelay $args 0 1
    assert_equal "$status" 2
    [[ "${stderr_lines[0]}" == "wanrelay: "*"${args%% *}"* ]] || {
      echo "$args: ${stderr_lines[0]}"
      return 1
    }
  done
}

@test "wanrelay: SIGTERM ends it at once, open connections and all, and frees its port" {
  start_server
  start_relay --rtt 10
  # A client that stays connected, sending nothing: its input is a FIFO
  # the test holds open.
  mkfifo idle
  timeout 30 wanprobe echo "$RELAY_PORT" <idle >/dev/null 3>&- &
  local client=$!
  pids+=("$client")
  exec 5>idle
  sleep 0.2
  kill -TERM "$RELAY_PID"
  run timeout 10 tail --pid="$RELAY_PID" -f /dev/null
  assert_equal "$status" 0
  # The port is closed: a connection is refused.
  run ! bash -c "exec 3<>/dev/tcp/127.0.0.1/$RELAY_PORT"
  # The client saw its connection end instead of waiting for its timeout.
  run timeout 10 tail --pid="$client" -f /dev/null
  exec 5>&-
  assert_equal "$status" 0
  [ -z "$(cat relay.err)" ]
}

@test "wanrelay: ssh through it (sshd-helper wan) carries a stream and its end of input" {
  local sshdir=$BATS_TEST_TMPDIR/sshd rc=0
  "$BATS_TEST_DIRNAME/sshd-helper" start "$sshdir" >sshd.out 2>&1 || rc=$?
  [ "$rc" != 77 ] || skip "$(cat sshd.out)"
  assert_equal "$rc" 0
  run "$BATS_TEST_DIRNAME/sshd-helper" wan "$sshdir" 10 200m 1m
  assert_equal "$status" 0
  random_mib 1 5 >in
  # cat on the far side ends only when ssh passed on the end of input.
  run timeout 60 bash -c "'$sshdir/ssh-wan' localhost -l root cat <in >out"
  "$BATS_TEST_DIRNAME/sshd-helper" stop "$sshdir"
  assert_equal "$status" 0
  assert_equal "$(sha out)" "$(sha in)"
}
