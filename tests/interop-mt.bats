#!/usr/bin/env bats
# Shows that tape control works across rmt in both directions: GNU mt
# (mt-gnu) positions SIMH .tap images served by our rmt as it would a drive,
# and tapekit's own clients (mt, buffer) reach our rmt, rmt-dump and rmt-tar
# through lib/tape's remote backend, with a faked st drive (the fake_st
# shim) behind the foreign servers.
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  export RSH=$RSH_STANDIN
  # Three tape files of one, two and three records.
  tapectl -w t.tap write 1000 fm 2000 2000 fm 3000 3000 3000 fm >/dev/null
}

mtgnu() { mt-gnu --rsh-command="$RSH_STANDIN" "$@"; }

# The position of t.tap as the local mt reports it: "File number=F, block number=B".
position() { mt -f t.tap status | sed -n 's/, partition=.*//p'; }

@test "interop-mt: mt-gnu rewind and fsf through rmt position a .tap" {
  mtgnu -f "localhost:$PWD/t.tap" rewind
  assert_equal "$(position)" "File number=0, block number=0"
  mtgnu -f "localhost:$PWD/t.tap" fsf 2
  assert_equal "$(position)" "File number=2, block number=0"
  run tapectl -r t.tap read 1
  assert_output 3000
}

@test "interop-mt: mt-gnu bsf and fsr through rmt move over filemarks and records" {
  mtgnu -f "localhost:$PWD/t.tap" rewind
  mtgnu -f "localhost:$PWD/t.tap" fsf 1
  mtgnu -f "localhost:$PWD/t.tap" fsr 1
  assert_equal "$(position)" "File number=1, block number=1"
  mtgnu -f "localhost:$PWD/t.tap" bsf 1
  run mt -f t.tap status
  assert_output --partial "File number=0, block number=-1"
}

@test "interop-mt: mt-gnu weof through rmt writes filemarks on a .tap" {
  mtgnu -f "localhost:$PWD/t.tap" rewind
  mtgnu -f "localhost:$PWD/t.tap" fsf 3
  mtgnu -f "localhost:$PWD/t.tap" weof 2
  mtgnu -f "localhost:$PWD/t.tap" rewind
  mtgnu -f "localhost:$PWD/t.tap" fsf 4
  assert_equal "$(position)" "File number=4, block number=0"
}

@test "interop-mt: mt-gnu eom through rmt goes to the end of data" {
  mtgnu -f "localhost:$PWD/t.tap" rewind
  mtgnu -f "localhost:$PWD/t.tap" eom
  run mt -f t.tap status
  # st reports block -1 at end of data, as the local mt shows after eom.
  assert_output --partial "File number=3, block number=-1"
  assert_output --partial "EOD"
}

@test "interop-mt: mt-gnu on a plain file through rmt reports the failed ioctl" {
  printf 'plain' >plain.img
  run mtgnu -f "localhost:$PWD/plain.img" fsf 1
  assert_equal "$status" 2
  assert_output --partial "Inappropriate ioctl for device"
  assert_equal "$(cat plain.img)" plain
}

@test "interop-mt: mt-gnu status through rmt gets its answer at once" {
  # GNU mt up to cpio 2.13 rejects any struct larger than 8 bytes; the point
  # is that our rmt answers S without waiting for a newline (no hang).
  run timeout 60 mt-gnu --rsh-command="$RSH_STANDIN" -f "localhost:$PWD/t.tap" status
  assert_equal "$status" 2
  assert_output --partial "rmtioctl failed: Value too large for defined data type"
}

@test "interop-mt: mt status through our rmt prints what a local mt status prints" {
  mt -f t.tap rewind
  mt -f t.tap fsf 1
  run mt -f "localhost:$PWD/t.tap" status
  assert_equal "$status" 0
  assert_output "$(mt -f t.tap status)"
  assert_output --partial "File number=1, block number=0"
}

