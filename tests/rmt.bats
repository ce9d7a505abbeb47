#!/usr/bin/env bats
# Shows that rmt answers every request of rmt-protocol.md §13 as real clients
# expect, keeps its access policy (§12.6), and survives hostile input piped
# straight into it: no crash, no desync, bounded memory, correct replies.
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  scratch=
  printf '01234567890123456789' >data
}

teardown() {
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
}

# Pipes the bytes $1 into rmt (extra options follow); replies go to out,
# the exit status to $status.
serve() {
  local input=$1
  shift
  printf '%s' "$input" >in.bin
  serve_file "$@"
}

# Runs rmt on in.bin (options as arguments): replies in out, stderr in err.
serve_file() {
  status=0
  "$RMT" --log none "$@" <in.bin >out 2>err || status=$?
}

# Fails unless out holds exactly the bytes $1; shows both on a mismatch.
assert_out() {
  printf '%s' "$1" >expected
  if ! cmp -s expected out; then
    echo "expected:" && od -c expected | head -20
    echo "got:" && od -c out | head -20
    return 1
  fi
}

@test "rmt: O with numeric flags opens, R reads short and answers A0 for R0 and at end of file" {
  serve $'Odata\n0\nR0\nR15\nR15\nR15\n'
  assert_equal "$status" 0
  assert_out $'A0\nA0\nA15\n012345678901234A5\n56789A0\n'
}

@test "rmt: the symbolic part of O flags wins over the number" {
  serve $'Odata\n1 O_RDONLY\nW3\nabcR4\n'
  assert_out $'A0\nE9\nBad file descriptor\nA4\n0123'
  assert_equal "$(cat data)" 01234567890123456789
}

@test "rmt: symbolic O flags without a number and without O_ create the file" {
  serve $'Onew\nWRONLY|CREAT\nW3\nabc'
  assert_out $'A0\nA3\n'
  assert_equal "$(cat new)" abc
}

@test "rmt: numeric-only O flags keep only the access mode" {
  serve $'Onew\n577\n'
  assert_out $'E2\nNo such file or directory\n'
  assert_file_not_exists new
}

@test "rmt: GNU numeric plus symbolic flags create and truncate" {
  serve $'Odata\n577 O_WRONLY|O_CREAT|O_TRUNC\nW2\nxy'
  assert_out $'A0\nA2\n'
  assert_equal "$(cat data)" xy
}

@test "rmt: invalid open flags get E22 and the session goes on" {
  serve $'Odata\nO_WRONLY|O_BOGUS\nOdata\n0 junk\nOdata\n|O_RDONLY\nOdata\n0\nR2\n'
  assert_equal "$status" 0
  assert_out $'E22\nInvalid open mode\nE22\nInvalid open mode\nE22\nInvalid open mode\nA0\nA2\n01'
}

@test "rmt: the server stays alive after C and serves a reopen on the same connection" {
  serve $'Odata\n0\nC\nOdata\n0\nR3\nC\n'
  assert_equal "$status" 0
  assert_out $'A0\nA0\nA0\nA3\n012A0\n'
}

@test "rmt: S is one byte and is answered before any newline arrives" {
  local l1 l2 pid to from
  coproc SERVER { exec "$RMT" --log none; }
  pid=$SERVER_PID to=${SERVER[1]} from=${SERVER[0]}
  printf 'Odata\n0\nS' >&"$to"
  read -r -t 20 l1 <&"$from"
  read -r -t 20 l2 <&"$from"
  exec {to}>&-
  wait "$pid"
  assert_equal "$l1" A0
  assert_equal "$l2" E25
}

@test "rmt: a stray newline after S is skipped, not taken for a command" {
  serve $'Odata\n0\nS\nR3\n'
  assert_equal "$status" 0
  assert_out $'A0\nE25\nInappropriate ioctl for device\nA3\n012'
}

