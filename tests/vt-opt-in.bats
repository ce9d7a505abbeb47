#!/usr/bin/env bats
# Shows that a name is a virtual tape only where one was made (mt vt-create,
# an image earlier versions left with its drive state) or the opt-in names
# it (rmt --virtual-tapes, TAPEKIT_VIRTUAL_TAPES); every other name, *.tap
# included, is the plain file GNU tar's rmt (rmt-tar) and buffer 1.19 make
# of it, so installing tapekit changes nothing its clients get.
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  # The default, as an installed package has it: nothing opted in.
  unset TAPEKIT_VIRTUAL_TAPES
  mkdir -p src/night1 src/night2 src/night3
  random_mib 1 1 | head -c 600000 >src/night1/a.bin
  random_mib 1 2 | head -c 90000 >src/night2/b.bin
  random_mib 1 3 | head -c 250001 >src/night3/c.bin
  find src -exec touch -h -d @86400 {} +
}

# tar through the rsh stand-in, with the options that make its output
# reproducible; the server is $RSH_STANDIN_SERVER, else tapekit's rmt.
rtar() {
  tar --rsh-command="$RSH_STANDIN" --sort=name --owner=0 --group=0 "$@"
}

# The three nights' backups of `tar -c -f host:$1`, one a night. GNU tar
# opens a remote archive without O_TRUNC, so each night writes over the
# start of the last one and rmt-tar leaves the rest of it after the end of
# the archive: the same bytes are what must be left.
three_nights() {
  local n
  for n in 1 2 3; do rtar -c -f "localhost:$1" -C src "night$n" || return 1; done
}

@test "vt-opt-in: tar -c -f host:DIR/nightly.tap three nights through our rmt leaves the plain tar rmt-tar leaves" {
  mkdir ours theirs
  three_nights "$PWD/ours/nightly.tap"
  RSH_STANDIN_SERVER=/usr/sbin/rmt-tar three_nights "$PWD/theirs/nightly.tap"
  assert_equal "$(stat -c %s ours/nightly.tap)" "$(stat -c %s theirs/nightly.tap)"
  cmp theirs/nightly.tap ours/nightly.tap
  run tar -t -f ours/nightly.tap
  assert_success
  assert_output "$(printf 'night3/\nnight3/c.bin')"
  assert_not_exist ours/nightly.tap.state
}

@test "vt-opt-in: an existing plain tar named x.tap is overwritten through our rmt as rmt-tar overwrites it" {
  tar -c -f old.tar -C src .
  mkdir ours theirs
  cp old.tar ours/x.tap
  cp old.tar theirs/x.tap
  run rtar -c -f "localhost:$PWD/ours/x.tap" -C src night2
  assert_success
  assert_output ""
  RSH_STANDIN_SERVER=/usr/sbin/rmt-tar rtar -c -f "localhost:$PWD/theirs/x.tap" -C src night2
  cmp theirs/x.tap ours/x.tap
  assert_equal "$(tar -t -f ours/x.tap)" "$(printf 'night2/\nnight2/b.bin')"
}

@test "vt-opt-in: a name vt-create made a virtual tape appends one tape file a backup through rmt, whatever it ends in" {
  "$MT" -f nightly.img vt-create 0
  three_nights "$PWD/nightly.img"
  run "$MT" -f nightly.img status
  assert_success
  assert_line --partial "File number=3, block number=0"
  "$MT" -f nightly.img asf 1
  run tar -t -f "localhost:$PWD/nightly.img" --rsh-command="$RSH_STANDIN"
  assert_success
  assert_output "$(printf 'night2/\nnight2/b.bin')"
}

@test "vt-opt-in: an image left with its drive state beside it, as earlier versions left every image, stays a virtual tape" {
  "$MT" -f made.img vt-create 0
  three_nights "$PWD/made.img"
  # cp keeps no extended attribute: the state beside the copy is its mark.
  cp -p made.img old.img
  cp -p made.img.state old.img.state
  run "$MT" -f old.img status
  assert_success
  assert_line --partial "File number=3, block number=0"
}

