#!/usr/bin/env bats
# Shows that our rmt serves GNU tar and cpio over real OpenSSH, both as a
# plain command and as an authorized_keys forced command (the deployment of
# rmt.8), and that tapekit's remote backend reaches it over ssh too. The
# suite starts its own sshd on 127.0.0.1 (tests/sshd-helper) and stops it.
# Left out of the sanitizer pass (suite time): the sanitizer pass checks the remote backend in rmt-streams.bats and rmt-client.bats; here the time goes to logins.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0

load test_helper

setup_file() {
  mkdir -p "$BATS_FILE_TMPDIR/tapes"
  start_file_sshd "$TK_BIN/rmt --allow $BATS_FILE_TMPDIR/tapes --log $BATS_FILE_TMPDIR/sshd/rmt.log"
}

teardown_file() { stop_test_sshd; }

setup() {
  tk_trace_test_lines_only
  needs_sshd
  cd "$BATS_TEST_TMPDIR" || return 1
  TAPES=$BATS_FILE_TMPDIR/tapes
  mkdir -p src/sub
  random_mib 1 11 | head -c 500000 >src/a.bin
  echo hello >src/sub/c.txt
  find src -exec touch -h -d @86400 {} +
}

# tar over ssh, running our rmt by path on the far side.
star() {
  tar --rsh-command="$SSHDIR/ssh" --rmt-command="$TK_BIN/rmt" --sort=name --owner=0 --group=0 "$@"
}

@test "ssh: tar -c and -x over ssh round-trip byte for byte" {
  star -cf "root@localhost:$PWD/a.tar" -C src .
  star -cf local.tar -C src .
  cmp local.tar a.tar
  mkdir out
  star -xf "root@localhost:$PWD/a.tar" -C out
  diff -r src out
}

@test "ssh: tar -t over ssh lists a .tap written over ssh" {
  star -cf "root@localhost:$PWD/t.tap" -C src .
  mt -f t.tap rewind
  run star -tf "root@localhost:$PWD/t.tap"
  assert_equal "$status" 0
  assert_output "$(star -cf - -C src . | tar -tf -)"
}

@test "ssh: cpio -o and -i over a forced-command key round-trip byte for byte" {
  find src | sort | cpio --quiet -o -H crc --block-size=64 --rsh-command="$SSHDIR/ssh-forced" \
    -O "root@localhost:$TAPES/c.cpio"
  find src | sort | cpio --quiet -o -H crc --block-size=64 >local.cpio
  cmp local.cpio "$TAPES/c.cpio"
  mkdir out
  (cd out && cpio --quiet -id -H crc --block-size=64 --rsh-command="$SSHDIR/ssh-forced" \
    -I "root@localhost:$TAPES/c.cpio")
  diff -r src out/src
}

@test "ssh: the forced command ignores the requested command and logs it" {
  tar --rsh-command="$SSHDIR/ssh-forced" -cf "root@localhost:$TAPES/f.tar" -C src sub
  # The server logs its session when it sees the end of input, which may be
  # a moment after tar has exited: wait for the line (bounded).
  local i
  for i in $(seq 100); do
    grep -q "f.tar" "$SSHDIR/rmt.log" && break
    sleep 0.05
  done
  run grep "f.tar" "$SSHDIR/rmt.log"
  assert_output --partial "peer=ssh:127.0.0.1"
  assert_output --partial 'command="/usr/sbin/rmt"'
  assert_output --partial "open=[\"$TAPES/f.tar\" 1 O_WRONLY|O_CREAT|O_NOCTTY|O_NOFOLLOW]"
}

@test "ssh: the forced command refuses a path outside its --allow tree" {
  run tar --rsh-command="$SSHDIR/ssh-forced" -cf "root@localhost:$PWD/x.tar" -C src sub
  assert_equal "$status" 2
  assert_output --partial "Cannot open: Permission denied"
  assert_file_not_exists x.tar
}

@test "ssh: mt and buffer reach a .tap over ssh through the remote backend" {
  random_mib 1 12 >data
  RSH=$SSHDIR/ssh RMT=$TK_BIN/rmt buffer -o "root@localhost:$PWD/b.tap" <data
  run env RSH="$SSHDIR/ssh" RMT="$TK_BIN/rmt" mt -f "root@localhost:$PWD/b.tap" status
  assert_equal "$status" 0
  assert_output --partial "File number=1, block number=0"
  RSH=$SSHDIR/ssh RMT=$TK_BIN/rmt mt -f "root@localhost:$PWD/b.tap" rewind
  RSH=$SSHDIR/ssh RMT=$TK_BIN/rmt buffer -i "root@localhost:$PWD/b.tap" >back
  cmp data back
}

@test "ssh: a .tap name over ssh on rmt-dump is refused and nothing is created there" {
  echo data >data
  RSH=$SSHDIR/ssh RMT=/usr/sbin/rmt-dump run buffer -o "root@localhost:$PWD/o.tap" <data
  assert_equal "$status" 255
  assert_output --partial "the rmt on localhost (/usr/sbin/rmt-dump) is not tapekit's"
  assert_file_not_exists o.tap
  RSH=$SSHDIR/ssh RMT=/usr/sbin/rmt-dump buffer --plain-remote -o "root@localhost:$PWD/o.tap" <data
  cmp data o.tap
}

@test "ssh: an ssh that never gets through times out and leaves neither ssh nor its proxy behind" {
  # A ProxyCommand that never connects stands for a host that never answers;
  # ssh killed before it connected would leave it running on its own.
  local mark=tk-proxy-$$-$BATS_TEST_NUMBER
  printf '#!/bin/bash\necho $$ >%s\nexec -a %s sleep 1000\n' "$PWD/proxy.pid" "$mark" >proxy
  chmod +x proxy
  run timeout 60 mt --rsh-command="ssh -F none -o BatchMode=yes -o ProxyCommand=$PWD/proxy" \
    --connect-timeout=1 -f "nohost.invalid:/dev/nst0" status
  # Killed is enough: whether init reaps orphans is the machine's business,
  # so a zombie counts as gone.
  local left=0 state
  state=$(sed 's/.*) //' "/proc/$(cat proxy.pid)/stat" 2>/dev/null | cut -d' ' -f1)
  if [ -n "$state" ] && [ "$state" != Z ]; then
    left=1
    kill -9 "$(cat proxy.pid)"
  fi
  assert_equal "$status" 1
  assert_output --partial "no answer from remote shell ssh for nohost.invalid within 1 s"
  assert_equal "$left" 0
  run pgrep -f "ProxyCommand=$PWD/proxy"
  assert_equal "$status" 1
}
