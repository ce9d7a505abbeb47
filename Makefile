# tapekit: one static library (lib/) and one program per tools/<name>/.
# Targets: all (default), test, test-asan, guest, demo, bench, fuzz, lint, install,
# install-strip, deb, clean. The suite's (test, test-asan, unit, guest, demo,
# bench) are in mk/test.mk, the fuzzers' in mk/fuzz.mk, the package's in
# mk/deb.mk. As root, make first installs the Debian packages its goals need
# (<goal>_PACKAGES beside a goal's rule; mk/packages.mk).
# Variables: BUILD (output folder), OPT and DEBUG (the default CXXFLAGS'
# parts), UNITY=0 (one object a source), PREFIX, DESTDIR, STRIP,
# INSTALL_STRIP=1, DEB_DIR, WERROR=1, TESTS (bats files), PREBUILT=1 (install
# or package the programs in BUILD as they are, remaking nothing).

BUILD ?= build
# Both cores (CI has two): the plain and the sanitizer builds are most of a
# clean `make test` otherwise. `make -j1` still builds one file at a time.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
PREFIX ?= /usr/local
DESTDIR ?=
CXX ?= g++
OPT ?= -O2
DEBUG ?= -g
CXXFLAGS ?= $(OPT) $(DEBUG)
SANITIZE ?=

WARNINGS := -Wall -Wextra -Wpedantic -Wshadow -Wundef -Wold-style-cast -Wconversion
# Debian's hardening (dpkg-buildflags with hardening=+all, and the stack
# clash and control-flow protection Debian's gcc turns on), by default: rmt
# runs as root for whoever reaches it over ssh. Not under the sanitizers,
# whose checks replace FORTIFY's. HARDEN= builds without (bench comparisons).
# make deb checks the result with hardening-check, but for its control-flow
# check: the code has -fcf-protection's instructions, yet no program linked
# on Debian 12 carries the IBT/SHSTK note, whose start files (crt1.o) lack it.
HARDEN ?= 1
HARDEN_CXXFLAGS := $(if $(and $(HARDEN),$(if $(SANITIZE),,1)),-D_FORTIFY_SOURCE=2 \
                   -fstack-protector-strong -fstack-clash-protection -fcf-protection \
                   -Wformat -Werror=format-security)
HARDEN_LINK := -Wl,-z,relro -Wl,-z,now
HARDEN_LDFLAGS := $(if $(HARDEN),$(HARDEN_LINK))
ALL_CXXFLAGS := -std=c++20 $(WARNINGS) $(if $(WERROR),-Werror) $(SANITIZE) $(HARDEN_CXXFLAGS) $(CXXFLAGS) -MMD -MP
LDLIBS := -pthread
# buffer's --hash (lib/digest): OpenSSL's EVP for sha256/md5, libxxhash for
# xxh128. Only the programs that hash link them, so mt and rmt start no slower.
DIGEST_LIBS := -lcrypto -lxxhash
buffer_LDLIBS := $(DIGEST_LIBS)
# The programs link the C++ runtime as shared libraries, as every Debian C++
# program does, so that a fix to Debian's libstdc++ reaches them without a
# rebuild (the package depends on libstdc++6 through dpkg-shlibdeps).
# The sanitizer build, which ships nowhere, links its runtimes in: a
# sanitized `mt --version` ran in 33 ms with them as shared libraries,
# 83 ms with its leak check at exit (most of it relocating and scanning
# libasan, libubsan and libstdc++), 31 and 59 ms linked in; the sanitizer
# pass runs thousands of them (faults.bats: 24 CPU-seconds to 19).
SANITIZER_LDFLAGS := $(if $(findstring address,$(SANITIZE)),-static-libasan) \
                     $(if $(findstring undefined,$(SANITIZE)),-static-libubsan)
TOOL_LDFLAGS := $(if $(SANITIZE),-static-libstdc++ -static-libgcc) $(SANITIZER_LDFLAGS) $(HARDEN_LDFLAGS)


