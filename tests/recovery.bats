#!/usr/bin/env bats
# Completing a killed writer's session cuts only what that writer left: the
# drive proves the image is still the one it was writing, a reader never
# cuts, and a state the drive wrote always loads (issue 23 §1).
#
# run-suites: no leak check
# (the writers are killed, and mt and tapectl run one command and exit: a
# leak cannot grow; the servers and streams are checked in their own files.)
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  scratch=
  on_disk
  random_mib 1 1 >one
  random_mib 2 2 >two
  random_mib 3 3 >three
}

teardown() {
  if [ -n "${holder:-}" ]; then kill -KILL "$holder" 2>/dev/null || true; fi
  if [ -n "${shared:-}" ]; then rm -rf "$shared"; fi
  if [ -n "${scratch:-}" ]; then rm -rf "$scratch"; fi
}

# Writes file three to image $1 with buffer and kills it mid-file: the input
# stays open, so the writer is killed holding data, its session unfinished.
crash_writer() {
  local image=$1 size pid
  mkfifo feed
  "$BUFFER" -s 10k -o "$image" <feed 2>/dev/null &
  pid=$!
  exec 7>feed
  cat three >&7
  # Past the first MiB the drive has marked its session and the image grown
  # (staged writes reach it a whole MiB at a time).
  for _ in $(seq 2000); do
    size=$(stat -c %s "$image" 2>/dev/null || echo 0)
    [ "$size" -lt $((1048576 + ${2:-0})) ] || break
    sleep 0.01
  done
  grep -q '^writing 1' "$image.state"
  kill_tree "$pid"
  exec 7>&-
  rm -f feed
}

@test "an image copied over a killed writer's image, inode kept, is not cut" {
  "$BUFFER" -s 10k -o good.tap <one
  "$BUFFER" -s 10k -o good.tap <two
  "$BUFFER" -s 10k -o t.tap <two
  crash_writer t.tap "$(stat -c %s t.tap)"
  cp good.tap t.tap
  run "$MT" -f t.tap status
  assert_success
  assert_output --partial 'File number=0, block number=0'
  assert_output --partial 'nothing of it was cut'
  cmp good.tap t.tap
  # and a writer appends to it like to any cartridge it was handed
  "$MT" -f t.tap eod
  "$BUFFER" -s 10k -o t.tap <one
  "$MT" -f t.tap verify
  assert_equal "$(head -c "$(stat -c %s good.tap)" t.tap | sha256sum)" "$(sha256sum <good.tap)"
}

@test "an image put in a killed writer's image's place is not cut, whatever its inode" {
  "$BUFFER" -s 10k -o good.tap <one
  "$BUFFER" -s 10k -o good.tap <two
  "$BUFFER" -s 10k -o t.tap <two
  crash_writer t.tap "$(stat -c %s t.tap)"
  rm t.tap
  cp good.tap t.tap
  echo hi | "$BUFFER" -o x.tap  # another open in between, as on any host
  run "$MT" -f t.tap status
  assert_success
  assert_output --partial 'File number=0, block number=0'
  cmp good.tap t.tap
}

@test "a state claiming an unfinished write with the right inode but no session record cuts nothing" {
  "$BUFFER" -s 10k -o t.tap <one
  size=$(stat -c %s t.tap)
  printf '%s\noffset 100\nlba 0\nwriting 1\nimage-inode %s\nend\n' "$(head -1 t.tap.state)" \
    "$(stat -c %i t.tap)" >t.tap.state.new
  mv t.tap.state.new t.tap.state
  run "$MT" -f t.tap status
  assert_success
  assert_output --partial 'nothing of it was cut'
  assert_equal "$(stat -c %s t.tap)" "$size"
  # At BOT as a new cartridge: the data is whole, and appends go after it.
  "$MT" -f t.tap eod
  echo more | "$BUFFER" -o t.tap
  "$MT" -f t.tap rewind
  "$REBLOCK" -s 10k -i t.tap -o back
  cmp one back
}