@test "interop-mt: mt fsf, bsr and compression through our rmt act on a .tap" {
  mt -f "localhost:$PWD/t.tap" rewind
  mt -f "localhost:$PWD/t.tap" fsf 2
  mt -f "localhost:$PWD/t.tap" fsr 2
  mt -f "localhost:$PWD/t.tap" bsr 1
  assert_equal "$(position)" "File number=2, block number=1"
  mt -f "localhost:$PWD/t.tap" compression 1
  run tapectl -r t.tap drive
  assert_output --partial "compression=1"
}

# Runs our mt against FOREIGN server $1 serving /dev/zero as a faked drive;
# the drive's calls are logged to st.log.
mt_against() {
  local server=$1
  shift
  RSH_STANDIN_SERVER=$server LD_PRELOAD=$TK_TEST_LIB/fake_st.so FAKE_ST_DEVICE=/dev/zero \
    FAKE_ST_LOG=$PWD/st.log FAKE_ST_FILENO=2 FAKE_ST_BLKNO=5 mt -f localhost:/dev/zero "$@"
}

@test "interop-mt: mt status through rmt-dump reads the drive field by field" {
  run mt_against /usr/sbin/rmt-dump status
  assert_equal "$status" 0
  assert_line "File number=2, block number=5, partition=0."
  assert_line " BOT ONLINE IM_REP_EN"
}

@test "interop-mt: mt status through rmt-tar gets the 48-byte struct" {
  run mt_against /usr/sbin/rmt-tar status
  assert_equal "$status" 0
  assert_line "File number=2, block number=5, partition=0."
}

# Writes ./chunklog, a stand-in for the remote rmt: "chunklog LOG SERVER..."
# runs SERVER on what the client sends and appends to LOG each piece it
# read, one shell-quoted line per read(2). The client waits for a reply
# before it writes again, so a line is what it sent in one exchange.
write_chunklog() {
  cat >chunklog <<'EOF'
#!/bin/bash
log=$1
shift
while chunk=$(dd bs=65536 count=1 status=none; echo .) && [ "$chunk" != . ]; do
  printf '%q\n' "${chunk%.}" >>"$log"
  printf '%s' "${chunk%.}"
done | "$@"
EOF
  chmod +x chunklog
}

# Writes ./bsd-rmt, an rmt of the BSD lineage without v1 (4.4BSD, FreeBSD,
# OpenBSD): a command is one byte, so S takes no newline, and anything
# unknown, a newline too, ends it with status 3 and no reply, noted in the
# file named by its first argument. The drive: file 2, block 5, BOT ONLINE
# IM_REP_EN; the version probe (op -1) fails as a bogus ioctl does.
write_bsd_rmt() {
  cat >bsd-rmt <<'EOF'
#!/bin/bash
while IFS= read -r -n1 -d '' command; do
  case $command in
    O) IFS= read -r _ && IFS= read -r _ && printf 'A0\n' ;;
    I)
      IFS= read -r op && IFS= read -r count || exit 0
      if [ "$op" = -1 ]; then printf 'E22\nInvalid argument\n'; else printf 'A%s\n' "$count"; fi
      ;;
    C) IFS= read -r _ && printf 'A0\n' ;;
    # Only ever asked before the open (the client's first exchange).
    R) IFS= read -r _ && printf 'E9\nBad file descriptor\n' ;;
    S)
      printf 'A48\nr'
      head -c 23 /dev/zero
      printf '\x00\x00\x01\x41'
      head -c 12 /dev/zero
      printf '\x02\x00\x00\x00\x05\x00\x00\x00'
      ;;
    *) printf 'garbage command %q\n' "$command" >>"$1"; exit 3 ;;
  esac
done
EOF
  chmod +x bsd-rmt
}

@test "interop-mt: mt status through rmt-tar sends S with its newline, in one exchange" {
  # GNU rmt reads lines: it answers S only once the newline is there. The
  # version probe also asks whether the server is GNU rmt (I-1 with a count
  # GNU refuses), so S goes out whole at once instead of alone, with the
  # newline following when no answer came.
  write_chunklog
  run mt_against "$PWD/chunklog $PWD/sent /usr/sbin/rmt-tar" status
  assert_equal "$status" 0
  assert_line "File number=2, block number=5, partition=0."
  assert_equal "$(cat sent)" "$(printf '%q\n' $'R0\n' $'O/dev/zero\n0 O_RDONLY|O_NONBLOCK\n' \
    $'I-1\n0\nI-1\n0x\n' $'S\n' $'C\n')"
}

