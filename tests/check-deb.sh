#!/bin/sh
# Build the workq-server .deb with contrib/build-deb.sh and check what is in
# it: the file list, that the programs run from an unpacked copy, the man
# pages, the bash completion, the control fields, the maintainer scripts, the unit
# (systemd-analyze verify and security, when systemd-analyze is there), and
# lintian's verdict when lintian is installed; then check the RPM spec's
# %install and %files against a `make install` of the same build.  Prints
# one PASS:/FAIL: line per check (tests/run-all counts them) and exits 1 if
# any failed, 77 if the Debian tools are missing.
#
# DEB_BUILD_OPTIONS defaults to "nocheck" (make check runs in the other CI
# steps); set it, e.g. to "", to build with the tests.  WQ_DEB_INSTALL=1
# also installs the package on this machine with dpkg -i, checks that the
# workq user exists, and purges it again (root only).  WQ_DEB_TARBALL=FILE
# builds it from that `make dist` tarball instead of this tree.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)

for tool in dpkg-buildpackage dh dpkg-deb; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool not found (apt-get install dpkg-dev debhelper fakeroot)"
        exit 77
    fi
done

failed=0
pass() { echo "PASS: deb: $*"; }
fail() { echo "FAIL: deb: $*"; failed=1; }
check() { # check DESCRIPTION COMMAND...
    d=$1
    shift
    if "$@" >/dev/null 2>&1; then pass "$d"; else fail "$d"; fi
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/check-deb.XXXXXX")
finish() {
    if [ "$failed" -eq 0 ]; then
        rm -rf "$scratch"
    else
        echo "# kept for inspection: $scratch"
    fi
}
trap finish EXIT
trap 'exit 1' INT TERM

version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$top/configure.ac")

# 1. Build.
: "${DEB_BUILD_OPTIONS=nocheck}"
export DEB_BUILD_OPTIONS
start=$(date +%s)
from=""
[ -z "${WQ_DEB_TARBALL:-}" ] || from="-t $WQ_DEB_TARBALL"
# shellcheck disable=SC2086 # from is empty or two words
if "$top/contrib/build-deb.sh" -o "$scratch/out" -w "$scratch/work" $from >"$scratch/build.out" 2>&1; then
    pass "dpkg-buildpackage -us -uc -b ($(($(date +%s) - start)) s, DEB_BUILD_OPTIONS='$DEB_BUILD_OPTIONS')"
else
    cat "$scratch/build.out"
    fail "dpkg-buildpackage -us -uc -b"
    exit 1
fi
arch=$(dpkg --print-architecture)
deb=$scratch/out/workq-server_${version}-1_${arch}.deb
if [ -f "$deb" ]; then
    pass "built $(basename "$deb")"
else
    fail "no $(basename "$deb") in: $(ls "$scratch/out" | tr '\n' ' ')"
    exit 1
fi

# 2. Contents.
root=$scratch/root
dpkg -x "$deb" "$root"
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||' >"$scratch/contents"
for f in \
    usr/sbin/workq-server \
    usr/bin/workq-bench \
    usr/bin/workq-cli \
    usr/share/man/man8/workq-server.8.gz \
    usr/share/man/man1/workq-bench.1.gz \
    usr/share/man/man1/workq-cli.1.gz \
    usr/share/man/man7/workq-protocol.7.gz \
    usr/share/doc/workq-server/copyright \
    usr/share/doc/workq-server/changelog.Debian.gz \
    usr/share/doc/workq-server/README.md.gz \
    usr/share/doc/workq-server/protocol.md.gz \
    lib/systemd/system/workq-server.service \
    etc/default/workq-server \
    etc/logrotate.d/workq-server \
    etc/workq/workq.conf \
    usr/share/doc/workq-server/examples/workq.conf \
    usr/share/doc/workq-server/examples/prometheus.yml \
    usr/share/doc/workq-server/examples/workq.json \
    usr/lib/sysusers.d/workq-server.conf \
    usr/share/bash-completion/completions/workq-server \
    usr/share/bash-completion/completions/workq-cli \
    usr/share/bash-completion/completions/workq-bench; do
    check "contains /$f" grep -qx "$f" "$scratch/contents"
done
# The bash completion: one file, loaded by bash-completion under each
# program's name (the cli's and the bench's are links to it), and it
# defines the three completions.
comp=$root/usr/share/bash-completion/completions
check "bash completion workq-server is a file" test -f "$comp/workq-server" -a ! -L "$comp/workq-server"
for p in workq-cli workq-bench; do
    check "bash completion $p links to workq-server" test "$(readlink "$comp/$p")" = workq-server
done
check "bash completion defines workq-server, workq-cli and workq-bench" \
    bash -c ". '$comp/workq-server' && complete -p workq-server workq-cli workq-bench"
for f in usr/sbin/workq-server usr/bin/workq-bench usr/bin/workq-cli; do
    check "/$f is an executable file" test -f "$root/$f" -a -x "$root/$f"
done
out=$("$root/usr/sbin/workq-server" -V 2>&1)
if [ "$out" = "workq-server $version" ]; then
    pass "workq-server -V from the unpacked package prints '$out'"
else
    fail "workq-server -V printed '$out', wanted 'workq-server $version'"
fi
check "workq-bench --help from the unpacked package exits 0" "$root/usr/bin/workq-bench" --help
if command -v readelf >/dev/null 2>&1; then
    check "workq-server is PIE" sh -c "readelf -h '$root/usr/sbin/workq-server' | grep -q 'Type:.*DYN'"
    check "workq-server has full RELRO (BIND_NOW)" \
        sh -c "readelf -d '$root/usr/sbin/workq-server' | grep -q 'BIND_NOW'"
    check "workq-server links jemalloc" \
        sh -c "readelf -d '$root/usr/sbin/workq-server' | grep -q 'NEEDED.*libjemalloc'"
fi
for m in "$root"/usr/share/man/man*/*.gz; do
    [ -f "$m" ] || continue
    w=$(zcat "$m" | man --warnings -E UTF-8 -l -Tutf8 -Z - 2>&1 >/dev/null)
    if [ -z "$w" ]; then pass "man page $(basename "$m") lints clean"; else fail "man page $(basename "$m"): $w"; fi
    if command -v lexgrog >/dev/null 2>&1; then
        check "man page $(basename "$m") has a NAME line (lexgrog)" lexgrog "$m"
    fi
done

# Optional: lintian (not installed by ./bootstrap --test-deps); its errors fail.
if command -v lintian >/dev/null 2>&1; then
    lintian --allow-root -I --pedantic "$deb" >"$scratch/lintian.out" 2>&1
    sed 's/^/# lintian: /' "$scratch/lintian.out"
    if grep -q '^E:' "$scratch/lintian.out"; then
        fail "lintian reports errors"
    else
        pass "lintian reports no errors"
    fi
fi

# 3. Control fields and maintainer scripts.
dpkg-deb -I "$deb" >"$scratch/info"
field() { dpkg-deb -f "$deb" "$1"; }
check "Package: workq-server" test "$(field Package)" = workq-server
check "Version: $version-1" test "$(field Version)" = "$version-1"
check "Architecture: $arch" test "$(field Architecture)" = "$arch"
depends=$(field Depends)
for d in libevent-2.1-7 libevent-openssl-2.1-7 libjemalloc2 libuuid1 libjansson4 libssl3 libzmq5 \
    "systemd | systemd-standalone-sysusers"; do
    case "$depends" in
    *"$d"*) pass "Depends has $d" ;;
    *) fail "Depends has $d (Depends: $depends)" ;;
    esac
done
dpkg-deb -e "$deb" "$scratch/control"
check "conffile /etc/default/workq-server" grep -qx /etc/default/workq-server "$scratch/control/conffiles"
check "conffile /etc/logrotate.d/workq-server" grep -qx /etc/logrotate.d/workq-server "$scratch/control/conffiles"
check "conffile /etc/workq/workq.conf" grep -qx /etc/workq/workq.conf "$scratch/control/conffiles"
check "workq.conf sets nothing (every setting commented out)" \
    sh -c "! grep -v '^[[:space:]]*\(#.*\)\{0,1\}$' '$root/etc/workq/workq.conf'"
check "workq.conf is accepted by the unpacked server" \
    sh -c 'timeout 1 "$0" --config "$1" --listen 127.0.0.1:0 >/dev/null 2>&1; s=$?; [ $s -eq 124 ] || [ $s -eq 0 ]' \
    "$root/usr/sbin/workq-server" "$root/etc/workq/workq.conf"
check "postinst says the service was not started where systemd does not run" \
    grep -q 'systemd is not running here, so the service was not started' "$scratch/control/postinst"
check "postinst creates the user (systemd-sysusers workq-server.conf)" \
    grep -q 'systemd-sysusers.*workq-server.conf' "$scratch/control/postinst"
check "postinst enables and starts the unit (dh_installsystemd)" \
    sh -c "grep -q \"deb-systemd-helper enable 'workq-server.service'\" '$scratch/control/postinst' &&
           grep -q \"deb-systemd-invoke .*'workq-server.service'\" '$scratch/control/postinst'"
check "sysusers.d file declares the workq user" \
    grep -q '^u workq ' "$root/usr/lib/sysusers.d/workq-server.conf"

# 4. The unit.
unit=$root/lib/systemd/system/workq-server.service
check "unit has no @...@ left" sh -c "! grep -q '@[a-z_]*@' '$unit'"
check "unit runs /usr/sbin/workq-server" grep -q '^ExecStart=/usr/sbin/workq-server ' "$unit"
check "unit reads /etc/default/workq-server" grep -qx 'EnvironmentFile=-/etc/default/workq-server' "$unit"
check "unit reads /etc/workq/workq.conf" grep -q '^ExecStart=.* --config /etc/workq/workq.conf ' "$unit"
check "unit runs as the workq user the package creates" \
    sh -c "grep -qx 'User=workq' '$unit' && ! grep -q '^DynamicUser=' '$unit'"
check "unit may write the log directory logrotate rotates" grep -qx 'LogsDirectory=workq' "$unit"
check "logrotate creates the workq user's file" grep -q 'create 0640 workq workq' "$root/etc/logrotate.d/workq-server"
if command -v systemd-analyze >/dev/null 2>&1; then
    # Verify a copy that points at the unpacked binary, with the unpacked
    # man pages on MANPATH (systemd-analyze checks Documentation=).
    mkdir -p "$scratch/unit"
    sed "s|/usr/sbin/workq-server|$root/usr/sbin/workq-server|" "$unit" >"$scratch/unit/workq-server.service"
    if out=$(cd "$scratch/unit" && MANPATH=$root/usr/share/man \
        systemd-analyze verify ./workq-server.service 2>&1) && [ -z "$out" ]; then
        pass "systemd-analyze verify workq-server.service"
    else
        echo "$out" | sed 's/^/# /'
        fail "systemd-analyze verify workq-server.service"
    fi
    score=$(cd "$scratch/unit" && systemd-analyze security --offline=true ./workq-server.service 2>/dev/null |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]* [A-Z]*\).*/\1/p')
    case "$score" in
    [0-1].*|2.*) pass "systemd-analyze security: exposure $score" ;;
    *) fail "systemd-analyze security: exposure '$score' (wanted below 3.0)" ;;
    esac
