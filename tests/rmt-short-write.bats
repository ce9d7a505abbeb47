#!/usr/bin/env bats
# Shows that a write the medium takes only in part is answered with the count
# that reached it (A<n>, as write(2) and GNU rmt answer), never with an error
# that would make the client send the whole record again.
bats_require_minimum_version 1.5.0
load test_helper

@test "rmt: a W that fills a fixed-block virtual tape part way answers the bytes written" {
  cd "$BATS_TEST_TMPDIR"
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
  cd "$BATS_TEST_TMPDIR"
  "$MT" -f f.tap vt-create 1000
  { printf 'Of.tap\n2\n'; for i in 1 2 3 4; do printf 'W400\n'; head -c 400 /dev/zero; done; printf 'C\n'; } >in.bin
  run bash -c '"$0" --log none <in.bin | tr "\n" "|"' "$RMT"
  assert_success
  assert_output --regexp '^A0\|A400\|A400\|E28\|No space left on device\|(E28\|No space left on device\||E5\|[^|]*\|)A0\|$'
}
