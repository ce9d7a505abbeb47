#!/usr/bin/env bats
# mt: shows that tapekit's mt is a drop-in for mt-st 1.7 (same exit statuses,
# messages, usage texts, ioctls and status text, checked by running Debian's
# mt-st side by side), and what it adds: --json, remote names and virtual
# tapes. Drives are faked with tests/shim/fake_st.c, which answers the tape
# ioctls on /dev/zero and logs them.
#
# Left out of the sanitizer pass (suite time: 90 s there, the most of any
# file): its tables run mt and mt-st side by side hundreds of times over a
# few hundred lines of command-line and status-text code; the sanitizer pass
# runs mt in tape.bats (every virtual-tape command), health.bats and
# faults.bats.
# run-suites: plain pass only

# bats' run sets $status, $output, $stderr and $lines.
# shellcheck disable=SC2154
bats_require_minimum_version 1.5.0
load test_helper

MT_ST=${MT_ST:-/usr/bin/mt-st}

setup() {
  tk_trace_test_lines_only
  unset TAPE RSH RMT TAPEKIT_MT_DENSITY_TABLE FAKE_ST_FAIL FAKE_ST_TYPE FAKE_ST_RESID \
    FAKE_ST_DSREG FAKE_ST_GSTAT FAKE_ST_ERREG FAKE_ST_FILENO FAKE_ST_BLKNO FAKE_ST_POS \
    FAKE_ST_SYSFS FAKE_ST_DEVICE FAKE_ST_STATE
  cd "$BATS_TEST_TMPDIR" || return 1
  # What mt asks the faked drive: fake logs every call it answers here.
  fake_calls_log=$BATS_TEST_TMPDIR/calls.log
}

# Reads file $2 into the variable named $1, whole, without a fork (a file
# that does not exist reads as empty: a program that made no ioctl leaves no
# call log).
slurp() {
  local -n slurped=$1
  slurped=
  [ -e "$2" ] || return 0
  IFS= read -r -d '' slurped <"$2" || true
}

# Runs our mt and mt-st with the same arguments and environment; fails,
# showing the difference, unless the exit statuses, stdout, stderr and the
# fake drive's call logs are byte-identical. Leaves the status in $same_status.
# $NEWER_THAN_1_7, if set, is a sed script deleting from our stderr the lines
# mt-st 1.8 added, which the installed 1.7 cannot print.
# Each row of a table runs two programs and nothing else: the outputs are
# compared in the shell (forks cost ~8 ms each, and mt.bats has ~200 rows).
# The files' names are new on every call, in a subshell too ($BASHPID).
same_as_mt_st_n=0
same_as_mt_st() {
  local d=$BATS_TEST_TMPDIR/cmp.$BASHPID.$((++same_as_mt_st_n)).
  local ours=0 theirs=0 kind our_bytes their_bytes
  FAKE_ST_LOG=${d}ours.log "$MT" "$@" >"${d}ours.out" 2>"${d}ours.err" || ours=$?
  [ -z "${NEWER_THAN_1_7:-}" ] || sed -i "$NEWER_THAN_1_7" "${d}ours.err"
  FAKE_ST_LOG=${d}theirs.log "$MT_ST" "$@" >"${d}theirs.out" 2>"${d}theirs.err" || theirs=$?
  for kind in out err log; do
    slurp our_bytes "${d}ours.$kind"
    slurp their_bytes "${d}theirs.$kind"
    if [ "$our_bytes" != "$their_bytes" ]; then
      echo "mt $*: $kind differs (ours <, mt-st >):"
      diff <(printf %s "$our_bytes") <(printf %s "$their_bytes")
      return 1
    fi
  done
  if [ "$ours" != "$theirs" ]; then
    echo "mt $*: exits $ours, mt-st exits $theirs"
    return 1
  fi
  same_status=$ours
}

# Reads "STATUS ARGS..." lines on stdin; each must behave as with mt-st and
# exit with STATUS.
table_same_as_mt_st() {
  local expected line words
  while read -r expected line; do
    [ -n "$expected" ] || continue
    eval "words=($line)"
    same_as_mt_st "${words[@]}" || return 1
    if [ "$same_status" != "$expected" ]; then
      echo "mt $line: exits $same_status, expected $expected"
      return 1
    fi
  done
}

# As table_same_as_mt_st, with the fake drive preloaded into both programs.
table_same_on_fake_drive() {
  LD_PRELOAD=$FAKE_ST table_same_as_mt_st
}

# --- command line, compared with mt-st -------------------------------------

