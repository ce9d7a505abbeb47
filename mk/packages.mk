# Debian packages, by what needs them, and the deps-* targets that install
# the missing ones (as root). Read last by the Makefile, which installs what
# its goals need before it builds anything (the end of this file). On its
# own, `make -f mk/packages.mk deps-test` installs one list.

packages_mk := $(lastword $(MAKEFILE_LIST))

PKGS_BUILD := g++ make libcxxopts-dev libboost-dev libssl-dev libxxhash-dev
PKGS_TEST := $(PKGS_BUILD) bats bats-support bats-assert bats-file libgtest-dev \
             buffer mbuffer tar cpio dump mt-st simh openssh-server openssh-client \
             e2fsprogs strace mandoc xxd procps coreutils openssl shellcheck clang libclang-rt-14-dev \
             xxhash jq
# tests/completion.bats sources completion/* through Debian's bash-completion.
PKGS_TEST += bash-completion
# tests/health.bats compares mt's drive-health reports with sg_logs,
# sg_read_attr and sg_inq (sg3-utils), tapeinfo (mtx) and stenc.
PKGS_TEST += sg3-utils mtx stenc
# tests/buffer-record.bats checks buffer --plot's SVG with xmllint and has
# librsvg (rsvg-convert) and a headless chromium draw it.
PKGS_TEST += libxml2-utils librsvg2-bin chromium python3
# tests/real-drive.bats boots Debian 12's kernel under QEMU (TCG) with its
# real st, sg and ch drivers against drives and a changer that tgt emulates
# on 127.0.0.1 (tests/st-guest): QEMU reaches them with libiscsi
# (qemu-block-extra); the initramfs is busybox-static's, its modules found
# with kmod's modprobe and packed with cpio; python3 unpacks the kernel.
PKGS_GUEST := tgt qemu-system-x86 qemu-block-extra busybox-static kmod cpio python3 mt-st
# Bacula's mtx-changer (bacula-sd) drives the guest's changer with our mt as
# its mt; without its recommends (bacula-bscan would bring a catalogue
# database), and its storage daemon is not started.
PKGS_GUEST_BARE := bacula-sd
PKGS_DEMO := $(PKGS_BUILD) tar openssh-server openssh-client
PKGS_BENCH := $(PKGS_TEST) time iperf3
PKGS_FUZZ := clang libclang-rt-14-dev
# make deb, and tests/deb.bats (part of make test) which installs the package.
PKGS_DEB := $(PKGS_BUILD) debhelper dpkg-dev lintian man-db tar file devscripts

# Installs the Debian packages in $(1) that are missing; not root: says how.
# Another apt-get or dpkg at work (a second clone's make test on a fresh
# machine) is waited for, up to 10 minutes, instead of failing at once.
# With $(2) non-empty, no service a package brings is started by its
# install (a policy-rc.d that denies them all, unless the machine has one,
# removed afterwards): tgt would start the system's tgtd, listening on every
# address. With $(3) non-empty, what the packages only recommend is left out.
define ensure_packages
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing missing Debian packages:" $$missing; \
	    policy=; \
	    if [ -n "$(2)" ] && [ ! -e /usr/sbin/policy-rc.d ]; then \
	      policy=/usr/sbin/policy-rc.d; printf '#!/bin/sh\nexit 101\n' >$$policy && chmod 755 $$policy || exit 1; \
	    fi; \
	    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $(if $(3),--no-install-recommends) $$missing >/dev/null; \
	    status=$$?; [ -z "$$policy" ] || rm -f $$policy; [ $$status = 0 ] || exit 1; \
	  else \
	    echo "missing Debian packages; as root run: apt-get install -y" $$missing >&2; exit 1; \
	  fi; \
	fi
endef

.PHONY: deps-build deps-test deps-demo deps-bench deps-fuzz deps-deb deps-guest
# One apt-get at a time (dpkg's lock): the wider lists wait for the build's
# (the suite builds and installs the package: deps-test waits for deps-deb).
deps-build: ; $(call ensure_packages,$(PKGS_BUILD))
deps-test: deps-deb ; $(call ensure_packages,$(PKGS_TEST))
deps-demo: deps-build ; $(call ensure_packages,$(PKGS_DEMO))
deps-bench: deps-test ; $(call ensure_packages,$(PKGS_BENCH))
deps-guest: deps-test
	$(call ensure_packages,$(PKGS_GUEST),no services)
	$(call ensure_packages,$(PKGS_GUEST_BARE),no services,no recommends)
deps-deb: deps-build ; $(call ensure_packages,$(PKGS_DEB))
deps-fuzz: ; $(call ensure_packages,$(PKGS_FUZZ))

# Every goal's packages are installed while make reads its makefiles, before
# it runs any rule: with -j, make starts whatever has its prerequisites, so a
# deps-* target among a goal's prerequisites would run beside the compiles
# that need its packages unless each object waited for it.
# <goal>_PACKAGES names the deps-* targets a goal needs, beside its rule
# (empty for a goal that builds nothing). A goal without one builds programs
# (all, install, a file in BUILD): PKGS_BUILD, nothing with PREBUILT=1;
# a file that the unit tests', a fuzzer's or the guest's rules make, theirs.
goal_packages = $(if $(filter deps-%,$(1)),,$(if $(filter-out undefined,$(origin $(1)_PACKAGES)),$($(1)_PACKAGES),$(or \
  $(if $(filter $(UNIT_BIN) $(UNIT_OBJS),$(1)),$(unit_PACKAGES)), \
  $(if $(filter $(BUILD)/fuzz/%,$(1)),$(fuzz_PACKAGES)), \
  $(if $(filter $(BUILD)/guest/%,$(1)),$(guest_PACKAGES)), \
  $(if $(PREBUILT),,deps-build))))
# Each once, in the goals' order.
uniq = $(if $(1),$(firstword $(1)) $(call uniq,$(filter-out $(firstword $(1)),$(1))))
goals_packages := $(strip $(call uniq,$(foreach g,$(or $(MAKECMDGOALS),$(.DEFAULT_GOAL)),$(call goal_packages,$(g)))))

# They are installed by a make of this file alone (one at a time: no -j),
# its output on standard error. Under -n it prints what it would run; -q and
# -t run nothing. A PKGS_* list set on the command line is passed on.
make_letters := $(firstword -$(MAKEFLAGS))
ifneq ($(goals_packages),)
ifeq ($(findstring q,$(make_letters))$(findstring t,$(make_letters)),)
packages_output := $(shell MAKEFLAGS= $(MAKE) -s --no-print-directory $(if $(findstring n,$(make_letters)),-n) \
  -f $(packages_mk) $(foreach v,$(filter PKGS_%,$(.VARIABLES)),$(if $(filter command line,$(origin $(v))),'$(v)=$($(v))')) \
  $(goals_packages) >&2)
ifneq ($(.SHELLSTATUS),0)
$(error Debian packages missing for $(or $(MAKECMDGOALS),$(.DEFAULT_GOAL)) (above))
endif
endif
endif
