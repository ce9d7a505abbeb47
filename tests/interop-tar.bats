#!/usr/bin/env bats
# Shows that GNU tar, talking to our rmt through the rsh stand-in, writes,
# lists, extracts, appends, deletes, verifies and seeks byte-for-byte as it
# does on a local file, and uses SIMH .tap images like a tape drive:
# records, filemarks, multi-file tapes and multi-volume archives.
# Left out of the sanitizer pass (suite time): tar's requests reach the same
# parser and handlers that rmt.bats and the rmt fuzzer drive there.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  export RSH_STANDIN_LOG=$BATS_TEST_TMPDIR/rsh.log
  mkdir -p src/sub
  random_mib 1 3 | head -c 700000 >src/a.bin
  random_mib 1 4 | head -c 150001 >src/sub/b.bin
  echo hello >src/c.txt
  find src -exec touch -h -d @86400 {} +
}

# tar with the remote shell set, and the fixed options that make output
# reproducible (member order, owner).
rtar() {
  tar --rsh-command="$RSH_STANDIN" --sort=name --owner=0 --group=0 "$@"
}

@test "interop-tar: tar -c through rmt writes the bytes a local tar -c writes" {
  rtar -cf "localhost:$PWD/remote.tar" -C src .
  rtar -cf local.tar -C src .
  cmp local.tar remote.tar
}

@test "interop-tar: tar -t and -x through rmt read the archive back" {
  rtar -cf "localhost:$PWD/a.tar" -C src .
  run rtar -tf "localhost:$PWD/a.tar"
  assert_equal "$status" 0
  assert_output "$(rtar -tf a.tar)"
  mkdir out
  rtar -xf "localhost:$PWD/a.tar" -C out
  diff -r src out
}

@test "interop-tar: tar -r through rmt appends as a local tar -r does" {
  rtar -cf "localhost:$PWD/r.tar" -C src a.bin
  rtar -rf "localhost:$PWD/r.tar" -C src c.txt sub
  rtar -cf l.tar -C src a.bin
  rtar -rf l.tar -C src c.txt sub
  cmp l.tar r.tar
}

@test "interop-tar: tar --delete through rmt gives the local result" {
  rtar -cf "localhost:$PWD/d.tar" -C src .
  cp d.tar l.tar
  rtar --delete -f "localhost:$PWD/d.tar" ./a.bin
  rtar --delete -f l.tar ./a.bin
  # rmt cannot truncate, so the remote file keeps its old tail after the
  # end-of-archive blocks, as with every rmt server.
  cmp -n "$(stat -c %s l.tar)" l.tar d.tar
  assert_equal "$(rtar -tf d.tar)" "$(rtar -tf l.tar)"
}

@test "interop-tar: tar -cW verifies through rmt" {
  run rtar -cWf "localhost:$PWD/w.tar" -C src .
  assert_equal "$status" 0
  refute_output --partial "Verify"
  rtar -cf l.tar -C src .
  cmp l.tar w.tar
}

@test "interop-tar: tar -tn seeks over members through rmt" {
  rtar -cf "localhost:$PWD/n.tar" -C src .
  # tar falls back to reading when a seek fails, so the listing alone would
  # not show a seek: the server's log must have seeks, every one answered.
  RSH_STANDIN_SERVER="$RMT --debug-log $PWD/rmt.debug" run rtar -tnf "localhost:$PWD/n.tar"
  assert_equal "$status" 0
  assert_output "$(rtar -tf n.tar)"
  # Each seek request with the reply line after it.
  run grep -A1 '^L ' rmt.debug
  assert_line --regexp '^L '
  refute_line --regexp '^E'
  assert_equal "$(grep -c '^A' <<<"$output")" "$(grep -c '^L ' <<<"$output")"
}

@test "interop-tar: tar -b 512 records of 256 KiB round-trip through rmt" {
  rtar -b 512 -cf "localhost:$PWD/big.tar" -C src .
  rtar -b 512 -cf l.tar -C src .
  cmp l.tar big.tar
  mkdir out
  rtar -b 512 -xf "localhost:$PWD/big.tar" -C out
  diff -r src out
}

@test "interop-tar: user@host reaches the remote shell as -l user" {
  rtar -cf "root@localhost:$PWD/u.tar" -C src c.txt
  run cat rsh.log
  assert_output --partial "localhost -l root "
}

@test "interop-tar: tar -c through rmt writes to a name with a tab, as through GNU rmt" {
  rtar -cf "localhost:$PWD/a"$'\t'"b.tar" -C src .
  rtar -cf l.tar -C src .
  cmp l.tar $'a\tb.tar'
}

@test "interop-tar: a failed remote open is reported by tar" {
  run rtar -cf "localhost:$PWD/missing/x.tar" -C src c.txt
  assert_equal "$status" 2
  assert_output --partial "Cannot open: No such file or directory"
}

@test "interop-tar: tar -c onto a .tap through rmt writes records and a filemark" {
  rtar -cf "localhost:$PWD/t.tap" -C src .
  local records=$(($(rtar -cf - -C src . | wc -c) / 10240))
  run tapectl -r t.tap op rewind : read $((records + 1)) 20480
  assert_equal "$status" 0
  # Every record is one tar record of 10240 bytes, then comes the filemark.
  assert_equal "$(grep -c '^10240 corrupt$' <<<"$output")" "$records"
  assert_line --index "$records" 0
}