# A unity build (UNITY=1, the default): the sources of each group below are
# compiled as one translation unit, which parses the standard library's and
# cxxopts' headers once a group instead of once a file: a clean make test's
# two builds took about 4 minutes of its 13 on two CPUs, and half of a
# file's compile was those headers (g++ -fsyntax-only). A change recompiles its group (5 to 20 s). UNITY=0
# compiles one object a source, for editing one file at a time. The groups
# share nothing a file keeps to itself: anonymous namespaces and statics
# must not clash (a clash is a compile error, never a silent change).
UNITY ?= 1
# $(call unity_group,NAME,SOURCES) declares one unity translation unit.
define unity_group
UNITY_GROUPS += $(1)
UNITY_SRCS_$(1) := $(2)
endef
# $(call unity_halves,NAME,SOURCES): NAME1 and NAME2, half the sources each,
# so that make -j2 compiles them side by side.
half = $(shell echo $$(( ($(words $(1)) + 1) / 2 )))
define unity_halves
$(call unity_group,$(1)1,$(wordlist 1,$(call half,$(2)),$(2)))
$(call unity_group,$(1)2,$(wordlist $(shell echo $$(( $(call half,$(2)) + 1 ))),999,$(2)))
endef
unity_obj = $(BUILD)/obj/unity/$(1).o

LIB_SRCS := $(sort $(wildcard lib/*.cpp lib/*/*.cpp))
# lib/digest.cpp stays an object of its own: it needs OpenSSL and libxxhash,
# which only buffer links; in a group, every program would pull it in.
LIB_TAPE_SRCS := $(sort $(wildcard lib/tape/*.cpp))
ifeq ($(UNITY),1)
$(eval $(call unity_group,lib,$(filter-out lib/digest.cpp $(LIB_TAPE_SRCS),$(LIB_SRCS))))
$(eval $(call unity_halves,lib-tape,$(LIB_TAPE_SRCS)))
LIB_OBJS := $(foreach g,lib lib-tape1 lib-tape2,$(call unity_obj,$(g))) $(BUILD)/obj/lib/digest.o
else
LIB_OBJS := $(LIB_SRCS:%.cpp=$(BUILD)/obj/%.o)
endif
LIB_A := $(BUILD)/lib/libtk.a
# What every program shares but the library must not do (print, exit, parse
# a command line): linked into each tool, and into the test helpers.
COMMON_SRCS := $(sort $(wildcard tools/common/*.cpp))
ifeq ($(UNITY),1)
$(eval $(call unity_group,common,$(COMMON_SRCS)))
COMMON_OBJS := $(call unity_obj,common)
VERSION_OBJ := $(COMMON_OBJS)
else
COMMON_OBJS := $(COMMON_SRCS:%.cpp=$(BUILD)/obj/%.o)
VERSION_OBJ := $(BUILD)/obj/tools/common/version.o
endif
COMMON_A := $(BUILD)/lib/libtkcommon.a
# The suite's one version, for every --version and the Debian package.
VERSION := $(shell cat VERSION)
TOOLS := $(sort $(notdir $(patsubst %/main.cpp,%,$(wildcard tools/*/main.cpp))))
BINS := $(TOOLS:%=$(BUILD)/bin/%)

.PHONY: all lint install install-strip clean
all: $(BINS)


