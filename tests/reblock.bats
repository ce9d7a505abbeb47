#!/usr/bin/env bats
# Shows that reblock turns any input (pipes chunked at random, files, tapes)
# into writes of exactly -s bytes, keeps every byte, pads on request, counts
# like dd, surveys record sizes, and fails loudly without losing data.
bats_require_minimum_version 1.5.0

load test_helper

setup() {
  tk_trace_test_lines_only
  cd "$BATS_TEST_TMPDIR" || return 1
  export REBLOCK
  # LeakSanitizer stops the world with ptrace, which strace already holds.
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
}

# Writes N reproducible pseudo-random bytes (seeded by $2) to stdout.
random_bytes() {
  random_mib $((($1 + 1048575) / 1048576)) "${2:-1}" | head -c "$1"
}

# Runs reblock under strace with the given arguments, stdin from the caller's
# stdin, stdout to out.bin; the sizes of its writes to stdout, as "asked
# written" pairs, go to writes.txt.
traced_reblock() {
  strace -s 0 -e trace=write -e signal=none -o trace.log "$REBLOCK" "$@" >out.bin
  sed -nE 's/^write\(1, .*, ([0-9]+)\) += (-?[0-9]+).*/\1 \2/p' trace.log >writes.txt
}

# traced_reblock with input file $1 fed through the chunker.
chunked_traced_reblock() {
  local input=$1
  shift
  chunker 7 1 200000 <"$input" | traced_reblock "$@"
}

# Waits (10 s at most) until process $1 is blocked reading its standard
# input: /proc/PID/syscall then starts with read's number (0 on x86-64) and fd 0.
wait_reading_stdin() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ $(cat "/proc/$1/syscall" 2>/dev/null) == "0 0x0 "* ]] && return 0
    sleep 0.1
  done
  return 1
}

# Checks writes.txt for $2 bytes in records of $1 bytes: every write asked
# for and wrote $1 bytes except the last, which holds the rest; prints every
# offender.
assert_exact_records() {
  local size=$1 total=$2
  local records=$(((total + size - 1) / size)) last=$((total % size))
  [ "$last" -ne 0 ] || last=$size
  run awk -v size="$size" -v records="$records" -v last="$last" '
    { n++; want = (n == records) ? last : size
      if ($1 != want || $2 != want) { print "write " n ": asked " $1 ", wrote " $2 ", want " want; bad = 1 } }
    END { if (n != records) { print n " writes, want " records; bad = 1 }; exit bad }' writes.txt
  assert_success
}

# One check per record size: exact writes and identical bytes.
check_size() {
  local size=$1 total=$2
  random_bytes "$total" 3 >in.bin
  chunked_traced_reblock in.bin -s "$size"
  assert_exact_records "$size" "$total"
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: -s 1 from a chunked pipe writes one byte per write and keeps every byte" {
  check_size 1 3001
}

@test "reblock: -s 512 from a chunked pipe writes only 512-byte records, the last short" {
  check_size 512 $((1048576 + 77))
}

@test "reblock: the default size is 10240 bytes, like tar's 20-block records" {
  random_bytes 1000000 4 >in.bin
  chunked_traced_reblock in.bin
  assert_exact_records 10240 1000000
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: -s 65536 from a chunked pipe writes only 65536-byte records, the last short" {
  check_size 65536 $((4 * 1048576 + 1000))
}

@test "reblock: -s 262144 from a chunked pipe writes only 262144-byte records, the last short" {
  check_size 262144 $((8 * 1048576 + 4097))
}

@test "reblock: -s 1048577 (1 MiB + 1) from a chunked pipe writes only records of that size" {
  check_size 1048577 $((8 * 1048576 + 12345))
}

@test "reblock: an input that is a whole number of records ends with a full record" {
  random_bytes $((40 * 4096)) 5 >in.bin
  chunked_traced_reblock in.bin -s 4k
  assert_exact_records 4096 $((40 * 4096))
}

@test "reblock: a large stream through random chunks comes out byte for byte" {
  random_mib "$TK_BIG_MB" 6 >in.bin
  run bash -c 'chunker 11 1 300000 <in.bin | "$REBLOCK" -s 256k | sha256sum | cut -d" " -f1'
  assert_success
  assert_output "$(sha in.bin)"
}

