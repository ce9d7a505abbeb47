#!/usr/bin/env bats
# Shows that `make deb` packages the suite's own build (lintian clean, the
# version from VERSION), and that installing the package makes mt, rmt,
# /etc/rmt and buffer tapekit's through alternatives, which
# update-alternatives switches back, while remove and purge restore every
# alternative, diversion and file that was there.
#
# The package is installed into a copy-on-write twin of this machine: an
# overlay over / in a private mount namespace, its changes kept under
# $BATS_FILE_TMPDIR. The bats files running beside this one (which call
# /usr/bin/buffer, /usr/sbin/rmt-dump, /usr/bin/mt-st by path) never see it,
# and nothing is left to restore if the run is killed.
# run-suites: plain pass only
bats_require_minimum_version 1.5.0

load test_helper

TK_SRC=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
TK_VERSION=$(cat "$TK_SRC/VERSION")
DEB_DIR=$BATS_FILE_TMPDIR/deb
DEB=$DEB_DIR/tapekit_${TK_VERSION}_amd64.deb
# Inside the twin: no build folder in PATH, so names resolve as a user's do.
TWIN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Runs the shell script $2 as root in the twin whose changes are in the
# folder $1 (created on first use; later calls see what earlier ones did).
in_twin() {
  mkdir -p "$1/upper" "$1/work" "$1/merged"
  unshare --mount --propagation private /bin/sh -ec '
    twin=$1
    mount -t overlay tapekit-twin -o "lowerdir=/,upperdir=$twin/upper,workdir=$twin/work" "$twin/merged"
    mount --rbind /dev "$twin/merged/dev"
    mount -t proc proc "$twin/merged/proc"
    exec chroot "$twin/merged" /usr/bin/env -i PATH="$3" HOME=/root LC_ALL=C.UTF-8 /bin/sh -ec "$2"
  ' in_twin "$1" "$2" "$TWIN_PATH"
}

# What installing and removing a package may change and must give back:
# the three alternatives, the diversions, and what each public name is.
state_script='
  for name in mt rmt buffer; do update-alternatives --query "$name" 2>&1 || true; done
  dpkg-divert --list | sort
  for path in /bin/mt /usr/sbin/rmt /etc/rmt /usr/bin/buffer /usr/bin/buffer.distrib \
    /usr/share/man/man1/mt.1.gz /usr/share/man/man8/rmt.8.gz /usr/share/man/man1/buffer.1.gz; do
    echo "$path -> $(readlink -f "$path") $([ ! -e "$path" ] || md5sum <"$path")"
  done
  ls -l /etc/alternatives | grep -E " (mt|rmt|buffer)[.0-9a-z]* -> " | sed "s/.* \([^ ]* -> \)/\1/"
'