@test "interop-mt: mt status through a BSD-lineage rmt sends S alone, as it reads one byte" {
  write_chunklog
  write_bsd_rmt
  RSH_STANDIN_SERVER="$PWD/chunklog $PWD/sent $PWD/bsd-rmt $PWD/garbage" \
    run --separate-stderr mt -f localhost:/dev/zero status
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_line "File number=2, block number=5, partition=0."
  assert_line " BOT ONLINE IM_REP_EN"
  assert_file_not_exists garbage
  assert_equal "$(cat sent)" "$(printf '%q\n' $'R0\n' $'O/dev/zero\n0 O_RDONLY|O_NONBLOCK\n' \
    $'I-1\n0\nI-1\n0x\n' S $'C\n')"
}

@test "interop-mt: status asked after a tape operation still reaches rmt-tar and a BSD-lineage rmt" {
  # The version is known from the operation's probe: whether S needs its
  # newline is asked along with S, and GNU rmt gets the newline on its answer.
  write_chunklog
  write_bsd_rmt
  RSH_STANDIN_SERVER="$PWD/chunklog $PWD/sent /usr/sbin/rmt-tar" LD_PRELOAD=$TK_TEST_LIB/fake_st.so \
    FAKE_ST_DEVICE=/dev/zero run rmt-client localhost:/dev/zero r op nop 1 status
  assert_equal "$status" 0
  assert_output "type 114 file 0 block 0 size 0 density 0 BOT ONLINE"
  assert_equal "$(sed -n 5,6p sent)" "$(printf '%q\n' $'I-1\n0x\nS' $'\n')"
  rm sent
  RSH_STANDIN_SERVER="$PWD/chunklog $PWD/sent $PWD/bsd-rmt $PWD/garbage" \
    run rmt-client localhost:/dev/zero r op nop 1 status
  assert_equal "$status" 0
  assert_output "type 114 file 2 block 5 size 0 density 0 BOT ONLINE"
  assert_file_not_exists garbage
  assert_equal "$(sed -n 5p sent)" "$(printf '%q' $'I-1\n0x\nS')"
}

# Our mt's status of the faked drive in FAKE_ST_STATE $2, through FOREIGN
# server $1, must be what mt-st prints reading the same drive locally, field
# by field (line by line); the output is left in $output.
assert_status_as_mt_st() {
  local server=$1 state=$2 theirs ours i
  theirs=$(LD_PRELOAD=$TK_TEST_LIB/fake_st.so FAKE_ST_DEVICE=/dev/zero FAKE_ST_STATE=$state \
    mt-st -f /dev/zero status)
  RSH_STANDIN_SERVER=$server LD_PRELOAD=$TK_TEST_LIB/fake_st.so FAKE_ST_DEVICE=/dev/zero \
    FAKE_ST_STATE=$state run --separate-stderr mt -f localhost:/dev/zero status
  [ "$status" -eq 0 ] || fail "$server, $state: mt status exits $status: $stderr"
  assert_equal "$stderr" ""
  mapfile -t theirs <<<"$theirs"
  mapfile -t ours <<<"$output"
  for i in "${!theirs[@]}"; do
    [ "${ours[i]-}" = "${theirs[i]}" ] ||
      fail "$server, $state: line $((i + 1)) is '${ours[i]-}', mt-st prints '${theirs[i]}'"
  done
  assert_equal "${#ours[@]}" "${#theirs[@]}"
}

@test "interop-mt: mt status at end of data through rmt-dump and rmt-tar prints what mt-st prints locally" {
  local server
  for server in /usr/sbin/rmt-dump /usr/sbin/rmt-tar; do
    assert_status_as_mt_st "$server" eod
    # rmt-dump answers the unknown file and block A-1.
    assert_line "File number=-1, block number=-1, partition=0."
    assert_line " EOD ONLINE IM_REP_EN"
  done
}