@test "reblock: a page-cached file given with -i and -o is copied byte for byte" {
  random_bytes 3000000 8 >in.bin
  run "$REBLOCK" -s 32k -i in.bin -o out.bin
  assert_success
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: -o truncates an existing output file" {
  random_bytes 100000 9 >in.bin
  head -c 500000 /dev/zero >out.bin
  run "$REBLOCK" -i in.bin -o out.bin
  assert_success
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: empty input gives empty output and zero records" {
  run --separate-stderr "$REBLOCK" -t -i /dev/null -o out.bin
  assert_success
  assert_equal "$(stat -c %s out.bin)" 0
  assert_equal "${stderr_lines[0]}" "0+0 records in"
  assert_equal "${stderr_lines[1]}" "0+0 records out"
}

@test "reblock: -B pads the last record to the full size with zero bytes" {
  random_bytes 100000 10 >in.bin
  run "$REBLOCK" -B -s 30000 -i in.bin -o out.bin
  assert_success
  assert_equal "$(stat -c %s out.bin)" 120000
  assert_equal "$(head -c 100000 out.bin | sha256sum | cut -d' ' -f1)" "$(sha in.bin)"
  assert_equal "$(tail -c 20000 out.bin | sha256sum | cut -d' ' -f1)" \
    "$(head -c 20000 /dev/zero | sha256sum | cut -d' ' -f1)"
}

@test "reblock: -B writes the padded last record in one write of the full size" {
  random_bytes 100000 10 >in.bin
  chunked_traced_reblock in.bin -B -s 30000
  assert_exact_records 30000 120000
}

@test "reblock: --pad-byte sets the byte -B pads with" {
  random_bytes 5000 11 >in.bin
  run "$REBLOCK" -B --pad-byte 255 -s 4096 -i in.bin -o out.bin
  assert_success
  assert_equal "$(stat -c %s out.bin)" 8192
  run bash -c 'tail -c 3192 out.bin | od -An -v -tx1 | tr -s " \n" "\n\n" | sort -u | grep .'
  assert_output "ff"
}

@test "reblock: -B adds nothing to input that fills its last record" {
  random_bytes 8192 12 >in.bin
  run "$REBLOCK" -B -s 4096 -i in.bin -o out.bin
  assert_success
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: -t prints dd's records in, records out and bytes lines on stderr" {
  random_bytes 100000 13 >in.bin
  run --separate-stderr "$REBLOCK" -t -s 10240 -i in.bin -o out.bin
  assert_success
  assert_output ""
  assert_equal "${stderr_lines[0]}" "9+1 records in"
  assert_equal "${stderr_lines[1]}" "9+1 records out"
  [[ ${stderr_lines[2]} == "100000 bytes (100 kB, 98 KiB) copied, "*" s, "*"B/s" ]]
}

@test "reblock: -t counts a padded last record as a full record out" {
  random_bytes 100000 13 >in.bin
  run --separate-stderr "$REBLOCK" -tB -s 10240 -i in.bin -o out.bin
  assert_success
  assert_equal "${stderr_lines[0]}" "9+1 records in"
  assert_equal "${stderr_lines[1]}" "10+0 records out"
  [[ ${stderr_lines[2]} == "102400 bytes (102 kB, 100 KiB) copied, "* ]]
}

@test "reblock: sizes take getopt forms and suffixes: -s32768, -s 32k, -s 64b" {
  random_bytes 100000 14 >in.bin
  for form in -s32768 "-s 32k" "-s 64b"; do
    # shellcheck disable=SC2086
    run --separate-stderr "$REBLOCK" -t $form -i in.bin -o out.bin
    assert_success
    assert_equal "${stderr_lines[1]}" "3+1 records out"
  done
}

@test "reblock: grouped flags take the size last: -tBs 32768 and -tBs32k" {
  random_bytes 100000 14 >in.bin
  for form in "-tBs 32768" -tBs32k; do
    # shellcheck disable=SC2086
    run --separate-stderr "$REBLOCK" $form -i in.bin -o out.bin
    assert_success
    assert_equal "${stderr_lines[1]}" "4+0 records out"
    assert_equal "$(stat -c %s out.bin)" 131072
  done
}

