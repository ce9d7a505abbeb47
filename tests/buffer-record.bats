#!/usr/bin/env bats
# Shows buffer's picture of a run (issue 27): --record's timeline, --plot's
# SVG (well-formed, drawn by librsvg and by a real browser, its fill curve
# where the record puts it), --plot-from, and the advice at the end. The
# model's arithmetic is pinned by tests/unit/replay_test.cpp; here only
# what the program says and draws. The sanitizer pass runs the recording
# tests (a thread reading the ring's shared counters) and skips the
# renderers, which test no code of ours under the sanitizers.
bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
  export DATA=$BATS_FILE_TMPDIR/data
  random_mib 4 11 >"$DATA"
  export DATA_SHA
  DATA_SHA=$(sha "$DATA")
  export PART=$BATS_FILE_TMPDIR/part PART_SHA
  head -c 2560k "$DATA" >"$PART"
  PART_SHA=$(sha "$PART")
  # A record of three and a half days: 300000 ticks of a second, more
  # than the picture's 1090 columns and than the 2^18 ticks buffer keeps in
  # memory before it merges neighbours, with every kind of event, written
  # as --record writes one.
  python3 - "$BATS_FILE_TMPDIR/long.jsonl" <<'PY'
import sys
out = open(sys.argv[1], "w")
w = out.write
w('{"record":"buffer","version":1,"tick_ms":1000,"long_write_ms":1000,"block_size":65536,'
  '"blocks":100,"percent":0,"high_water":0,"low_water":-1,"input":"-","output":"/dev/nst0"}\n')
for i in range(300000):
    t = i + 1
    if i == 120000:
        w('{"t":%d.000,"event":"volume","volume":2}\n' % t)
    if i == 240000:
        w('{"t":%d.000,"event":"signal","signal":"SIGTERM"}\n' % t)
    if i in (3000, 200000, 200001, 299990):
        w('{"t":%d.500,"event":"long_write","ms":2500.0}\n' % (t - 1))
    # The peak falls first in a pair the first halving merges; the zero, in
    # a tick merged as it comes, after it.
    fill = 100 if i == 234566 else 0 if i == 280001 else 20 + (i % 50)
    extra = ',"out_wait_ms":50.0,"underruns":1' if i % 40000 == 350 else ''
    w('{"t":%d.000,"fill":%d,"in":6553600,"out":6553600%s}\n' % (t, fill, extra))
w('{"t":300000.000,"event":"end","bytes_in":1966080000000,"bytes_out":1966080000000,'
  '"underruns":8,"long_writes":4}\n')
PY
}

# The data through a paced producer (so the run lasts a few ticks) into buffer
# with OPTIONS; the output's checksum on stdout.
paced_run() {
  pacer --chunk 64k --rate 40m <"$DATA" | "$BUFFER" "$@" | sha256sum | cut -d' ' -f1
}

# Checks a record file: every line a JSON object, the header's fields, the
# ticks' bytes adding up to the end event's totals and to SIZE.
check_record() {
  python3 - "$1" "$2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
size = int(sys.argv[2])
head, rest = lines[0], lines[1:]
assert head["record"] == "buffer" and head["version"] == 1, head
assert head["block_size"] == 65536 and head["blocks"] == 16, head
assert head["tick_ms"] == 20 and head["long_write_ms"] == 1000, head
ticks = [l for l in rest if "event" not in l]
ends = [l for l in rest if l.get("event") == "end"]
assert ticks, "no tick"
assert len(ends) == 1 and rest[-1] is ends[0], "the end event is not the last line"
assert sum(t["in"] for t in ticks) == size == ends[0]["bytes_in"], "bytes in"
assert sum(t["out"] for t in ticks) == size == ends[0]["bytes_out"], "bytes out"
assert all(0 <= t["fill"] <= 16 for t in ticks), "fill out of range"
assert [t["t"] for t in ticks] == sorted(t["t"] for t in ticks), "ticks out of order"
PY
}

@test "buffer --record: the header names the options, and the ticks add up to the bytes that passed" {
  run --separate-stderr paced_run -s 64k -b 16 --record "$BATS_TEST_TMPDIR/r.jsonl" --record-tick 20ms
  assert_success
  assert_output "$DATA_SHA"
  run check_record "$BATS_TEST_TMPDIR/r.jsonl" "$(stat -c %s "$DATA")"
  assert_success
}