# Lists what the twin in $1 changed on the machine, dpkg's records and the
# logs aside: a file added or with other bytes, a link moved, a deletion.
twin_changes() {
  local path copy
  (cd "$1/upper" && find . ! -type d) | while read -r path; do
    path=${path#.}
    copy=$1/upper$path
    case $path in
      /var/lib/dpkg/alternatives/*) ;;
      /var/lib/dpkg/* | /var/log/* | /var/lib/man-db/*) continue ;;
    esac
    if [ -L "$copy" ]; then
      [ "$(readlink "$copy")" = "$(readlink "$path")" ] || echo "link $path"
    elif [ -c "$copy" ]; then
      echo "deleted $path"
    else
      cmp -s "$copy" "$path" || echo "changed $path"
    fi
  done
}

# The sanitizer pass has nothing to package (bats 1.8 cannot skip from
# setup_file: setup skips each test).
setup_file() {
  [ -z "${TK_SANITIZED:-}" ] || return 0
  # Fast compression: xz -6 of the symbols is most of the package build.
  # PREBUILT=1: the programs are packaged as they are. Remade here (after a
  # source changed mid-run), they would be relinked under the bats files
  # running them beside this one.
  DPKG_DEB_COMPRESSOR_TYPE=gzip DPKG_DEB_COMPRESSOR_LEVEL=1 \
    make -C "$TK_SRC" --no-print-directory deb PREBUILT=1 BUILD="$TK_BUILD" DEB_DIR="$DEB_DIR" \
    LINTIAN_FLAGS="-I --pedantic" >"$BATS_FILE_TMPDIR/make-deb.log" 2>&1 || { tail -30 "$BATS_FILE_TMPDIR/make-deb.log"; return 1; }
  in_twin "$BATS_FILE_TMPDIR/machine" "$state_script" >"$BATS_FILE_TMPDIR/state-before"
  # The twin skips man-db's index rebuild (seconds per dpkg run); man finds
  # pages without it.
  in_twin "$BATS_FILE_TMPDIR/installed" "rm -f /var/lib/man-db/auto-update; dpkg -i $DEB >/dev/null"
}

# Every test gets its own copy of the twin with the package installed.
setup() {
  tk_trace_test_lines_only
  [ -z "${TK_SANITIZED:-}" ] || skip "the package holds the plain build"
  cd "$BATS_TEST_TMPDIR" || return 1
  twin=$BATS_TEST_TMPDIR/twin
  mkdir -p "$twin"
  cp -a "$BATS_FILE_TMPDIR/installed/upper" "$twin/upper"
}

@test "deb: make deb builds tapekit_VERSION_amd64.deb and its -dbgsym, lintian clean" {
  assert_file_exists "$DEB"
  assert_file_exists "$DEB_DIR/tapekit-dbgsym_${TK_VERSION}_amd64.deb"
  run dpkg-deb -f "$DEB" Package Version Architecture
  assert_output "Package: tapekit
Version: $TK_VERSION
Architecture: amd64"
  # make deb fails unless lintian finds no error and no warning.
  run grep -E '^[EW]: ' "$BATS_FILE_TMPDIR/make-deb.log"
  assert_failure
}

@test "deb: lintian -I --pedantic finds no hardening tag on the programs" {
  # make deb's own lintian run (setup_file) shows every tag: one run of
  # lintian, some 10 s, serves both tests.
  run cat "$BATS_FILE_TMPDIR/make-deb.log"
  assert_output --regexp "lintian --fail-on error,warning -I --pedantic [^ ]*/tapekit_"
  # No lintian tag (a line "X: tapekit: tag ...") names hardening.
  run grep -E '^[EWIPX]: .*hardening-' "$BATS_FILE_TMPDIR/make-deb.log"
  assert_failure
}

@test "deb: the programs link Debian's libstdc++ as shared library and pass hardening-check" {
  # A fix to Debian's libstdc++ reaches them without a rebuild.
  run dpkg-deb -f "$DEB" Depends
  assert_output --regexp '(^|, )libstdc\+\+6 '
  # make deb ran hardening-check on every program and failed unless all passed.
  run cat "$BATS_FILE_TMPDIR/make-deb.log"
  assert_output --regexp "hardening-check --nocfprotection [^ ]*/usr/bin/"
  assert_equal "$(grep -c '^ Position Independent Executable: yes' <<<"$output")" 4
  assert_equal "$(grep -c '^ Stack protected: yes' <<<"$output")" 4
  assert_equal "$(grep -c '^ Immediate binding: yes' <<<"$output")" 4
  assert_equal "$(grep -c '^ Read-only relocations: yes' <<<"$output")" 4
}

@test "deb: the package ships stripped programs, rmt in sbin, every completion/ file" {
  run dpkg-deb -c "$DEB"
  assert_output --partial ' ./usr/sbin/rmt-tapekit'
  assert_output --partial ' ./usr/bin/mt-tapekit'
  assert_output --partial ' ./usr/bin/buffer-tapekit'
  assert_output --partial ' ./usr/bin/reblock'
  local completion
  for completion in "$TK_SRC"/completion/*; do
    [ -e "$completion" ] || continue
    assert_output --partial " ./usr/share/bash-completion/completions/${completion##*/}"
  done
  dpkg-deb -x "$DEB" unpacked
  run file unpacked/usr/sbin/rmt-tapekit
  assert_output --partial ', stripped'
  run dpkg-deb -c "$DEB_DIR/tapekit-dbgsym_${TK_VERSION}_amd64.deb"
  assert_output --regexp '/usr/lib/debug/\.build-id/.*\.debug'
}

