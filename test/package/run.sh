#!/usr/bin/env bash
# The Debian package on a clean machine: builds postgresql-15-pg-baton from the repository
# (test/package/build-deb.sh: a copy under /tmp, dpkg-buildpackage, no tests at build
# time), makes a clean Debian 12 root with debootstrap, and inside it (chroot, /proc
# mounted) installs the .deb with apt-get, which brings PostgreSQL 15 from Debian's mirror
# as a dependency. Then, as a new Debian machine would: the cluster that the server
# package created (15/main) starts as the postgres user, CREATE EXTENSION pg_baton gives
# the control file's default_version, a tenant gets an item enqueued, claimed and
# finished; again with shared_preload_libraries = 'pg_baton' (the launcher and the reaper
# start from the package's library); the package purges cleanly. The metadata that
# carries the version (debian/changelog, META.json) is checked against pg_baton.control.
#
#   bash test/package/run.sh          (as root; about 4 minutes with the cached root,
#                                      2 to 4 more to bootstrap it)
#
# The clean root comes from a tarball cached in /var/cache/pg_baton-package/, made with
# debootstrap when it is missing (or BATON_PACKAGE_REFRESH=1); BATON_PACKAGE_CACHE=0
# bootstraps every time and caches nothing. BATON_DEBIAN_MIRROR (default
# http://deb.debian.org/debian) is the mirror for debootstrap and apt. BATON_PACKAGE_DEB=FILE
# tests that .deb instead of building one.
#
# Everything it makes lives in one directory under /tmp, removed on exit, failure or
# interrupt included: first the server it started in the root, then the mounts, then
# the files. Each check prints "ok - ..." or "not ok - ..."; the last line is
# "N passed, N failed". Not root: one line saying why, then "0 passed, 0 failed".
# shellcheck disable=SC2016  # (dpkg-query's ${Field} formats are literal)
set -euo pipefail
exec 2>&1

if [[ $(id -u) -ne 0 ]]; then
    echo "package: skipped: needs root (dpkg-buildpackage, debootstrap, chroot)"
    echo "0 passed, 0 failed"
    exit 0
fi

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh" # cluster_free_port

PG_MAJOR=15
PACKAGE=postgresql-$PG_MAJOR-pg-baton
SUITE=bookworm
MIRROR=${BATON_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE_DIR=/var/cache/pg_baton-package
CACHE=$CACHE_DIR/debian-12-$SUITE-minbase-$(dpkg --print-architecture).tar.gz
START_SECONDS=$SECONDS

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }
check() { # check NAME EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi
}
note() { printf 'package: %s\n' "$*"; }
# fatal NAME: a failed step after which nothing else can be checked.
FATAL=0
fatal() {
    not_ok "$1"
    FATAL=1
    exit 1
}

WORK=$(mktemp -d /tmp/pg_baton-package.XXXXXX)
CHROOT=$WORK/root
SERVER_STARTED=0

# shellcheck disable=SC2317  # (called from the EXIT trap)
# The mount points at or under a directory, deepest first (octal escapes decoded).
mounts_under() {
    awk -v dir="$1" '{
        mp = $5
        while (match(mp, /\\[0-7][0-7][0-7]/)) {
            c = sprintf("%c", (substr(mp, RSTART + 1, 1) * 64) + (substr(mp, RSTART + 2, 1) * 8) + substr(mp, RSTART + 3, 1))
            mp = substr(mp, 1, RSTART - 1) c substr(mp, RSTART + RLENGTH)
        }
        if (mp == dir || index(mp, dir "/") == 1) print length(mp) "\t" mp
    }' /proc/self/mountinfo | sort -rn | cut -f2-
}

# shellcheck disable=SC2317  # (called from the EXIT trap)
# The processes whose root directory is the new root (all started by this script).
processes_in_root() {
    local p
    for p in /proc/[0-9]*; do
        if [[ $(readlink "$p/root" 2>/dev/null) == "$CHROOT" ]]; then
            echo "${p#/proc/}"
        fi
    done
}

# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$? pid m attempt
    local -a left
    trap - EXIT
    set +e
    if [[ -d $CHROOT ]]; then
        # 1. The server started in the root: pg_ctlcluster, else its postmaster by pid.
        if ((SERVER_STARTED)); then
            in_root pg_ctlcluster "$PG_MAJOR" main stop -m fast >/dev/null 2>&1
            pid=$(head -n 1 "$CHROOT/var/lib/postgresql/$PG_MAJOR/main/postmaster.pid" 2>/dev/null)
            if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null \
                && [[ $(readlink "/proc/$pid/root") == "$CHROOT" ]]; then
                kill -QUIT "$pid" 2>/dev/null
            fi
        fi
        # Anything else still running inside the root (only this script starts processes
        # there), by id.
        for attempt in 1 2 3 4 5 6 7 8 9 10; do
            mapfile -t left < <(processes_in_root)
            ((${#left[@]} > 0)) || break
            if ((attempt <= 5)); then
                kill "${left[@]}" 2>/dev/null
            else
                kill -KILL "${left[@]}" 2>/dev/null
            fi
            sleep 1
        done
        # 2. The mounts, deepest first.
        while IFS= read -r m; do
            [[ -n $m ]] || continue
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null \
                || echo "not ok - unmount $m"
        done < <(mounts_under "$WORK")
    fi
    # 3. The files, only when nothing is mounted below them any more.
    if [[ -n $(mounts_under "$WORK") ]]; then
        FAIL=$((FAIL + 1))
        echo "not ok - cleanup: still mounted under $WORK; left in place:"
        mounts_under "$WORK"
    else
        rm -rf --one-file-system -- "$WORK"
    fi
    if ((rc != 0 && FATAL == 0)); then
        FAIL=$((FAIL + 1))
        echo "not ok - run.sh stopped early (exit $rc)"
    fi
    note "total $((SECONDS - START_SECONDS)) s"
    printf '%d passed, %d failed\n' "$PASS" "$FAIL"
    if ((FAIL > 0)); then
        exit 1
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A command inside the new root, with a clean environment.
in_root() {
    chroot "$CHROOT" /usr/bin/env -i \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# --- 1. the version in the packaging metadata ---------------------------------------------
VERSION=$(sed -nE "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'([^']+)'.*/\1/p" \
    "$ROOT/pg_baton.control")
[[ -n $VERSION ]] || fatal "pg_baton.control names a default_version"
note "pg_baton.control: default_version $VERSION"

deb_version=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version 2>/dev/null || true)
check "debian/changelog's upstream version is default_version" "$VERSION" "${deb_version%-*}"

if meta=$(jq -e . "$ROOT/META.json" 2>/dev/null); then
    ok "META.json is valid JSON"
    check "META.json version is default_version" "$VERSION" "$(jq -r .version <<<"$meta")"
    check "META.json provides pg_baton at default_version" "$VERSION" \
        "$(jq -r '.provides.pg_baton.version' <<<"$meta")"
    check "META.json name, meta-spec, license" "pg_baton 1.0.0 postgresql" \
        "$(jq -r '[.name, .["meta-spec"].version, .license] | join(" ")' <<<"$meta")"
    provided=$(jq -r '.provides.pg_baton.file' <<<"$meta")
    if [[ -f $ROOT/$provided ]]; then
        ok "META.json's provided file $provided exists"
    else
        not_ok "META.json's provided file '$provided' exists"
    fi
else
    not_ok "META.json is valid JSON"
fi

# --- 2. the package -----------------------------------------------------------------------
if [[ -n ${BATON_PACKAGE_DEB:-} ]]; then
    # A package built before (test/package/build-deb.sh OUTDIR), checked the same way.
    mkdir -p "$WORK/debs"
    cp -- "$BATON_PACKAGE_DEB" "$WORK/debs/" || fatal "BATON_PACKAGE_DEB=$BATON_PACKAGE_DEB is readable"
    note "the package from BATON_PACKAGE_DEB, not built here"
else
    note "building the package (test/package/build-deb.sh)"
    t=$SECONDS
    if bash "$ROOT/test/package/build-deb.sh" "$WORK/debs" >"$WORK/build.log" 2>&1; then
        ok "dpkg-buildpackage builds the package ($((SECONDS - t)) s)"
    else
        tail -n 60 "$WORK/build.log"
        fatal "dpkg-buildpackage builds the package (log above)"
    fi
fi
shopt -s nullglob
debs=("$WORK/debs/${PACKAGE}_${VERSION}"-*_"$(dpkg --print-architecture)".deb)
shopt -u nullglob
if ((${#debs[@]} != 1)); then
    ls -l "$WORK/debs"
    fatal "one ${PACKAGE}_${VERSION}-*.deb built"
fi
DEB=${debs[0]}
ok "built $(basename -- "$DEB")"

contents=$(dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's:^\./:/:' || true)
ext_dir=/usr/share/postgresql/$PG_MAJOR/extension
missing=""
for f in "/usr/lib/postgresql/$PG_MAJOR/lib/pg_baton.so" "$ext_dir/pg_baton.control" \
    "$ROOT"/pg_baton--*.sql; do
    [[ $f == "$ROOT"/* ]] && f=$ext_dir/$(basename -- "$f")
    grep -qxF -- "$f" <<<"$contents" || missing+=" $f"
done
check "the package holds pg_baton.so, the control file and every pg_baton--*.sql" "" "$missing"
depends=$(dpkg-deb -f "$DEB" Depends || true)
if [[ ", $depends," == *", postgresql-$PG_MAJOR,"* ]]; then
    ok "the package depends on postgresql-$PG_MAJOR ($depends)"
else
    not_ok "the package depends on postgresql-$PG_MAJOR (Depends: $depends)"
fi

# --- 3. a clean Debian 12 root ------------------------------------------------------------
t=$SECONDS
from=""
mkdir -p "$CHROOT"
if [[ ${BATON_PACKAGE_CACHE:-1} != 0 && ${BATON_PACKAGE_REFRESH:-0} != 1 && -s $CACHE ]]; then
    if tar -C "$CHROOT" --numeric-owner -xzf "$CACHE" && [[ -s $CHROOT/etc/debian_version ]]; then
        from="cached $CACHE"
    else
        note "the cached root $CACHE does not unpack; bootstrapping again"
        rm -rf --one-file-system -- "$CHROOT" "$CACHE"
        mkdir -p "$CHROOT"
    fi
fi
if [[ -z $from ]]; then
    if ! command -v debootstrap >/dev/null 2>&1; then
        note "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            -o Dpkg::Use-Pty=0 debootstrap >"$WORK/apt-host.log" 2>&1 \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                --no-install-recommends -o Dpkg::Use-Pty=0 debootstrap >>"$WORK/apt-host.log" 2>&1; } \
            || { tail -n 20 "$WORK/apt-host.log"; fatal "install debootstrap"; }
    fi
    note "debootstrap --variant=minbase $SUITE from $MIRROR"
    if ! debootstrap --variant=minbase "$SUITE" "$CHROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
        tail -n 30 "$WORK/debootstrap.log"
        fatal "debootstrap makes a Debian 12 root"
    fi
    from="debootstrap, $((SECONDS - t)) s"
    if [[ ${BATON_PACKAGE_CACHE:-1} != 0 ]]; then
        # Cached before anything is changed in it; renamed into place whole.
        mkdir -p "$CACHE_DIR"
        if tar -C "$CHROOT" --numeric-owner -czf "$CACHE.tmp.$$" . && mv -f "$CACHE.tmp.$$" "$CACHE"; then
            note "cached the root in $CACHE"
        else
            rm -f -- "$CACHE.tmp.$$"
            note "could not cache the root in $CACHE"
        fi
    fi
fi
debian_version=$(cat "$CHROOT/etc/debian_version" 2>/dev/null || true)
if [[ $debian_version == 12.* ]]; then
    ok "a clean Debian $debian_version root ($from; $((SECONDS - t)) s)"
else
    fatal "a clean Debian 12 root (debian_version '$debian_version')"
fi

mount -t proc proc "$CHROOT/proc" || fatal "mount /proc in the root"
# Services are not started by package scripts inside the root (the clusters of the host
# are not to be disturbed; the test starts its cluster itself).
printf '#!/bin/sh\nexit 101\n' >"$CHROOT/usr/sbin/policy-rc.d"
chmod 0755 "$CHROOT/usr/sbin/policy-rc.d"
# apt's downloads and the .deb readable by its unprivileged user.
mkdir -p "$CHROOT/tmp/pkg"
cp -- "$DEB" "$CHROOT/tmp/pkg/"
chmod 0755 "$CHROOT/tmp/pkg"
chmod 0644 "$CHROOT/tmp/pkg/$(basename -- "$DEB")"
printf 'deb %s %s main\n' "$MIRROR" "$SUITE" >"$CHROOT/etc/apt/sources.list"

if in_root dpkg-query -W -f='${Status}' "postgresql-$PG_MAJOR" 2>/dev/null | grep -q 'ok installed'; then
    not_ok "the new root has no PostgreSQL before the package"
else
    ok "the new root has no PostgreSQL before the package"
fi

# --- 4. apt-get install ./the.deb -----------------------------------------------------------
t=$SECONDS
if in_root apt-get update -q >"$WORK/apt.log" 2>&1 \
    && in_root apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 \
        "/tmp/pkg/$(basename -- "$DEB")" >>"$WORK/apt.log" 2>&1; then
    ok "apt-get install ./$(basename -- "$DEB") in the root, PostgreSQL from the mirror ($((SECONDS - t)) s)"
else
    tail -n 40 "$WORK/apt.log"
    fatal "apt-get install of the package in the root (log above)"
fi
check "$PACKAGE is installed at ${VERSION}-*" "install ok installed ${VERSION}" \
    "$(in_root dpkg-query -W -f='${Status} ${Version}' "$PACKAGE" 2>&1 | sed 's/-[^-]*$//')"
check "postgresql-$PG_MAJOR came in as its dependency" "install ok installed" \
    "$(in_root dpkg-query -W -f='${Status}' "postgresql-$PG_MAJOR" 2>&1)"
for f in "/usr/lib/postgresql/$PG_MAJOR/lib/pg_baton.so" "$ext_dir/pg_baton.control"; do
    if [[ -f $CHROOT$f ]]; then ok "installed $f"; else not_ok "installed $f"; fi
done

# --- 5. the cluster, CREATE EXTENSION and one item ---------------------------------------------
PORT=$(cluster_free_port 56100)
CONF_DIR=/etc/postgresql/$PG_MAJOR/main
if [[ ! -d $CHROOT$CONF_DIR ]]; then
    # The server package makes 15/main on a new machine; make it if it did not.
    in_root pg_createcluster "$PG_MAJOR" main >>"$WORK/apt.log" 2>&1 \
        || fatal "pg_createcluster $PG_MAJOR main"
fi
# Unix socket only (inside the root), on a port no server of the host uses.
mkdir -p "$CHROOT$CONF_DIR/conf.d"
printf "port = %s\nlisten_addresses = ''\n" "$PORT" >"$CHROOT$CONF_DIR/conf.d/pg_baton-package-test.conf"

LOG=/var/log/postgresql/postgresql-$PG_MAJOR-main.log
start_cluster() { # start_cluster start|restart
    if in_root pg_ctlcluster "$PG_MAJOR" main "$1" >"$WORK/pg_ctl.log" 2>&1; then
        SERVER_STARTED=1
        return 0
    fi
    SERVER_STARTED=1 # it may be running all the same: cleanup stops it
    cat "$WORK/pg_ctl.log"
    tail -n 30 "$CHROOT$LOG" 2>/dev/null
    return 1
}
sql() { in_root runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -p "$PORT" -d postgres "$@"; }

if start_cluster start; then
    ok "pg_ctlcluster $PG_MAJOR main start (the server runs as the postgres user, port $PORT)"
else
    fatal "pg_ctlcluster $PG_MAJOR main start"
fi
pm_pid=$(head -n 1 "$CHROOT/var/lib/postgresql/$PG_MAJOR/main/postmaster.pid" 2>/dev/null || true)
pg_uid=$(in_root id -u postgres 2>/dev/null || true)
check "the server runs as the root's postgres user (uid $pg_uid)" "$pg_uid" \
    "$(awk '/^Uid:/ {print $2}' "/proc/${pm_pid:-0}/status" 2>/dev/null || true)"

check "CREATE EXTENSION pg_baton installs default_version" "$VERSION" \
    "$(sql -c 'CREATE EXTENSION pg_baton' \
        -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'" 2>&1)"

# cycle NAME TENANT: create the tenant, enqueue one item, claim it, finish it; check each
# answer against what the contract says (docs/guide/functions.md).
cycle() {
    local name=$1 tenant=$2 id claimed gen status
    check "$name: create_tenant makes an active tenant" "active" \
        "$(sql -c "SELECT baton.create_tenant('$tenant')" \
            -c "SELECT state FROM baton.tenants WHERE tenant = '$tenant'" 2>&1 | tail -n 1)"
    id=$(sql -c "SELECT baton.enqueue('$tenant', 'email', 'welcome-42', '{\"to\": \"u42@example.com\"}')" 2>&1 || true)
    if [[ $id =~ ^[0-9]+$ ]] && ((id > 0)); then
        ok "$name: enqueue returns an id ($id)"
    else
        not_ok "$name: enqueue returns an id (got '$id')"
        return 0
    fi
    check "$name: enqueue of the same key returns the same id" "$id" \
        "$(sql -c "SELECT baton.enqueue('$tenant', 'email', 'welcome-42', '{\"to\": \"u42@example.com\"}')" 2>&1)"
    claimed=$(sql -F ' ' -c "SELECT id, generation, attempt, payload->>'to', lease_until > now()
                               FROM baton.claim('$tenant', 'email', '30 seconds')" 2>&1 || true)
    check "$name: claim leases that item (id, generation 1, attempt 1, its payload)" \
        "$id 1 1 u42@example.com t" "$claimed"
    gen=$(cut -d' ' -f2 <<<"$claimed" || true)
    check "$name: a second claim finds nothing" "0" \
        "$(sql -c "SELECT count(*) FROM baton.claim('$tenant', 'email', '30 seconds')" 2>&1)"
    check "$name: finish with a stale generation is refused (DU001)" "DU001" \
        "$(sql -c '\set VERBOSITY sqlstate' -c "SELECT baton.finish('$tenant', $id, 0)" 2>&1 \
            | grep -oE 'DU[0-9]{3}' | head -n 1)"
    check "$name: finish returns finished" "finished" \
        "$(sql -c "SELECT baton.finish('$tenant', $id, ${gen:-1}, 'finished', '{\"sent\": true}')" 2>&1)"
    status=$(sql -F ' ' -c "SELECT status, attempts, result->>'sent', lease_until IS NULL
                              FROM baton.delivery('$tenant', $id)" 2>&1 || true)
    check "$name: the delivery is finished once, its result stored, no lease" "finished 1 true t" "$status"
}

cycle "unpreloaded" 11111111-1111-1111-1111-111111111111

# --- 6. the same with the preload -------------------------------------------------------------
printf "shared_preload_libraries = 'pg_baton'\n" >>"$CHROOT$CONF_DIR/conf.d/pg_baton-package-test.conf"
if start_cluster restart; then
    ok "the server restarts with shared_preload_libraries = 'pg_baton'"
else
    fatal "the server restarts with shared_preload_libraries = 'pg_baton'"
fi
check "shared_preload_libraries" "pg_baton" "$(sql -c 'SHOW shared_preload_libraries' 2>&1)"
workers=""
for _ in $(seq 1 30); do
    workers=$(sql -c "SELECT string_agg(DISTINCT backend_type, ',' ORDER BY backend_type)
                        FROM pg_stat_activity WHERE backend_type LIKE 'pg_baton %'" 2>&1 || true)
    [[ $workers != "pg_baton launcher,pg_baton reaper" ]] || break
    sleep 0.5
done
check "the launcher and the reaper of database postgres run from the package's library" \
    "pg_baton launcher,pg_baton reaper" "$workers"
cycle "preloaded" 22222222-2222-2222-2222-222222222222

# --- 7. stop, purge ---------------------------------------------------------------------------
if in_root pg_ctlcluster "$PG_MAJOR" main stop -m fast >"$WORK/pg_ctl.log" 2>&1; then
    SERVER_STARTED=0
    ok "pg_ctlcluster $PG_MAJOR main stop"
else
    cat "$WORK/pg_ctl.log"
    not_ok "pg_ctlcluster $PG_MAJOR main stop"
fi
if in_root apt-get purge -y -q -o Dpkg::Use-Pty=0 "$PACKAGE" >>"$WORK/apt.log" 2>&1; then
    ok "apt-get purge $PACKAGE"
else
    tail -n 20 "$WORK/apt.log"
    not_ok "apt-get purge $PACKAGE"
fi
remaining=""
for f in "$CHROOT/usr/lib/postgresql/$PG_MAJOR/lib/pg_baton.so" "$CHROOT$ext_dir"/pg_baton* \
    "$CHROOT/usr/share/doc/$PACKAGE"; do
    [[ ! -e $f ]] || remaining+=" ${f#"$CHROOT"}"
done
check "the purge removes every file of the package" "" "$remaining"
check "postgresql-$PG_MAJOR stays installed" "install ok installed" \
    "$(in_root dpkg-query -W -f='${Status}' "postgresql-$PG_MAJOR" 2>&1)"

exit 0
