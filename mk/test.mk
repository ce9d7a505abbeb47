# The suite: unit tests (GoogleTest), the bats files' helper programs and
# LD_PRELOAD shims, the sanitizer build, the QEMU guest, and the goals that
# use them: test, test-asan, unit, guest, demo and bench.

UNIT_SRCS := $(sort $(wildcard tests/unit/*.cpp))
UNIT_BIN := $(BUILD)/bin/unit-tests
HELPER_SRCS := $(sort $(wildcard tests/helpers/*.cpp))
HELPER_BINS := $(HELPER_SRCS:tests/helpers/%.cpp=$(BUILD)/test-bin/%)
# The helpers that drive lib/ code under test (the tape backends, the rmt
# client, the confined open) are also built with the sanitizers; the sanitizer
# pass takes the others (data sources, relays, probes) from the plain build.
ASAN_HELPERS := open-beneath rmt-client tape-property tapectl
ASAN_HELPER_BINS := $(ASAN_HELPERS:%=$(BUILD)/asan/test-bin/%)
SHIM_SRCS := $(sort $(wildcard tests/shim/*.c))
SHIMS := $(SHIM_SRCS:tests/shim/%.c=$(BUILD)/test-lib/%.so)

.PHONY: test test-asan unit guest demo bench

# The tests' own code (GoogleTest's templates, mostly) at -Og, half the
# compile time of -O2, with line tables only (-g1: enough for a failure's
# backtrace); the library they test is the one the programs link.
ifeq ($(UNITY),1)
$(eval $(call unity_halves,unit,$(UNIT_SRCS)))
UNIT_OBJS := $(call unity_obj,unit1) $(call unity_obj,unit2)
else
UNIT_OBJS := $(UNIT_SRCS:%.cpp=$(BUILD)/obj/%.o)
endif
$(UNIT_OBJS): ALL_CXXFLAGS += -Og -g1
# A program's own units the unit tests reach, one object each.
UNIT_TOOL_OBJS := $(BUILD)/obj/tools/buffer/drive_watch.o $(BUILD)/obj/tools/buffer/run_state.o \
  $(BUILD)/obj/tools/buffer/signals.o
$(UNIT_BIN): $(UNIT_OBJS) $(UNIT_TOOL_OBJS) $(LIB_A)
	@mkdir -p $(@D)
	$(CXX) $(ALL_CXXFLAGS) -o $@ $(filter %.o %.a,$^) -lgtest -lgtest_main $(DIGEST_LIBS) $(LDLIBS)

# The test helpers: optimized as the programs (some are the benches' data
# sources and relays), with line tables only (-g1): 11 s instead of 13.5.
$(BUILD)/test-bin/%: tests/helpers/%.cpp $(COMMON_A) $(LIB_A)
	@mkdir -p $(@D)
	$(CXX) $(ALL_CXXFLAGS) -g1 $(SANITIZER_LDFLAGS) -o $@ $< $(COMMON_A) $(LIB_A) $(DIGEST_LIBS) $(LDLIBS)

$(BUILD)/test-lib/%.so: tests/shim/%.c $(wildcard tests/shim/*.h)
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -shared -fPIC -o $@ $< -ldl

unit_PACKAGES := deps-test
unit: $(UNIT_BIN)

# The sanitizer build, in $(BUILD)/asan. -Og -g1 (line tables, enough for
# the sanitizers' reports) compiles in about half the time of -O1 -g, whose
# variable tracking under ASan and UBSan was most of a clean make test's
# build; the tests run about as fast.
ASAN_MAKE := BUILD=$(BUILD)/asan OPT=-Og DEBUG=-g1 \
  SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

# What tests/st-guest boots, in $(BUILD)/guest: Debian 12's kernel
# (fetched once, kept while linux-image-amd64 names the same one) and a
# busybox initramfs with tests/guest/init.
GUEST := $(BUILD)/guest/initramfs.cpio.gz
$(GUEST): tests/guest/build-guest tests/guest/init
	tests/guest/build-guest $(BUILD)/guest
guest_PACKAGES := deps-guest
guest: $(GUEST)

# (GUEST is set above: a rule's prerequisites are read where the rule is.)
# The whole suite: unit tests, every bats file, then the sanitizer pass.
# The fuzzers are built here, with -j, rather than by rmt-fuzz.bats on one core.
test_PACKAGES := deps-test deps-guest deps-fuzz
test: all $(HELPER_BINS) $(SHIMS) $(if $(UNIT_SRCS),$(UNIT_BIN)) $(FUZZ_BINS) $(GUEST)
	@$(MAKE) --no-print-directory $(ASAN_MAKE) all $(ASAN_HELPER_BINS) >/dev/null
	@BUILD=$(BUILD) tests/run-suites $(TESTS)

# Only the sanitizer pass (also part of `make test`).
test-asan_PACKAGES := deps-test
test-asan:
	@$(MAKE) --no-print-directory all $(HELPER_BINS) $(SHIMS)
	@$(MAKE) --no-print-directory $(ASAN_MAKE) all $(ASAN_HELPER_BINS)
	@BUILD=$(BUILD) TK_ONLY_ASAN=1 tests/run-suites $(TESTS)

demo_PACKAGES := deps-demo
demo: all $(BUILD)/test-bin/pacer
	@BUILD=$(BUILD) tests/demo

bench_PACKAGES := deps-bench
bench: all $(HELPER_BINS)
	@BUILD=$(BUILD) bench/run-all