@test "rmt: L takes offset-first and whence-first requests (§6.4)" {
  # Each pair: request, expected reply on the 20-byte file.
  local cases=(
    $'L0\n0\n' A0 $'L5\n0\n' A5 $'L0\n5\n' A5 $'L0\n2\n' A20 $'L2\n0\n' A20
    $'L-5\n2\n' A15 $'L2\n-5\n' A15 $'LSEEK_END\n0\n' A20 $'L0\nEND\n' A20
    $'L3\n1\n' A3 $'L1\n3\n' A1
  )
  local i
  for ((i = 0; i < ${#cases[@]}; i += 2)); do
    serve $'Odata\n0\n'"${cases[i]}"
    assert_out "A0"$'\n'"${cases[i + 1]}"$'\n'
  done
}

@test "rmt: L with a bad offset gets E22 after both lines are read" {
  serve $'Odata\n0\nL0\nabc\nLabc\n0\nR2\n'
  assert_equal "$status" 0
  assert_out $'A0\nE22\nInvalid seek argument\nE22\nInvalid seek argument\nA2\n01'
}

@test "rmt: I-1 is answered exactly A1" {
  serve $'Odata\n0\nI-1\n0\nR1\n'
  assert_out $'A0\nA1\nA1\n0'
}

@test "rmt: I with a raw Linux op on a plain file fails with ENOTTY and the session goes on" {
  serve $'Odata\n0\nI6\n1\nR1\n'
  assert_out $'A0\nE25\nInappropriate ioctl for device\nA1\n0'
}

@test "rmt: I with an unknown or out-of-range op gets E22" {
  serve $'Odata\n0\nI17\n1\nI99999999999\n1\nIabc\n1\nI6\nabc\nR1\n'
  assert_out $'A0\nE22\nInvalid operation code\nE22\nInvalid operation code\nE22\nInvalid operation code\nE22\nInvalid byte count\nA1\n0'
}

@test "rmt: i takes the extended ops 2..4 and refuses the others" {
  serve $'Odata\n0\ni4\n1\ni0\n1\n'
  assert_out $'A0\nE25\nInappropriate ioctl for device\nE22\nInvalid operation code\n'
}

@test "rmt: v answers A1 and V answers A2" {
  serve $'v\nV1\n'
  assert_out $'A1\nA2\n'
}

@test "rmt: W answers the exact count and writes one record" {
  serve $'Onew\n1 O_WRONLY|O_CREAT\nW5\nhelloW0\n'
  assert_out $'A0\nA5\nA0\n'
  assert_equal "$(cat new)" hello
}

@test "rmt: records of 1 MiB go through W and R unchanged" {
  random_mib 1 7 >rec
  { printf 'Obig\n66 O_RDWR|O_CREAT\nW1048576\n'; cat rec; printf 'L0\n0\nR1048576\n'; } >in.bin
  serve_file
  assert_equal "$status" 0
  cmp rec big
  tail -c 1048576 out | cmp - rec
  assert_equal "$(head -c 17 out)" $'A0\nA1048576\nA0\nA1'
}

@test "rmt: requests before any O get E9 and the W payload is consumed" {
  serve $'R10\nW3\nabcL0\n0\nI6\n1\nS\nsT\nC\nOdata\n0\nR1\n'
  assert_equal "$status" 0
  assert_out $'E9\nBad file descriptor\nE9\nBad file descriptor\nE9\nBad file descriptor\nE9\nBad file descriptor\nE9\nBad file descriptor\nE9\nBad file descriptor\nE9\nBad file descriptor\nA0\nA1\n0'
}

@test "rmt: an unknown command letter gets E22 and ends the session with status 2" {
  local letter
  for letter in X o $'\r' ' ' $'\001'; do
    serve "Odata"$'\n0\n'"$letter"$'\nR1\n'
    assert_equal "$status" 2
    assert_out $'A0\nE22\nGarbage command\n'
  done
}

@test "rmt: end of input inside any request ends the session quietly with status 2" {
  local partial
  for partial in O Odata $'Odata\n' R R5 W W5 $'L0\n' L I $'I6\n' $'i4\n' s C v; do
    serve $'Odata\n0\n'"$partial"
    assert_equal "$status" 2
    assert_out $'A0\n'
  done
}

@test "rmt: end of input between requests ends the session with status 0" {
  serve $'Odata\n0\n'
  assert_equal "$status" 0
  assert_out $'A0\n'
}

@test "rmt: negative and non-numeric R counts get E22" {
  serve $'Odata\n0\nR-1\nRabc\nR5 \nR0x5\nR+5\n'
  assert_equal "$status" 0
  assert_out $'A0\nE22\nInvalid byte count\nE22\nInvalid byte count\nE22\nInvalid byte count\nE22\nInvalid byte count\nA5\n01234'
}

@test "rmt: a W count that is negative or not a number gets E22 and ends the session" {
  local count
  for count in -1 abc 99999999999999999999; do
    serve $'Odata\n2\nW'"$count"$'\nabc'
    assert_equal "$status" 2
    assert_out $'A0\nE22\nInvalid byte count\n'
  done
  assert_equal "$(cat data)" 01234567890123456789
}

@test "rmt: a huge R count is served from a bounded buffer" {
  # The address-space limit would kill a server that allocates the count;
  # sanitizers reserve terabytes of shadow memory, so they skip the limit.
  local limit=
  [ -n "${TK_SANITIZED:-}" ] || limit="ulimit -v 200000;"
  run bash -c "$limit"' printf "Odata\n0\nR99999999999999\nR2147483648\n" | "$0" --log none >out' "$RMT"
  assert_equal "$status" 0
  assert_out $'A0\nA20\n01234567890123456789A0\n'
}

@test "rmt: a W record above --max-record is drained and refused, then the session goes on" {
  { printf 'Onew\n1 O_WRONLY|O_CREAT\nW2097152\n'; head -c 2097152 /dev/zero; printf 'W2\nok'; } >in.bin
  serve_file --max-record 1m
  assert_equal "$status" 0
  assert_out $'A0\nE22\nRecord larger than the server\'s limit\nA2\n'
  assert_equal "$(cat new)" ok
}

@test "rmt: W whose payload ends early is answered E5 Premature eof, writes nothing and ends with status 2" {
  serve $'Onew\n1 O_WRONLY|O_CREAT\nW10\nabc'
  assert_equal "$status" 2
  assert_out $'A0\nE5\nPremature eof\n'
  assert_equal "$(stat -c %s new)" 0
  # The same for a record above --max-record, which is drained, not kept.
  { printf 'Onew\n1 O_WRONLY|O_CREAT\nW2097152\n'; head -c 1000 /dev/zero; } >in.bin
  serve_file --max-record 1m
  assert_equal "$status" 2
  assert_out $'A0\nE5\nPremature eof\n'
  assert_equal "$(stat -c %s new)" 0
}

@test "rmt: a 10 KB device name gets E36 and the flags line is not taken for a command" {
  local name
  name=$(head -c 10240 /dev/zero | tr '\0' a)
  serve "O$name"$'\n0\nOdata\n0\nR1\n'
  assert_equal "$status" 0
  assert_out $'E36\nFile name too long\nA0\nA1\n0'
}

@test "rmt: an O it refuses still closes the device opened before, as rmt-tar's does" {
  local name
  name=$(head -c 5000 /dev/zero | tr '\0' a)
  serve "Odata"$'\n0\n'"O$name"$'\n0\nR5\nOdata\n0\nOdata\nbogus\nR1\n'
  assert_equal "$status" 0
  assert_out $'A0\nE36\nFile name too long\nE9\nBad file descriptor\nA0\nE22\nInvalid open mode\nE9\nBad file descriptor\n'
}

@test "rmt: an endless line ends the session instead of growing memory" {
  run bash -c 'head -c 3000000 /dev/zero | tr "\0" a | sed "s/^/O/" | "$0" --log none >out' "$RMT"
  assert_equal "$status" 2
  assert_equal "$(stat -c %s out)" 0
}

@test "rmt: NUL in a device name is refused, and control characters under --allow" {
  printf 'Oda\0ta\n0\n' >in.bin
  serve_file
  assert_out $'E13\nPermission denied\n'
  mkdir -p tapes
  printf 'x' >$'tapes/da\001ta'
  serve "O$PWD/tapes/da"$'\001ta\n0\n' --allow "$PWD/tapes"
  assert_out $'E13\nPermission denied\n'
}

@test "rmt: a device name with a tab or a control character opens as on GNU rmt and rmt-dump" {
  # tar -c -f 'host:/srv/a<TAB>b.tar' works with both servers it replaces.
  printf 'xy' >$'da\001ta'
  serve $'Oa\tb.tar\n65 O_WRONLY|O_CREAT\nW3\nabcC\nOda\001ta\n0\nR2\n'
  assert_equal "$status" 0
  assert_out $'A0\nA3\nA0\nA0\nA2\nxy'
  assert_equal "$(cat $'a\tb.tar')" abc
}

@test "rmt: \"..\" in a device name is refused under --allow" {
  mkdir -p tapes
  serve "O$PWD/tapes/../data"$'\n0\n' --allow "$PWD/tapes"
  assert_out $'E13\nPermission denied\n'
}

@test "rmt: a symlink out of the allowed tree is refused" {
  mkdir -p tapes
  ln -s "$PWD/data" tapes/escape
  serve "O$PWD/tapes/escape"$'\n0\n' --allow "$PWD/tapes"
  assert_out $'E13\nPermission denied\n'
}

@test "rmt: a path outside every --allow entry is refused and the session goes on" {
  mkdir -p tapes
  cp data tapes/t1
  serve "O$PWD/data"$'\n0\n'"O$PWD/tapes/t1"$'\n0\nR2\n' --allow "$PWD/tapes/" --allow /dev/nst*
  assert_equal "$status" 0
  assert_out $'E13\nPermission denied\nA0\nA2\n01'
}

@test "rmt: an allowed directory named through a symlink, or written with // and /./, is served" {
  mkdir -p real
  cp data real/t1
  ln -s "$PWD/real" link
  # Named as allowed, and as it resolves.
  serve "O$PWD/link/t1"$'\n0\nR2\n'"O$PWD/real/t1"$'\n0\nR2\n'"O$PWD//link/./t1"$'\n0\nR2\n' --allow "$PWD/link"
  assert_out $'A0\nA2\n01A0\nA2\n01A0\nA2\n01'
  # A link out of it is still refused.
  ln -s "$PWD/data" real/escape
  serve "O$PWD/link/escape"$'\n0\n' --allow "$PWD/link"
  assert_out $'E13\nPermission denied\n'
}

@test "rmt: a name ending in / names a directory, as open(2) has it, with or without --allow" {
  tapectl -w t.tap write 3 >/dev/null
  cp t.tap t.before
  cp data data.before
  local allow
  for allow in "" "--allow=$PWD"; do
    # A file and an image: ENOTDIR, for reading and for writing; a name not
    # there yet: ENOENT, or EISDIR with O_CREAT, and nothing is created.
    serve "O$PWD/data/"$'\n0\n'"O$PWD/t.tap/"$'\n2 O_RDWR\nW2\nxy'"O$PWD/data/."$'\n1 O_WRONLY\n'"O$PWD/new.tap/"$'\n0\n'"O$PWD/new.tap/"$'\n66 O_RDWR|O_CREAT\n' $allow --no-sandbox
    assert_equal "$status" 0
    assert_out $'E20\nNot a directory\nE20\nNot a directory\nE9\nBad file descriptor\nE20\nNot a directory\nE2\nNo such file or directory\nE21\nIs a directory\n'
    cmp t.tap t.before
    cmp data data.before
    assert_file_not_exists new.tap
  done
}

@test "rmt: a glob --allow entry admits matching names only" {
  cp data t1.img
  cp data t1.other
  serve "O$PWD/t1.img"$'\n0\n'"O$PWD/t1.other"$'\n0\n' --allow "$PWD/*.img"
  assert_out $'A0\nE13\nPermission denied\n'
}

@test "rmt: --read-only refuses opens for writing with EROFS and serves reads" {
  serve $'Odata\n2 O_RDWR\nOnew\n65 O_WRONLY|O_CREAT\nOdata\n0\nR2\n' --read-only
  assert_out $'E30\nRead-only file system\nE30\nRead-only file system\nA0\nA2\n01'
  assert_file_not_exists new
}

@test "rmt: --write-once creates new files and refuses to overwrite existing ones" {
  serve $'Onew\n577 O_WRONLY|O_CREAT|O_TRUNC\nW2\nokC\nOnew\n577 O_WRONLY|O_CREAT|O_TRUNC\nOnew\n0\nR2\n' --write-once
  assert_out $'A0\nA2\nA0\nE17\nFile exists\nA0\nA2\nok'
}

@test "rmt: new files are created 0600 unless --create-mode says otherwise" {
  serve $'Onew\n65 O_WRONLY|O_CREAT\n'
  assert_equal "$(stat -c %a new)" 600
  serve $'Onew2\n65 O_WRONLY|O_CREAT\n' --create-mode 0640
  assert_equal "$(stat -c %a new2)" 640
}

@test "rmt: a virtual tape's state file gets the same creation mode as its image" {
  serve $'Ot.tap\n66 O_RDWR|O_CREAT\nW2\nokC\n'
  assert_equal "$(stat -c %a t.tap) $(stat -c %a t.tap.state)" "600 600"
  serve $'Ou.tap\n66 O_RDWR|O_CREAT\nW2\nokC\n' --create-mode 0640
  assert_equal "$(stat -c %a u.tap) $(stat -c %a u.tap.state)" "640 640"
}

@test "rmt: a restricted server refuses ioctls off its allow-list with EPERM" {
  serve "O$PWD/data"$'\n0\nI13\n1\nI6\n1\n' --allow "$PWD"
  assert_out $'A0\nE1\nOperation not permitted by the server\nE25\nInappropriate ioctl for device\n'
  serve "O$PWD/data"$'\n0\nI13\n1\n' --allow "$PWD" --allow-ioctl erase
  assert_out $'A0\nE25\nInappropriate ioctl for device\n'
}

@test "rmt: under --allow the server confines itself with Landlock where the kernel has it" {
  mkdir -p tapes
  printf 'O%s\n65 O_WRONLY|O_CREAT\nW2\nok' "$PWD/tapes/new" >in.bin
  "$RMT" --allow "$PWD/tapes" --log rmt.log <in.bin >out
  assert_out $'A0\nA2\n'
  run cat rmt.log
  if [ -n "${TK_SANITIZED:-}" ]; then
    assert_output --partial 'sandbox="no landlock: sanitizer build"'
  else
    assert_output --regexp 'sandbox="(landlock|no landlock: [^"]*)"'
  fi
  "$RMT" --allow "$PWD/tapes" --no-sandbox --log rmt2.log <in.bin >out
  run cat rmt2.log
  assert_output --partial 'sandbox="off"'
}

@test "rmt: a bare argument is ignored, never opened as a debug file" {
  serve $'v\n' debug.out
  assert_equal "$status" 0
  assert_out $'A1\n'
  assert_file_not_exists debug.out
}

@test "rmt: options after a bare argument still count, and a bare argument beside restrictions stops the server" {
  mkdir -p g
  : >g/a.tap
  : >g/b.tap
  # An --allow glob the shell expanded: g/b.tap would have ended the options
  # and dropped --read-only. The server refuses to start instead.
  serve "O$PWD/g/a.tap"$'\n1 O_WRONLY\nW3\nabc' --allow "$PWD"/g/*.tap --read-only
  assert_equal "$status" 1
  assert_equal "$(head -1 err)" "rmt: unexpected argument '$PWD/g/b.tap' beside restrictions (quote --allow globs: the shell expanded one?)"
  assert_equal "$(stat -c %s g/a.tap)" 0
  serve $'Odata\n0\n' debug.out --read-only
  assert_equal "$status" 1
  # Without restrictions the word is ignored, and options after it apply.
  serve $'Onew\n65 O_WRONLY|O_CREAT\n' debug.out --create-mode 0640
  assert_equal "$status" 0
  assert_equal "$(stat -c %a new)" 640
}

@test "rmt: words after -- are bare words: ignored alone, refused beside restrictions" {
  serve $'v\n' -- -r x
  assert_equal "$status" 0
  assert_out $'A1\n'
  assert_equal "$(cat err)" "rmt: ignoring argument '-r'"$'\n'"rmt: ignoring argument 'x'"
  serve $'v\n' --read-only -- x
  assert_equal "$status" 1
  assert_equal "$(head -1 err)" "rmt: unexpected argument 'x' beside restrictions (quote --allow globs: the shell expanded one?)"
}

@test "rmt: an empty --allow or --debug-log is refused, not taken for the working directory or no log" {
  : >here
  serve $'Ohere\n0\n' --allow ''
  assert_equal "$status" 1
  assert_equal "$(head -1 err)" "rmt: invalid --allow '': a directory, file or pattern"
  assert_out ''
  serve $'v\n' --debug-log=
  assert_equal "$status" 1
  assert_equal "$(head -1 err)" "rmt: invalid --debug-log '': a file name"
  assert_out ''
}

@test "rmt: an --allow path that is not there is refused at start with exit 1, naming it" {
  mkdir tapes
  : >data
  # Each: the entry, then how it is refused.
  local cases=(
    "$PWD/no/such/dir" "No such file or directory"
    "$PWD/no/such/*.tap" "No such file or directory"
    "$PWD/tapes/none/" "No such file or directory"
    "$PWD/data/" "Not a directory"
    "$PWD/data/x.tap" "Not a directory"
  ) i
  for ((i = 0; i < ${#cases[@]}; i += 2)); do
    serve $'v\n' --allow "${cases[i]}"
    assert_equal "$status" 1
    assert_equal "$(head -1 err)" "rmt: --allow ${cases[i]}: ${cases[i + 1]}"
    assert_out ''
  done
  # A file not there yet, in a directory that is, may be created.
  serve "O$PWD/tapes/new.tap"$'\n66 O_RDWR|O_CREAT\n' --allow "$PWD/tapes/new.tap" --write-once --no-sandbox
  assert_equal "$status" 0
  assert_out $'A0\n'
}

@test "rmt: a --log or --debug-log that cannot be opened is a bad command line: exit 1, not 3" {
  local option
  for option in --log --debug-log; do
    serve $'v\n' "$option" "$PWD/no/such/dir/log"
    assert_equal "$status" 1
    assert_equal "$(head -1 err)" "rmt: $option $PWD/no/such/dir/log: No such file or directory"
    assert_out ''
  done
}

@test "rmt: -h prints the help on standard output and exits 0, as --help does" {
  run --separate-stderr "$RMT" -h
  assert_equal "$status" 0
  assert_equal "$stderr" ''
  assert_line --index 0 --partial 'usage: rmt [-rw]'
  assert_line '  -h, --help          print this text and exit'
  local help=$output
  run --separate-stderr "$RMT" --help
  assert_equal "$output" "$help"
}

@test "rmt: -c COMMAND is accepted as from a login shell" {
  serve $'v\n' -c /etc/rmt
  assert_equal "$status" 0
  assert_out $'A1\n'
}

@test "rmt: an unknown option exits 1 with the usage" {
  run --separate-stderr "$RMT" --bogus
  assert_equal "$status" 1
  assert_equal "${stderr_lines[0]}" "rmt: unknown or incomplete option '--bogus'"
  assert_equal "${stderr_lines[1]}" "usage: rmt [-rw] [--allow path] [--read-only] [--write-once] [--create-mode mode]"
}

@test "rmt: --version names the program and serves nothing" {
  run --separate-stderr "$RMT" --version </dev/null
  assert_success
  assert_output "rmt (tapekit) $(cat "$BATS_TEST_DIRNAME/../VERSION")"
}

@test "rmt: a stop signal while watching for the next request ends the session at once" {
  local pid to from line
  coproc SERVER { exec "$RMT" --log none --busy-poll 999999; }
  pid=$SERVER_PID to=${SERVER[1]} from=${SERVER[0]}
  printf 'Odata\n0\n' >&"$to"
  read -r -t 20 line <&"$from"
  assert_equal "$line" A0
  sleep 0.2
  kill -TERM "$pid"
  # Still watching (999999 us) when the signal came: it must not go on to sleep.
  local waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    fail "rmt still running 5 s after SIGTERM"
  fi
  status=0
  wait "$pid" || status=$?
  exec {to}>&-
  assert_equal "$status" 3
}

@test "rmt: a client that pauses between requests is not watched for" {
  [ "$(nproc)" -ge 2 ] || skip "needs two CPUs"
  # 20 requests 20 ms apart: after the first long wait the average is over
  # the limit and the server sleeps at once.
  { printf 'Ow.bin\n65 O_WRONLY|O_CREAT\n'; for _ in $(seq 20); do sleep 0.02; printf 'W10\n0123456789'; done; } |
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
      strace -qq -e trace=poll -e signal=none -o trace "$RMT" --log none >out
  assert_equal "$(stat -c %s w.bin)" 200
  run grep -c '^poll(\[{fd=0, events=POLLIN}\], 1, 0)' trace
  [ "$output" -le 4 ] || fail "$output watches for 20 paused requests"
}

@test "rmt: a malformed --busy-poll is refused with the option named" {
  run --separate-stderr "$RMT" --busy-poll 5ms
  assert_equal "$status" 1
  assert_equal "${stderr_lines[0]}" "rmt: invalid --busy-poll '5ms': not a whole number"
  run --separate-stderr "$RMT" --busy-poll 2000000
  assert_equal "$status" 1
  assert_equal "${stderr_lines[0]}" "rmt: invalid --busy-poll '2000000': out of range"
}

# Counts the zero-timeout polls of the control input (busy polling) while
# rmt serves tar -b 1 writing 35 records of 512 bytes, one request at a
# time through the rsh stand-in. Arguments go to rmt; TASKSET may pin it.
count_watches() {
  head -c 16384 /dev/zero >big
  RSH_STANDIN_SERVER="${TASKSET:-} strace -qq -e trace=poll -e signal=none -o $PWD/trace $RMT --log none $*" \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    tar --rsh-command="$BATS_TEST_DIRNAME/rsh-standin" -b 1 -cf "localhost:$PWD/a.tar" big
  [ "$(stat -c %s a.tar)" = 17920 ] || return 1
  grep -c '^poll(\[{fd=0, events=POLLIN}\], 1, 0)' trace || true
}

@test "rmt: it watches for the next request before sleeping (--busy-poll), but not when told 0 or on one CPU" {
  [ "$(nproc)" -ge 2 ] || skip "needs two CPUs"
  # A limit no traced round trip exceeds: every request is watched for.
  run count_watches --busy-poll 999999
  assert_success
  [ "$output" -ge 35 ] || fail "only $output watches for 35 requests"
  # Between looks it yields the CPU to anyone else who wants it. W comes
  # 0.2 s after the open was served (not after it was sent: a loaded
  # machine can take longer than that to start rmt under strace).
  { printf 'Ow.bin\n65 O_WRONLY|O_CREAT\n'; until [ -e w.bin ]; do sleep 0.01; done
    sleep 0.2; printf 'W10\n0123456789'; } |
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
      strace -qq -e trace=sched_yield -e signal=none -o yields "$RMT" --log none --busy-poll 999999 >out
  assert_equal "$(stat -c %s w.bin)" 10
  grep -q '^sched_yield()' yields || fail "no sched_yield while watching"
  # The default watches too (at least until a traced round trip outlasts it).
  run count_watches
  [ "$output" -ge 1 ] || fail "no watches by default"
  run count_watches --busy-poll 0
  assert_output 0
  TASKSET="taskset -c 0" run count_watches
  assert_output 0
}

@test "rmt: names that look remote or like stdin are local files" {
  printf 'dash' >-
  printf 'colon' >a:b
  serve $'O-\n0\nR4\nOa:b\n0\nR5\n'
  assert_out $'A0\nA4\ndashA0\nA5\ncolon'
}

@test "rmt: each session writes one log line with peer, path, flags and bytes" {
  printf 'Odata\n0\nR5\nOnew\n65 O_WRONLY|O_CREAT\nW3\nabcC\n' >in.bin
  SSH_ORIGINAL_COMMAND=/etc/rmt "$RMT" --log rmt.log <in.bin >out
  assert_equal "$(wc -l <rmt.log)" 1
  run cat rmt.log
  assert_output --partial 'session peer=pipe'
  assert_output --partial 'command="/etc/rmt"'
  assert_output --partial 'open=["data" 0 O_RDONLY|O_NOCTTY; "new" 1 O_WRONLY|O_CREAT|O_NOCTTY]'
  assert_output --partial 'in=3 out=5'
}

@test "rmt: the log line shows an open that was refused or failed, and why" {
  printf 'Odata\n1 O_WRONLY\nOmissing/x\n0\nOdata\nrw\nOdata\n0\n' >in.bin
  "$RMT" --log rmt.log --read-only <in.bin >out
  run cat rmt.log
  assert_output --partial 'open=["data" failed: Read-only file system; "missing/x" 0 O_RDONLY|O_NOCTTY failed: No such file or directory; "data" refused: Invalid argument; "data" 0 O_RDONLY|O_NOCTTY] requests=4'
}

@test "rmt: --debug-log records requests and replies only when asked" {
  serve $'Odata\n0\nR2\n' --debug-log dbg
  run cat dbg
  assert_line --index 0 'O "data" "0"'
  assert_line --index 1 'A0'
  assert_line --index 2 'R "2"'
}

@test "rmt: --debug-log never writes the secret of a stream's join request" {
  # The join fails (no such session waits); the request is logged all the same.
  local secret=00112233445566778899aabbccddeeff
  serve $'i29808\n1:0123456789abcdef:'"$secret"$'\nv\n' --debug-log dbg
  assert_equal "$status" 0
  run cat dbg
  assert_line --index 0 'i "29808" "1:0123456789abcdef:(secret not logged)"'
  refute_output --partial "$secret"
}

# Runs rmt (options as arguments) for a client that sends the bytes $1 and
# then falls silent, its end of the connection still open (for 30 s at
# most): replies in out, the exit status in $status. The client is ended as
# soon as rmt exits, so a test takes as long as the timeout it checks (with
# a fixed "sleep 3" as the client, it took 3 s for a 1 s timeout).
serve_silent() {
  local input=$1
  shift
  printf '%s' "$input" >in.bin
  mkfifo client
  { cat in.bin; exec sleep 30; } >client 2>/dev/null 3>&- &
  local client=$!
  status=0
  "$RMT" --log none "$@" <client >out 2>err || status=$?
  kill "$client" 2>/dev/null || true
  wait "$client" 2>/dev/null || true
}

@test "rmt: a silent client is dropped after --idle-timeout with status 3" {
  serve_silent $'Odata\n0\n' --idle-timeout 1
  assert_equal "$status" 3
  assert_out $'A0\n'
}

@test "rmt: a W payload that stops arriving is dropped after --payload-timeout" {
  serve_silent $'Onew\n65 O_WRONLY|O_CREAT\nW10\nabc' --payload-timeout 1
  assert_equal "$status" 3
  assert_out $'A0\n'
  assert_equal "$(stat -c %s new)" 0
}

@test "rmt: S on a .tap answers a 48-byte struct mtget from the drive status" {
  tapectl -w t.tap write 100 fm 200 fm >/dev/null
  mt -f t.tap rewind
  serve "O$PWD/t.tap"$'\n0\nI1\n1\nS'
  assert_equal "$(head -c 10 out)" $'A0\nA1\nA48'
  assert_equal "$(stat -c %s out)" 58
  # mt_type 0x72, dsreg 0, gstat EOF|ONLINE|IM_REP_EN, fileno 1, blkno 0.
  run bash -c 'tail -c 48 out | od -An -tx8 -N40; tail -c 8 out | od -An -td4'
  assert_equal "$(tr -s ' \n' ' ' <<<"$output")" " 0000000000000072 0000000000000000 0000000000000000 0000000081010000 0000000000000000 1 0 "
}

@test "rmt: s sub-commands answer one status field each" {
  tapectl -w t.tap write 100 fm 200 fm >/dev/null
  mt -f t.tap rewind
  serve "O$PWD/t.tap"$'\n0\nI3\n1\nsTsFsBsfsX'
  assert_out $'A0\nA1\nA114\nA0\nA1\nA16842752\nE22\nInvalid status field\n'
}

@test "rmt: s answers A-1 for a block number the drive lost, as rmt-dump passes st's on" {
  tapectl -w t.tap write 100 fm 200 fm 300 fm >/dev/null
  # eom, then bsf 1: the file number is known again (2), the block number not.
  serve "O$PWD/t.tap"$'\n0\nI12\n1\nI2\n1\nsFsBsT'
  assert_out $'A0\nA1\nA1\nA2\nA-1\nA114\n'
}

@test "rmt: raw Linux op numbers position a .tap" {
  tapectl -w t.tap write 100 fm 200 fm 300 fm >/dev/null
  serve "O$PWD/t.tap"$'\n0\nI6\n1\nI1\n2\nsF'
  assert_out $'A0\nA1\nA2\nA2\n'
}

@test "rmt: after I-1 the portable op numbers apply (I0 writes a filemark, I5 rewinds)" {
  mt -f t.tap vt-create 0
  serve "O$PWD/t.tap"$'\n2 O_RDWR\nI-1\n0\nI0\n1\nI5\n1\nsFI1\n1\nsF'
  assert_out $'A0\nA1\nA1\nA1\nA0\nA1\nA1\n'
  run tapectl -r t.tap op rewind : read 1
  assert_output 0
}

@test "rmt: serving a huge R count keeps the server's peak memory under 32 MiB" {
  # Sanitizers reserve shadow memory, which would swamp the figure.
  [ -z "${TK_SANITIZED:-}" ] || skip "peak memory is not meaningful under sanitizers"
  local pid to from line hwm
  coproc SERVER { exec "$RMT" --log none; }
  pid=$SERVER_PID to=${SERVER[1]} from=${SERVER[0]}
  printf 'Odata\n0\nR99999999999999\n' >&"$to"
  read -r -t 20 line <&"$from"
  read -r -t 20 line <&"$from"
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
  exec {to}>&-
  wait "$pid"
  assert_equal "$line" A20
  echo "peak resident memory: $hwm kB"
  [ "$hwm" -lt 32768 ]
}

@test "rmt: the session log stays bounded however many opens a session makes" {
  # yes, not a shell loop: bats traces every command a test runs, which
  # makes a loop of printf cost about a third of a millisecond a turn.
  yes $'Odata\n0' | head -n 4000 >in.bin
  "$RMT" --log rmt.log <in.bin >out
  assert_equal "$(wc -l <rmt.log)" 1
  [ "$(wc -c <rmt.log)" -lt 5000 ]
  assert_equal "$(grep -c A0 out)" 2000
}

@test "rmt: --lseek-order gnu and bsd override the inferred L order" {
  serve $'Odata\n0\nL1\n3\n' --lseek-order gnu
  assert_out $'A0\nA3\n'
  serve $'Odata\n0\nL2\n0\n' --lseek-order bsd
  assert_out $'A0\nA2\n'
}

# The rule of rmt.8 ("Acknowledged writes"): a W reply is sent once the record
# is in the image, so every record acknowledged survives rmt's death. On ext4
# and xfs the virtual tape gathers records into 1 MiB writes; the 50 records
# here (512 400 bytes of image) would all have been in that buffer.
@test "rmt: every record acknowledged on a virtual tape is in the image when rmt is killed with SIGKILL" {
  local pid to from line i n=50 rc=0
  # One record of tapectl's pattern, so that reading it back checks its bytes.
  tapectl -w p.tap write 10240 >/dev/null
  tail -c +5 p.tap | head -c 10240 >record
  { printf 'W10240\n'; cat record; } >request
  coproc SERVER { exec "$RMT" --log none; }
  pid=$SERVER_PID to=${SERVER[1]} from=${SERVER[0]}
  printf 'O%s\n66 O_RDWR|O_CREAT\n' "$PWD/t.tap" >&"$to"
  read -r -t 20 line <&"$from"
  assert_equal "$line" A0
  for ((i = 0; i < n; i++)); do
    cat request >&"$to"
    read -r -t 20 line <&"$from"
    [ "$line" = A10240 ] || fail "reply $i to W: '$line'"
  done
  kill -KILL "$pid"
  wait "$pid" || rc=$?
  exec {to}>&-
  assert_equal "$rc" 137
  echo "image after the kill: $(stat -c %s t.tap) bytes, on $(stat -f -c %T .)"
  assert_equal "$(stat -c %s t.tap)" $((n * (10240 + 8)))
  # The next open for writing completes the killed writer's close (a filemark).
  tapectl -w t.tap status >/dev/null
  run tapectl -r t.tap op rewind : read $((n + 1))
  assert_equal "$(grep -c '^10240$' <<<"$output")" "$n"
  assert_line --index "$n" 0
}

@test "rmt: SIGTERM ends the session with status 3 and closes the tape with a filemark" {
  mt -f t.tap vt-create 0
  local pid to from l1 l2 rc=0
  coproc SERVER { exec "$RMT" --log rmt.log; }
  pid=$SERVER_PID to=${SERVER[1]} from=${SERVER[0]}
  printf 'O%s\n2 O_RDWR\nW5\nhello' "$PWD/t.tap" >&"$to"
  read -r -t 20 l1 <&"$from"
  read -r -t 20 l2 <&"$from"
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  exec {to}>&-
  assert_equal "$l1 $l2" "A0 A5"
  assert_equal "$rc" 3
  run tapectl -r t.tap op rewind : read 2
  assert_output $'5 corrupt\n0'
  run cat rmt.log
  assert_output --partial 'end="stopped by a signal"'
}

@test "rmt: dump's QFA requests (L whence 10 and 11) tell and seek the block on a .tap" {
  tapectl -w t.tap write 100 100 100 fm >/dev/null
  mt -f t.tap rewind
  serve "O$PWD/t.tap"$'\n0\nI3\n2\nL0\n10\nL1\n11\nL0\n10\nR200\n'
  # Block 1 is the second record: after the replies come its 100 bytes.
  assert_equal "$(head -c 20 out)" $'A0\nA2\nA2\nA1\nA1\nA100'
  assert_equal "$(stat -c %s out)" 120
}

@test "rmt: --write-once refuses to reopen an existing virtual tape for writing, too" {
  serve $'Onew.tap\n577 O_WRONLY|O_CREAT|O_TRUNC\nW2\nokC\nOnew.tap\n577 O_WRONLY|O_CREAT|O_TRUNC\n' --write-once
  assert_equal "$status" 0
  assert_out $'A0\nA2\nA0\nE17\nFile exists\n'
}

@test "rmt: under --allow a file or image with another hard link is not written, unless --allow-hard-links" {
  mkdir -p tapes outside
  printf 'outside the allowed tree' >outside/precious
  "$REBLOCK" -s 10k -i data -o outside/image.tap
  ln outside/precious tapes/planted
  ln outside/image.tap tapes/planted.tap
  local before_file before_image
  before_file=$(sha outside/precious)
  before_image=$(sha outside/image.tap)
  # A plain file (truncating) and a virtual tape: both refused, nothing written.
  serve "O$PWD/tapes/planted"$'\n577 O_WRONLY|O_CREAT|O_TRUNC\nW2\nokC\n'"O$PWD/tapes/planted.tap"$'\n66 O_RDWR|O_CREAT\nW2\nokC\n' \
    --allow "$PWD/tapes"
  assert_equal "$status" 0
  run cat out
  assert_line --index 0 'E31'
  assert_line --index 1 'Too many links'
  assert_equal "$(sha outside/precious)" "$before_file"
  assert_equal "$(sha outside/image.tap)" "$before_image"
  grep -c '^E31$' out | grep -qx 2
  # Reading is not writing.
  serve "O$PWD/tapes/planted"$'\n0\nR100\n' --allow "$PWD/tapes"
  assert_out $'A0\nA24\noutside the allowed tree'
  # The option that says the links are meant.
  serve "O$PWD/tapes/planted"$'\n577 O_WRONLY|O_CREAT|O_TRUNC\nW2\nokC\n' --allow "$PWD/tapes" --allow-hard-links
  assert_out $'A0\nA2\nA0\n'
  assert_equal "$(cat outside/precious)" ok
}

@test "rmt: a virtual tape's state file is never followed through a symlink" {
  mkdir -p tapes
  # A valid drive state elsewhere, planted behind a link.
  "$MT" -f tapes/other.tap vt-create 0
  "$MT" -f tapes/other.tap setblk 512
  mv tapes/other.tap.state tapes/outside
  ln -s outside tapes/t.tap.state
  serve $'Otapes/t.tap\n66 O_RDWR|O_CREAT\nW2\nokC\n'
  # The open fails (ELOOP) instead of taking the link's target as the drive.
  run cat out
  assert_line --index 0 --regexp '^E40$'
}

@test "rmt: a tape that cannot be closed at the end of input makes the exit status 4 and is logged" {
  # The record reaches the image (5008 bytes); the closing filemark, staged
  # in blocks reserved on ext4 or xfs (on_disk), then meets a full disk.
  on_disk
  head -c 5000 /dev/zero >record
  { printf 'Ot.tap\n66 O_RDWR|O_CREAT\nW5000\n'; cat record; } >in.bin
  status=0
  TK_MEDIUM_PATH="$PWD/t.tap" TK_MEDIUM_BYTES=5008 TK_MEDIUM_FALLOCATE=ignore \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$RMT" --log rmt.log <in.bin >out 2>err || status=$?
  assert_equal "$status" 4
  assert_out $'A0\nA5000\n'
  run cat rmt.log
  assert_output --partial 'end="eof; close: write t.tap: No space left on device"'
  # The record acknowledged stays, and the state still says a session was
  # under way, for the next open to complete.
  assert_equal "$(stat -c %s t.tap)" 5008
  assert_not_exist t.tap.state.tmp
  run grep -x 'writing 1' t.tap.state
  assert_success
}

@test "rmt: a record on a virtual tape that cannot reach the image is refused or answered short, never acknowledged whole" {
  # Blocks reserved on ext4 or xfs (on_disk): the record is staged, and the
  # write that takes it to the image before the reply meets a full disk.
  on_disk
  head -c 5000 /dev/zero >record
  { printf 'Ot.tap\n66 O_RDWR|O_CREAT\nW5000\n'; cat record; } >in.bin
  status=0
  TK_MEDIUM_PATH="$PWD/t.tap" TK_MEDIUM_BYTES=4096 TK_MEDIUM_FALLOCATE=ignore \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$RMT" --log none <in.bin >out 2>err || status=$?
  assert_equal "$status" 0
  assert_out $'A0\nE28\nNo space left on device\n'
  # Fixed 1024-byte blocks (1032 image bytes each): three of a W's four fit.
  rm t.tap t.tap.state
  "$MT" -f t.tap vt-create 0
  "$MT" -f t.tap setblk 1024
  { printf 'Ot.tap\n2\nW4096\n'; head -c 4096 /dev/zero; } >in.bin
  TK_MEDIUM_PATH="$PWD/t.tap" TK_MEDIUM_BYTES=4096 TK_MEDIUM_FALLOCATE=ignore \
    LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" "$RMT" --log none <in.bin >out 2>err || status=$?
  assert_equal "$status" 0
  assert_out $'A0\nA3072\n'
  assert_equal "$(stat -c %s t.tap)" $((3 * 1032))
  run tapectl -r t.tap op rewind : read 1
  assert_output '3072 corrupt'
}

@test "rmt: a write whose drive state cannot be saved first is refused, and nothing reaches the image" {
  printf 'Ot.tap\n66 O_RDWR|O_CREAT\nW2\nok' >in.bin
  status=0
  TK_MEDIUM_PATH="$PWD/t.tap.state" TK_MEDIUM_BYTES=0 LD_PRELOAD="$TK_TEST_LIB/fullmedium.so" \
    "$RMT" <in.bin >out 2>err || status=$?
  # The tape's close cannot save the state either: exit 4, as for any close.
  assert_equal "$status" 4
  # Not "A4": the bytes the state file took are no part of the record.
  assert_out $'A0\nE28\nNo space left on device\n'
  assert_equal "$(stat -c %s t.tap)" 0
  assert_not_exist t.tap.state.tmp
}

# A write the medium takes only in part is answered with the count that
# reached it (A<n>, as write(2) and GNU rmt answer), never with an error that
# would make the client send the whole record again.
@test "rmt: a W that fills a fixed-block virtual tape part way answers the bytes written" {
  "$MT" -f p.tap vt-create 3000
  "$MT" -f p.tap setblk 512
  { printf 'Op.tap\n2\nW2048\n'; head -c 2048 /dev/zero; printf 'W2048\n'; head -c 2048 /dev/zero; printf 'C\n'; } >in.bin
  run bash -c '"$0" --log none <in.bin | od -An -c | tr -s " \n" " "' "$RMT"
  assert_success
  # Open, 4 blocks, then 1 of the next 4 blocks before the medium is full, close.
  assert_output " A 0 \\n A 2 0 4 8 \\n A 5 1 2 \\n A 0 \\n "
  # Five 512-byte records (520 image bytes each) and the closing filemark.
  assert_equal "$(stat -c %s p.tap)" 2604
}

@test "rmt: a W that writes nothing at a full medium still answers an error" {
  "$MT" -f f.tap vt-create 1000
  { printf 'Of.tap\n2\n'; for i in 1 2 3 4; do printf 'W400\n'; head -c 400 /dev/zero; done; printf 'C\n'; } >in.bin
  run bash -c '"$0" --log none <in.bin | tr "\n" "|"' "$RMT"
  assert_success
  assert_output --regexp '^A0\|A400\|A400\|E28\|No space left on device\|(E28\|No space left on device\||E5\|[^|]*\|)A0\|$'
}

@test "rmt: a file that reaches the file size limit (ulimit -f) answers what fit, then E27, and the session goes on" {
  { printf 'Or.bin\n66 O_RDWR|O_CREAT\n'
    for i in 1 2 3 4; do printf 'W4000\n'; head -c 4000 /dev/zero; done
    printf 'C\n'; } >in.bin
  run bash -c 'ulimit -f 10; "$0" --log none <in.bin | tr "\n" "|"; exit "${PIPESTATUS[0]}"' "$RMT"
  assert_success
  # 10240 bytes: two whole records, 2240 bytes of the third, then EFBIG.
  assert_output 'A0|A4000|A4000|A2240|E27|File too large|A0|'
  assert_equal "$(stat -c %s r.bin)" 10240
}

@test "rmt: a virtual tape that reaches the file size limit (ulimit -f) refuses the record that does not fit and stays whole" {
  "$MT" -f r.tap vt-create 0
  { printf 'Or.tap\n2\n'
    for i in 1 2 3; do printf 'W4000\n'; head -c 4000 /dev/zero; done
    printf 'C\n'; } >in.bin
  run bash -c 'ulimit -f 10; "$0" --log none <in.bin | tr "\n" "|"; exit "${PIPESTATUS[0]}"' "$RMT"
  assert_success
  assert_output 'A0|A4000|A4000|E27|File too large|A0|'
  run "$MT" -f r.tap verify
  assert_success
  # Two records (of zeros, not tapectl's pattern: "corrupt"), then the filemark.
  run tapectl -r r.tap op rewind : read 3
  assert_output $'4000 corrupt\n4000 corrupt\n0'
}

# Builds $1/link -> a directory whose real path is longer than PATH_MAX,
# holding "out" -> $2: realpath(3) fails on every name through the link.
deep_link() {
  local tree=$1 target=$2 part chain='' i
  part=$(printf 'd%.0s' {1..250})
  for i in 1 2 3 4 5 6 7 8 9; do chain+="$part$i/"; done
  (cd "$tree" && mkdir -p "$chain" && ln -s "$chain" s1 &&
    cd "$chain" && mkdir -p "$chain" && ln -s "$chain" s2 && ln -s "$target" "$chain/out") &&
    ln -s s1/s2 "$tree/link"
}

@test "rmt: a name through a link deeper than PATH_MAX is refused under --allow, even without Landlock" {
  mkdir tree outside
  echo OUTSIDE >outside/secret
  deep_link tree "$PWD/outside"
  printf 'O%s\n0\nR20\nO%s\n65 O_WRONLY|O_CREAT\n' "$PWD/tree/link/out/secret" "$PWD/tree/link/out/new" >in.bin
  serve_file --allow "$PWD/tree" --no-sandbox
  assert_out $'E13\nPermission denied\nE9\nBad file descriptor\nE13\nPermission denied\n'
  assert_file_not_exists outside/new
}

# Tries per attack; 20,000 take about a second here.
RACE_TRIES=${TK_RACE_TRIES:-20000}

@test "rmt: a directory swapped with a link out of the tree during opens never leads outside, even without Landlock" {
  mkdir -p tree/d outside
  echo inside >tree/d/f
  echo OUTSIDE >outside/f
  ln -s "$PWD/outside" tree/x
  # RACE_TRIES times the 4 lines of O, R and C. yes, not a shell loop: bats
  # traces every command a test runs, and 20,000 turns of printf took 7 s
  # of the test's 7.5 before the race even began.
  yes "O$PWD/tree/d/f"$'\n0\nR20\nC' | head -n $((RACE_TRIES * 4)) >in.bin
  swap-dirs tree/d tree/x &
  local swapper=$!
  serve_file --allow "$PWD/tree" --no-sandbox
  kill "$swapper"
  wait "$swapper" || true
  assert_equal "$status" 0
  echo "inside: $(grep -c '^inside' out)" >&3
  assert_equal "$(grep -c OUTSIDE out)" 0
}

@test "rmt: the component walk used without openat2 refuses the swapped link and the deep link too" {
  mkdir -p tree/d outside
  echo inside >tree/d/f
  echo OUTSIDE >outside/f
  ln -s "$PWD/outside" tree/x
  run open-beneath walk tree d/f 1
  assert_output "inside 1 outside 0 refused 0"
  run open-beneath walk tree x/f 1
  assert_output "inside 0 outside 0 refused 1"
  swap-dirs tree/d tree/x &
  local swapper=$!
  run open-beneath walk tree d/f "$RACE_TRIES"
  kill "$swapper"
  wait "$swapper" || true
  assert_output --regexp "^inside [0-9]+ outside 0 refused [0-9]+$"
  deep_link tree "$PWD/outside"
  run open-beneath walk tree link/out/f 1
  assert_output "inside 0 outside 0 refused 1"
  run open-beneath auto tree link/out/f 1
  assert_output "inside 0 outside 0 refused 1"
}

@test "rmt: the server's own standard input and output are refused by any name, even unrestricted" {
  local name
  for name in /dev/stdin /dev/fd/0 /proc/self/fd/0 "/proc/$$/fd/0" "$PWD/in.bin"; do
    printf 'O%s\n0\nR4\n' "$name" >in.bin
    serve_file
    assert_out $'E13\nPermission denied\nE9\nBad file descriptor\n'
  done
  for name in /dev/stdout /dev/fd/1 /proc/self/fd/1 "$PWD/out"; do
    printf 'O%s\n1 O_WRONLY\nW4\nA99\n' "$name" >in.bin
    serve_file
    assert_out $'E13\nPermission denied\nE9\nBad file descriptor\n'
  done
  # Under --allow as well.
  printf 'O%s\n0\nR4\n' "$PWD/in.bin" >in.bin
  serve_file --allow "$PWD" --no-sandbox
  assert_out $'E13\nPermission denied\nE9\nBad file descriptor\n'
}

@test "rmt: a FIFO under --allow is refused at once, for reading and for writing" {
  mkdir tree
  mkfifo tree/p
  printf 'O%s\n0\nO%s\n1 O_WRONLY\nOdata\n0\n' "$PWD/tree/p" "$PWD/tree/p" >in.bin
  status=0
  timeout 20 "$RMT" --log none --allow "$PWD/tree" --no-sandbox <in.bin >out 2>err || status=$?
  assert_equal "$status" 0
  assert_out $'E13\nPermission denied\nE13\nPermission denied\nE13\nPermission denied\n'
}

@test "rmt: an open that blocks (a FIFO without a writer) ends the session after --idle-timeout" {
  mkfifo p
  printf 'Op\n0\nR4\n' >in.bin
  status=0
  timeout 30 "$RMT" --log rmt.log --idle-timeout 1 <in.bin >out 2>err || status=$?
  assert_equal "$status" 3
  assert_out ''
  run cat rmt.log
  assert_output --partial 'end="open timed out"'
}

@test "rmt: --read-only refuses what changes the drive for later clients with EROFS" {
  tapectl -w t.tap write 100 fm 200 fm >/dev/null
  mt -f t.tap rewind
  cp t.tap.state before.state
  # weof, offline, erase, setblk, setdensity, setdrvbuffer, lock, unlock,
  # unload, compression, reset; then eject, erase as v1 and extended ops.
  local op in='O'"$PWD"$'/t.tap\n0\n' expected=$'A0\n'
  for op in 5 7 13 20 21 24 28 29 31 32 0; do
    in+="I$op"$'\n1\n'
    expected+=$'E30\nRead-only server\n'
  done
  in+=$'I-1\n0\nI6\n1\nI9\n1\ni3\n1\n'
  expected+=$'A1\nE30\nRead-only server\nE30\nRead-only server\nE30\nRead-only server\n'
  serve "$in" --read-only
  assert_out "$expected"
  cmp before.state t.tap.state
}

@test "rmt: --read-only still positions the drive" {
  tapectl -w t.tap write 100 fm 200 fm >/dev/null
  mt -f t.tap rewind
  # fsf, sF, bsf, rewind, fsr, bsr, nop, eom, then the v1 rewind and fsf.
  serve "O$PWD/t.tap"$'\n0\nI1\n1\nsFI2\n1\nI6\n1\nI3\n1\nI4\n1\nI8\n1\nI12\n1\nI-1\n0\nI5\n1\nI1\n1\nsF' --read-only
  assert_out $'A0\nA1\nA1\nA1\nA1\nA1\nA1\nA1\nA1\nA1\nA1\nA1\nA1\n'
}

# The SIMH backend reaches the image and its state through OpenOptions::dir_fd
# (the directory rmt opened confined), so both stay in the allowed tree.
@test "rmt: under --allow a virtual tape keeps its drive state beside it" {
  mkdir tapes
  serve "O$PWD/tapes/t.tap"$'\n66 O_RDWR|O_CREAT\nW3\nabcC\n'"O$PWD/tapes/t.tap"$'\n0\nsF' --allow "$PWD/tapes" --no-sandbox
  assert_out $'A0\nA3\nA0\nA0\nA1\n'
  assert_file_exists tapes/t.tap.state
  assert_file_not_exists t.tap
}

@test "rmt: a refused or failed open tells the remote user why on standard error, one line" {
  echo 'etc/hosts' >plain.tap
  # i29803 first, as tapekit's client asks it: plain.tap is then refused.
  run --separate-stderr "$RMT" --read-only <<<"i29803
0
O$PWD/w.tap
1
O$PWD/plain.tap
0
"
  assert_line --index 1 E30
  assert_equal "${#stderr_lines[@]}" 2
  assert_equal "${stderr_lines[0]}" "rmt: open $PWD/w.tap: read-only server: Read-only file system"
  [[ ${stderr_lines[1]} == "rmt: open $PWD/plain.tap (not a SIMH tape image: "*'the file begins "etc/host'* ]]
}

@test "rmt: sC answers a virtual tape's compression, which struct mtget has no bit for" {
  mt -f t.tap vt-create 0
  # Raw Linux MTCOMPRESSION (32) on, then off; a plain file cannot tell.
  serve "O$PWD/t.tap"$'\n0\nI32\n1\nsCI32\n0\nsC'"Odata"$'\n0\nsC'
  assert_out $'A0\nA1\nA1\nA0\nA0\nA0\nE25\nInappropriate ioctl for device\n'
}

# --- a *.tap that is no SIMH image (issue 24 §1) ------------------------------

@test "rmt: a .tap that is no SIMH image is read as the plain file it is by a client that is not tapekit's, and it says so" {
  printf 'etc/hosts\n' >plain.tap
  cp plain.tap before
  serve "O$PWD/plain.tap"$'\n0\nR100\nsT' --log rmt.log
  assert_equal "$status" 0
  assert_out $'A0\nA10\netc/hosts\nE25\nInappropriate ioctl for device\n'
  assert_equal "$(cat err)" "rmt: $PWD/plain.tap: not a SIMH tape image (begins \"etc/host\"); opened read-only as a plain file"
  run cat rmt.log
  assert_line --index 0 --partial ": $PWD/plain.tap: not a SIMH tape image (begins \"etc/host\"); opened read-only as a plain file"
  assert_line --index 1 --partial "open=[\"$PWD/plain.tap\" 0 O_RDONLY|O_NOCTTY as a plain file (no SIMH image)]"
  cmp before plain.tap
  assert_file_not_exists plain.tap.state
}

@test "rmt: tapekit's client (i29803 before O) still gets EMEDIUMTYPE for a .tap that is no image" {
  printf 'etc/hosts\n' >plain.tap
  serve "i29803"$'\n0\n'"O$PWD/plain.tap"$'\n0\n'
  assert_equal "$status" 0
  assert_out $'A29803\nE124\nWrong medium type\n'
  [[ $(cat err) == "rmt: open $PWD/plain.tap (not a SIMH tape image: "*'the file begins "etc/host")'* ]]
}

@test "rmt: no open for writing reaches a .tap that is no image, whoever asks; the file stays byte for byte" {
  printf 'etc/hosts\n' >plain.tap
  cp plain.tap before
  local flags
  # O_WRONLY, O_RDWR (tar -r, cpio -A), tar -c's O_WRONLY|O_CREAT|O_TRUNC.
  for flags in 1 2 '577 O_WRONLY|O_CREAT|O_TRUNC'; do
    serve "O$PWD/plain.tap"$'\n'"$flags"$'\nW3\nabc'
    assert_equal "$status" 0
    assert_out $'E124\nWrong medium type\nE9\nBad file descriptor\n'
    [[ $(cat err) == "rmt: open $PWD/plain.tap (not a SIMH tape image: "* ]]
  done
  # --read-only: reading is served, writing refused before the file is looked at.
  serve "O$PWD/plain.tap"$'\n0\nR4\n'"O$PWD/plain.tap"$'\n2\n' --read-only
  assert_out $'A0\nA4\netc/E30\nRead-only file system\n'
  cmp before plain.tap
  assert_file_not_exists plain.tap.state
}

@test "rmt: a .tap too short for a length word is a plain file too; an empty one is a blank virtual tape" {
  printf 'ab' >short.tap
  : >empty.tap
  serve "O$PWD/short.tap"$'\n0\nR10\n'"O$PWD/empty.tap"$'\n0\nsT'
  assert_out $'A0\nA2\nabA0\nA114\n'
  assert_equal "$(cat err)" "rmt: $PWD/short.tap: not a SIMH tape image (begins \"ab\"); opened read-only as a plain file"
}

# --- what the person is told (issue 24 §2) ------------------------------------

@test "rmt: without a syslog to take the session log, rmt says so once when --log syslog asked for it; what the user must hear still comes, once" {
  printf 'etc/hosts\n' >plain.tap
  printf '%s' "O$PWD/plain.tap"$'\n0\n'"O$PWD/w.tap"$'\n1\n' >in.bin
  # As the system's rmt (no options), silent about the log, as rmt-tar is.
  TAPEKIT_TEST_SYSLOG_SOCKET=$PWD/no-log run --separate-stderr "$RMT" --read-only <in.bin
  assert_equal "$status" 0
  assert_equal "${stderr_lines[0]}" "rmt: $PWD/plain.tap: not a SIMH tape image (begins \"etc/host\"); opened read-only as a plain file"
  assert_equal "${#stderr_lines[@]}" 2
  TAPEKIT_TEST_SYSLOG_SOCKET=$PWD/no-log run --separate-stderr "$RMT" --read-only --log syslog <in.bin
  assert_equal "$status" 0
  assert_equal "${stderr_lines[0]}" "rmt: syslog is unavailable ($PWD/no-log: No such file or directory); the session log is not kept (--log FILE keeps it)"
  # What the user is told anyway comes once; the session's log line (which
  # would reach tar's terminal after every session) does not.
  assert_equal "${stderr_lines[1]}" "rmt: $PWD/plain.tap: not a SIMH tape image (begins \"etc/host\"); opened read-only as a plain file"
  assert_equal "${stderr_lines[2]}" "rmt: open $PWD/w.tap: read-only server: Read-only file system"
  assert_equal "${#stderr_lines[@]}" 3
  # Something at the path that is no socket is no syslog either.
  TAPEKIT_TEST_SYSLOG_SOCKET=$PWD/plain.tap run --separate-stderr "$RMT" --log syslog </dev/null
  assert_equal "${stderr_lines[0]}" "rmt: syslog is unavailable ($PWD/plain.tap: Connection refused); the session log is not kept (--log FILE keeps it)"
}

@test "rmt: with a socket where syslog listens, or another --log, nothing is said about syslog" {
  run --separate-stderr log-socket "$PWD/log.sock" env TAPEKIT_TEST_SYSLOG_SOCKET="$PWD/log.sock" "$RMT" </dev/null
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  local log
  for log in none rmt.log; do
    TAPEKIT_TEST_SYSLOG_SOCKET=$PWD/no-log run --separate-stderr "$RMT" --log "$log" </dev/null
    assert_equal "$status" 0
    assert_equal "$stderr" ""
  done
}

@test "rmt: the session's first read at end of data names the position and the fix, once, on stderr and in the log" {
  mt -f t.tap vt-create 0
  # Written and closed: the drive stands past the closing filemark, at end
  # of data, as a no-rewind device after tar -c.
  serve "O$PWD/t.tap"$'\n1\nW3\nabcC\n'
  serve "O$PWD/t.tap"$'\n0\nR10\nR10\nR10\n' --log rmt.log
  assert_out $'A0\nA0\nE5\nInput/output error\nE5\nInput/output error\n'
  assert_equal "$(cat err)" "rmt: $PWD/t.tap: first read is at end of data (file 1, block 0): rewind first, e.g. mt -f host:$PWD/t.tap rewind"
  assert_equal "$(grep -c 'first read is at end of data' rmt.log)" 1
  # Rewound, the first read finds the record: nothing is said.
  serve "O$PWD/t.tap"$'\n0\nI6\n1\nR10\n'
  assert_out $'A0\nA1\nA3\nabc'
  assert_equal "$(cat err)" ""
  # A blank tape has nothing to rewind to.
  mt -f blank.tap vt-create 0
  serve "O$PWD/blank.tap"$'\n0\nR10\n'
  assert_equal "$(cat err)" ""
}
