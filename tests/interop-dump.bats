#!/usr/bin/env bats
# Shows that dump and restore work through our rmt: a level 0 dump of an ext4
# image (made with mke2fs -d, attached to a loop device but never mounted),
# restore -t and -r, onto a plain file and onto a SIMH .tap image, and that
# dump's reopen after C on the same connection is served.
# Left out of the sanitizer pass (suite time): the sanitizer pass checks the server with rmt.bats and the rmt fuzzer; dump adds no path of ours.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0

load test_helper

setup_file() {
  local dir=$BATS_FILE_TMPDIR
  mkdir -p "$dir/src/sub"
  random_mib 1 6 | head -c 300000 >"$dir/src/a.bin"
  echo hello >"$dir/src/sub/c.txt"
  mke2fs -q -F -t ext4 -d "$dir/src" "$dir/fs.img" 8m
  # dump takes a regular file for a directory of the mounted root, so the
  # image is attached to a loop device (not mounted).
  losetup -f --show "$dir/fs.img" >"$dir/loopdev" 2>/dev/null || rm -f "$dir/loopdev"
}

teardown_file() {
  if [ -s "$BATS_FILE_TMPDIR/loopdev" ]; then losetup -d "$(cat "$BATS_FILE_TMPDIR/loopdev")"; fi
}

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  [ -s "$BATS_FILE_TMPDIR/loopdev" ] || skip "no loop device for the ext4 image (needs root)"
  DEV=$(cat "$BATS_FILE_TMPDIR/loopdev")
  SRC=$BATS_FILE_TMPDIR/src
  export RSH=$BATS_TEST_DIRNAME/rsh-standin
  export RSH_STANDIN_LOG=$BATS_TEST_TMPDIR/rsh.log
}

@test "interop-dump: dump -0 through rmt finishes, including its reopen after C" {
  run dump -0 -f "localhost:$PWD/d.dump" "$DEV"
  assert_equal "$status" 0
  assert_output --partial "DUMP IS DONE"
  # dump asks for /etc/rmt with -l USER, as a real rsh would run it.
  run cat rsh.log
  assert_output --regexp "^localhost -l [a-z_]+ /etc/rmt$"
}

@test "interop-dump: restore -t through rmt lists the dumped files" {
  dump -0 -f "localhost:$PWD/d.dump" "$DEV" 2>/dev/null
  run restore -t -f "localhost:$PWD/d.dump"
  assert_equal "$status" 0
  assert_output --partial "./a.bin"
  assert_output --partial "./sub/c.txt"
}

@test "interop-dump: restore -r through rmt rebuilds the tree byte for byte" {
  dump -0 -f "localhost:$PWD/d.dump" "$DEV" 2>/dev/null
  mkdir out
  (cd out && restore -r -f "localhost:$PWD/../d.dump")
  cmp "$SRC/a.bin" out/a.bin
  cmp "$SRC/sub/c.txt" out/sub/c.txt
}

@test "interop-dump: a dump onto a .tap through rmt ends in a filemark and restores" {
  dump -0 -f "localhost:$PWD/d.tap" "$DEV" 2>/dev/null
  run mt -f d.tap status
  assert_output --partial "File number=1, block number=0"
  mt -f d.tap rewind
  mkdir out
  (cd out && restore -r -f "localhost:$PWD/../d.tap")
  cmp "$SRC/a.bin" out/a.bin
}

@test "interop-dump: the same dump through GNU rmt loses its connection at the reopen" {
  # The reason rmt must stay alive after C (rmt-protocol.md §1.3).
  RSH_STANDIN_SERVER=/usr/sbin/rmt-tar run dump -0 -f "localhost:$PWD/g.dump" "$DEV"
  assert_equal "$status" 3
  assert_output --partial "Lost connection to remote host"
}
