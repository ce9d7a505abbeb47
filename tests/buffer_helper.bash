# Helpers for the buffer suites (buffer.bats, buffer-outputs.bats).

# System V segments and semaphores (what buffer 1.19 leaked): none may be left.
ipc_snapshot() { { ipcs -m -s | grep -E '^0x' || true; } | sort; }

# Starts buffer (with any extra options given) on a stalled input, a FIFO
# held open by us on fd 7, and sets READER and WRITER to its processes'
# pids; closing fd 7 ends its input.
start_stalled_buffer() {
  mkfifo "$BATS_TEST_TMPDIR/in"
  exec 7<>"$BATS_TEST_TMPDIR/in"
  ipc_snapshot >"$BATS_TEST_TMPDIR/ipc.before"
  # timeout: a survivor that never notices must fail the test, not hang it.
  timeout 30 reap "$BUFFER" -s 1k "$@" -i "$BATS_TEST_TMPDIR/in" -o "$BATS_TEST_TMPDIR/out" \
    2>"$BATS_TEST_TMPDIR/err" 3>"$BATS_TEST_TMPDIR/reaped" 7>&- &
  REAP_PID=$!
  printf 'some data' >&7
  local i
  for i in $(seq 100); do
    READER=$(pgrep -P "$(pgrep -P "$REAP_PID" -x reap)" -x buffer) &&
      WRITER=$(pgrep -P "$READER" -x buffer) && break
    sleep 0.1
  done
  [ -n "$WRITER" ] || fail "buffer did not start"
}