@test "reblock: -r copies record by record and reports the record sizes" {
  random_bytes $((2 * 1048576 + 1000)) 15 >in.bin
  run --separate-stderr "$REBLOCK" -r --max-record 1m -i in.bin -o out.bin
  assert_success
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
  assert_equal "${stderr_lines[0]}" "2 records of 1048576 bytes"
  assert_equal "${stderr_lines[1]}" "1 record of 1000 bytes"
  assert_equal "${stderr_lines[2]}" "3 records, 2098152 bytes"
}

@test "reblock: -r with -t adds dd's summary, counting records of -s bytes as full" {
  random_bytes $((2 * 1048576 + 1000)) 15 >in.bin
  run --separate-stderr "$REBLOCK" -rt -s 1m -i in.bin -o out.bin
  assert_success
  assert_equal "${stderr_lines[3]}" "2+1 records in"
  assert_equal "${stderr_lines[4]}" "2+1 records out"
}

@test "reblock: a non-blocking stdin and stdout still carry every byte" {
  random_bytes 20000000 16 >in.bin
  run bash -c 'chunker 3 1 100000 50 <in.bin |
    reblock-nonblock "$REBLOCK" -s 256k | (sleep 0.2; sha256sum) | cut -d" " -f1'
  assert_success
  assert_output "$(sha in.bin)"
}

@test "reblock: a reader that goes away ends it by SIGPIPE, as dd and cat end, with no message, every time" {
  random_bytes 5000000 17 >in.bin
  local i
  for i in 1 2 3; do
    run bash -c '"$REBLOCK" -s 64k <in.bin 2>err.txt | head -c 10 >/dev/null; echo "${PIPESTATUS[0]}"'
    assert_output "$((128 + 13))"
    assert_equal "$(cat err.txt)" ""
  done
  # -t's summary still comes first.
  run bash -c '"$REBLOCK" -s 64k -t <in.bin 2>err.txt | head -c 10 >/dev/null; echo "${PIPESTATUS[0]}"'
  assert_output "$((128 + 13))"
  [ -s err.txt ]
}

@test "reblock: a malformed size exits 2 and names the value" {
  run --separate-stderr "$REBLOCK" -s 12q -i /dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid record size '12q': unknown unit (use b, k, m, g or t)"
}

@test "reblock: a size of 0 exits 2" {
  run --separate-stderr "$REBLOCK" -s 0 -i /dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid record size '0': must be at least 1"
}

@test "reblock: a size over 1 GiB exits 2" {
  run --separate-stderr "$REBLOCK" -s 2g -i /dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid record size '2g': too large"
}

@test "reblock: a --pad-byte outside 0..255 exits 2 and names the value" {
  run --separate-stderr "$REBLOCK" -B --pad-byte 256 -i /dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid --pad-byte '256': out of range"
}

@test "reblock: an unknown option exits 2, names the option and prints the usage" {
  run --separate-stderr "$REBLOCK" -x
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid option -- 'x'"
  assert_equal "${stderr_lines[1]}" "usage: reblock [-Bhrt] [-i input] [-o output] [-s size] [--max-record size]"
}

@test "reblock: values attached to short options are read as getopt reads them, whatever their characters" {
  random_bytes 5000 3 >in.bin
  run --separate-stderr "$REBLOCK" -i./in.bin -to./out.bin -s1k
  assert_success
  assert_equal "${stderr_lines[1]}" "4+1 records out"
  cmp in.bin out.bin
  run --separate-stderr "$REBLOCK" -Bx
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid option -- 'x'"
}

@test "reblock: a value given to an option that takes none exits 2 and names the option" {
  run --separate-stderr "$REBLOCK" --force-local=false -o host:file </dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: option '--force-local' doesn't allow an argument"
  assert_file_not_exists host:file
  run --separate-stderr "$REBLOCK" --help=1
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: option '--help' doesn't allow an argument"
}

