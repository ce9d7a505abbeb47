#!/usr/bin/env bats
# A virtual tape is one thing whatever its name: every name that reaches an
# image (a symlink, a relative path, a hard link beside it or elsewhere)
# sees one position and one lock; a drive state that cannot be read is refused,
# naming the file and how to go on, never taken for a drive at BOT whose
# next write would cut every file; and only a user who may write an image
# changes its drive state.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  holder=
  shared=
  head -c 30000 /dev/urandom >one
  head -c 20000 /dev/urandom >two
  head -c 10000 /dev/urandom >three
}

teardown() {
  if [ -n "$holder" ]; then kill -KILL "$holder" 2>/dev/null || true; fi
  if [ -n "$shared" ]; then rm -rf "$shared"; fi
}

# Two files on tapes/t1.tap, written through its own name; the drive is left
# after them, where the next write appends.
two_files() {
  mkdir -p tapes
  "$REBLOCK" -s 10k -i one -o tapes/t1.tap
  "$REBLOCK" -s 10k -i two -o tapes/t1.tap
}

# Reads the image's files back through NAME from BOT and compares each with
# the files given.
files_are() {
  local name=$1 i=0 want
  shift
  "$MT" -f "$name" rewind
  for want in "$@"; do
    "$REBLOCK" -s 10k -i "$name" -o "back$i"
    cmp "$want" "back$i"
    i=$((i + 1))
  done
  "$REBLOCK" -s 10k -i "$name" -o "back$i"
  assert_equal "$(stat -c %s "back$i")" 0
}

@test "images: an append through a symlink, a relative path or a hard link beside the image goes after the files already there" {
  two_files
  ln -s tapes/t1.tap cur.tap
  "$REBLOCK" -s 10k -i three -o cur.tap
  files_are tapes/t1.tap one two three
  # Every spelling reads the one position: after the rewind files_are left
  # the drive at the end of data, whichever name it used.
  "$MT" -f cur.tap rewind
  run -0 "$MT" -f "../${BATS_TEST_TMPDIR##*/}/tapes/t1.tap" status
  assert_line --index 1 "File number=0, block number=0, partition=0."
  "$MT" -f tapes/t1.tap eod
  ln tapes/t1.tap tapes/alias.tap
  "$REBLOCK" -s 10k -i one -o tapes/alias.tap
  files_are cur.tap one two three one
  assert_file_not_exists cur.tap.state
  assert_file_not_exists tapes/alias.tap.state
}

@test "images: every name of an image shares its lock" {
  two_files
  ln -s tapes/t1.tap cur.tap
  ln tapes/t1.tap tapes/alias.tap
  tapectl tapes/t1.tap hold ready 60 3>&- &
  holder=$!
  for _ in $(seq 400); do [ -e ready ] && break; sleep 0.05; done
  local name
  for name in cur.tap tapes/alias.tap "$PWD/tapes/../tapes/t1.tap"; do
    run -2 tapectl "$name" status
    assert_output "open: EBUSY"
  done
  kill -KILL "$holder"
  wait "$holder" || true
  holder=
}

@test "images: a hard link in another directory finds the image's one state through the name recorded on the image" {
  two_files
  ln tapes/t1.tap elsewhere.tap
  "$REBLOCK" -s 10k -i three -o elsewhere.tap
  assert_file_not_exists elsewhere.tap.state
  files_are tapes/t1.tap one two three
  # Both names see the drive where files_are left it.
  assert_equal "$("$MT" -f elsewhere.tap status)" "$("$MT" -f tapes/t1.tap status)"
  "$MT" -f elsewhere.tap rewind
  run -0 "$MT" -f tapes/t1.tap status
  assert_line --index 1 "File number=0, block number=0, partition=0."
}

@test "images: a hard link whose state no name can find is refused naming it, and the image is unchanged" {
  two_files
  ln tapes/t1.tap elsewhere.tap
  # As on a file system without user attributes, or an image copied in.
  python3 -c 'import os, sys; os.removexattr(sys.argv[1], "user.tapekit.state-beside")' tapes/t1.tap
  local before
  before=$(sha tapes/t1.tap)
  run --separate-stderr "$REBLOCK" -s 10k -i three -o elsewhere.tap
  assert_failure
  assert_equal "$stderr" "reblock: open elsewhere.tap (it is one of 2 names (hard links) of one image, and no name of it here has the drive state that keeps its position: open it by the name whose .state is beside it, or give the image one name): Too many links"
  run --separate-stderr "$MT" -f elsewhere.tap weof
  assert_failure
  assert_equal "$(sha tapes/t1.tap)" "$before"
  assert_file_not_exists elsewhere.tap.state
  # Through its own name the image goes on as it was.
  "$REBLOCK" -s 10k -i three -o tapes/t1.tap
  files_are tapes/t1.tap one two three
}

