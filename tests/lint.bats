#!/usr/bin/env bats
# Shows that the manuals render without warnings and the shell scripts that
# ship with tapekit pass shellcheck (make lint, run as part of make test).
# Left out of the sanitizer pass (suite time): nothing here runs a program of ours.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0
load test_helper

@test "man pages: mandoc -T lint -W warning finds nothing" {
  local page
  for page in "$BATS_TEST_DIRNAME"/../man/*.[178]; do
    run mandoc -T lint -W warning "$page"
    assert_success
    assert_output ""
  done
}

@test "man pages: every program has one" {
  local tool
  for tool in "$BATS_TEST_DIRNAME"/../tools/*/main.cpp; do
    tool=$(basename "$(dirname "$tool")")
    compgen -G "$BATS_TEST_DIRNAME/../man/$tool.[18]" >/dev/null || fail "no man page for $tool"
  done
}

@test "shell scripts: shellcheck finds nothing" {
  cd "$BATS_TEST_DIRNAME/.."
  run shellcheck -x tests/run-suites tests/demo tests/rsh-standin tests/sshd-helper tests/fault-sweep \
    tests/st-guest tests/guest/build-guest bench/run-all bench/bench-* .ci/run
  assert_success
}

@test "bats files: every setup() starts with tk_trace_test_lines_only" {
  local file first
  for file in "$BATS_TEST_DIRNAME"/*.bats; do
    grep -q '^setup()' "$file" || continue
    first=$(sed -n '/^setup() {/{n;p;q}' "$file")
    [ "${first#"${first%%[! ]*}"}" = tk_trace_test_lines_only ] ||
      fail "${file##*/}: setup() does not start with tk_trace_test_lines_only (test_helper.bash says why)"
  done
}
