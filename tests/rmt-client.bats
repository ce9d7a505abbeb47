#!/usr/bin/env bats
# Shows that lib/tape's remote backend (driven by the rmt-client helper)
# starts the remote shell as rsh clients do and distrusts the server: bounded
# reply lines, no read reply larger than asked, F ends the link, errors keep
# their errno (rmt-protocol.md §12.7).
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  cd "$BATS_TEST_TMPDIR" || return 1
  export RSH=$BATS_TEST_DIRNAME/rsh-standin
  export RSH_STANDIN_LOG=$BATS_TEST_TMPDIR/rsh.log
  printf '0123456789' >data
}

# A fake server that answers with the bytes $1 whatever it is asked.
fake_server() {
  printf '%s' "$1" >canned
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