@test "buffer --record: a write that blocks the threshold or longer is a long_write event" {
  # The consumer stops for 200 ms after every 512 KiB, as a drive
  # repositioning: buffer's write into the full pipe (1 MiB, enlarged by
  # buffer) blocks meanwhile, from the second stop on at the latest.
  run --separate-stderr bash -c "\"$BUFFER\" -s 64k -b 16 --record '$BATS_TEST_TMPDIR/r.jsonl' \
    --long-write 50ms <'$PART' | pacer --chunk 64k --burst 512k --pause 200 | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$PART_SHA"
  run python3 -c '
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
long = [e for e in events if e.get("event") == "long_write"]
end = events[-1]
assert long, "no long write"
assert all(e["ms"] >= 50 for e in long), long
assert end["long_writes"] == len(long), (end, len(long))
print(len(long))' "$BATS_TEST_TMPDIR/r.jsonl"
  assert_success
}

@test "buffer --record, --plot: a file that cannot be written is refused before anything is read or written" {
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr bash -c '"$0" -s 64k -o out --record no/such/dir/r.jsonl; echo $?; wc -c' "$BUFFER" <"$PART"
  assert_equal "${lines[0]}" 255
  assert_equal "${lines[1]}" "$(wc -c <"$PART")"  # the input was left unread
  assert_equal "$stderr" "buffer: --record no/such/dir/r.jsonl: cannot be written: No such file or directory; nothing was run"
  assert_file_not_exists out
  mkdir dir.svg
  run --separate-stderr "$BUFFER" -s 64k -o out --plot dir.svg <"$PART"
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: --plot dir.svg: cannot be written: Is a directory; nothing was run"
  assert_file_not_exists out
  run --separate-stderr "$BUFFER" --plot-from "$BATS_FILE_TMPDIR/long.jsonl" --plot no/such/p.svg
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: --plot no/such/p.svg: cannot be written: No such file or directory; nothing was run"
}

@test "buffer --record: /dev/full is said once, and the run and its data go on" {
  run --separate-stderr paced_run -s 64k --record /dev/full --record-tick 10ms
  assert_success
  assert_output "$DATA_SHA"
  assert_equal "$(grep -c -- '--record' <<<"$stderr")" 1
  [[ $stderr == *"--record /dev/full: write failed: No space left on device; the run goes on"* ]]
}

@test "buffer: without --record or --plot, a run says nothing of records or advice" {
  run --separate-stderr paced_run -s 64k -b 16
  assert_success
  assert_output "$DATA_SHA"
  assert_equal "$stderr" ""
}

@test "buffer --record-tick, --long-write, --record, --plot: a malformed value is refused on one line naming it" {
  while read -r option value message; do
    run --separate-stderr "$BUFFER" "$option" "$value" </dev/null
    assert_failure 255
    assert_equal "$stderr" "buffer: invalid $option '$value': $message"
  done <<'TABLE'
--record-tick 5x a time such as 100ms or 0.5s, from 10ms to 10s
--record-tick 5ms a time such as 100ms or 0.5s, from 10ms to 10s
--record-tick 11s a time such as 100ms or 0.5s, from 10ms to 10s
--long-write 0 a time such as 100ms or 0.5s, from 10ms to 3600s
--long-write -1s a time such as 100ms or 0.5s, from 10ms to 3600s
--long-write ms a time such as 100ms or 0.5s, from 10ms to 3600s
TABLE
  run --separate-stderr "$BUFFER" --record "" </dev/null
  assert_failure 255
  assert_equal "$stderr" "buffer: invalid --record '': a file name"
  run --separate-stderr "$BUFFER" --record - </dev/null
  assert_failure 255
  assert_equal "$stderr" "buffer: invalid --record '-': standard output carries the data; give a file name"
  run --separate-stderr "$BUFFER" -o "$BATS_TEST_TMPDIR/out" --plot "$BATS_TEST_TMPDIR/out" </dev/null
  assert_failure 255
  assert_equal "$stderr" "buffer: --plot $BATS_TEST_TMPDIR/out and -o $BATS_TEST_TMPDIR/out are one file; nothing was opened or written"
  assert_file_not_exists "$BATS_TEST_TMPDIR/out"
}