@test "mt status and verify on a killed writer's image cut nothing and say what the next writer will do" {
  "$BUFFER" -s 10k -o t.tap <one
  crash_writer t.tap "$(stat -c %s t.tap)"
  size=$(stat -c %s t.tap)
  run "$MT" -f t.tap status
  assert_success
  assert_output --partial 'the next open for writing completes it'
  assert_output --partial 'File number=1, block number=0'
  run "$MT" -f t.tap verify
  assert_output --partial 'the next open for writing completes it'
  assert_equal "$(stat -c %s t.tap)" "$size"
  grep -q '^writing 1' t.tap.state
  # The next writer completes it: file 1 ends with a filemark, the new
  # file is file 2, and file 0 is whole.
  run "$BUFFER" -s 10k -o t.tap <two
  assert_success
  assert_output --partial 'completed a write session left unfinished'
  run "$MT" -f t.tap verify
  assert_success
  refute_output --partial 'left unfinished (its writer'
  "$MT" -f t.tap rewind
  "$REBLOCK" -s 10k -i t.tap -o f0
  cmp one f0
  "$MT" -f t.tap fsf 1
  "$REBLOCK" -s 10k -i t.tap -o f2
  cmp two f2
}

@test "a read-only rmt session on a killed writer's image cuts nothing" {
  "$BUFFER" -s 10k -o t.tap <one
  crash_writer t.tap "$(stat -c %s t.tap)"
  size=$(stat -c %s t.tap)
  sum=$(sha256sum <t.tap)
  # Open read-only, read a record of file 0, rewind, close.
  run --separate-stderr "$RMT" --read-only <<<"O$PWD/t.tap
0
R10240
I6
1
C
"
  assert_success
  assert_line --index 0 A0
  # The remote user is told, on the remote shell's standard error.
  [[ $stderr == "rmt: $PWD/t.tap: a write session was left unfinished"*"the next open for writing completes it"* ]]
  assert_equal "$(stat -c %s t.tap)" "$size"
  assert_equal "$(sha256sum <t.tap)" "$sum"
  grep -q '^writing 1' t.tap.state
}

@test "a rewind after a killed write is kept, and the next writer completes the session and writes at BOT" {
  "$BUFFER" -s 10k -o t.tap <one
  crash_writer t.tap "$(stat -c %s t.tap)"
  "$MT" -f t.tap rewind
  "$BUFFER" -s 10k -o t.tap <two
  "$MT" -f t.tap rewind
  "$REBLOCK" -s 10k -i t.tap -o f0
  cmp two f0
  "$MT" -f t.tap verify
}

@test "a writer killed after mt seek leaves a tape every tool can open" {
  "$BUFFER" -s 10k -o t.tap <one
  "$MT" -f t.tap rewind
  "$MT" -f t.tap seek 31
  # A writer that has written its records (staged or not) when it is
  # killed: "ready" appears only after the writes.
  tapectl -w t.tap write 600000 600000 : hold ready 60 3>&- &
  holder=$!
  for _ in $(seq 2000); do [ -e ready ] && break; sleep 0.01; done
  [ -e ready ]
  kill_tree "$holder"
  wait "$holder" || true
  holder=
  grep -q '^writing 1' t.tap.state
  run "$MT" -f t.tap status
  assert_success
  run --separate-stderr "$BUFFER" -o t.tap <<<hi
  assert_success
  [[ $stderr == *"completed a write session left unfinished"* ]]
  grep -q '^recovered-file -1' t.tap.state
  run "$MT" -f t.tap status
  assert_success
  assert_output --partial 'File number=-1'
  echo hi | "$REBLOCK" -s 10k -o t.tap
  "$MT" -f t.tap verify
}

@test "a state that cannot be loaded is named by mt and buffer" {
  "$BUFFER" -s 10k -o t.tap <one
  printf 'recovered-cut-at 0\nrecovered-file -5\n' >>t.tap.state
  run "$MT" -f t.tap status
  assert_failure
  assert_output --partial 't.tap.state'
  run "$BUFFER" -o t.tap <one
  assert_failure
  assert_output --partial 't.tap.state'
}

