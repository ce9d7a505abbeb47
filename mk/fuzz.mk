# make fuzz: libFuzzer targets (tests/fuzz/*.cpp) built with clang against
# lib/ and lib/rmt/, each run for FUZZ_TIME seconds on its corpus in
# tests/fuzz/corpus/ (new inputs go to $(BUILD)/fuzz/, the kept corpus is
# only read). make test builds them too (tests/rmt-fuzz.bats runs them).

FUZZ_SRCS := $(sort $(wildcard tests/fuzz/*.cpp))
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.cpp=$(BUILD)/fuzz/%)

FUZZ_TIME ?= 60

.PHONY: fuzz
fuzz_PACKAGES := deps-fuzz
fuzz: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p $$f.corpus tests/fuzz/corpus/$$n; \
	  $$f -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
	    $$f.corpus tests/fuzz/corpus/$$n 2>$$f.log || { tail -40 $$f.log; exit 1; }; \
	  grep -E 'stat::number_of_executed_units' $$f.log | sed "s|^|$$n: |"; done
# The parsers' sources; lib/digest.cpp would need OpenSSL and libxxhash linked.
FUZZ_LIB_SRCS := $(filter-out lib/digest.cpp,$(wildcard lib/*.cpp lib/rmt/*.cpp)) lib/tape/tape_status.cpp \
                 lib/tape/tape_health.cpp lib/scsi/cdb.cpp lib/scsi/pages.cpp lib/scsi/sg_io.cpp
FUZZ_LIB_HDRS := $(wildcard lib/*.hpp lib/rmt/*.hpp lib/scsi/*.hpp) lib/tape/tape_status.hpp
# One object per source, so that make -j compiles them side by side (in one
# clang++ command they took 18 s on one core); fuzzer-no-link instruments
# them for coverage without libFuzzer's main().
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.cpp=$(BUILD)/fuzz/obj/%.o)
# Kept: made by a pattern rule for a pattern rule, make would delete them.
.SECONDARY: $(FUZZ_LIB_OBJS)
$(BUILD)/fuzz/obj/%.o: %.cpp $(FUZZ_LIB_HDRS)
	@mkdir -p $(@D)
	clang++ -std=c++20 -g -O1 -fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<
$(BUILD)/fuzz/%: tests/fuzz/%.cpp $(FUZZ_LIB_OBJS) $(FUZZ_LIB_HDRS)
	@mkdir -p $(@D)
	clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_LIB_OBJS) -pthread