@test "interop-tar: a tar written to a .tap through rmt extracts identically" {
  rtar -cf "localhost:$PWD/t.tap" -C src .
  mt -f t.tap rewind
  rtar -cf l.tar -C src .
  mkdir out
  rtar -xf "localhost:$PWD/t.tap" -C out
  diff -r src out
  mt -f t.tap rewind
  reblock -i t.tap -o copy.tar -s 10240
  cmp l.tar copy.tar
}

@test "interop-tar: three archives on one .tap, then mt fsf 2 reaches the third" {
  local i
  for i in 1 2 3; do
    mkdir -p "v$i"
    echo "volume $i" >"v$i/f$i"
    rtar -cf "localhost:$PWD/multi.tap" -C "v$i" .
  done
  mt -f multi.tap rewind
  mt -f multi.tap fsf 2
  mkdir out
  rtar -xf "localhost:$PWD/multi.tap" -C out
  assert_equal "$(ls out)" f3
  assert_equal "$(cat out/f3)" "volume 3"
}

@test "interop-tar: tar -M spans two .tap images of small capacity through rmt" {
  mt -f a.tap vt-create 512k
  mt -f b.tap vt-create 2m
  rtar -M -cf "localhost:$PWD/a.tap" -f "localhost:$PWD/b.tap" -C src .
  # The first volume is full and the second holds the rest.
  [ "$(stat -c %s a.tap)" -gt 200000 ]
  [ "$(stat -c %s b.tap)" -gt 200000 ]
  mt -f a.tap rewind
  mt -f b.tap rewind
  mkdir out
  rtar -M -xf "localhost:$PWD/a.tap" -f "localhost:$PWD/b.tap" -C out
  diff -r src out
}

@test "interop-tar: tar -r through rmt appends on a .tap by backspacing records" {
  rtar -cf "localhost:$PWD/r.tap" -C src a.bin
  mt -f r.tap rewind
  rtar -rf "localhost:$PWD/r.tap" -C src c.txt
  mt -f r.tap rewind
  run rtar -tf "localhost:$PWD/r.tap"
  assert_equal "$status" 0
  assert_output $'a.bin\nc.txt'
}

@test "interop-tar: tar -cW through rmt verifies a .tap by spacing back over the filemark" {
  # (--delete is not for tapes: GNU tar's manual says so, and a drive fails it.)
  run rtar -cWf "localhost:$PWD/w.tap" -C src .
  assert_equal "$status" 0
  refute_output --partial "Verify"
  mt -f w.tap rewind
  mkdir out
  rtar -xf "localhost:$PWD/w.tap" -C out
  diff -r src out
}

# A plain tar archive named *.tap, written by tar itself or through another
# rmt, is no virtual tape: tar reads it back as the file it is (issue 24).
@test "interop-tar: tar -t through rmt lists a plain tar archive named .tap, and rmt says why it is a plain file" {
  rtar -cf backup.tap -C src .
  run --separate-stderr rtar -tf "localhost:$PWD/backup.tap"
  assert_equal "$status" 0
  assert_output "$(rtar -tf backup.tap)"
  assert_equal "$stderr" "rmt: $PWD/backup.tap: not a SIMH tape image (begins \"./......\"); opened read-only as a plain file"
  mkdir out
  rtar -xf "localhost:$PWD/backup.tap" -C out
  diff -r src out
  assert_file_not_exists backup.tap.state
}

@test "interop-tar: tar -c and -r onto a plain archive named .tap are refused and leave it byte for byte; tapekit's clients keep their error" {
  rtar -cf backup.tap -C src .
  cp backup.tap before
  run rtar -cf "localhost:$PWD/backup.tap" -C src c.txt
  assert_equal "$status" 2
  assert_output --partial "Cannot open: Wrong medium type"
  # tar -r opens for reading and writing.
  run rtar -rf "localhost:$PWD/backup.tap" -C src c.txt
  assert_equal "$status" 2
  assert_output --partial "rmt: open $PWD/backup.tap (not a SIMH tape image: "
  cmp before backup.tap
  # mt and buffer ask whether the rmt is tapekit's before opening a .tap,
  # and are refused as before: they want the virtual tape.
  run --separate-stderr mt --rsh-command="$RSH_STANDIN" -f "localhost:$PWD/backup.tap" status
  assert_equal "$status" 1
  [[ ${stderr_lines[0]} == "rmt: open $PWD/backup.tap (not a SIMH tape image: "*'the file begins "./......"): Wrong medium type' ]]
  assert_equal "${stderr_lines[1]}" "localhost:$PWD/backup.tap: Wrong medium type"
  run --separate-stderr buffer --rsh-command="$RSH_STANDIN" -i "localhost:$PWD/backup.tap"
  assert_equal "$status" 255
  assert_equal "${stderr_lines[1]}" "buffer: cannot open input file: Wrong medium type"
  cmp before backup.tap
  assert_file_not_exists backup.tap.state
}

@test "interop-tar: tar -t right after tar -c onto a .tap is told by rmt to rewind first" {
  rtar -cf "localhost:$PWD/t.tap" -C src .
  # The drive stands past the filemark tar -c closed with, at end of data.
  run --separate-stderr rtar -tf "localhost:$PWD/t.tap"
  assert_equal "$status" 2
  assert_equal "${stderr_lines[0]}" "rmt: $PWD/t.tap: first read is at end of data (file 1, block 0): rewind first, e.g. mt -f host:$PWD/t.tap rewind"
  assert_equal "${stderr_lines[1]}" "tar: This does not look like a tar archive"
  mt --rsh-command="$RSH_STANDIN" -f "localhost:$PWD/t.tap" rewind
  run --separate-stderr rtar -tf "localhost:$PWD/t.tap"
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_output "$(rtar -cf - -C src . | tar -tf -)"
}