@test "vt-opt-in: an image moved away from its drive state stays a virtual tape, by the attribute it carries" {
  "$MT" -f made.img vt-create 0
  three_nights "$PWD/made.img"
  mv made.img moved.img
  assert_not_exist moved.img.state
  # A cartridge new to the drive: loaded at its beginning, read as a tape.
  run tar -t -f "localhost:$PWD/moved.img" --rsh-command="$RSH_STANDIN"
  assert_success
  assert_output "$(printf 'night1/\nnight1/a.bin')"
}

@test "vt-opt-in: a SIMH image copied away from its drive state and marks is the plain file it now is" {
  "$MT" -f made.tap vt-create 0
  rtar -c -f "localhost:$PWD/made.tap" -C src night2
  cp made.tap copy.tap
  run "$BUFFER" -i "localhost:$PWD/copy.tap" -o read.bin --rsh-command="$RSH_STANDIN"
  assert_success
  cmp copy.tap read.bin
  assert_not_exist copy.tap.state
}

# Writes ./server, the command the rsh stand-in runs as the remote rmt:
# tapekit's rmt with the options given (quoted for /bin/sh).
rmt_server() {
  printf '#!/bin/sh\nexec %s --log none%s\n' "$RMT" "$(printf ' %q' "$@")" >server
  chmod +x server
}

@test "vt-opt-in: rmt --virtual-tapes makes the new names it matches virtual tapes, and those alone" {
  mkdir tapes other
  rmt_server --virtual-tapes "$PWD/tapes/*.tap"
  RSH_STANDIN_SERVER=$PWD/server three_nights "$PWD/tapes/t1.tap"
  RSH_STANDIN_SERVER=$PWD/server three_nights "$PWD/other/t1.tap"
  run "$MT" -f tapes/t1.tap status
  assert_success
  assert_line --partial "File number=3, block number=0"
  assert_equal "$(tar -t -f other/t1.tap)" "$(printf 'night3/\nnight3/c.bin')"
  assert_not_exist other/t1.tap.state
}

@test "vt-opt-in: under --allow, rmt serves what was made a virtual tape and what --virtual-tapes names as tapes, a new *.tap as a plain file" {
  mkdir tapes
  "$MT" -f tapes/made.img vt-create 0
  rmt_server --allow "$PWD/tapes" --virtual-tapes '*.vt'
  RSH_STANDIN_SERVER=$PWD/server three_nights "$PWD/tapes/made.img"
  RSH_STANDIN_SERVER=$PWD/server three_nights "$PWD/tapes/new.vt"
  RSH_STANDIN_SERVER=$PWD/server three_nights "$PWD/tapes/new.tap"
  run "$MT" -f tapes/made.img status
  assert_success
  assert_line --partial "File number=3, block number=0"
  run "$MT" -f tapes/new.vt status
  assert_success
  assert_line --partial "File number=3, block number=0"
  assert_equal "$(tar -t -f tapes/new.tap)" "$(printf 'night3/\nnight3/c.bin')"
  assert_not_exist tapes/new.tap.state
}

@test "vt-opt-in: rmt --virtual-tapes with an empty pattern exits 1 before it serves" {
  run --separate-stderr "$RMT" --log none --virtual-tapes '' </dev/null
  assert_equal "$status" 1
  assert_equal "${stderr_lines[0]}" "rmt: invalid --virtual-tapes '': a pattern, e.g. '*.tap'"
}

@test "vt-opt-in: buffer -o new.tap without the opt-in writes a plain file byte-identical to its input" {
  random_mib 2 7 >in.bin
  run "$BUFFER" -i in.bin -o new.tap
  assert_success
  cmp in.bin new.tap
  assert_not_exist new.tap.state
}

@test "vt-opt-in: buffer -o makes a virtual tape of a new name TAPEKIT_VIRTUAL_TAPES names, whatever it ends in" {
  random_mib 1 7 >in.bin
  mkdir vt
  TAPEKIT_VIRTUAL_TAPES="$PWD/vt/*" run "$BUFFER" -i in.bin -o vt/new.img
  assert_success
  assert_exist vt/new.img.state
  run "$MT" -f vt/new.img status
  assert_success
  assert_line --partial "File number=1, block number=0"
}

