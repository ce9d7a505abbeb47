# Shared set-up for every bats suite: assertions, the binaries under test and
# a private scratch directory.
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

TK_BUILD=${TK_BUILD:-build}
[ "${TK_BUILD#/}" != "$TK_BUILD" ] || TK_BUILD=$(cd "$BATS_TEST_DIRNAME/.." && pwd)/$TK_BUILD
TK_BIN=$TK_BUILD/bin
TK_TEST_BIN=$TK_BUILD/test-bin
# The shims are plain C, built once, outside the sanitizer tree.
TK_TEST_LIB=${TK_BUILD%/asan}/test-lib
export PATH="$TK_BIN:$TK_TEST_BIN:$PATH"

# Each program under test can be swapped for the original, e.g.
# BUFFER=/usr/bin/buffer bats tests/buffer.bats, to show drop-in behaviour.
BUFFER=${BUFFER:-$TK_BIN/buffer}
MT=${MT:-$TK_BIN/mt}
RMT=${RMT:-$TK_BIN/rmt}
REBLOCK=${REBLOCK:-$TK_BIN/reblock}

# Megabytes of data for the heavy identity tests; smaller under sanitizers.
if [ -n "${TK_SANITIZED:-}" ]; then TK_BIG_MB=${TK_BIG_MB:-24}; else TK_BIG_MB=${TK_BIG_MB:-200}; fi

# Writes N MiB of reproducible pseudo-random bytes (seeded by $2) to stdout.
random_mib() {
  local mib=$1 seed=${2:-1}
  openssl enc -aes-128-ctr -pass "pass:tapekit$seed" -nosalt -pbkdf2 </dev/zero 2>/dev/null |
    head -c "$((mib * 1048576))"
}

sha() { sha256sum "$@" | cut -d' ' -f1; }

# Moves the test to a disk where a virtual tape stages its writes (blocks
# reserved on ext4 or xfs): the test directory when it is one, else a
# directory under the build folder on the checkout's disk, in $scratch,
# which the suite's teardown removes.
on_disk() {
  case "$(stat -f -c %T .)" in
    ext2/ext3 | xfs) ;;
    *)
      mkdir -p "${TK_BUILD%/asan}/scratch"
      scratch=$(mktemp -d "${TK_BUILD%/asan}/scratch/test.XXXXXX") || return 1
      cd "$scratch" || return 1
      ;;
  esac
}