@test "reblock: a long option may be abbreviated as getopt_long allows, and an ambiguous one is refused by name" {
  random_bytes 3000 4 >in.bin
  run --separate-stderr "$REBLOCK" --pad=7 -B -s 1k -i in.bin -o out.bin
  assert_success
  assert_equal "$(tail -c 1 out.bin | od -An -tu1 | tr -d ' ')" 7
  run --separate-stderr "$REBLOCK" --r=ssh -o out2.bin </dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: option '--r' is ambiguous; possibilities: '--rmt-command' '--rsh-command'"
  assert_file_not_exists out2.bin
}

@test "reblock: an option without its value exits 2 and names the option" {
  run --separate-stderr "$REBLOCK" -s
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: option requires an argument -- 's'"
}

@test "reblock: an operand exits 2 and names it" {
  run --separate-stderr "$REBLOCK" extra
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: unexpected operand 'extra'"
}

@test "reblock: a second -i or -o exits 2 instead of silently replacing the first" {
  run --separate-stderr "$REBLOCK" -i a -i b
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: -i given twice"
  run --separate-stderr "$REBLOCK" -o a -o b </dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: -o given twice"
  assert_file_not_exists a
}

@test "reblock: -h prints the usage on stdout and exits 0" {
  run --separate-stderr "$REBLOCK" -h
  assert_success
  assert_line --index 0 "usage: reblock [-Bhrt] [-i input] [-o output] [-s size] [--max-record size]"
}

@test "reblock: the usage line equals the man page SYNOPSIS" {
  run --separate-stderr "$REBLOCK" -h
  local usage synopsis
  usage=$(echo "$output" | sed '/^$/,$d' | tr -s ' \n' '  ' | sed 's/^usage: //; s/ $//')
  synopsis=$(mandoc -T ascii -O width=300 "$BATS_TEST_DIRNAME/../man/reblock.1" |
    sed 's/.\x08//g' | sed -n '/^SYNOPSIS/{n;p;}' | tr -s ' ' ' ' | sed 's/^ //; s/ $//')
  assert_equal "$usage" "$synopsis"
}

@test "reblock: --force-local writes a local file whose name has a colon" {
  echo data | "$REBLOCK" --force-local -o backup-10:00.out
  assert_equal "$(cat backup-10:00.out)" data
  run bash -c 'echo data | RSH=/bin/false "$0" -o backup-10:00.out2' "$REBLOCK"
  assert_failure
  assert_file_not_exists backup-10:00.out2
}

@test "reblock: a missing input file exits 1, names it, and leaves the output alone" {
  echo keep >out.bin
  run --separate-stderr "$REBLOCK" -i no-such-file -o out.bin
  assert_failure 1
  assert_equal "$stderr" "reblock: open no-such-file: No such file or directory"
  assert_equal "$(cat out.bin)" "keep"
}

@test "reblock: an output that is the input file exits 1 before it is emptied" {
  random_bytes 5000 4 >in.bin
  cp in.bin keep.bin
  run --separate-stderr "$REBLOCK" -i in.bin -o "$PWD/in.bin"
  assert_failure 1
  assert_equal "$stderr" "reblock: -o $PWD/in.bin: input file is output file; opening it would empty it"
  run --separate-stderr bash -c '"$0" -o in.bin <in.bin' "$REBLOCK"
  assert_failure 1
  assert_equal "$stderr" "reblock: -o in.bin: input file is output file; opening it would empty it"
  cmp in.bin keep.bin
}

@test "reblock: an output in a missing directory exits 1 and names it" {
  run --separate-stderr "$REBLOCK" -i /dev/null -o no-dir/out.bin
  assert_failure 1
  assert_equal "$stderr" "reblock: open no-dir/out.bin: No such file or directory"
}

@test "reblock: a full device exits 1 and says no full record was written" {
  random_bytes 100000 18 >in.bin
  run --separate-stderr "$REBLOCK" -i in.bin -o /dev/full
  assert_failure 1
  assert_equal "$stderr" \
    "reblock: write /dev/full after 0 full records of 10240 bytes: No space left on device"
}