@test "vt-opt-in: a file that is no drive state, named x.tap.state, does not make x.tap a virtual tape" {
  echo "notes on last night's backup" >x.tap.state
  random_mib 1 9 >in.bin
  run "$BUFFER" -i in.bin -o x.tap
  assert_success
  cmp in.bin x.tap
  assert_equal "$(cat x.tap.state)" "notes on last night's backup"
}

@test "vt-opt-in: reblock -o new.tap without the opt-in writes a plain file byte-identical to its input" {
  random_mib 1 8 >in.bin
  run "$REBLOCK" -s 64k -i in.bin -o new.tap
  assert_success
  cmp in.bin new.tap
  assert_not_exist new.tap.state
}

@test "vt-opt-in: mt status on a plain x.tap answers as on any plain file" {
  tar -c -f x.tar -C src .
  cp x.tar x.tap
  run --separate-stderr "$MT" -f x.tar status
  local want_status=$status want_output=$output want_stderr=${stderr//x.tar/x.tap}
  run --separate-stderr "$MT" -f x.tap status
  assert_equal "$status" "$want_status"
  assert_equal "$output" "$want_output"
  assert_equal "$stderr" "$want_stderr"
  cmp x.tar x.tap
}

@test "vt-opt-in: mt vt-protect refuses a plain x.tap, naming how a virtual tape is made" {
  tar -c -f x.tap -C src .
  run --separate-stderr "$MT" -f x.tap vt-protect 1
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: vt-protect: x.tap is not a virtual tape (mt vt-create makes one)"
}

# Makes $shared, a folder both test users may write in, holding t.tap: a
# virtual tape user 1001 made and wrote 30000 bytes to (also left in ./one).
tape_of_user_1001() {
  shared=$(mktemp -d "${TMPDIR:-/tmp}/tapekit-shared.XXXXXX")
  chmod 0777 "$shared"
  head -c 30000 /dev/urandom >one
  as_user 1001 "$MT" -f "$shared/t.tap" vt-create 0
  as_user 1001 "$REBLOCK" -s 10k -i one -o "$shared/t.tap"
}

@test "vt-opt-in: an image whose drive state beside it cannot be read is refused, naming the state, never written as a plain file" {
  [ "$(id -u)" = 0 ] || skip "needs root to act as two users"
  local shared
  tape_of_user_1001
  # Only the state marks it (an image whose file system keeps no
  # attributes), and user 1002 may write the image but not read the state.
  python3 -c 'import os, sys
for a in os.listxattr(sys.argv[1]):
    os.removexattr(sys.argv[1], a)' "$shared/t.tap"
  chmod 0666 "$shared/t.tap"
  chmod 0600 "$shared/t.tap.state"
  local before
  before=$(sha "$shared/t.tap")
  run --separate-stderr as_user 1002 "$REBLOCK" -s 10k -i one -o "$shared/t.tap"
  assert_failure
  assert_equal "$stderr" "reblock: open $shared/t.tap: its drive state $shared/t.tap.state cannot be read, so whether it is a virtual tape is unknown: Permission denied"
  assert_equal "$(sha "$shared/t.tap")" "$before"
  rm -rf "$shared"
}

@test "vt-opt-in: an image whose mark cannot be read (it may be written, not read) is refused, never written as a plain file" {
  [ "$(id -u)" = 0 ] || skip "needs root to act as two users"
  local shared
  tape_of_user_1001
  # Only the attribute marks it now (its state moved away).
  rm "$shared/t.tap.state"
  chmod 0222 "$shared/t.tap"
  local before
  before=$(sha "$shared/t.tap")
  run --separate-stderr as_user 1002 "$REBLOCK" -s 10k -i one -o "$shared/t.tap"
  assert_failure
  assert_equal "$stderr" "reblock: open $shared/t.tap: its attribute user.tapekit.virtual-tape cannot be read, so whether it is a virtual tape is unknown: Permission denied"
  assert_equal "$(sha "$shared/t.tap")" "$before"
  rm -rf "$shared"
}