@test "images: an empty, cut-short or headerless drive state is refused naming it; mt eod takes the image up and an append goes after its data" {
  local damage
  for damage in empty cut headerless; do
    rm -rf tapes
    two_files
    case $damage in
      empty) : >tapes/t1.tap.state ;;
      cut) head -c 100 tapes/t1.tap.state >cut && mv cut tapes/t1.tap.state ;;
      headerless) sed -i 1d tapes/t1.tap.state ;;
    esac
    local before
    before=$(sha tapes/t1.tap)
    run --separate-stderr "$REBLOCK" -s 10k -i three -o tapes/t1.tap
    assert_failure
    assert_equal "$(sha tapes/t1.tap)" "$before"
    [[ "$stderr" == *"its drive state tapes/t1.tap.state is unusable"* ]]
    [[ "$stderr" == *'`mt -f tapes/t1.tap eod` puts the drive at the end of its data'* ]]
    run --separate-stderr "$BUFFER" -o tapes/t1.tap <three
    assert_failure
    [[ "$stderr" == *"tapes/t1.tap.state is unusable"* ]]
    run --separate-stderr "$MT" -f tapes/t1.tap status
    assert_failure
    assert_equal "$(sha tapes/t1.tap)" "$before"
    run --separate-stderr "$MT" -f tapes/t1.tap eod
    assert_success
    [[ "$stderr" == "mt: tapes/t1.tap: its drive state tapes/t1.tap.state is unusable: "*": the drive starts afresh at BOT" ]]
    "$REBLOCK" -s 10k -i three -o tapes/t1.tap
    files_are tapes/t1.tap one two three
  done
}

@test "images: the drive state is synced to the disk before its rename and the directory after" {
  two_files
  # (LeakSanitizer cannot run under ptrace: the sanitizer pass skips it here.)
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    run strace -f -e trace=fsync,renameat,rename,renameat2 -o trace "$MT" -f tapes/t1.tap fsf 0
  assert_success
  # The state's temporary is synced, renamed, then its directory synced.
  run grep -E 'fsync|rename' trace
  assert_line --index 0 --regexp 'fsync\([0-9]+\) += 0'
  assert_line --index 1 --regexp 'rename.*"t1\.tap\.state\.tmp".*"t1\.tap\.state"'
  assert_line --index 2 --regexp 'fsync\([0-9]+\) += 0'
}

@test "images: a user who may read an image but not write it cannot change its drive state with vt-protect or vt-alert" {
  [ "$(id -u)" = 0 ] || skip "needs root to act as two users"
  shared=$(mktemp -d "${TMPDIR:-/tmp}/tapekit-shared.XXXXXX")
  chmod 0777 "$shared"
  as_user 1001 "$REBLOCK" -s 10k -i one -o "$shared/t.tap"
  local state
  state=$(cat "$shared/t.tap.state")
  run --separate-stderr as_user 1002 "$MT" -f "$shared/t.tap" vt-protect 1
  assert_failure
  [[ "$stderr" == *"$shared/t.tap"* ]]
  run --separate-stderr as_user 1002 "$MT" -f "$shared/t.tap" vt-alert 3
  assert_failure
  [[ "$stderr" == *"$shared/t.tap"* ]]
  assert_equal "$(stat -c %u "$shared/t.tap.state")" 1001
  assert_equal "$(cat "$shared/t.tap.state")" "$state"
  # The owner's next write goes on.
  as_user 1001 "$REBLOCK" -s 10k -i two -o "$shared/t.tap"
  as_user 1001 "$MT" -f "$shared/t.tap" vt-protect 1
  run -0 grep -x 'write-protect 1' "$shared/t.tap.state"
}

@test "images: a new image written through a dangling symlink is made where the link points, its state beside it" {
  mkdir tapes
  ln -s tapes/new.tap cur.tap
  "$REBLOCK" -s 10k -i one -o cur.tap
  assert_file_exists tapes/new.tap
  assert_file_exists tapes/new.tap.state
  assert_file_not_exists cur.tap.state
  files_are tapes/new.tap one
}
