#!/usr/bin/env bats
# Shows that the programs are built with Debian's hardening (dpkg-buildflags
# with hardening=+all), as checksec would see it: position independent,
# read-only relocations bound at start (RELRO, BIND_NOW), the stack
# protector and FORTIFY's checked functions in use (issue 24 §4). The
# sanitizer build is not hardened, so this file runs in the plain pass.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0

load test_helper

@test "hardening: every program is PIE with full RELRO, the stack protector and FORTIFY's checks" {
  local tool
  for tool in buffer mt reblock rmt; do
    run readelf -hW "$TK_BIN/$tool"
    assert_output --regexp 'Type: +DYN'
    run readelf -lW "$TK_BIN/$tool"
    assert_output --partial GNU_RELRO
    run readelf -dW "$TK_BIN/$tool"
    assert_output --regexp '\(FLAGS\) +BIND_NOW|\(FLAGS_1\) +Flags: NOW'
    run readelf --dyn-syms -W "$TK_BIN/$tool"
    assert_output --partial __stack_chk_fail
    assert_output --regexp '__[a-z_]+_chk'
  done
}