@test "interop-mt: mt status with no tape through rmt-dump and rmt-tar prints what mt-st prints locally" {
  local server
  for server in /usr/sbin/rmt-dump /usr/sbin/rmt-tar; do
    assert_status_as_mt_st "$server" no-tape
    assert_line "File number=-1, block number=-1, partition=0."
    assert_line " DR_OPEN IM_REP_EN"
  done
}

@test "interop-mt: mt status of a drive not ready through rmt-dump and rmt-tar prints what mt-st prints locally" {
  local server
  for server in /usr/sbin/rmt-dump /usr/sbin/rmt-tar; do
    assert_status_as_mt_st "$server" not-ready
    assert_line "File number=-1, block number=-1, partition=0."
    assert_line "General status bits on (10000):"
    assert_line " IM_REP_EN"
  done
}

# bsfm goes to a server as its raw Linux number, without a version probe;
# the status asked after it carries the framing probe, which rmt-dump takes
# for a version probe and answers in v1, sending S's fields in network order.
@test "interop-mt: status after a raw op through rmt-dump is read in the byte order rmt-dump sends" {
  local server
  for server in /usr/sbin/rmt-dump /usr/sbin/rmt-tar "$TK_BIN/rmt --log none"; do
    RSH_STANDIN_SERVER=$server LD_PRELOAD=$TK_TEST_LIB/fake_st.so FAKE_ST_DEVICE=/dev/zero \
      FAKE_ST_FILENO=2 FAKE_ST_BLKNO=5 run -0 rmt-client localhost:/dev/zero r op bsfm 1 status
    assert_equal "$server: $output" "$server: type 114 file 2 block 5 size 0 density 0 BOT ONLINE"
  done
}

@test "interop-mt: a failed bsfm with no tape through rmt-dump, rmt-tar and our rmt says the device is offline, as mt-st does locally" {
  # A drive that opens without a tape (DR_OPEN IM_REP_EN, not ONLINE) and
  # fails the operation with EIO.
  export FAKE_ST_DEVICE=/dev/zero FAKE_ST_FAIL=10:5 FAKE_ST_GSTAT=0x00050000
  local theirs server
  theirs=$(LD_PRELOAD=$TK_TEST_LIB/fake_st.so mt-st -f /dev/zero bsfm 1 2>&1) && fail "mt-st bsfm succeeded"
  assert_equal "$theirs" "/dev/zero: Input/output error
mt: The device is offline (not powered on, no tape ?)."
  for server in /usr/sbin/rmt-dump /usr/sbin/rmt-tar "$TK_BIN/rmt --log none"; do
    RSH_STANDIN_SERVER=$server LD_PRELOAD=$TK_TEST_LIB/fake_st.so \
      run -2 --separate-stderr mt -f localhost:/dev/zero bsfm 1
    assert_equal "$server: $stderr" "$server: localhost:$theirs"
  done
}

@test "interop-mt: mt fsf and compression reach the drive through rmt-dump and rmt-tar" {
  local server
  for server in /usr/sbin/rmt-dump /usr/sbin/rmt-tar "$TK_BIN/rmt --log none"; do
    rm -f st.log
    mt_against "$server" fsf 3
    mt_against "$server" compression 1
    run grep MTIOCTOP st.log
    assert_line "MTIOCTOP op=1 count=0x3"
    assert_line "MTIOCTOP op=32 count=0x1"
  done
}

@test "interop-mt: buffer -o and -i reach our rmt, rmt-dump and rmt-tar byte for byte" {
  random_mib 2 9 >data
  local server
  for server in "$TK_BIN/rmt --log none" /usr/sbin/rmt-dump /usr/sbin/rmt-tar; do
    rm -f remote back
    RSH_STANDIN_SERVER=$server buffer -o "localhost:$PWD/remote" <data
    cmp data remote
    RSH_STANDIN_SERVER=$server buffer -i "localhost:$PWD/remote" >back
    cmp data back
  done
}
