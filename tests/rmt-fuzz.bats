#!/usr/bin/env bats
# Shows that the rmt request parser and the client's reply parser survive a
# short libFuzzer run (make fuzz, FUZZ_TIME seconds) under ASan and UBSan:
# no crash, no leak, no undefined behaviour. The suite's run replays the
# corpus and mutates it for 5 s (TK_FUZZ_TIME); the full run is `make fuzz`.
bats_require_minimum_version 1.5.0

load test_helper

@test "rmt-fuzz: the request and reply parsers survive their corpus and a short libFuzzer run" {
  # The fuzzer carries its own sanitizers; the sanitizer pass adds nothing.
  [ -z "${TK_SANITIZED:-}" ] || skip "runs in the plain pass only"
  run make -s -C "$BATS_TEST_DIRNAME/.." BUILD="$TK_BUILD" fuzz FUZZ_TIME="${TK_FUZZ_TIME:-5}"
  assert_equal "$status" 0
  assert_output --regexp "rmt_request: stat::number_of_executed_units: +[1-9][0-9]*"
}