@test "deb: debian/changelog is at VERSION's version, and make deb refuses to build when it is not" {
  run dpkg-parsechangelog -l "$TK_SRC/debian/changelog" -S Version
  assert_output "$TK_VERSION"
  echo 9.9.9 >VERSION
  run make -C "$TK_SRC" --no-print-directory -s deb-version-check VERSION_FILE="$PWD/VERSION"
  assert_failure
  # Any line: under make test, make's own jobserver notice may come first.
  assert_line "debian/changelog is at version $TK_VERSION but $PWD/VERSION says 9.9.9: add a changelog entry (dch -v 9.9.9)"
}

@test "deb: installs beside mt-st, tar, cpio, dump and buffer, which all stay installed" {
  # dpkg -i (setup_file) refuses a package with a file another one owns.
  run in_twin "$twin" 'dpkg-query -W -f "\${Package} \${db:Status-Status}\n" buffer cpio dump mt-st tapekit tar'
  assert_success
  assert_output "buffer installed
cpio installed
dump installed
mt-st installed
tapekit installed
tar installed"
}

@test "deb: once installed, mt, rmt, /etc/rmt and buffer are tapekit's and their man pages open" {
  run in_twin "$twin" '
    for name in /bin/mt /usr/bin/mt /usr/sbin/rmt /etc/rmt /usr/bin/buffer; do
      echo "$name -> $(readlink -f $name)"
    done
    for page in "1 mt" "8 rmt" "1 buffer"; do
      man -P cat $page | grep -q tapekit && echo "man $page: tapekit'"'"'s"
    done
    man -P cat 1 buffer.distrib | grep -q "^NAME" && echo "man 1 buffer.distrib opens"
  '
  assert_success
  assert_output "/bin/mt -> /usr/bin/mt-tapekit
/usr/bin/mt -> /usr/bin/mt-tapekit
/usr/sbin/rmt -> /usr/sbin/rmt-tapekit
/etc/rmt -> /usr/sbin/rmt-tapekit
/usr/bin/buffer -> /usr/bin/buffer-tapekit
man 1 mt: tapekit's
man 8 rmt: tapekit's
man 1 buffer: tapekit's
man 1 buffer.distrib opens"
}

@test "deb: tar -c -f localhost:/srv/x.tap through the rsh stand-in reaches tapekit's rmt, which writes the virtual tape mt vt-create made" {
  # The twin's environment is empty: rmt's syslog check is skipped here too
  # (test_helper.bash), or its notice would join tar's output.
  run in_twin "$twin" "
    export RSH_STANDIN_LOG=/srv/rsh.log TAPEKIT_TEST_SYSLOG_SOCKET=
    echo hello >/srv/data.txt
    mt -f /srv/x.tap vt-create 0
    tar -c -f localhost:/srv/x.tap --rsh-command=$BATS_TEST_DIRNAME/rsh-standin -C /srv data.txt
    cat /srv/rsh.log
    rm /srv/rsh.log
    od -A n -t u4 -N 4 /srv/x.tap
    mt -f /srv/x.tap verify >/dev/null && echo verified
    mt -f /srv/x.tap rewind
    tar -t -f localhost:/srv/x.tap --rsh-command=$BATS_TEST_DIRNAME/rsh-standin
  "
  assert_success
  # tar asked for Debian's default, /usr/sbin/rmt (the stand-in runs the
  # first rmt in PATH: the same alternative); the image starts with one
  # 10240-byte record's length word, which only tapekit's rmt writes
  # (rmt-dump would write tar's bytes as they are).
  assert_output --regexp "^localhost /usr/sbin/rmt
 +10240
verified
data.txt$"
}

