#!/usr/bin/env bats
# Shows that the four programs share one skeleton on the command line:
# --help prints on standard output and exits 0, --version prints one line
# naming the program and the suite's one version (the file VERSION), and
# mt -h lists tapekit's additions after mt-st's usage.
bats_require_minimum_version 1.5.0

load test_helper

MT_ST=${MT_ST:-/usr/bin/mt-st}

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  version=$(cat "$BATS_TEST_DIRNAME/../VERSION")
}

@test "cli: VERSION holds one version and nothing else" {
  run cat "$BATS_TEST_DIRNAME/../VERSION"
  assert_equal "${#lines[@]}" 1
  assert_regex "$output" '^[0-9]+\.[0-9]+\.[0-9]+$'
}

@test "cli: --version of buffer, rmt and reblock is one line with VERSION, exit 0, and reads no input" {
  local program
  for program in buffer rmt reblock; do
    run --separate-stderr "$TK_BIN/$program" --version </dev/zero
    assert_success
    assert_equal "$output" "$program (tapekit) $version"
    assert_equal "$stderr" ""
  done
}

@test "cli: mt -v and --version keep mt-st's two lines and add tapekit's version line" {
  local word
  for word in -v --version; do
    run --separate-stderr "$MT" "$word"
    assert_success
    assert_equal "${lines[0]}" "$("$MT_ST" -v | sed -n 1p)"
    assert_equal "${lines[1]}" "default tape device: /dev/tape"
    assert_equal "${lines[2]}" "mt (tapekit) $version"
    assert_equal "${#lines[@]}" 3
  done
}

@test "cli: --help of every program prints its usage and options on stdout and exits 0" {
  run --separate-stderr "$BUFFER" --help
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 0 --partial "Usage: buffer [-B]"
  assert_line --partial "  --version "
  run --separate-stderr "$RMT" --help </dev/null
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 0 --partial "usage: rmt [-rw]"
  assert_line --partial "  --allow path "
  assert_line --partial "  --version "
  run --separate-stderr "$REBLOCK" --help
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 0 --partial "usage: reblock [-Bhrt]"
  assert_line --partial "  --version "
  run --separate-stderr "$MT" --help
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 0 "usage: mt [-v] [--version] [-h] [ -f device ] command [ count ]"
  assert_line --partial "  --help "
}

@test "cli: reblock --help describes every option of its usage line" {
  run "$REBLOCK" --help
  local usage option
  usage=$(sed '/^$/,$d' <<<"$output")
  for option in $(grep -o -- '--*[a-zA-Z-]*' <<<"$usage" | grep -v -- '-Bhrt'); do
    assert_line --partial "  $option "
  done
  for option in -B -h -r -t; do
    assert_line --partial "  $option"
  done
}

@test "cli: mt -h prints mt-st's long usage on stderr, then tapekit's extensions, and exits 0" {
  local theirs
  theirs=$("$MT_ST" -h 2>&1 >/dev/null)
  run --separate-stderr "$MT" -h
  assert_success
  assert_equal "$output" ""
  # mt-st's text first, byte for byte.
  assert_equal "$(head -n "$(wc -l <<<"$theirs")" <<<"$stderr")" "$theirs"
  local word
  for word in vt-create vt-protect verify --json host: --rsh-command --rmt-command; do
    assert_regex "$(tail -n +"$(($(wc -l <<<"$theirs") + 1))" <<<"$stderr")" "$word"
  done
}

@test "cli: mt --help prints what mt -h prints, on stdout" {
  run --separate-stderr "$MT" -h
  local help=$stderr
  run --separate-stderr "$MT" --help
  assert_success
  assert_equal "$output" "$help"
}

@test "cli: output that cannot be written is reported with the system's reason, not a generic I/O error" {
  local program expected
  for program in buffer rmt reblock mt; do
    case $program in buffer) expected=255 ;; rmt) expected=3 ;; reblock) expected=1 ;; mt) expected=2 ;; esac
    run --separate-stderr bash -c '"$0" --help </dev/null >/dev/full' "$TK_BIN/$program"
    assert_equal "$status" "$expected"
    assert_equal "$stderr" "$program: write standard output: No space left on device"
    run --separate-stderr bash -c '"$0" --version </dev/null >&-' "$TK_BIN/$program"
    assert_equal "$status" "$expected"
    assert_equal "$stderr" "$program: write standard output: Bad file descriptor"
  done
}

@test "cli: buffer, reblock and rmt make no regular file in /dev for a missing drive, and name it" {
  local dev=/dev/tk-no-such-drive-$$
  run "$BUFFER" -o "$dev" <<<hi
  assert_failure
  assert_output --partial "$dev"
  run "$REBLOCK" -o "$dev" <<<hi
  assert_failure
  assert_output --partial "$dev (no such device"
  run --separate-stderr "$RMT" <<<"O$dev
66
"
  assert_line --index 0 --regexp "^E(2|19)$"
  [ ! -e "$dev" ]
}

@test "cli: buffer -h prints the help on standard output and exits 0, as --help does (1.19 knew no -h)" {
  run --separate-stderr "$BUFFER" -h
  assert_success
  assert_equal "$stderr" ""
  assert_equal "$output" "$("$BUFFER" --help)"
}

# The options PROGRAM's table gives --help, one a line: the names before the
# words of each line that starts with "  -" (mt adds mt-st's usage line,
# whose -h, -v and --version its table leaves to mt-st's text).
table_options() {
  local program=$1
  "$TK_BIN/$program" --help </dev/null |
    awk -v program="$program" '
      program == "mt" && NR == 1 {
        for (i = 1; i <= NF; i++) if ($i ~ /^\[?-/) { name = $i; gsub(/[][]/, "", name); print name }
      }
      /^  -/ {
        key = substr($0, 3); cut = index(key, "  "); if (cut) key = substr(key, 1, cut - 1)
        n = split(key, words, /[ ,]+/)
        for (i = 1; i <= n; i++) if (words[i] ~ /^-/) { sub(/=.*/, "", words[i]); print words[i] }
      }' | sort -u
}

# The options PAGE's SYNOPSIS names, one a line: every argument of Fl up to
# the next macro, bundled letters one by one.
page_options() {
  sed -n '/^\.Sh SYNOPSIS/,/^\.Sh /p' "$BATS_TEST_DIRNAME/../man/$1" |
    awk '{
      flags = 0
      for (i = 1; i <= NF; i++) {
        word = $i
        if (word == "Fl" || word == ".Fl") { flags = 1; continue }
        if (!flags || word == "|") continue
        if (word ~ /^\.?[A-Z][a-z][a-z]?$/) { flags = 0; continue }
        sub(/^\\/, "", word)
        if (word ~ /^-/) print "-" word
        else for (j = 1; j <= length(word); j++) print "-" substr(word, j, 1)
      }
    }' | sort -u
}

@test "cli: every option of each program's table is in its man page's SYNOPSIS, and every option there is in the table" {
  local program page
  for program in buffer reblock mt rmt; do
    page=$program.1
    [ "$program" = rmt ] && page=rmt.8
    table_options "$program" >table
    page_options "$page" >page
    [ "$(wc -l <table)" -ge 10 ] || fail "read too few options from $program --help"
    [ "$(wc -l <page)" -ge 10 ] || fail "read too few options from $page"
    run comm -23 table page
    [ -z "$output" ] || fail "$program takes $(echo $output) but $page's SYNOPSIS lacks it"
    run comm -13 table page
    [ -z "$output" ] || fail "$page's SYNOPSIS has $(echo $output) but $program's table lacks it"
  done
}