$(BUILD)/obj/%.o: %.cpp
	@mkdir -p $(@D)
	$(CXX) $(ALL_CXXFLAGS) -c -o $@ $<

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(COMMON_A): $(COMMON_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(VERSION_OBJ): VERSION
$(VERSION_OBJ): ALL_CXXFLAGS += -DTAPEKIT_VERSION='"$(VERSION)"'


define tool_rule
$(1)_SRCS := $$(sort $$(wildcard tools/$(1)/*.cpp))
ifeq ($(UNITY),1)
$$(eval $$(call unity_halves,tool-$(1),$$($(1)_SRCS)))
$(1)_OBJS := $$(call unity_obj,tool-$(1)1) $$(if $$(UNITY_SRCS_tool-$(1)2),$$(call unity_obj,tool-$(1)2))
else
$(1)_OBJS := $$($(1)_SRCS:%.cpp=$(BUILD)/obj/%.o)
endif
$(BUILD)/bin/$(1): $$($(1)_OBJS) $(COMMON_A) $(LIB_A)
	@mkdir -p $$(@D)
	$$(CXX) $$(ALL_CXXFLAGS) $$(TOOL_LDFLAGS) -o $$@ $$^ $$($(1)_LDLIBS) $$(LDLIBS)
endef
# PREBUILT=1 takes the programs in $(BUILD) as they are and remakes none of
# them (install, deb): tests/deb.bats packages the build the other bats files
# are running, and a relink there, after a source changed mid-run, made their
# programs vanish or fail to exec ("Permission denied") while ld wrote them.
ifeq ($(PREBUILT),)
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))
else
$(BINS):
	@test -x $@ || { echo "$@ is missing: PREBUILT=1 packages an existing build (make all first)" >&2; exit 1; }
endif

include mk/fuzz.mk
# Declares the unit tests' unity groups.
include mk/test.mk

# (After every group is declared: the rules name each one, so that no other
# file, a .d makefile say, is taken for a group to make.)
# A group's source: one #include a member, rewritten only when the members
# change (a new file), so that make remakes the group's object only then or
# when a member or a header changes (its .d file lists them all).
$(UNITY_GROUPS:%=$(BUILD)/unity/%.cpp): $(BUILD)/unity/%.cpp: FORCE
	@mkdir -p $(@D)
	@printf '#include "$(CURDIR)/%s"\n' $(UNITY_SRCS_$*) >$@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi
$(UNITY_GROUPS:%=$(BUILD)/obj/unity/%.o): $(BUILD)/obj/unity/%.o: $(BUILD)/unity/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(ALL_CXXFLAGS) -c -o $@ $<
.PHONY: FORCE
FORCE:


# Installs nothing: mandoc and shellcheck come with the suite's packages.
lint_PACKAGES :=
lint:
	mandoc -T lint -W warning man/*.[178]
	shellcheck -x tests/run-suites tests/demo tests/rsh-standin tests/sshd-helper tests/fault-sweep \
	  tests/st-guest tests/guest/build-guest bench/run-all bench/bench-* .ci/run

# GNU conventions: `install` keeps the symbols (a package's dh_strip makes
# them a -dbgsym package), `install-strip` or INSTALL_STRIP=1 strips with
# $(STRIP). rmt is a server, run by clients as /usr/sbin/rmt or /etc/rmt: sbin.
STRIP ?= strip
INSTALL ?= install
INSTALL_STRIP ?=
INSTALL_PROGRAM ?= $(INSTALL) -m 0755 $(if $(INSTALL_STRIP),-s --strip-program=$(STRIP))
SBIN_TOOLS := rmt
COMPLETIONS := $(wildcard completion/*)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin \
	  $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
	  $(DESTDIR)$(PREFIX)/share/man/man8
	$(INSTALL_PROGRAM) $(filter-out $(SBIN_TOOLS:%=$(BUILD)/bin/%),$(BINS)) $(DESTDIR)$(PREFIX)/bin/
	$(INSTALL_PROGRAM) $(filter $(SBIN_TOOLS:%=$(BUILD)/bin/%),$(BINS)) $(DESTDIR)$(PREFIX)/sbin/
	install -m 0644 $(wildcard man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(wildcard man/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 0644 $(wildcard man/*.8) $(DESTDIR)$(PREFIX)/share/man/man8/
ifneq ($(COMPLETIONS),)
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0644 $(COMPLETIONS) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/
endif

# (Its make install installs them.)
install-strip_PACKAGES :=
install-strip:
	$(MAKE) --no-print-directory INSTALL_STRIP=1 install

include mk/deb.mk

clean_PACKAGES :=
clean:
	rm -rf $(BUILD)

# Last: it reads the goals' *_PACKAGES.
include mk/packages.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