@test "reblock: a write that fails part-way reports the full records already written, which stay" {
  random_bytes 200000 19 >in.bin
  # A 100 KiB file size limit: the 11th record of 10000 bytes gets 2400 bytes in.
  run --separate-stderr bash -c 'trap "" XFSZ; ulimit -f 100; exec "$REBLOCK" -s 10000 <in.bin >out.bin'
  assert_failure 1
  assert_equal "$stderr" \
    "reblock: write standard output after 10 full records of 10000 bytes and 2400 bytes of the next: File too large"
  assert_equal "$(head -c 100000 out.bin | sha256sum | cut -d' ' -f1)" \
    "$(head -c 100000 in.bin | sha256sum | cut -d' ' -f1)"
}

@test "reblock: an output that reaches the file size limit (ulimit -f) exits 1 as at a full medium, naming what it holds" {
  random_bytes 200000 19 >in.bin
  # No trap: reblock itself must not die of the SIGXFSZ sent with EFBIG.
  run --separate-stderr bash -c 'ulimit -f 100; exec "$REBLOCK" -s 10000 -i in.bin -o out.bin'
  assert_failure 1
  assert_equal "$stderr" \
    "reblock: write out.bin after 10 full records of 10000 bytes and 2400 bytes of the next: File too large"
  assert_equal "$(stat -c %s out.bin)" 102400
  assert_equal "$(sha out.bin)" "$(head -c 102400 in.bin | sha256sum | cut -d' ' -f1)"
}

@test "reblock: a .tap that reaches the file size limit (ulimit -f) exits 1 naming the full records written, which read back" {
  mt -f t.tap vt-create 0
  random_bytes 200000 24 >in.bin
  # 100 KiB: nine records of 10248 image bytes fit, the tenth does not.
  run --separate-stderr bash -c 'ulimit -f 100; exec "$REBLOCK" -s 10240 -i in.bin -o t.tap'
  assert_failure 1
  assert_equal "$stderr" "reblock: write t.tap after 9 full records of 10240 bytes: File too large"
  run tap_records t.tap
  assert_equal "${#lines[@]}" 9
  run mt -f t.tap verify
  assert_success
  tapectl t.tap op rewind
  "$REBLOCK" -s 10240 -i t.tap -o back.bin
  assert_equal "$(sha back.bin)" "$(head -c 92160 in.bin | sha256sum | cut -d' ' -f1)"
}

@test "reblock: -t still prints the totals when a write fails" {
  random_bytes 200000 19 >in.bin
  run --separate-stderr bash -c 'trap "" XFSZ; ulimit -f 100; exec "$REBLOCK" -t -s 10000 <in.bin >out.bin'
  assert_failure 1
  assert_equal "${stderr_lines[1]}" "10+0 records out"
}

@test "reblock: an input that cannot be read exits 1 and names it" {
  mkdir dir
  run --separate-stderr "$REBLOCK" -i dir -o out.bin
  assert_failure 1
  assert_equal "$stderr" "reblock: read dir: Is a directory"
}

@test "reblock: a read error in mid-stream exits 1 after writing every byte read before it" {
  random_bytes 10000 20 >in.bin
  run --separate-stderr reblock-reset-input "$REBLOCK" -s 4096 -o out.bin <in.bin
  assert_failure 1
  assert_equal "$stderr" "reblock: read standard input: Connection reset by peer"
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: -o a .tap image makes each write one record of -s bytes, the last short" {
  random_bytes 1000000 21 >in.bin
  chunker 7 1 200000 <in.bin | "$REBLOCK" -s 10240 -o t.tap
  tap_records t.tap >writes.txt
  assert_exact_records 10240 1000000
}

@test "reblock: -i a .tap reblocks records of mixed sizes into exact records, byte for byte" {
  # Not a multiple of --max-record: on a loaded machine every read may take
  # a full 300000 bytes from the pipe, and the last record must still differ.
  random_bytes 2999999 22 >in.bin
  chunker 7 1 300000 50 <in.bin | "$REBLOCK" -r --max-record 300000 -o t.tap 2>/dev/null
  [ "$(tap_records t.tap | sort -u | wc -l)" -gt 1 ]
  tapectl t.tap op rewind
  traced_reblock -s 4096 -i t.tap
  assert_exact_records 4096 2999999
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: -t counts the records read from a .tap as records in" {
  tapectl t.tap write 10240 10240 3000 fm : op rewind
  run --separate-stderr "$REBLOCK" -t -s 10240 -i t.tap -o out.bin
  assert_success
  assert_equal "${stderr_lines[0]}" "2+1 records in"
  assert_equal "${stderr_lines[1]}" "2+1 records out"
}