@test "a gzip archive named .tap is refused, not overwritten" {
  # Small: gzip's magic reads as a record of 560 927 bytes, cut short.
  mkdir data
  echo 'etc/hosts' >data/list
  tar -czf x.tap data
  sum=$(sha256sum <x.tap)
  run "$BUFFER" -o x.tap <<<hi
  assert_failure
  assert_output --partial 'not a SIMH tape image'
  assert_equal "$(sha256sum <x.tap)" "$sum"
  run "$MT" -f x.tap weof
  assert_failure
  assert_equal "$(sha256sum <x.tap)" "$sum"
}

@test "an unknown file that is one record cut short is refused, not written" {
  "$BUFFER" -s 10k -o t.tap <one
  truncate -s 5000 t.tap
  rm t.tap.state
  run "$BUFFER" -o t.tap <<<hi
  assert_failure
  assert_output --partial 'not a SIMH tape image'
  assert_equal "$(stat -c %s t.tap)" 5000
}

@test "an unknown image damaged after its first filemark still opens" {
  "$BUFFER" -s 10k -o t.tap <one
  "$BUFFER" -s 10k -o t.tap <two
  truncate -s "$(($(stat -c %s t.tap) - 5000))" t.tap
  rm t.tap.state
  run "$MT" -f t.tap fsf 1
  assert_success
  echo hi | "$BUFFER" -o t.tap
  "$MT" -f t.tap rewind
  "$REBLOCK" -s 10k -i t.tap -o f0
  cmp one f0
}

@test "a FIFO planted as the state file is refused at once by mt, buffer and rmt" {
  "$BUFFER" -s 10k -o t.tap <one
  rm t.tap.state
  mkfifo t.tap.state
  run timeout 60 "$MT" -f t.tap status
  assert_failure
  [ "$status" -ne 124 ]
  assert_output --partial 't.tap.state'
  assert_output --partial 'not a regular file'
  run timeout 60 "$BUFFER" -o t.tap <<<hi
  assert_failure
  [ "$status" -ne 124 ]
  assert_output --partial 't.tap.state'
  run timeout 60 "$RMT" <<<"O$PWD/t.tap
0
C
"
  [ "$status" -ne 124 ]
  assert_line --index 0 --regexp '^E[0-9]+$'
}

# A directory both users can reach: the test's own lies under bats's private one.
shared_dir() {
  shared=$(mktemp -d "${TMPDIR:-/tmp}/tapekit-shared.XXXXXX")
  chmod "$1" "$shared"
}

@test "another user's read-only session does not take the state file from the image's owner" {
  [ "$(id -u)" = 0 ] || skip "needs root to act as two users"
  # Group-shared, as tape directories are: anyone may replace a file there.
  shared_dir 0777
  as_user 1001 "$BUFFER" -s 10k -o "$shared/t.tap" <one
  as_user 1001 "$MT" -f "$shared/t.tap" rewind
  as_user 1001 "$MT" -f "$shared/t.tap" fsf 1
  run as_user 1002 "$RMT" --allow "$shared" --read-only <<<"O$shared/t.tap
0
I6
1
C
"
  assert_line --index 0 A0
  assert_equal "$(stat -c '%u %a' "$shared/t.tap.state")" "1001 644"
  run as_user 1001 "$MT" -f "$shared/t.tap" status
  assert_success
  assert_output --partial 'File number=1'
  echo more | as_user 1001 "$BUFFER" -o "$shared/t.tap"
}

@test "a state file root makes for a user's image is the user's, with the image's mode" {
  [ "$(id -u)" = 0 ] || skip "needs root to act as another user"
  shared_dir 0755
  chown 1001:1001 "$shared"
  as_user 1001 "$BUFFER" -s 10k -o "$shared/t.tap" <one
  chmod 0640 "$shared/t.tap"
  rm "$shared/t.tap.state"
  "$MT" -f "$shared/t.tap" fsf 1
  assert_equal "$(stat -c '%u %g %a' "$shared/t.tap.state")" "1001 1001 640"
  run as_user 1001 "$MT" -f "$shared/t.tap" status
  assert_success
  assert_output --partial 'File number=1'
}