@test "deb: as the installed system rmt, tapekit's leaves night after night the plain tar of tar -c -f localhost:/srv/nightly.tap that rmt-tar leaves" {
  # No opt-in in the twin's empty environment: the package's default.
  run in_twin "$twin" "
    export TAPEKIT_TEST_SYSLOG_SOCKET=
    head -c 300000 /dev/urandom >/srv/night1.bin
    echo night two >/srv/night2.txt
    # GNU tar creates a remote archive without O_TRUNC: each night writes
    # over the last one's start, and the same bytes must follow it.
    for n in night1.bin night2.txt; do
      tar -c -f localhost:/srv/nightly.tap --rsh-command=$BATS_TEST_DIRNAME/rsh-standin -C /srv \$n
      RSH_STANDIN_SERVER=/usr/sbin/rmt-tar tar -c -f localhost:/srv/theirs.tap \\
        --rsh-command=$BATS_TEST_DIRNAME/rsh-standin -C /srv \$n
    done
    cmp /srv/theirs.tap /srv/nightly.tap && echo same bytes
    [ ! -e /srv/nightly.tap.state ] && echo no drive state
    tar -t -f /srv/nightly.tap
  "
  assert_success
  assert_output "same bytes
no drive state
night2.txt"
}

@test "deb: update-alternatives --config switches mt, rmt and buffer back to mt-st, rmt-dump and buffer 1.19" {
  run in_twin "$twin" '
    # Types the selection number of path $2 (or 0, auto mode) at the prompt.
    config() {
      choice=$(update-alternatives --config "$1" </dev/null |
        sed -n "s|^[ *] *\([0-9]*\)  *$2  .*manual mode\$|\1|p")
      echo "${choice:-0}" | update-alternatives --config "$1" >/dev/null
    }
    config mt /bin/mt-st
    config rmt /usr/sbin/rmt-dump
    config buffer /usr/bin/buffer.distrib
    for name in /bin/mt /etc/rmt /usr/bin/buffer; do echo "$name -> $(readlink -f $name)"; done
    md5sum </usr/bin/buffer
    for name in mt rmt buffer; do config $name auto; done
    for name in /bin/mt /etc/rmt /usr/bin/buffer; do echo "$name -> $(readlink -f $name)"; done
  '
  assert_success
  assert_output "/bin/mt -> /usr/bin/mt-st
/etc/rmt -> /usr/sbin/rmt-dump
/usr/bin/buffer -> /usr/bin/buffer.distrib
$(md5sum </usr/bin/buffer)
/bin/mt -> /usr/bin/mt-tapekit
/etc/rmt -> /usr/sbin/rmt-tapekit
/usr/bin/buffer -> /usr/bin/buffer-tapekit"
}

@test "deb: remove, then purge, give back every alternative, diversion and file that was there" {
  in_twin "$twin" 'dpkg -r tapekit >/dev/null'
  run in_twin "$twin" "$state_script"
  assert_success
  assert_output "$(cat "$BATS_FILE_TMPDIR/state-before")"
  run twin_changes "$twin"
  assert_output ""
  in_twin "$twin" 'dpkg -P tapekit >/dev/null'
  run in_twin "$twin" "$state_script"
  assert_output "$(cat "$BATS_FILE_TMPDIR/state-before")"
  run in_twin "$twin" 'dpkg-query -W tapekit'
  assert_failure
  run twin_changes "$twin"
  assert_output ""
}

@test "make install: puts rmt in sbin and keeps symbols; install-strip strips with STRIP" {
  # PREBUILT=1, as for make deb: nothing relinked under the other bats files.
  make -C "$TK_SRC" --no-print-directory -s install PREBUILT=1 BUILD="$TK_BUILD" DESTDIR="$PWD/plain" PREFIX=/usr >/dev/null
  assert_file_exists plain/usr/sbin/rmt
  assert_file_not_exists plain/usr/bin/rmt
  assert_file_exists plain/usr/share/man/man8/rmt.8
  assert_file_exists plain/usr/share/man/man7/tapekit-remote.7
  run file plain/usr/bin/mt
  assert_output --partial 'with debug_info, not stripped'
  make -C "$TK_SRC" --no-print-directory -s install-strip PREBUILT=1 BUILD="$TK_BUILD" DESTDIR="$PWD/stripped" PREFIX=/usr >/dev/null
  run file stripped/usr/bin/mt
  assert_output --partial ', stripped'
  # STRIP names the program install -s runs: `true` strips nothing.
  make -C "$TK_SRC" --no-print-directory -s install-strip STRIP=true PREBUILT=1 BUILD="$TK_BUILD" DESTDIR="$PWD/fake" PREFIX=/usr >/dev/null
  run file fake/usr/bin/mt
  assert_output --partial 'not stripped'
}
