# make deb: tapekit_VERSION_amd64.deb (and its -dbgsym) in DEB_DIR, from
# the programs in $(BUILD) (nothing is compiled again), checked by lintian.
# debian/ is copied there, so the package build writes nothing into the tree.

DEB_DIR ?= $(BUILD)/deb
# More of lintian's tags for the log (tests/deb.bats: -I --pedantic); only
# errors and warnings fail the build.
LINTIAN_FLAGS ?=

.PHONY: deb deb-version-check
deb_PACKAGES := deps-deb
deb: deb-version-check all
	rm -rf $(DEB_DIR)/src $(DEB_DIR)/tapekit*_*.deb && mkdir -p $(DEB_DIR)/src && cp -R debian $(DEB_DIR)/src/
	+cd $(DEB_DIR)/src && TK_SRC=$(CURDIR) TK_BUILD=$(abspath $(BUILD)) debian/rules binary >../build.log 2>&1 \
	  || { tail -30 ../build.log; exit 1; }
	lintian --fail-on error,warning $(LINTIAN_FLAGS) $(DEB_DIR)/tapekit_$$(cat VERSION)_amd64.deb
	hardening-check --nocfprotection $(DEB_DIR)/src/debian/tapekit/usr/bin/* $(DEB_DIR)/src/debian/tapekit/usr/sbin/*

# The package's version is VERSION's: debian/changelog must say so.
VERSION_FILE ?= VERSION
DEB_CHANGELOG ?= debian/changelog
deb-version-check_PACKAGES :=
deb-version-check:
	@want=$$(cat $(VERSION_FILE)) && have=$$(dpkg-parsechangelog -l $(DEB_CHANGELOG) -S Version) && \
	  if [ "$$want" != "$$have" ]; then \
	    echo "$(DEB_CHANGELOG) is at version $$have but $(VERSION_FILE) says $$want: add a changelog entry (dch -v $$want)" >&2; exit 1; \
	  fi