@test "reblock: -r on a .tap reports how the tape was written" {
  tapectl t.tap write 10240 10240 10240 5000 fm : op rewind
  run --separate-stderr "$REBLOCK" -r -i t.tap -o /dev/null
  assert_success
  assert_equal "$stderr" "3 records of 10240 bytes
1 record of 5000 bytes
4 records, 35720 bytes"
}

@test "reblock: -r copies each .tap record to one record of another .tap" {
  tapectl a.tap write 700 10240 1 65536 fm : op rewind
  run "$REBLOCK" -r -i a.tap -o b.tap
  assert_success
  run tap_records b.tap
  assert_output "700 700
10240 10240
1 1
65536 65536"
}

@test "reblock: a .tap record over --max-record exits 1 naming both sizes, after writing the records before it" {
  tapectl t.tap write 2000 2000000 500 fm : op rewind
  run --separate-stderr "$REBLOCK" -i t.tap -o out.bin
  assert_failure 1
  assert_equal "$stderr" "reblock: read t.tap (2000000-byte record, 1048576-byte buffer): record larger than --max-record 1048576 bytes: Cannot allocate memory"
  assert_equal "$(stat -c %s out.bin)" 2000
}

@test "reblock: --max-record raises the largest record read from a tape" {
  tapectl t.tap write 2000 2000000 500 fm : op rewind
  run "$REBLOCK" --max-record 2m -i t.tap -o out.bin
  assert_success
  assert_equal "$(stat -c %s out.bin)" 2002500
}

@test "reblock: reading a .tap stops at the first filemark and the next run reads the next file" {
  tapectl t.tap write 100 fm 200 fm : op rewind
  run "$REBLOCK" -i t.tap -o first.bin
  assert_success
  run "$REBLOCK" -i t.tap -o second.bin
  assert_success
  assert_equal "$(stat -c %s first.bin) $(stat -c %s second.bin)" "100 200"
}

@test "reblock: -o and -i host:path reach a remote .tap through rmt" {
  export RSH=$BATS_TEST_DIRNAME/rsh-standin
  random_bytes 500000 23 >in.bin
  chunker 7 1 100000 <in.bin | "$REBLOCK" -s 10240 -o "localhost:$PWD/t.tap"
  tap_records t.tap >writes.txt
  assert_exact_records 10240 500000
  tapectl t.tap op rewind
  run "$REBLOCK" -s 64k -i "localhost:$PWD/t.tap" -o out.bin
  assert_success
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: --rsh-command and --rmt-command choose the remote shell and program over RSH and RMT" {
  local rmt=$RMT
  random_bytes 300000 25 >in.bin
  run bash -c 'RSH=/bin/false RMT=/nonexistent/rmt "$0" -s 10240 -o "localhost:$1/t.tap" \
    --rsh-command "$2" --rmt-command "$3" <in.bin' "$REBLOCK" "$PWD" "$BATS_TEST_DIRNAME/rsh-standin" "$rmt"
  assert_success
  tap_records t.tap >writes.txt
  assert_exact_records 10240 300000
  tapectl t.tap op rewind
  run bash -c 'RSH=/bin/false RMT=/nonexistent/rmt "$0" --rsh-command="$2" --rmt-command="$3" \
    -i "localhost:$1/t.tap" -o out.bin' "$REBLOCK" "$PWD" "$BATS_TEST_DIRNAME/rsh-standin" "$rmt"
  assert_success
  assert_equal "$(sha out.bin)" "$(sha in.bin)"
}

@test "reblock: a .tap that fills up exits 1 naming the full records written, which read back" {
  mt -f t.tap vt-create 100k
  random_bytes 1000000 24 >in.bin
  run --separate-stderr "$REBLOCK" -t -s 10240 -i in.bin -o t.tap
  assert_failure 1
  assert_equal "${stderr_lines[0]}" "10+0 records in"
  assert_equal "${stderr_lines[1]}" "9+0 records out"
  assert_equal "${stderr_lines[3]}" "reblock: write t.tap after 9 full records of 10240 bytes: No space left on device"
  run tap_records t.tap
  assert_equal "${#lines[@]}" 9
  tapectl t.tap op rewind
  "$REBLOCK" -i t.tap -o out.bin
  assert_equal "$(sha out.bin)" "$(head -c 92160 in.bin | sha256sum | cut -d' ' -f1)"
}

