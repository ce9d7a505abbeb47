#!/usr/bin/env bats
# Shows that GNU cpio, through the rsh stand-in and our rmt, writes and reads
# crc archives with 32 KiB records byte-for-byte as on a local file, on a
# plain file and on a SIMH .tap image.
# Left out of the sanitizer pass (suite time): the sanitizer pass checks the server with rmt.bats and the rmt fuzzer; cpio adds no path of ours.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  mkdir -p src/sub
  random_mib 1 5 | head -c 400000 >src/a.bin
  echo hello >src/sub/c.txt
  find src -exec touch -h -d @86400 {} +
}

# cpio -H crc --block-size=64 (32 KiB records) with the remote shell set.
rcpio() {
  cpio --quiet -H crc --block-size=64 --rsh-command="$RSH_STANDIN" "$@"
}

@test "interop-cpio: cpio -o through rmt writes the bytes a local cpio -o writes" {
  find src | sort | rcpio -o -O "localhost:$PWD/a.cpio"
  find src | sort | rcpio -o >local.cpio
  cmp local.cpio a.cpio
}

@test "interop-cpio: cpio -i through rmt extracts every file unchanged" {
  find src | sort | rcpio -o -O "localhost:$PWD/a.cpio"
  mkdir out
  (cd out && rcpio -id -I "localhost:$PWD/../a.cpio")
  diff -r src out/src
}

@test "interop-cpio: cpio -it through rmt lists the archive" {
  find src | sort | rcpio -o -O "localhost:$PWD/a.cpio"
  run rcpio -it -I "localhost:$PWD/a.cpio"
  assert_equal "$status" 0
  assert_output "$(find src | sort)"
}

@test "interop-cpio: a cpio archive on a .tap through rmt is one 32 KiB record per write" {
  find src | sort | rcpio -o -O "localhost:$PWD/c.tap"
  find src | sort | rcpio -o >local.cpio
  local records=$(($(stat -c %s local.cpio) / 32768))
  run tapectl -r c.tap op rewind : read $((records + 1)) 65536
  assert_equal "$status" 0
  assert_equal "$(grep -c '^32768 corrupt$' <<<"$output")" "$records"
  assert_line --index "$records" 0
}

@test "interop-cpio: a cpio archive on a .tap through rmt round-trips byte for byte" {
  find src | sort | rcpio -o -O "localhost:$PWD/c.tap"
  find src | sort | rcpio -o >local.cpio
  mt -f c.tap rewind
  mkdir out
  (cd out && rcpio -id -I "localhost:$PWD/../c.tap")
  diff -r src out/src
  mt -f c.tap rewind
  reblock -i c.tap -o copy.cpio -s 32768
  cmp local.cpio copy.cpio
}

@test "interop-cpio: cpio -it through rmt lists a plain cpio archive named .tap; -o and -oA onto it are refused and change nothing" {
  find src | sort | rcpio -o -O backup.tap
  cp backup.tap before
  run --separate-stderr rcpio -it -I "localhost:$PWD/backup.tap"
  assert_equal "$status" 0
  assert_output "$(find src | sort)"
  assert_equal "$stderr" "rmt: $PWD/backup.tap: not a SIMH tape image (begins \"07070200\"); opened read-only as a plain file"
  run bash -c 'find src | sort | cpio --quiet -H crc --block-size=64 --rsh-command="$0" -o -O "$1"' \
    "$RSH_STANDIN" "localhost:$PWD/backup.tap"
  assert_failure
  assert_output --partial "Wrong medium type"
  # -A appends, opening for reading and writing.
  run bash -c 'find src | sort | cpio --quiet -H crc --block-size=64 --rsh-command="$0" -oA -O "$1"' \
    "$RSH_STANDIN" "localhost:$PWD/backup.tap"
  assert_failure
  assert_output --partial "Wrong medium type"
  cmp before backup.tap
  assert_file_not_exists backup.tap.state
}