else
    echo "SKIP: deb: systemd-analyze not found (apt-get install systemd)"
fi

# 5. The RPM spec, without rpmbuild: run its %install steps after a
# `make install` with Fedora's paths, then every %files entry must match
# something and every installed file must be listed.
src=$scratch/work/workq-$version
spec=$src/contrib/rpm/workq.spec
rpmroot=$scratch/rpmroot
if [ -f "$spec" ] && make -C "$src" install DESTDIR="$rpmroot" sysconfdir=/etc \
    docdir=/usr/share/doc/workq systemdsystemunitdir=/usr/lib/systemd/system \
    >"$scratch/rpm-install.out" 2>&1; then
    expand() {
        sed -e "s|%{buildroot}|$rpmroot|g" -e 's|%{_sbindir}|/usr/sbin|g' \
            -e 's|%{_bindir}|/usr/bin|g' -e 's|%{_mandir}|/usr/share/man|g' \
            -e 's|%{_docdir}|/usr/share/doc|g' -e 's|%{name}|workq|g' \
            -e 's|%{_datadir}|/usr/share|g' \
            -e 's|%{_unitdir}|/usr/lib/systemd/system|g' \
            -e 's|%{_sysusersdir}|/usr/lib/sysusers.d|g' -e 's|%{_sysconfdir}|/etc|g'
    }
    section() { # the lines of one %section, continuations joined
        awk -v s="%$1" '$1 == s { on = 1; next }
            on && /^%(prep|build|check|install|pre|post|preun|postun|files|changelog|description)([ \t]|$)/ { on = 0 }
            on' "$spec" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta'
    }
    section install | grep -v -e '^%make_install' -e '^#' -e '^[[:space:]]*$' | expand >"$scratch/rpm-install.sh"
    if (cd "$src" && sh -e "$scratch/rpm-install.sh") >>"$scratch/rpm-install.out" 2>&1; then
        pass "rpm: %install steps run after make install"
    else
        fail "rpm: %install steps ($(tail -n 3 "$scratch/rpm-install.out"))"
    fi
    section files | grep -v -e '^[[:space:]]*$' -e '^%license' |
        sed -e 's/^%config([^)]*) *//' -e 's/^%config *//' -e 's/^%doc *//' -e 's/^%dir *//' |
        expand >"$scratch/rpm-files"
    while IFS= read -r pat; do
        # shellcheck disable=SC2086 # the pattern is meant to glob
        set -- "$rpmroot"$pat
        if [ -e "$1" ]; then pass "rpm: %files $pat is installed"; else fail "rpm: %files $pat is not installed"; fi
    done <"$scratch/rpm-files"
    unlisted=$( (cd "$rpmroot" && find . ! -type d | sed 's|^\.||') | while IFS= read -r f; do
        hit=no
        while IFS= read -r pat; do
            # shellcheck disable=SC2254
            case "$f" in $pat | "${pat%/}"/*) hit=yes ;; esac
        done <"$scratch/rpm-files"
        [ $hit = yes ] || printf '%s ' "$f"
    done)
    if [ -z "$unlisted" ]; then
        pass "rpm: %files lists every installed file"
    else
        fail "rpm: installed but not in %files: $unlisted"
    fi
else
    tail -n 20 "$scratch/rpm-install.out" 2>/dev/null
    fail "rpm: make install with Fedora's paths (spec: $spec)"
fi

# 6. Optional: really install and purge it.
if [ "${WQ_DEB_INSTALL:-0}" = 1 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP: deb: WQ_DEB_INSTALL=1 needs root"
    elif dpkg -i "$deb" >"$scratch/dpkg-i.out" 2>&1; then
        pass "dpkg -i $(basename "$deb")"
        check "the workq user exists after install" getent passwd workq
        check "the unit is installed" test -f /lib/systemd/system/workq-server.service
        check "dpkg -P workq-server" dpkg -P workq-server
    else
        cat "$scratch/dpkg-i.out"
        fail "dpkg -i $(basename "$deb")"
    fi
fi

[ "$failed" -eq 0 ]