@test "reblock: a malformed --max-record exits 2 and names the value" {
  run --separate-stderr "$REBLOCK" --max-record 1x -i /dev/null
  assert_failure 2
  assert_equal "${stderr_lines[0]}" "reblock: invalid --max-record '1x': unknown unit (use b, k, m, g or t)"
}

@test "reblock: -B on a .tap makes the last record full size too" {
  random_bytes 100000 25 >in.bin
  run "$REBLOCK" -B -s 10240 -i in.bin -o t.tap
  assert_success
  tap_records t.tap >writes.txt
  assert_exact_records 10240 102400
}

# Runs reblock -t -o OUTPUT on "abc" from a pipe that stays open, sends it
# SIGTERM while it waits for more, and leaves its exit status in $status
# and its stderr in err.txt. The bytes wait in the pipe before reblock
# starts, so its first read gets them and a blocked read can only be the next.
sigterm_while_reading() {
  local output=$1 pid
  mkfifo in.fifo
  exec 7<>in.fifo
  printf abc >&7
  "$REBLOCK" -t -o "$output" <in.fifo 2>err.txt 3>&- 7>&- &
  pid=$!
  status=0
  wait_reading_stdin "$pid"
  kill -TERM "$pid"
  wait "$pid" || status=$?
  exec 7>&-
}

@test "reblock: SIGTERM writes what was read, prints -t's totals and ends by the signal" {
  sigterm_while_reading out.bin
  assert_equal "$status" 143
  assert_equal "$(cat out.bin)" abc
  # The user's own signal gets the totals but no "Interrupted system call".
  assert_equal "$(cat err.txt)" "0+1 records in
0+1 records out
$(grep '^3 bytes copied' err.txt)"
}

@test "reblock: SIGTERM with a remote output still finishes the request in flight and counts it" {
  # The stop must not abandon the W already sent (its reply would be left
  # in the pipe): the record, its reply and the closing request all complete.
  RSH="$BATS_TEST_DIRNAME/rsh-standin" sigterm_while_reading "localhost:$PWD/out.bin"
  assert_equal "$status" 143
  assert_equal "$(cat out.bin)" abc
  run cat err.txt
  assert_line "0+1 records out"
  refute_output --partial "Interrupted"
}

@test "reblock: -t and the output match GNU dd bs=N iflag=fullblock (conv=sync for -B)" {
  local row size total pad
  for row in "10240 100000 -" "10240 100000 B" "512 1 -" "512 1 B" "1048576 5000000 -" "4096 8192 B" "1000 999 -"; do
    read -r size total pad <<<"$row"
    random_bytes "$total" 26 >in.bin
    local dd_flags=() rb_flags=()
    if [ "$pad" = B ]; then dd_flags=(conv=sync) rb_flags=(-B); fi
    dd bs="$size" iflag=fullblock "${dd_flags[@]}" if=in.bin of=dd.bin 2>dd.txt
    "$REBLOCK" -t "${rb_flags[@]}" -s "$size" -i in.bin -o rb.bin 2>rb.txt
    assert_equal "$(sha rb.bin)" "$(sha dd.bin)"
    assert_equal "$(sed 's/ copied, .*//' rb.txt)" "$(sed 's/ copied, .*//' dd.txt)"
  done
}

@test "reblock: a tar stream reblocked onto a .tap reads back with tar -b 512 through rmt" {
  mkdir src out
  random_bytes 3000000 27 >src/a.bin
  echo hello >src/b.txt
  tar -c -f - src | "$REBLOCK" -B -s 256k -o t.tap
  run tap_records t.tap
  assert_equal "$(printf '%s\n' "${lines[@]}" | sort -u)" "262144 262144"
  tapectl t.tap op rewind
  tar -x -b 512 -f "localhost:$PWD/t.tap" --rsh-command="$BATS_TEST_DIRNAME/rsh-standin" -C out
  diff -r src out/src
}