@test "buffer --plot, --record, --tee: a name that reaches an end under another spelling is refused before a byte is written" {
  cd "$BATS_TEST_TMPDIR"
  "$BUFFER" -s 10k -i "$PART" -o x.tap 2>/dev/null
  local tape_sha
  tape_sha=$(sha x.tap)
  ln -s x.tap link.tap
  ln x.tap hard.tap
  ln -s not-yet.svg dangling
  local args expected
  while IFS='|' read -r args expected; do
    # shellcheck disable=SC2086 # the options are split on purpose
    run --separate-stderr "$BUFFER" -s 10k -i "$PART" $args
    assert_equal "$status" 255
    assert_equal "$stderr" "buffer: $expected are one file; nothing was opened or written"
    assert_equal "$(sha x.tap)" "$tape_sha"
  done <<TABLE
-o x.tap --plot ./x.tap|--plot ./x.tap and -o x.tap
-o link.tap --record x.tap|--record x.tap and -o link.tap
-o x.tap --record hard.tap|--record hard.tap and -o x.tap
-o x.tap --plot ../${BATS_TEST_TMPDIR##*/}/x.tap|--plot ../${BATS_TEST_TMPDIR##*/}/x.tap and -o x.tap
-o x.tap --tee link.tap|--tee link.tap and -o x.tap
-o new.tap --tee ./new.tap|--tee ./new.tap and -o new.tap
-o not-yet.svg --plot dangling|--plot dangling and -o not-yet.svg
-o out --record r.jsonl --plot ./r.jsonl|--plot ./r.jsonl and --record r.jsonl
TABLE
  assert_file_not_exists new.tap
  assert_file_not_exists not-yet.svg
  # Standard output, however it is named, carries the data.
  run --separate-stderr bash -c '"$0" -i "$1" --record /dev/stdout >copy' "$BUFFER" "$PART"
  assert_equal "$status" 255
  assert_equal "$stderr" "buffer: --record /dev/stdout and standard output are one file; nothing was opened or written"
  assert_equal "$(wc -c <copy)" 0
  run --separate-stderr bash -c '"$0" -i "$1" --plot /proc/self/fd/1 >copy' "$BUFFER" "$PART"
  assert_equal "$stderr" "buffer: --plot /proc/self/fd/1 and standard output are one file; nothing was opened or written"
  # The input, read from standard input, is not written over either.
  cp "$PART" in
  run --separate-stderr "$BUFFER" -o out --plot ./in <in
  assert_equal "$stderr" "buffer: --plot ./in and standard input are one file; nothing was opened or written"
  assert_equal "$(sha in)" "$PART_SHA"
  # /dev/null takes any number of ends.
  run --separate-stderr "$BUFFER" -i "$PART" -o /dev/null --tee /dev/null --record /dev/null
  assert_success
}

@test "buffer --plot-from: needs --plot, and a file that is no record is refused naming it and the line" {
  run --separate-stderr "$BUFFER" --plot-from "$BATS_FILE_TMPDIR/long.jsonl"
  assert_failure 255
  assert_equal "$stderr" "buffer: --plot-from needs --plot FILE.svg, the picture to draw"
  printf '%s\n' '{"record":"buffer","version":1,"block_size":512,"blocks":4}' '{"t":0.1,"fill":1,' \
    >"$BATS_TEST_TMPDIR/bad.jsonl"
  run --separate-stderr "$BUFFER" --plot-from "$BATS_TEST_TMPDIR/bad.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_failure 255
  assert_equal "$stderr" "buffer: $BATS_TEST_TMPDIR/bad.jsonl, line 2: not a JSON object (expected '\"')"
  run --separate-stderr "$BUFFER" --plot-from /dev/null --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_failure 255
  assert_equal "$stderr" "buffer: /dev/null: empty, not a buffer record"
  run --separate-stderr "$BUFFER" --plot-from "$BATS_TEST_TMPDIR/none.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_failure 255
  [[ $stderr == *"open record $BATS_TEST_TMPDIR/none.jsonl: No such file or directory" ]]
}

@test "buffer --plot: the picture is well-formed SVG whose fill curve follows the record" {
  # A consumer slower than the input, so that the queue fills.
  run --separate-stderr bash -c "\"$BUFFER\" -s 64k -b 16 --record-tick 20ms \
    --record '$BATS_TEST_TMPDIR/r.jsonl' --plot '$BATS_TEST_TMPDIR/p.svg' <'$DATA' |
    pacer --chunk 64k --rate 20m | sha256sum | cut -d' ' -f1"
  assert_success
  assert_output "$DATA_SHA"
  run xmllint --noout "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  # The mapping buffer(1) documents: x = 80 + 1090 t/T, y = 60 + 220 (1 - fill/blocks).
  run python3 - "$BATS_TEST_TMPDIR/r.jsonl" "$BATS_TEST_TMPDIR/p.svg" <<'PY'
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
blocks = lines[0]["blocks"]
ticks = [l for l in lines[1:] if "event" not in l]
svg = open(sys.argv[2]).read()
points = re.search(r'<polyline id="fill"[^>]* points="([^"]*)"', svg).group(1).split()
points = [tuple(map(float, p.split(","))) for p in points]
assert len(points) == len(ticks), (len(points), len(ticks))
assert any(t["fill"] > 0 for t in ticks), "the queue never filled: the check would prove nothing"
T = ticks[-1]["t"]
for tick, (x, y) in zip(ticks, points):
    assert abs(x - (80 + 1090 * tick["t"] / T)) < 0.02, (tick, x)
    assert abs(y - (60 + 220 * (1 - tick["fill"] / blocks))) < 0.02, (tick, y)
assert not re.search(r"<script|href=|@import|url\(", svg), "not self-contained"
PY
  assert_success
}

@test "buffer --plot-from: a run of days is drawn a column a pixel, with its extremes and every wait, long write, volume and signal" {
  run --separate-stderr "$BUFFER" --plot-from "$BATS_FILE_TMPDIR/long.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  [[ $stderr == "buffer: advice: "* ]]
  run xmllint --noout "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  run python3 - "$BATS_TEST_TMPDIR/p.svg" <<'PY'
import re, sys
svg = open(sys.argv[1]).read()
points = re.search(r'<polyline id="fill"[^>]* points="([^"]*)"', svg).group(1).split()
ys = [float(p.split(",")[1]) for p in points]
assert len(points) <= 2 * 1091, len(points)
# The highest and lowest fill survive the merged ticks and the columns
# (100 % and 0 % once each).
assert min(ys) == 60 and max(ys) == 280, (min(ys), max(ys))
group = lambda name: re.search(r'<g id="%s"[^>]*>(.*?)</g>' % name, svg, re.S).group(1)
assert group("waits").count("<rect") == 8, group("waits").count("<rect")
assert group("long-writes").count("<rect") == 4
assert "3 d 11 h" in svg
marks = group("marks")
assert "volume 2" in marks and "SIGTERM" in marks, marks
PY
  assert_success
}

# PNG dimensions and colour count (tests/png-facts) of what a renderer made.
assert_rendered() {
  run "$BATS_TEST_DIRNAME/png-facts" "$1"
  assert_success
  read -r width height colours <<<"$output"
  assert_equal "$width $height" "1200 760"
  (( colours > 2 ))
}

@test "buffer --plot: librsvg renders the picture at its stated size, not blank" {
  [ -z "${TK_SANITIZED:-}" ] || skip "tests a renderer, no code of ours"
  command -v rsvg-convert >/dev/null || skip "rsvg-convert missing (librsvg2-bin; make deps-test installs it)"
  "$BUFFER" --plot-from "$BATS_FILE_TMPDIR/long.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg" 2>/dev/null
  run rsvg-convert -o "$BATS_TEST_TMPDIR/p.png" "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  assert_rendered "$BATS_TEST_TMPDIR/p.png"
}

@test "buffer --plot: a headless chromium renders the picture at its stated size, not blank" {
  [ -z "${TK_SANITIZED:-}" ] || skip "tests a renderer, no code of ours"
  command -v chromium >/dev/null || skip "chromium missing (make deps-test installs it)"
  "$BUFFER" --plot-from "$BATS_FILE_TMPDIR/long.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg" 2>/dev/null
  # Its own profile and home, so that it touches nothing outside the test.
  # (timeout: a browser that hangs must fail the test, not stop the suite.)
  HOME=$BATS_TEST_TMPDIR run timeout 120 chromium --headless --no-sandbox --disable-gpu \
    --user-data-dir="$BATS_TEST_TMPDIR/profile" --screenshot="$BATS_TEST_TMPDIR/p.png" \
    --window-size=1200,760 "file://$BATS_TEST_TMPDIR/p.svg"
  assert_success
  assert_rendered "$BATS_TEST_TMPDIR/p.png"
}

@test "buffer --json --plot: the advice is an event of its own, and stderr stays JSON lines" {
  run --separate-stderr paced_run -s 64k -b 16 --json --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  assert_output "$DATA_SHA"
  run python3 -c '
import json, sys
events = [json.loads(l) for l in sys.stdin]
advice = [e for e in events if e.get("event") == "advice"]
assert len(advice) == 1, events
assert advice[0]["text"].startswith("buffer: advice: "), advice
assert advice[0]["verdict"] in ("no_waits", "bigger_ring", "input_too_slow"), advice' <<<"$stderr"
  assert_success
  [ -s "$BATS_TEST_TMPDIR/p.svg" ]
}

# Writes a record of 8 cycles of ticks of 0.1 s through a 4 MiB ring (64
# blocks of 64 KiB); a cycle is given as ticks IN,IN_WAIT_MS,OUT,OUT_WAIT_MS.
# With OUTPUT_RATE set, the header says the run had that --output-rate.
cycle_record() {
  OUTPUT_RATE=${OUTPUT_RATE:-} python3 - "$@" <<'PY'
import json, os, sys
path, ticks = sys.argv[1], [list(map(float, t.split(","))) for t in sys.argv[2:]]
f = open(path, "w")
header = {"record": "buffer", "version": 1, "tick_ms": 100, "long_write_ms": 1000,
          "block_size": 65536, "blocks": 64, "percent": 0, "high_water": 0, "low_water": -1}
if os.environ["OUTPUT_RATE"]:
    header["output_rate"] = int(os.environ["OUTPUT_RATE"])
header.update({"input": "-", "output": "-"})
print(json.dumps(header), file=f)
n = 0
for cycle in range(8):
    for i, in_wait, out, out_wait in ticks:
        n += 1
        tick = {"t": n / 10, "fill": 0, "in": int(i), "out": int(out)}
        if in_wait:
            tick["in_wait_ms"] = in_wait
        if out_wait:
            tick["out_wait_ms"] = out_wait
        print(json.dumps(tick), file=f)
PY
}

# The advice for a record, as --json gives it: "verdict advised_ring_bytes".
advice_of() {
  "$BUFFER" --json --plot-from "$1" --plot "$BATS_TEST_TMPDIR/p.svg" 2>&1 |
    python3 -c '
import json, sys
a = [json.loads(l) for l in sys.stdin if "\"advice\"" in l][0]
print(a["verdict"], a.get("advised_ring_bytes", 0))'
}

@test "buffer's advice: a ring that a pause drains gets the size that outlasts the pause; a slow input, none" {
  # A 4 MiB ring kept the input waiting through each 16 MB burst (4 MB a
  # tick, 20 ms of its own each); then it paused 0.2 s and the output,
  # 40 MB/s, waited: 8 MB carry it over a pause.
  cycle_record "$BATS_TEST_TMPDIR/bursty.jsonl" 4e6,80,4e6,0 4e6,80,4e6,0 4e6,80,4e6,0 \
    4e6,80,4e6,0 0,0,0,100 0,0,0,100
  run advice_of "$BATS_TEST_TMPDIR/bursty.jsonl"
  assert_success
  read -r verdict advised <<<"$output"
  assert_equal "$verdict" bigger_ring
  (( advised >= 8000000 && advised <= 32 * 1048576 ))
  # An input of 1 MB a tick (10 MB/s) into an output that takes 40 MB/s
  # while it can: the input is the limit, no ring helps.
  cycle_record "$BATS_TEST_TMPDIR/slow.jsonl" 1e6,0,1e6,75 1e6,0,1e6,75 1e6,0,1e6,75 \
    1e6,0,1e6,75 0,0,0,100 0,0,0,100
  run advice_of "$BATS_TEST_TMPDIR/slow.jsonl"
  assert_success
  assert_output "input_too_slow 0"
  # The first case a million times larger (16 TB bursts): a ring memory
  # cannot hold, so on a disk.
  cycle_record "$BATS_TEST_TMPDIR/huge.jsonl" 4e12,80,4e12,0 4e12,80,4e12,0 4e12,80,4e12,0 \
    4e12,80,4e12,0 0,0,0,100 0,0,0,100
  run --separate-stderr "$BUFFER" --plot-from "$BATS_TEST_TMPDIR/huge.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  [[ $stderr == *"would have kept the output busy"*"more than half this machine's memory: give it with --queue-file DIR"* ]]
  # An output that never waited: nothing to advise.
  cycle_record "$BATS_TEST_TMPDIR/calm.jsonl" 4e6,80,4e6,0 4e6,80,4e6,0
  run advice_of "$BATS_TEST_TMPDIR/calm.jsonl"
  assert_success
  assert_output "no_waits 0"
}

# The rate the caption of the picture $1 gives the input: "in 6.0 MiB (R)".
caption_input_rate() { grep -oE '>in [0-9.]+ [KMGT]?i?B \([^)]*\)' "$1" | sed 's/.*(\(.*\))/\1/'; }

@test "buffer's advice: its rates are the caption's input rate and the output's while it wrote, at most its --output-rate" {
  # 1 MB a tick in; the output writes it in 25 ms of each 100 (40 MB/s), but
  # its --output-rate is 20 MB/s: a burst after each wait, not its speed.
  OUTPUT_RATE=20000000 cycle_record "$BATS_TEST_TMPDIR/limited.jsonl" 1e6,0,1e6,75 1e6,0,1e6,75 \
    1e6,0,1e6,75 1e6,0,1e6,75 0,0,0,100 0,0,0,100
  run --separate-stderr "$BUFFER" --json --plot-from "$BATS_TEST_TMPDIR/limited.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  local advice in_rate
  advice=$(grep '"event":"advice"' <<<"$stderr") || fail "no advice: $stderr"
  jq -e '.verdict == "input_too_slow" and .out_rate == 20000000 and .in_rate < .out_rate' <<<"$advice" >/dev/null ||
    fail "advice: $advice"
  in_rate=$(caption_input_rate "$BATS_TEST_TMPDIR/p.svg")
  [ -n "$in_rate" ] || fail "no input rate in the caption"
  assert_regex "$(jq -r .text <<<"$advice")" \
    "^buffer: advice: the input was slower than the output: it delivered $in_rate over the run, the output wrote 19.1 MiB/s while it had data \\(its --output-rate\\); no ring size helps"
  # Without the limit, the rate it wrote at.
  cycle_record "$BATS_TEST_TMPDIR/free.jsonl" 1e6,0,1e6,75 1e6,0,1e6,75 1e6,0,1e6,75 1e6,0,1e6,75 \
    0,0,0,100 0,0,0,100
  run --separate-stderr "$BUFFER" --plot-from "$BATS_TEST_TMPDIR/free.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_regex "$stderr" "it delivered $(caption_input_rate "$BATS_TEST_TMPDIR/p.svg") over the run, the output wrote 38.1 MiB/s while it had data;"
}

@test "buffer --record: the header keeps --output-rate, so --plot-from advises as the run did" {
  head -c 1m /dev/zero >"$BATS_TEST_TMPDIR/in"
  "$BUFFER" -s 64k --output-rate 30m --record "$BATS_TEST_TMPDIR/r.jsonl" -i "$BATS_TEST_TMPDIR/in" -o /dev/null
  head -1 "$BATS_TEST_TMPDIR/r.jsonl" | jq -e '.output_rate == 31457280' >/dev/null ||
    fail "header: $(head -1 "$BATS_TEST_TMPDIR/r.jsonl")"
  "$BUFFER" -s 64k --record "$BATS_TEST_TMPDIR/r.jsonl" -i "$BATS_TEST_TMPDIR/in" -o /dev/null
  head -1 "$BATS_TEST_TMPDIR/r.jsonl" | jq -e 'has("output_rate") | not' >/dev/null
}

@test "buffer --plot: the caption counts the output's waits as the advice beneath it does" {
  # Waits with no underrun counted (as with -p or --high-water): both say
  # how many stretches the output waited, not that it never did.
  cycle_record "$BATS_TEST_TMPDIR/bursty.jsonl" 4e6,80,4e6,0 4e6,80,4e6,0 4e6,80,4e6,0 \
    4e6,80,4e6,0 0,0,0,100 0,0,0,100
  run --separate-stderr "$BUFFER" --plot-from "$BATS_TEST_TMPDIR/bursty.jsonl" --plot "$BATS_TEST_TMPDIR/p.svg"
  assert_success
  local advised drawn
  advised=$(grep -oE 'it waited [0-9]+ times?' <<<"$stderr" | tr -dc 0-9) || fail "no count: $stderr"
  drawn=$(grep -oE 'the output waited for data [0-9]+ times' "$BATS_TEST_TMPDIR/p.svg" | tr -dc 0-9) ||
    fail "no count in the caption"
  (( advised > 0 )) || fail "the advice counted no wait: $stderr"
  assert_equal "$drawn" "$advised"
}
