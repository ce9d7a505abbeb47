#!/usr/bin/env bats
# completion: shows that the bash completions in completion/ (one per program,
# named as the program) offer each program's commands and options, tapekit's
# additions included, and complete option values and file names where they
# take them. Each case runs a fresh bash with Debian's bash-completion loaded.

# bats' run sets $status, $output and $lines.
# shellcheck disable=SC2154
# Left out of the sanitizer pass (suite time): bash completions run no program of ours.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0
load test_helper

COMPLETION_DIR=$BATS_TEST_DIRNAME/../completion
BASH_COMPLETION=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}

setup() {
  tk_trace_test_lines_only
  # The scripts run no tapekit code that a sanitizer could check.
  [ -z "${TK_SANITIZED:-}" ] || skip "runs in the plain pass only"
  cd "$BATS_TEST_TMPDIR" || return 1
}

# complete PROGRAM WORD...: the completions bash offers for the command line
# "PROGRAM WORD...", the cursor at the end of the last word (give '' to
# complete a new word), one a line in the order offered. As bash does, the
# words are also split at = and : (COMP_WORDBREAKS) for the function.
complete() {
  bash -c '
    source "$1" || exit 1
    source "$2/$3" || exit 1
    shift 2
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    COMP_WORDS=()
    for word in "$@"; do
      while [[ $word =~ ^([^:=]*)([:=])(.*)$ ]]; do
        [[ -z ${BASH_REMATCH[1]} ]] || COMP_WORDS+=("${BASH_REMATCH[1]}")
        COMP_WORDS+=("${BASH_REMATCH[2]}")
        word=${BASH_REMATCH[3]}
      done
      [[ -z $word && ${#COMP_WORDS[@]} -gt 0 && $COMP_LINE != *" " ]] || COMP_WORDS+=("$word")
    done
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    spec=$(complete -p "$1") || exit 1
    function=${spec#*-F }
    function=${function%% *}
    "$function" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"
  ' complete "$BASH_COMPLETION" "$COMPLETION_DIR" "$@"
}

# The options a man page's SYNOPSIS lists, one a line: bundled letters one
# by one, and long options however the page spells their dashes.
synopsis_options() {
  sed -n '/^\.Sh SYNOPSIS/,/^\.Sh /p' "$BATS_TEST_DIRNAME/../man/$1" |
    awk '$1 == ".Op" && $2 == "Fl" {
      if ($3 == "Fl") print "--" $4
      else if ($3 ~ /^(\\)?-/) { name = $3; sub(/^(\\)?-/, "", name); print "--" name }
      else for (i = 1; i <= length($3); i++) print "-" substr($3, i, 1)
    }'
}

# Fails unless PROGRAM's completion of "-" offers every option its man page
# PAGE lists in SYNOPSIS (at least MIN of them, so a misread page fails too).
assert_offers_synopsis() {
  local program=$1 page=$2 min=$3 option
  synopsis_options "$page" >wanted
  [ "$(wc -l <wanted)" -ge "$min" ] || fail "read too few options from $page"
  run complete "$program" -
  while read -r option; do
    grep -qx -- "$option" <<<"$output" || fail "$program completion lacks $option"
  done <wanted
}

@test "completion: there is one script per program, and each passes shellcheck" {
  local tool
  for tool in "$BATS_TEST_DIRNAME"/../tools/*/main.cpp; do
    tool=$(basename "$(dirname "$tool")")
    assert_file_exists "$COMPLETION_DIR/$tool"
  done
  run shellcheck "$COMPLETION_DIR"/*
  assert_success
}

@test "completion: mt completes a command from its prefix, tapekit's included" {
  run complete mt sto
  assert_output "stoptions"
  run complete mt -f x.tap st
  assert_output "status
stwrthreshold
stoptions
stsetoptions
stclearoptions
stsetcln
sttimeout
stlongtimeout
stshowoptions"
  run complete mt --json -f x.tap vt-
  assert_output "vt-create
vt-protect
vt-alert"
  run complete mt -fxyz x.tap --rsh-command ssh ver
  assert_output "verify"
  run complete mt -f tapehost:/dev/nst0 --connect-timeout=5 sta
  assert_output "status"
}

@test "completion: mt offers every command mt -h lists, those of mt-st's own completion, and its own" {
  run -0 --separate-stderr "$MT" -h
  # mt-st's list: from "commands:" to the line that ends with a full stop.
  awk '/^commands:/ { on = 1 } on { print } on && /\.$/ { exit }' <<<"$stderr" |
    sed 's/^commands://' | tr -d ' .' | tr ',' '\n' | sed '/^$/d' >listed
  assert_equal "$(wc -l <listed)" 46
  complete mt '' >offered
  # verify, the vt- commands and the drive-health commands are tapekit's.
  local ours=(-e verify -e 'vt-.*' -e tapealert -e capacity -e cartridge -e encryption -e health)
  assert_equal "$(grep -vx "${ours[@]}" offered)" "$(cat listed)"
  assert_equal "$(grep -cx -e verify -e vt-create -e vt-protect -e tapealert -e capacity \
    -e cartridge -e encryption -e health offered)" 8
  # Debian's mt-st completion (stshowopt is the name stshowoptions had).
  local word
  for word in weof wset eof fsf fsfm bsf bsfm fsr bsr fss bss rewind offline rewoffl eject \
    retension eod seod seek tell status erase setblk lock unlock load compression setdensity \
    drvbuffer stwrthreshold stoptions stsetoptions stclearoptions defblksize defdensity \
    defdrvbuffer defcompression stsetcln sttimeout stlongtimeout densities setpartition \
    mkpartition partseek asf stshowopt; do
    grep -q "^$word" offered || fail "no command completes '$word'"
  done
}

@test "completion: mt completes the st driver options, weof-no-wait too, after stsetoptions" {
  run complete mt -f /dev/nst0 stsetoptions weof
  assert_output "weof-no-wait"
  run complete mt -f /dev/nst0 stclearoptions buffer-writes no-
  assert_output "no-blklimits
no-wait"
  run complete mt stoptions ''
  assert_equal "${#lines[@]}" 17
  run complete mt -f x.tap vt-protect ''
  assert_output "1
0"
  run complete mt -f x.tap rewind ''
  assert_output ""
}

@test "completion: mt completes its options, and files after -f" {
  touch a.tap b.tap
  mkdir tapes
  run complete mt --js
  assert_output "--json"
  run complete mt --r
  assert_output "--rsh-command
--rmt-command"
  run complete mt -f a
  assert_output "a.tap"
  run complete mt --file=t
  assert_output "tapes"
  run complete mt --connect-timeout ''
  assert_output ""
}

@test "completion: rmt offers the options of its SYNOPSIS and the values of the ones that have a list" {
  assert_offers_synopsis rmt rmt.8 15
  run complete rmt --lseek-order ''
  assert_output "auto
bsd
gnu"
  run complete rmt --log=s
  assert_output "syslog"
  run complete rmt --allow-ioctl set
  assert_output "setblk
setdensity
setdrvbuffer
setpart"
}

@test "completion: buffer offers the options of its SYNOPSIS and files after -i and -o" {
  touch in.dat out.tap
  assert_offers_synopsis buffer buffer.1 20
  run complete buffer -s 10k -o o
  assert_output "out.tap"
  run complete buffer -i i
  assert_output "in.dat"
  run complete buffer -s ''
  assert_output ""
}

@test "completion: reblock offers the options of its SYNOPSIS and files after -i and -o" {
  touch in.dat out.tap
  assert_offers_synopsis reblock reblock.1 10
  run complete reblock -i i
  assert_output "in.dat"
  run complete reblock -B -s 256k -o o
  assert_output "out.tap"
}

@test "completion: mt completes vt-alert's clear and vt-create's options after the capacity" {
  run complete mt -f x.tap vt-alert cl
  assert_output "clear"
  run complete mt -f x.tap vt-create 10M --
  assert_output "--barcode
--manufactured"
  run complete mt -f x.tap vt-create --
  assert_output ""
}

@test "completion: mt completes the drive-health commands and --fail-on's severities" {
  run complete mt -f /dev/nst0 tapea
  assert_output "tapealert"
  run complete mt -f /dev/nst0 tapealert --fail-on cr
  assert_output "critical"
  run complete mt -f /dev/nst0 tapealert --f
  assert_output "--fail-on"
  run complete mt --fail-on=w
  assert_output "warning"
  run complete mt -f /dev/nst0 ca
  assert_output "capacity
cartridge"
}