# Runs our mt and mt-st with the same arguments; our output must be
# mt-st's, with lines added only after it on stream $1 (out or err), which
# are left in $added; both must exit 0.
same_as_mt_st_then_more() {
  local stream=$1 d=$BATS_TEST_TMPDIR/more.$BASHPID.$((++same_as_mt_st_n)). other=out
  local ours theirs ours_other theirs_other
  shift
  "$MT" "$@" >"${d}ours.out" 2>"${d}ours.err" || { echo "mt $*: exits $?"; return 1; }
  "$MT_ST" "$@" >"${d}theirs.out" 2>"${d}theirs.err" || { echo "mt-st $*: exits $?"; return 1; }
  [ "$stream" = out ] && other=err
  slurp ours "${d}ours.$stream"
  slurp theirs "${d}theirs.$stream"
  slurp ours_other "${d}ours.$other"
  slurp theirs_other "${d}theirs.$other"
  # mt-st's lines, whole, then ours.
  [ -z "$theirs" ] || [ "${theirs: -1}" = $'\n' ] || { echo "mt-st $*: $stream ends mid-line"; return 1; }
  if [ "${ours:0:${#theirs}}" != "$theirs" ]; then
    echo "mt $*: $stream differs (ours <, mt-st >):"
    diff "${d}ours.$stream" "${d}theirs.$stream"
    return 1
  fi
  [ "$ours_other" = "$theirs_other" ] || { diff "${d}ours.$other" "${d}theirs.$other"; echo "mt $*: $other differs"; return 1; }
  added=${ours:${#theirs}}
  [ -n "$added" ] || { echo "mt $*: adds nothing"; return 1; }
  while [ "${added: -1}" = $'\n' ]; do added=${added%$'\n'}; done
}

@test "mt: -h prints mt-st's long usage on stderr, then tapekit's extensions, and exits 0" {
  local args
  for args in "-h" "-hx" "-f /dev/null -h status"; do
    # shellcheck disable=SC2086
    same_as_mt_st_then_more err $args
    assert_regex "$added" '^tapekit extensions:'
  done
  run --separate-stderr "$MT" -h
  assert_equal "$output" ""
  assert_equal "$(sed -n 1p <<<"$stderr")" "usage: mt [-v] [--version] [-h] [ -f device ] command [ count ]"
}

@test "mt: -v, --version and any --v word print mt-st's version, then tapekit's, and exit 0" {
  local args
  for args in "-v" "--version" "--verbose" "-vx status" "-f /dev/null -v"; do
    # shellcheck disable=SC2086
    same_as_mt_st_then_more out $args
    assert_equal "$added" "mt (tapekit) $(cat "$BATS_TEST_DIRNAME/../VERSION")"
  done
}

@test "mt: usage errors print mt-st's short usage and exit 1" {
  table_same_as_mt_st <<'EOF'
1
1 -x
1 -
1 --
1 -f
1 -t
1 -f /dev/null
1 --rsh
1 --jsonx status
1 -z -f /dev/null status
EOF
}

@test "mt: an unknown command exits 1, names the command and lists the commands" {
  table_same_as_mt_st <<'EOF'
1 -f /dev/null foo
1 -f /dev/null eom
1 -f /dev/null statusx
1 -f /dev/null v
1 -f /dev/null vt
1 -f /dev/null verif
1 -f /dev/null vt-creat
1 -f /dev/null 'weof '
EOF
  run --separate-stderr "$MT" -f /dev/null foo
  assert_equal "$status" 1
  assert_equal "$(sed -n 1p <<<"$stderr")" 'mt: unknown command "foo"'
}

@test "mt: an ambiguous abbreviation exits 1 and names it, as mt-st decides" {
  table_same_as_mt_st <<'EOF'
1 -f /dev/null e
1 -f /dev/null eo
1 -f /dev/null r
1 -f /dev/null re
1 -f /dev/null rew
1 -f /dev/null st
1 -f /dev/null set
1 -f /dev/null l
1 -f /dev/null lo
1 -f /dev/null w
1 -f /dev/null f
1 -f /dev/null fs
1 -f /dev/null b
1 -f /dev/null d
1 -f /dev/null de
1 -f /dev/null s
1 -f /dev/null se
1 -f /dev/null ''
EOF
  run --separate-stderr "$MT" -f /dev/null rew
  assert_equal "$(sed -n 1p <<<"$stderr")" 'mt: ambiguous command "rew"'
}

@test "mt: too many arguments exits 1 naming the command" {
  table_same_as_mt_st <<'EOF'
1 -f /dev/null fsf 1 2
1 -f /dev/null rewind 1
1 -f /dev/null status x
1 -f /dev/null tell 1
1 -f /dev/null densities x
1 -f /dev/null partseek 1 2 3
1 -f /dev/null asf 1 2
1 -f /dev/null stshowoptions a b
1 -f /dev/null rewi 1
EOF
  run --separate-stderr "$MT" -f /dev/null rewi 1
  assert_equal "$stderr" "mt: too many arguments for the command 'rewind'."
}

@test "mt: a count with a bad unit or too large exits 3" {
  table_same_as_mt_st <<'EOF'
3 -f /dev/null fsf 1x
3 -f /dev/null fsf 1K
3 -f /dev/null fsf 0x
3 -f /dev/null fsf 2097152k
3 -f /dev/null fsf 2048M
3 -f /dev/null fsf 2G
3 -f /dev/null weof 1q
3 -f /dev/null setblk 12z
3 -f /dev/null mkpartition 1x
3 -f /dev/null seek 3G
EOF
  run --separate-stderr "$MT" -f /dev/null fsf 1x
  assert_equal "$stderr" "mt: illegal count unit."
  run --separate-stderr "$MT" -f /dev/null fsf 2G
  assert_equal "$stderr" "mt: repeat count too large."
}

@test "mt: a negative count exits 1, also when it comes from narrowing to int" {
  table_same_as_mt_st <<'EOF'
1 -f /dev/null fsf -1
1 -f /dev/null bsf -5
1 -f /dev/null erase -1
1 -f /dev/null fsf -2147483648
1 -f /dev/null fsf 2147483648
1 -f /dev/null fsf 99999999999999999999
EOF
  run --separate-stderr "$MT" -f /dev/null fsf -1
  assert_equal "$stderr" "mt: negative repeat count"
}

@test "mt: an open failure prints perror(device) and exits 1" {
  table_same_as_mt_st <<'EOF'
1 -f /nonexistent/tape status
1 -f /nonexistent/tape weof
1 -f '' rewind
1 -f . weof
EOF
  run --separate-stderr "$MT" -f /nonexistent/tape status
  assert_equal "$stderr" "/nonexistent/tape: No such file or directory"
}

@test "mt: -f - names a file called -, not standard input or output, as in mt-st" {
  # No file "-": the open fails (the programs' stdin and stdout are files).
  table_same_as_mt_st <<'EOF'
1 -f - status
1 -f - weof
EOF
  # "-" a link to the fake drive: both programs space and write on it.
  ln -s /dev/zero ./-
  table_same_on_fake_drive <<'EOF'
0 -f - fsf 2
0 -f - weof 3
0 -f - status
EOF
}

@test "mt: a device that is not a tape fails the ioctl with exit 2" {
  : >plain
  table_same_as_mt_st <<'EOF'
2 -f /dev/null status
2 -f /dev/null tell
2 -f /dev/null rewind
2 -f /dev/null weof
2 -f /dev/null compression 1
2 -f /dev/null defcompression 0x101
2 -f /dev/null stoptions sili
2 -f /dev/null asf 3
2 -f /dev/null partseek 1 2
2 -f /dev/null fsf 4294967297
2 -f /dev/null mkpartition -5
2 -f /dev/null compression on
2 -f /dev/null defblksize 1k
2 -f plain status
2 -f plain fsf
EOF
  run --separate-stderr "$MT" -f /dev/null status
  assert_equal "$stderr" "/dev/null: Inappropriate ioctl for device"
}

@test "mt: stoptions with an unknown or ambiguous name exits 1 and explains" {
  NEWER_THAN_1_7='/^  weof-no-wait -> /d' table_same_as_mt_st <<'EOF'
1 -f /dev/null stoptions foo
1 -f /dev/null stsetoptions buffer-writes nosuch
1 -f /dev/null stclearoptions s
1 -f /dev/null stoptions no
1 -f /dev/null stoptions ''
1 -f /dev/null stoptions -1
EOF
  run --separate-stderr "$MT" -f /dev/null stoptions no
  assert_equal "$stderr" "Property name 'no' ambiguous."
  # 1.8's list names weof-no-wait after no-wait.
  run --separate-stderr "$MT" -f /dev/null stoptions foo
  assert_equal "$(grep -A1 '^ *no-wait ->' <<<"$stderr")" "    no-wait -> immediate mode for rewind, etc.
  weof-no-wait -> immediate mode for writing filemarks"
}

@test "mt: stsetoptions and stclearoptions know weof-no-wait (MT_ST_NOWAIT_EOF), as mt-st 1.8 does" {
  fake "$MT" -f /dev/zero stsetoptions weof-no-wait
  fake "$MT" -f /dev/zero stclearoptions w no-wait
  fake "$MT" -f /dev/zero stoptions weof buffer-writes
  run grep MTIOCTOP calls.log
  assert_output "MTIOCTOP op=24 count=0x30008000
MTIOCTOP op=24 count=0x4000a000
MTIOCTOP op=24 count=0x10008001"
  # A virtual tape has no driver options to keep, but takes the name.
  "$MT" -f v.tap vt-create 0
  run "$MT" -f v.tap stsetoptions weof-no-wait
  assert_equal "$status" 0
  run --separate-stderr "$MT_ST" -f /dev/null stsetoptions weof-no-wait
  assert_equal "$(sed -n 1p <<<"$stderr")" "Illegal property name 'weof-no-wait'."
}

@test "mt: stshowoptions refuses a file that is not a character device" {
  : >plain
  table_same_as_mt_st <<'EOF'
1 -f plain stshowoptions
2 -f /dev/null stshowoptions
EOF
  run --separate-stderr "$MT" -f plain stshowoptions
  assert_equal "$stderr" "mt: not a character device."
}

@test "mt: TAPE names the device and -f overrides it" {
  TAPE=/dev/null table_same_as_mt_st <<'EOF'
2 status
1 -f /nonexistent/x status
EOF
  TAPE=/nonexistent/y table_same_as_mt_st <<'EOF'
1 status
2 -f /dev/null status
EOF
  TAPE='' table_same_as_mt_st <<'EOF'
1 rewind
EOF
}

# in_private_dev SETUP COMMAND...: runs COMMAND with a private, empty /dev
# holding only what the shell command SETUP makes.
in_private_dev() {
  local setup=$1
  shift
  unshare -m sh -c "mount -t tmpfs none /dev && $setup && exec \"\$@\"" sh "$@"
}

@test "mt: the default /dev/tape is used without -f or TAPE, and must be a character device" {
  in_private_dev true true 2>/dev/null || skip "needs unshare -m (root)"
  local prog
  for prog in "$MT" "$MT_ST"; do
    in_private_dev ': >/dev/tape' "$prog" status >"$(basename "$prog").file.out" 2>&1 &&
      echo "$prog: status on a regular /dev/tape succeeded" && return 1
    in_private_dev 'mknod /dev/tape c 1 3' "$prog" status >"$(basename "$prog").chr.out" 2>&1 &&
      echo "$prog: status on a null /dev/tape succeeded" && return 1
  done
  cmp mt.file.out mt-st.file.out
  cmp mt.chr.out mt-st.chr.out
  assert_equal "$(sed -n 1p mt.file.out)" "The default '/dev/tape' is not a character device."
  assert_equal "$(cat mt.chr.out)" "/dev/tape: Inappropriate ioctl for device"
  run in_private_dev ': >/dev/tape' "$MT" status
  assert_equal "$status" 1
  run in_private_dev 'mknod /dev/tape c 1 3' "$MT" status
  assert_equal "$status" 2
}

@test "mt: only the second character of an option word counts, as in mt-st" {
  table_same_as_mt_st <<'EOF'
2 -fxyz /dev/null status
2 -f/nonexistent /dev/null status
2 -t /dev/null status
2 -f /nonexistent -f /dev/null status
EOF
}

# The density table of mt-st 1.8 (tests/fixtures/mt), one "code<TAB>name" a line.
densities_1_8() { grep -v '^#' "$BATS_TEST_DIRNAME/fixtures/mt/densities-1.8.tsv"; }

# "code<TAB>name" lines from `densities` output on stdin, in code order.
density_pairs() {
  tail -n +3 | awk '{
    left = substr($0, 1, 35); sub(/ +$/, "", left)
    print substr(left, 1, 4) "\t" substr(left, 8)
    if (length($0) > 37) print substr($0, 38, 4) "\t" substr($0, 45)
  }' | sort
}

@test "mt: densities prints mt-st 1.8's table with LTO-10 added, in its layout, and opens no device" {
  { densities_1_8; printf '0x62\tLTO-10\n0x63\tLTO-10 Premium\n'; } | sort >pairs
  # mt-st's print_densities: two columns, the left one 28 wide.
  local n half i rows
  mapfile -t rows <pairs
  n=${#rows[@]}
  half=$(((n + 1) / 2))
  {
    printf 'Some SCSI tape density codes:\ncode   explanation                   code   explanation\n'
    for ((i = 0; i < half; i++)); do
      printf '%s   %-28s' "${rows[i]%%$'\t'*}" "${rows[i]#*$'\t'}"
      if ((i + half < n)); then
        printf '  %s   %s' "${rows[i + half]%%$'\t'*}" "${rows[i + half]#*$'\t'}"
      fi
      printf '\n'
    done
  } >expected
  TAPE=/nonexistent/tape "$MT" densities >out
  cmp out expected || diff out expected
  TAPE=/nonexistent/tape run "$MT" den
  assert_equal "$status" 0
  assert_equal "$output" "$(cat expected)"
}

@test "mt: output that cannot be written exits 2 and names why (mt-st exits 0 silently)" {
  run --separate-stderr bash -c '"$1" -f /dev/null densities >/dev/full' bash "$MT"
  assert_equal "$status" 2
  assert_equal "$stderr" "mt: write standard output: No space left on device"
}

@test "mt: the density names 1.8 kept are mt-st 1.7's, byte for byte" {
  "$MT_ST" densities | density_pairs >mt-st-1.7
  densities_1_8 >mt-st-1.8
  # What 1.8 changed, and only that, is what diff shows.
  run bash -c "diff mt-st-1.7 mt-st-1.8 | sed -n 's/^[<>] \(0x..\).*/\1/p' | sort -u | tr '\n' ' '"
  assert_output "0x01 0x02 0x03 0x06 0x09 0x52 0x53 0x54 0x55 0x56 0x57 0x59 0x60 0x76 0x77 0x79 0x93 "
  "$MT" densities | density_pairs >ours
  run diff mt-st-1.8 ours
  assert_output "74a75,76
> 0x62	LTO-10
> 0x63	LTO-10 Premium"
}

@test "mt: status names a density by mt-st 1.8's table and is otherwise mt-st 1.7's text" {
  local dsreg name theirs
  while IFS=' ' read -r dsreg name; do
    theirs=$(FAKE_ST_DSREG=$dsreg LD_PRELOAD=$FAKE_ST "$MT_ST" -f /dev/zero status)
    FAKE_ST_DSREG=$dsreg fake run "$MT" -f /dev/zero status
    assert_equal "$status" 0
    assert_equal "$output" "$(sed "s|^\(Tape block size .* Density code 0x[0-9a-f]*\) (.*)\.$|\1 ($name).|" <<<"$theirs")"
  done <<'EOF'
0x01000000 NRZI (800 bpi) 9 Track Reel
0x09000400 3480/3490E, GCR (37871 bpi)
0x55000000 IBM 3592 E08 (TS1150)
0x59000000 IBM 3592 70F (TS1170)
0x60040000 LTO-9
0x62000000 LTO-10
0x63000000 LTO-10 Premium
0x79000000 IBM 3592 70F, encrypted
0x93000000 SDLT160 compressed
0x61000000 no translation
EOF
}

# mt-st 1.7 itself, which TAPEKIT_MT_DENSITY_TABLE=1.7 must match byte for
# byte; skips when $MT_ST is another release.
needs_mt_st_1_7() {
  [[ "$("$MT_ST" -v 2>&1)" == "mt-st v. 1.7"* ]] || skip "$MT_ST is not mt-st 1.7"
}

@test "mt: TAPEKIT_MT_DENSITY_TABLE=1.7 densities prints mt-st 1.7's table byte for byte" {
  needs_mt_st_1_7
  "$MT_ST" densities >theirs
  TAPEKIT_MT_DENSITY_TABLE=1.7 run "$MT" densities
  assert_equal "$status" 0
  assert_equal "$output" "$(cat theirs)"
  # Unset, empty and 1.8 are 1.8's table.
  "$MT" densities >default
  grep -q '^0x60   LTO-9 \|  0x60   LTO-9$' default || fail "1.8's table lacks LTO-9: $(cat default)"
  TAPEKIT_MT_DENSITY_TABLE= run "$MT" densities
  assert_equal "$output" "$(cat default)"
  TAPEKIT_MT_DENSITY_TABLE=1.8 run "$MT" densities
  assert_equal "$output" "$(cat default)"
}

@test "mt: TAPEKIT_MT_DENSITY_TABLE=1.7 status names densities as mt-st 1.7 does, byte for byte" {
  needs_mt_st_1_7
  local dsreg
  export TAPEKIT_MT_DENSITY_TABLE=1.7
  # 1.8's renamed and added codes, LTO-10, a code both name alike, none.
  for dsreg in 0x01000000 0x06000000 0x09000400 0x55000000 0x56000000 0x59000000 \
    0x60040000 0x62000000 0x63000000 0x79000000 0x93000000 0x46000000 0x00000000 0x99000000; do
    FAKE_ST_DSREG=$dsreg LD_PRELOAD=$FAKE_ST same_as_mt_st -f /dev/zero status ||
      fail "density register $dsreg"
  done
  FAKE_ST_DSREG=0x60000000 fake run "$MT" -f /dev/zero --json status
  assert_output --partial '"density_code":96,"density_name":null,'
  FAKE_ST_DSREG=0x93000000 fake run "$MT" -f /dev/zero --json status
  assert_output --partial '"density_code":147,"density_name":"SDLT160 comprssed",'
}

@test "mt: TAPEKIT_MT_DENSITY_TABLE=1.7 gives a 1.7-era parser (LTFSArchiver's) an LTO-9's bare code" {
  # lto_util.sh's get_tape_status: the density code and the status bits.
  ltfsarchiver() {
    grep -E "General|Density" | sed -e 's/.*code//' -e 's/(no.*//' -e 's/ (de.*//' |
      sed '/General/s/[^0-9]*//g' | tr -d ' ' | tr '\n' ' '
  }
  FAKE_ST_DSREG=0x60000000 fake "$MT" -f /dev/zero status >lto9
  assert_equal "$(ltfsarchiver <lto9)" "0x60(LTO-9). 41010000 "
  FAKE_ST_DSREG=0x60000000 TAPEKIT_MT_DENSITY_TABLE=1.7 fake "$MT" -f /dev/zero status >lto9
  assert_equal "$(ltfsarchiver <lto9)" "0x60 41010000 "
}

@test "mt: a TAPEKIT_MT_DENSITY_TABLE other than 1.7 or 1.8 exits 1 with one line, for status and densities only" {
  local value
  for value in 1.9 17 ' 1.7' x $'1.7\n'; do
    TAPEKIT_MT_DENSITY_TABLE=$value run --separate-stderr "$MT" densities
    assert_equal "$status" 1
    assert_equal "$output" ""
    [[ -n "$stderr" && "$stderr" != *$'\n'* ]] || fail "not one line for '$value': $stderr"
    # Refused before the drive is opened.
    TAPEKIT_MT_DENSITY_TABLE=$value fake run --separate-stderr "$MT" -f /dev/zero status
    assert_equal "$status" 1
    assert_equal "$output" ""
    assert_file_not_exists calls.log
  done
  TAPEKIT_MT_DENSITY_TABLE=x run --separate-stderr "$MT" densities
  assert_equal "$stderr" 'mt: TAPEKIT_MT_DENSITY_TABLE="x": not a density table (1.7 or 1.8)'
  TAPEKIT_MT_DENSITY_TABLE=$'1.7\n' run --separate-stderr "$MT" densities
  assert_equal "$stderr" 'mt: TAPEKIT_MT_DENSITY_TABLE="1.7\u000a": not a density table (1.7 or 1.8)'
  # Commands that print no density name do not look at it.
  TAPEKIT_MT_DENSITY_TABLE=x fake run "$MT" -f /dev/zero rewind
  assert_equal "$status" 0
}

# --- st drives, faked: ioctls and status compared with mt-st ---------------

@test "mt: every command opens the drive and issues the ioctls mt-st issues" {
  table_same_on_fake_drive <<'EOF'
0 -f /dev/zero weof
0 -f /dev/zero weof 3
0 -f /dev/zero wset 2
0 -f /dev/zero eof
0 -f /dev/zero fsf
0 -f /dev/zero fsf 5
0 -f /dev/zero fsfm 2
0 -f /dev/zero bsf 1
0 -f /dev/zero bsfm 1
0 -f /dev/zero fsr 1k
0 -f /dev/zero fsr 0x10
0 -f /dev/zero fsr 010
0 -f /dev/zero bsr 3
0 -f /dev/zero fss 1
0 -f /dev/zero bss 1
0 -f /dev/zero rewind
0 -f /dev/zero offline
0 -f /dev/zero rewoffl
0 -f /dev/zero eject
0 -f /dev/zero retension
0 -f /dev/zero eod
0 -f /dev/zero seod
0 -f /dev/zero seek 100
0 -f /dev/zero seek 2M
0 -f /dev/zero tell
0 -f /dev/zero status
0 -f /dev/zero erase
0 -f /dev/zero erase 0
0 -f /dev/zero setblk
0 -f /dev/zero setblk 0
0 -f /dev/zero setblk 64k
0 -f /dev/zero lock
0 -f /dev/zero unlock
0 -f /dev/zero load
0 -f /dev/zero load 10003
0 -f /dev/zero setdensity 0x46
0 -f /dev/zero drvbuffer 5
0 -f /dev/zero stwrthreshold 10
0 -f /dev/zero stoptions
0 -f /dev/zero stoptions 0x107
0 -f /dev/zero stoptions 0xf0000107
0 -f /dev/zero stoptions 7 nosuch
0 -f /dev/zero defcompression
0 -f /dev/zero sttimeout 0x7fffffff
0 -f /dev/zero stsetcln 12junk
0 -f /dev/zero stoptions buffer-writes two-fms
0 -f /dev/zero stsetoptions sili
0 -f /dev/zero stsetoptions buf two
0 -f /dev/zero stclearoptions two no-wait
0 -f /dev/zero stsetoptions cleaning
0 -f /dev/zero defblksize 1k
0 -f /dev/zero defblksize -1
0 -f /dev/zero defdensity 0x46
0 -f /dev/zero defdensity -1
0 -f /dev/zero defdrvbuffer 1
0 -f /dev/zero defdrvbuffer -1
0 -f /dev/zero stsetcln 0x1234
0 -f /dev/zero sttimeout 900
0 -f /dev/zero stlongtimeout 14400
0 -f /dev/zero setpartition 1
0 -f /dev/zero mkpartition -5
0 -f /dev/zero mkpartition 100
0 -f /dev/zero partseek 1 200
0 -f /dev/zero partseek
0 -f /dev/zero asf
0 -f /dev/zero asf 3
0 -f /dev/zero asf -2
0 -f /dev/zero fsf -2147483648k
0 -f /dev/zero fsf 4294967297
0 -f /dev/zero fsf 1k2
EOF
}

@test "mt: the abbreviations mt-st accepts select the same commands" {
  table_same_on_fake_drive <<'EOF'
0 -f /dev/zero a 2
0 -f /dev/zero c 1
0 -f /dev/zero p 1 2
0 -f /dev/zero t
0 -f /dev/zero u
0 -f /dev/zero mk 3
0 -f /dev/zero ws
0 -f /dev/zero we
0 -f /dev/zero off
0 -f /dev/zero ej
0 -f /dev/zero er
0 -f /dev/zero ret
0 -f /dev/zero rewi
0 -f /dev/zero rewo
0 -f /dev/zero seo
0 -f /dev/zero sta
0 -f /dev/zero setp 1
0 -f /dev/zero loc
0 -f /dev/zero defc 1
2 -f /dev/zero stsh
EOF
}

@test "mt: compression and defcompression send mt-st's exact encodings" {
  table_same_on_fake_drive <<'EOF'
0 -f /dev/zero compression
0 -f /dev/zero compression 1
0 -f /dev/zero compression 0
0 -f /dev/zero compression on
0 -f /dev/zero compression off
0 -f /dev/zero defcompression 0x101
0 -f /dev/zero defcompression 1
0 -f /dev/zero defcompression 0
0 -f /dev/zero defcompression 2
0 -f /dev/zero defcompression 255
0 -f /dev/zero defcompression -1
EOF
  # The values themselves, from tape-semantics.md §1.2/§2.3, not only "as mt-st".
  fake "$MT" -f /dev/zero compression 1
  fake "$MT" -f /dev/zero compression on
  fake "$MT" -f /dev/zero defcompression 0x101
  fake "$MT" -f /dev/zero defcompression -1
  run grep MTIOCTOP calls.log
  assert_output "MTIOCTOP op=32 count=0x1
MTIOCTOP op=32 count=0x0
MTIOCTOP op=24 count=0x60200101
MTIOCTOP op=24 count=0x602fffff"
}

@test "mt: commands that need no tape open the drive non-blocking, others block" {
  fake "$MT" -f /dev/zero status
  fake "$MT" -f /dev/zero fsf
  fake "$MT" -f /dev/zero weof
  fake "$MT" -f /dev/zero setblk 512
  run grep open calls.log
  assert_output "open rdonly nonblock
open rdonly
open rdwr
open rdonly nonblock"
}

@test "mt: status prints mt-st's text byte for byte for many drive states" {
  local state
  while read -r state; do
    # shellcheck disable=SC2086,SC2163 # $state is a list of assignments
    (export $state && LD_PRELOAD=$FAKE_ST same_as_mt_st -f /dev/zero status) ||
      { echo "state: $state"; return 1; }
  done <<'EOF'
FAKE_ST_GSTAT=0x41010000 FAKE_ST_DSREG=0x46000000
FAKE_ST_GSTAT=0x81010000 FAKE_ST_FILENO=2 FAKE_ST_RESID=1 FAKE_ST_DSREG=0x5a000200 FAKE_ST_ERREG=3
FAKE_ST_GSTAT=0x50000 FAKE_ST_FILENO=-1 FAKE_ST_BLKNO=-1
FAKE_ST_GSTAT=0xd018000 FAKE_ST_FILENO=5 FAKE_ST_BLKNO=17 FAKE_ST_DSREG=0x99000000
FAKE_ST_GSTAT=0 FAKE_ST_DSREG=0x0b002800
FAKE_ST_GSTAT=0xffffffff FAKE_ST_ERREG=0x12345
FAKE_ST_GSTAT=0x31e00000 FAKE_ST_RESID=0x1ff
FAKE_ST_TYPE=0x71 FAKE_ST_FILENO=3
FAKE_ST_TYPE=0x61 FAKE_ST_DSREG=0x61000400
FAKE_ST_TYPE=0x800123
FAKE_ST_TYPE=0
FAKE_ST_TYPE=0x51 FAKE_ST_RESID=7 FAKE_ST_ERREG=0x20 FAKE_ST_DSREG=0x13000400
FAKE_ST_STATE=eod
FAKE_ST_STATE=no-tape
FAKE_ST_STATE=not-ready
EOF
}

@test "mt: status of a drive at BOT reads as mt-st's captured sample" {
  FAKE_ST_DSREG=0x46000000 fake "$MT" -f /dev/zero status >out
  printf '%s\n' "SCSI 2 tape drive:" \
    "File number=0, block number=0, partition=0." \
    "Tape block size 0 bytes. Density code 0x46 (LTO-4)." \
    "Soft error count since last status=0" \
    "General status bits on (41010000):" \
    " BOT ONLINE IM_REP_EN" >expected
  cmp out expected
  run cat calls.log
  assert_output "open rdonly nonblock
MTIOCGET"
}

@test "mt: status with no bits set ends with an empty line" {
  FAKE_ST_GSTAT=0 fake "$MT" -f /dev/zero status >out
  run sed -n '5,$p' out
  assert_equal "${#lines[@]}" 1
  assert_equal "$(sed -n 5p out)" "General status bits on (0):"
  assert_equal "$(sed -n 6p out)" ""
  assert_equal "$(wc -l <out)" 6
}

@test "mt: tell prints the block MTIOCPOS returns" {
  FAKE_ST_POS=123456 LD_PRELOAD=$FAKE_ST table_same_as_mt_st <<'EOF'
0 -f /dev/zero tell
EOF
  FAKE_ST_POS=123456 fake run "$MT" -f /dev/zero tell
  assert_output "At block 123456."
}

@test "mt: a failed operation exits 2 and says when the drive is offline" {
  FAKE_ST_FAIL=1:5 FAKE_ST_GSTAT=0x50000 table_same_on_fake_drive <<'EOF'
2 -f /dev/zero fsf 2
EOF
  FAKE_ST_FAIL=1:5 FAKE_ST_GSTAT=0x50000 fake run --separate-stderr "$MT" -f /dev/zero fsf 2
  assert_equal "$status" 2
  assert_equal "$stderr" "/dev/zero: Input/output error
mt: The device is offline (not powered on, no tape ?)."
}

@test "mt: failures with the drive online, or on commands without tests, add no hint" {
  FAKE_ST_FAIL=op:5 table_same_on_fake_drive <<'EOF'
2 -f /dev/zero rewind
2 -f /dev/zero asf 2
2 -f /dev/zero partseek 1 2
2 -f /dev/zero setblk 512
EOF
  FAKE_ST_FAIL=op:5,get:5 table_same_on_fake_drive <<'EOF'
2 -f /dev/zero rewind
EOF
  FAKE_ST_FAIL=get:19 table_same_on_fake_drive <<'EOF'
2 -f /dev/zero status
EOF
  FAKE_ST_FAIL=pos:5 table_same_on_fake_drive <<'EOF'
2 -f /dev/zero tell
EOF
}

@test "mt: ENOSYS gets mt-st's perror line and nothing else" {
  FAKE_ST_FAIL=op:38 table_same_on_fake_drive <<'EOF'
2 -f /dev/zero fsf
2 -f /dev/zero compression 1
EOF
}

@test "mt: a bad count on a drive queries it for hints as mt-st does" {
  FAKE_ST_GSTAT=0x50000 table_same_on_fake_drive <<'EOF'
3 -f /dev/zero fsf 1x
1 -f /dev/zero fsf -1
3 -f /dev/zero setblk 1x
EOF
}

@test "mt: weof on a write-protected tape says so, as mt-st 1.8 does (1.7 tests the bit inverted)" {
  FAKE_ST_FAIL=5:30 FAKE_ST_GSTAT=0x05010000 fake run --separate-stderr "$MT" -f /dev/zero weof
  assert_equal "$status" 2
  assert_equal "$stderr" "/dev/zero: Read-only file system
mt: The tape is write-protected."
}

@test "mt: weof or wset failing on a writable tape does not claim write protection" {
  # MTWEOF is op 5, MTWSM (wset) op 27; the drive's status has no WR_PROT.
  FAKE_ST_FAIL=5:5 fake run --separate-stderr "$MT" -f /dev/zero weof
  assert_equal "$status" 2
  assert_equal "$stderr" "/dev/zero: Input/output error"
  FAKE_ST_FAIL=27:5 fake run --separate-stderr "$MT" -f /dev/zero wset
  assert_equal "$status" 2
  assert_equal "$stderr" "/dev/zero: Input/output error"
}

@test "mt: stshowoptions lists the options the driver's sysfs file shows" {
  mkdir -p sysfs/st5
  echo 0x80004117 >sysfs/st5/options
  FAKE_ST_SYSFS=$BATS_TEST_TMPDIR/sysfs table_same_on_fake_drive <<'EOF'
0 -f /dev/zero stshowoptions
EOF
  FAKE_ST_SYSFS=$BATS_TEST_TMPDIR/sysfs fake run "$MT" -f /dev/zero stshowoptions
  assert_output "The options set: buffer-writes async-writes read-ahead two-fms can-bsr sili cleaning"
  echo 0x0000a001 >sysfs/st5/options
  FAKE_ST_SYSFS=$BATS_TEST_TMPDIR/sysfs fake run "$MT" -f /dev/zero stshowoptions
  assert_output "The options set: buffer-writes no-wait weof-no-wait"
}

@test "mt: stshowoptions exits 2 naming the sysfs file it cannot read" {
  FAKE_ST_SYSFS=$BATS_TEST_TMPDIR/nowhere fake run --separate-stderr "$MT" -f /dev/zero stshowoptions
  assert_equal "$status" 2
  assert_equal "$stderr" "Can't read the sysfs file '/sys/class/scsi_tape/st5/options'."
}

# --- beyond mt-st -----------------------------------------------------------

@test "mt: --json status prints one JSON object with every status bit" {
  FAKE_ST_GSTAT=0x81010000 FAKE_ST_FILENO=2 FAKE_ST_RESID=1 FAKE_ST_DSREG=0x5a000200 \
    FAKE_ST_ERREG=3 fake run --separate-stderr "$MT" --json -f /dev/zero status
  assert_equal "$status" 0
  assert_equal "$output" '{"device":"/dev/zero","drive_type":114,"file":2,"block":0,"partition":1,"block_size":512,"density_code":90,"density_name":"LTO-6","soft_errors":3,"eof":true,"bot":false,"eot":false,"sm":false,"eod":false,"wr_prot":false,"online":true,"d_6250":false,"d_1600":false,"d_800":false,"dr_open":false,"im_rep_en":true,"cln":false,"compression":null}'
}

@test "mt: --json status carries the density name from mt-st 1.8's table, LTO-10 too" {
  FAKE_ST_DSREG=0x93000000 fake run "$MT" -f /dev/zero --json status
  assert_output --partial '"density_code":147,"density_name":"SDLT160 compressed",'
  FAKE_ST_DSREG=0x62000000 fake run "$MT" -f /dev/zero --json status
  assert_output --partial '"density_code":98,"density_name":"LTO-10",'
}

@test "mt: --json names an unknown density null" {
  FAKE_ST_DSREG=0x99000000 fake run "$MT" -f /dev/zero --json status
  assert_output --partial '"density_code":153,"density_name":null,'
}

@test "mt: --json tell prints the block as JSON" {
  FAKE_ST_POS=77 fake run "$MT" --json -f /dev/zero tell
  assert_output '{"device":"/dev/zero","block":77}'
}

@test "mt: --json status, tell and health give a device name that is no UTF-8 as valid JSON, its bytes as \\u00XX" {
  ln -s /dev/zero $'tape\xff\e'
  for command in status tell health; do
    fake run -0 --separate-stderr "$MT" --json -f $'tape\xff\e' "$command"
    assert_output --partial '{"device":"tape\u00ff\u001b",'
    run -0 jq -r .device <<<"$output"
    assert_output $'tape\u00ff\e'
  done
}

@test "mt: --json with a command other than status, tell or health exits 1" {
  run --separate-stderr "$MT" --json -f /dev/null rewind
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: --json applies to status, tell and health only"
}

# --- virtual tapes (*.tap) ---------------------------------------------------

# A tape holding F0: 100 200 | FM | F1: 300 | FM, positioned at its end.
make_tape() {
  "$MT" -f t.tap vt-create 0
  tapectl t.tap write 100 200 fm 300 fm >/dev/null
}

status_line() { "$MT" -f "$1" status | sed -n "$2p"; }

@test "mt: vt-create makes a blank image that status shows loaded at BOT" {
  run "$MT" -f new.tap vt-create 10m
  assert_success
  assert_file_exists new.tap
  run "$MT" -f new.tap status
  assert_success
  assert_output "SCSI 2 tape drive:
File number=0, block number=0, partition=0.
Tape block size 0 bytes. Density code 0x0 (default).
Soft error count since last status=0
General status bits on (41010000):
 BOT ONLINE IM_REP_EN"
}

@test "mt: rewind, fsf, fsr, bsr, bsf and tell move through a virtual tape as st does" {
  make_tape
  "$MT" -f t.tap rewind
  assert_equal "$(status_line t.tap 2)" "File number=0, block number=0, partition=0."
  "$MT" -f t.tap fsf 1
  assert_equal "$(status_line t.tap 2)" "File number=1, block number=0, partition=0."
  assert_equal "$(status_line t.tap 6)" " EOF ONLINE IM_REP_EN"
  "$MT" -f t.tap fsr 1
  run "$MT" -f t.tap tell
  assert_output "At block 4."
  "$MT" -f t.tap bsr 1
  assert_equal "$(status_line t.tap 2)" "File number=1, block number=0, partition=0."
  "$MT" -f t.tap bsf 1
  assert_equal "$(status_line t.tap 2)" "File number=0, block number=-1, partition=0."
  "$MT" -f t.tap asf 1
  assert_equal "$(status_line t.tap 2)" "File number=1, block number=0, partition=0."
}

@test "mt: eod on a virtual tape leaves EOD set for the next run" {
  make_tape
  "$MT" -f t.tap rewind
  "$MT" -f t.tap eod
  assert_equal "$(status_line t.tap 2)" "File number=2, block number=-1, partition=0."
  assert_equal "$(status_line t.tap 6)" " EOD ONLINE IM_REP_EN"
}

@test "mt: spacing past the end of a virtual tape exits 2 with an I/O error" {
  make_tape
  "$MT" -f t.tap rewind
  run --separate-stderr "$MT" -f t.tap fsf 5
  assert_equal "$status" 2
  assert_equal "$stderr" "t.tap: Input/output error"
  assert_equal "$(status_line t.tap 6)" " EOD ONLINE IM_REP_EN"
}

@test "mt: weof on a virtual tape at the file size limit (ulimit -f) fails with EFBIG, not SIGXFSZ, and the tape stays whole" {
  "$MT" -f w.tap vt-create 0
  head -c 10240 /dev/zero >record
  "$BUFFER" -s 10k -i record -o w.tap 2>/dev/null
  size=$(stat -c %s w.tap)
  run --separate-stderr bash -c 'ulimit -f 10; exec "$0" -f w.tap weof 2' "$MT"
  assert_equal "$status" 2
  assert_equal "$stderr" "w.tap: File too large"
  assert_equal "$(stat -c %s w.tap)" "$size"
  run "$MT" -f w.tap verify
  assert_success
}

@test "mt: weof writes filemarks on a virtual tape" {
  "$MT" -f w.tap vt-create 0
  "$MT" -f w.tap weof 2
  assert_equal "$(status_line w.tap 2)" "File number=2, block number=0, partition=0."
  "$MT" -f w.tap rewind
  # Two filemarks, then EOD straight after a filemark: one more 0, then EIO.
  run tapectl w.tap read 4
  assert_output "0
0
0
EIO"
}

@test "mt: compression on a virtual tape is kept by the drive and shown by --json status" {
  "$MT" -f c.tap vt-create 0
  run "$MT" -f c.tap --json status
  assert_output --partial '"compression":false}'
  "$MT" -f c.tap compression 1
  run "$MT" -f c.tap --json status
  assert_output --partial '"compression":true}'
  "$MT" -f c.tap compression 0
  run "$MT" -f c.tap --json status
  assert_output --partial '"compression":false}'
}

@test "mt: defcompression and defdensity on a virtual tape apply at once, with st's encodings" {
  "$MT" -f d.tap vt-create 0
  "$MT" -f d.tap defcompression 1
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":true}'
  # Only bit 0 counts: 2 means off.
  "$MT" -f d.tap defcompression 2
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":false}'
  # 0x101: on, with algorithm 1.
  "$MT" -f d.tap defcompression 0x101
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":true}'
  # -1 clears the default and leaves the drive as it is.
  "$MT" -f d.tap defcompression -1
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":true}'
  "$MT" -f d.tap defdensity 0x44
  assert_equal "$(status_line d.tap 3)" "Tape block size 0 bytes. Density code 0x44 (LTO-3)."
}

@test "mt: a virtual tape's default compression comes back at load, and a write from BOT keeps one set since" {
  "$MT" -f d.tap vt-create 0
  "$MT" -f d.tap defcompression 1
  "$MT" -f d.tap compression 0
  "$MT" -f d.tap offline
  "$MT" -f d.tap load
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":true}'
  # Set after the load: a write from BOT keeps it.
  "$MT" -f d.tap compression 0
  tapectl d.tap write 10
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":false}'
  # A new default applies at once and at every later load.
  "$MT" -f d.tap offline
  "$MT" -f d.tap load
  "$MT" -f d.tap defcompression 0
  "$MT" -f d.tap offline
  "$MT" -f d.tap load
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":false}'
  # defcompression -1 forgets the default: a load leaves compression alone.
  "$MT" -f d.tap defcompression -1
  "$MT" -f d.tap compression 1
  "$MT" -f d.tap offline
  "$MT" -f d.tap load
  run "$MT" -f d.tap --json status
  assert_output --partial '"compression":true}'
}

@test "mt: setblk and setdensity on a virtual tape show in status" {
  "$MT" -f s.tap vt-create 0
  "$MT" -f s.tap setblk 512
  "$MT" -f s.tap setdensity 0x46
  assert_equal "$(status_line s.tap 3)" "Tape block size 512 bytes. Density code 0x46 (LTO-4)."
}

@test "mt: vt-protect 1 makes weof fail to open with exit 1, vt-protect 0 lifts it" {
  "$MT" -f p.tap vt-create 0
  run "$MT" -f p.tap vt-protect 1
  assert_success
  assert_equal "$(status_line p.tap 6)" " BOT WR_PROT ONLINE IM_REP_EN"
  run --separate-stderr "$MT" -f p.tap weof
  assert_equal "$status" 1
  assert_equal "$stderr" "p.tap: Read-only file system"
  "$MT" -f p.tap vt-protect 0
  run "$MT" -f p.tap weof
  assert_success
  assert_equal "$(status_line p.tap 2)" "File number=1, block number=0, partition=0."
}

@test "mt: vt-create with a capacity makes writes fail with ENOSPC near it" {
  "$MT" -f small.tap vt-create 256k
  run tapectl small.tap write 65536 65536 65536 65536 65536 65536 65536
  assert_failure
  assert_line ENOSPC
}

@test "mt: offline unloads a virtual tape, load puts it back at BOT" {
  make_tape
  "$MT" -f t.tap offline
  assert_equal "$(status_line t.tap 6)" " DR_OPEN IM_REP_EN"
  run --separate-stderr "$MT" -f t.tap fsf
  assert_equal "$status" 1
  assert_equal "$stderr" "t.tap: No medium found"
  "$MT" -f t.tap load
  assert_equal "$(status_line t.tap 6)" " BOT ONLINE IM_REP_EN"
}

@test "mt: verify passes a sound image and exits 0" {
  make_tape
  run --separate-stderr "$MT" -f t.tap verify
  assert_equal "$status" 0
  assert_equal "$output" "t.tap: no structural errors"
}

@test "mt: verify reports the byte offset of the first damage and exits 2" {
  # HELLO, then a record whose trailing length disagrees with its header.
  printf '\005\000\000\000HELLO\000\005\000\000\000\004\000\000\000DATA\003\000\000\000' >bad.tap
  run --separate-stderr "$MT" -f bad.tap verify
  assert_equal "$status" 2
  assert_output ""
  [[ "$stderr" == "bad.tap: damaged at byte offset 14: "* ]]
}

@test "mt: verify of a missing image exits 1 with perror's line" {
  run --separate-stderr "$MT" -f missing.tap verify
  assert_equal "$status" 1
  assert_equal "$stderr" "missing.tap: No such file or directory"
}

@test "mt: vt-create refuses to overwrite a tape that holds data" {
  make_tape
  run --separate-stderr "$MT" -f t.tap vt-create 0
  assert_equal "$status" 2
  assert_equal "$stderr" "t.tap: File exists"
}

@test "mt: the virtual-tape commands check their arguments and exit 1" {
  run --separate-stderr "$MT" -f n.tap vt-create
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: vt-create needs a capacity (0 = unlimited)"
  run --separate-stderr "$MT" -f n.tap vt-create 10x
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: invalid capacity '10x': unknown unit (use b, k, m, g or t)"
  run --separate-stderr "$MT" -f n.tap vt-protect yes
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: vt-protect takes 1 (protect) or 0 (allow writing)"
  run --separate-stderr "$MT" -f /dev/null vt-create 1m
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: vt-create: /dev/null is no local file a virtual tape can be made in"
  assert_file_not_exists n.tap
}

@test "mt: the virtual-tape commands must be typed in full" {
  run --separate-stderr "$MT" -f n.tap vt-cr 0
  assert_equal "$status" 1
  assert_equal "$(sed -n 1p <<<"$stderr")" 'mt: unknown command "vt-cr"'
  run "$MT" -f n.tap veri
  assert_equal "$status" 1
}

@test "mt: stshowoptions on a virtual tape says it is not a character device" {
  make_tape
  run --separate-stderr "$MT" -f t.tap stshowoptions
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: not a character device."
}

@test "mt: a virtual tape held open by another program gives EBUSY and exit 1" {
  make_tape
  tapectl t.tap hold opened 30 >/dev/null 3>&- &
  local holder=$!
  while [ ! -e opened ] && kill -0 "$holder" 2>/dev/null; do sleep 0.05; done
  run --separate-stderr "$MT" -f t.tap status
  kill "$holder"
  wait "$holder" || true
  assert_equal "$status" 1
  assert_equal "$stderr" "t.tap: Device or resource busy"
}

# --- remote names ------------------------------------------------------------

@test "mt: a remote name reaches the tape through --rsh-command and rmt" {
  make_tape
  local here
  here=$("$MT" -f t.tap status)
  run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f "tapehost:$PWD/t.tap" status
  assert_equal "$status" 0
  assert_equal "$output" "$here"
}

@test "mt: RSH and TAPE name the remote shell and device, [user@] becomes -l user" {
  make_tape
  RSH=$RSH_STANDIN RSH_STANDIN_LOG=$PWD/rsh.log TAPE=op@tapehost:$PWD/t.tap run "$MT" rewind
  assert_success
  RSH=$RSH_STANDIN RSH_STANDIN_LOG=$PWD/rsh.log TAPE=op@tapehost:$PWD/t.tap \
    run "$MT" --rmt-command=/usr/sbin/rmt status
  assert_success
  assert_line --index 1 "File number=0, block number=0, partition=0."
  run cat rsh.log
  assert_output "tapehost -l op /etc/rmt
tapehost -l op /usr/sbin/rmt"
}

@test "mt: compression set through a remote name reaches the virtual tape" {
  "$MT" -f c.tap vt-create 0
  run "$MT" --rsh-command "$RSH_STANDIN" -f "h:$PWD/c.tap" compression 1
  assert_success
  run "$MT" -f c.tap --json status
  assert_output --partial '"compression":true}'
}

@test "mt: --json status through tapekit's rmt carries the compression; through dump's rmt it stays null" {
  "$MT" -f c.tap vt-create 0
  local state
  for state in 1 0; do
    "$MT" --rsh-command "$RSH_STANDIN" -f "h:$PWD/c.tap" compression "$state"
    run --separate-stderr "$MT" --rsh-command "$RSH_STANDIN" -f "h:$PWD/c.tap" --json status
    assert_success
    if [ "$state" = 1 ]; then assert_output --partial '"compression":true}'; else assert_output --partial '"compression":false}'; fi
    assert_equal "$output" "$("$MT" -f c.tap --json status | sed "s|\"c.tap\"|\"h:$PWD/c.tap\"|")"
  done
  # struct mtget has no compression bit, and only tapekit's rmt is asked.
  cat >dump-server <<EOF2
#!/bin/sh
LD_PRELOAD=$FAKE_ST FAKE_ST_LOG=$BATS_TEST_TMPDIR/calls.log exec /usr/sbin/rmt-dump
EOF2
  chmod +x dump-server
  RSH_STANDIN_SERVER=$PWD/dump-server run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f h:/dev/zero --json status
  assert_success
  assert_output --partial '"compression":null}'
}

@test "mt: a device name with a colon that exists here is the local device, as for mt-st" {
  ln -s /dev/zero tape:0
  fake_same=$(fake "$MT" -f /dev/zero status)
  RSH=/bin/false fake run --separate-stderr "$MT" -f tape:0 status
  assert_success
  assert_equal "$output" "$fake_same"
}

@test "mt: the virtual-tape commands take an existing local image whose name has a colon" {
  "$MT" -f a:b.tap vt-create 0 2>/dev/null && fail "a new a:b.tap is a remote name"
  touch a:b.tap
  run "$MT" -f a:b.tap vt-create 1m
  assert_success
  run "$MT" -f a:b.tap verify
  assert_success
}

@test "mt: stshowoptions on a remote name says the options are only readable on the tape host" {
  make_tape
  run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f "h:$PWD/t.tap" stshowoptions
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: h:$PWD/t.tap is a remote device; stshowoptions reads the st driver's options from this host's sysfs (run it on the tape host)."
}

@test "mt: tell asks tapekit's rmt only; dump's rmt would reset the drive's options to answer" {
  make_tape
  "$MT" -f t.tap rewind
  "$MT" -f t.tap fsf 1
  run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f "h:$PWD/t.tap" tell
  assert_success
  assert_output "At block 3."
  # dump's rmt answers QFA only after MTSETDRVBUFFER(MT_ST_BOOLEANS|...),
  # which clears the st driver's other boolean options: never asked.
  cat >dump-server <<EOF2
#!/bin/sh
LD_PRELOAD=$FAKE_ST FAKE_ST_LOG=$BATS_TEST_TMPDIR/calls.log exec /usr/sbin/rmt-dump
EOF2
  chmod +x dump-server
  RSH_STANDIN_SERVER=$PWD/dump-server run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f h:/dev/zero tell
  assert_equal "$status" 2
  assert_equal "$stderr" "h:/dev/zero: Inappropriate ioctl for device"
  # The server did open the drive through the shim, so the log holds every call.
  assert_file_exists "$BATS_TEST_TMPDIR/calls.log"
  run cat calls.log
  assert_line --index 0 "open rdonly"
  refute_output --partial "op=24"
  refute_output --partial "MTIOCPOS"
}

@test "mt: tell through tapekit's rmt asks the drive MTIOCPOS alone, as mt-st's tell does locally" {
  cat >our-server <<EOF2
#!/bin/sh
LD_PRELOAD=$FAKE_ST FAKE_ST_LOG=$BATS_TEST_TMPDIR/calls.log FAKE_ST_POS=1234 exec $TK_BIN/rmt --log none
EOF2
  chmod +x our-server
  RSH_STANDIN_SERVER=$PWD/our-server run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f h:/dev/zero tell
  assert_success
  assert_output "At block 1234."
  run cat calls.log
  assert_line "MTIOCPOS"
  refute_line "MTIOCGET"
}

@test "mt: tell on a plain file served remotely fails as mt-st's does on a file" {
  printf 'data' >plain
  run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f "h:$PWD/plain" tell
  assert_equal "$status" 2
  assert_equal "$stderr" "h:$PWD/plain: Inappropriate ioctl for device"
}

@test "mt: a remote shell that cannot run is named, with how it ended" {
  run --separate-stderr "$MT" --rsh-command=/nonexistent/rsh -f "h:$PWD/t.tap" status
  assert_equal "$status" 1
  assert_equal "${stderr_lines[0]}" "mt: cannot run /nonexistent/rsh: No such file or directory"
  assert_regex "${stderr_lines[1]}" "^mt: open h:$PWD/t.tap: connection lost.*the remote shell /nonexistent/rsh for h ended with exit status 127: Input/output error$"
}

@test "mt: a remote open failure exits 1 and a remote ioctl failure exits 2" {
  run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f "h:$PWD/none.tap" status
  assert_equal "$status" 1
  assert_equal "$stderr" "h:$PWD/none.tap: No such file or directory"
  run --separate-stderr "$MT" --rsh-command="$RSH_STANDIN" -f h:/dev/null status
  assert_equal "$status" 2
  assert_equal "$stderr" "h:/dev/null: Inappropriate ioctl for device"
}

@test "mt: --rsh-command without a value is a usage error" {
  run --separate-stderr "$MT" --rsh-command
  assert_equal "$status" 1
  assert_equal "$(sed -n 1p <<<"$stderr")" "usage: mt [-v] [--version] [-h] [ -f device ] command [ count ]"
}

@test "mt: --file=DEVICE names the device like -f" {
  FAKE_ST_POS=42 fake run "$MT" --file=/dev/zero tell
  assert_success
  assert_output "At block 42."
  FAKE_ST_POS=43 fake run "$MT" --file /dev/zero tell
  assert_output "At block 43."
}

@test "mt: a block device gets the kernel's answer to the tape ioctls, as mt-st reports it" {
  local dev=
  for dev in /dev/loop[0-9]*; do
    [ -b "$dev" ] && [ -r "$dev" ] && break
    dev=
  done
  [ -n "$dev" ] || skip "no readable block device here"
  # A loop device refuses MTIOCTOP, MTIOCGET and MTIOCPOS with EINVAL, not
  # the ENOTTY of a regular file.
  table_same_as_mt_st <<EOF_CASES
2 -f $dev fsf 2
2 -f $dev status
2 -f $dev tell
2 -f $dev rewind
EOF_CASES
  # A regular file is not asked: no tape ioctl means ENOTTY, as mt-st's.
  : >plain
  table_same_as_mt_st <<EOF_CASES
2 -f plain fsf 1
2 -f plain status
EOF_CASES
}

# --- a local drive that is loading ------------------------------------------

@test "a local drive still loading: the open waits as long as the drive takes, told on a terminal every 10 s; the data then follows" {
  printf 0123456789 >data
  # reblock on a terminal (script(1)): its standard error is the terminal.
  FAKE_ST_LOADING=$PWD/loaded FAKE_ST_LOG=$PWD/calls.log LD_PRELOAD=$FAKE_ST \
    script -qefc "$REBLOCK --open-timeout 0 -s 10 -i data -o /dev/zero; echo status=\$?" \
    terminal.log </dev/null >/dev/null &
  local watcher=$!
  wait_for_line_while terminal.log "waiting for /dev/zero to open, 1[0-9] s" "$watcher"
  touch loaded
  wait "$watcher"
  run cat terminal.log
  assert_line --partial "waiting for /dev/zero to open, 1"
  assert_line --partial "status=0"
  grep -qx 'open loading' calls.log
}

@test "a local drive still loading: --open-timeout gives up naming the option, and nothing is said while waiting without a terminal" {
  export FAKE_ST_LOADING=$PWD/never
  run --separate-stderr fake timeout 60 "$REBLOCK" --open-timeout 1 -i /dev/zero -o got
  assert_equal "$status" 1
  assert_equal "$stderr" "reblock: open /dev/zero: the device did not open within 1 s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit): Connection timed out"
  # buffer: 1.19's two lines, then which limit ended the wait.
  TAPEKIT_OPEN_TIMEOUT=1 run --separate-stderr fake timeout 60 "$BUFFER" -i /dev/zero -o got
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: cannot open input file: Connection timed out
filename: /dev/zero
buffer: open /dev/zero: the device did not open within 1 s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit)"
  TAPEKIT_OPEN_TIMEOUT=1 run --separate-stderr fake timeout 60 "$MT" -f /dev/zero fsf 1
  assert_equal "$status" 1
  assert_equal "$stderr" "mt: open /dev/zero: the device did not open within 1 s (--open-timeout or TAPEKIT_OPEN_TIMEOUT sets the limit): Connection timed out"
  # A status opens without waiting (O_NONBLOCK), as mt-st's does.
  run fake timeout 60 "$MT" -f /dev/zero status
  assert_success
}

@test "a local drive still loading: a signal while waiting for it stops the run as a signal does, not as a failed open" {
  export FAKE_ST_LOADING=$PWD/never FAKE_ST_LOG=$PWD/calls.log
  # setsid: a background job of a script ignores SIGINT.
  LD_PRELOAD=$FAKE_ST setsid "$REBLOCK" -i /dev/zero -o got 2>err &
  local pid=$! status=0
  wait_for_line_while calls.log '^open loading' "$pid"
  kill -INT "$pid"
  wait "$pid" || status=$?
  assert_equal "$status" 130
  assert_equal "$(cat err)" ""
}
