#!/usr/bin/env bash
# Install what pg_baton's build and tests need on Debian 12 (run as root).
#
# Idempotent: when everything is already present it touches neither apt nor the network.
# The server headers are pinned to the installed server's exact version: an unpinned
# postgresql-server-dev-15 would pull the newest security release and upgrade the server
# (and libpq) under any running cluster. Server packages are never upgraded here.
set -euo pipefail

PG_MAJOR=15
DEV_PKG="postgresql-server-dev-${PG_MAJOR}"
SERVER_PKG="postgresql-${PG_MAJOR}"
REPACK_PKG="postgresql-${PG_MAJOR}-repack"  # test/tooling/maintenance.sh (pg_repack under load)

log() { printf 'install-deps: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# The installed version of a package, or nothing when it is not installed.
installed_version() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)
    if [[ $status == "install ok installed" ]]; then
        dpkg-query -W -f='${Version}' "$1"
    fi
}

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script is for Debian"

server_version=$(installed_version "$SERVER_PKG")
[[ -n $server_version ]] || die "$SERVER_PKG is not installed; this script installs only build tools and headers"

# --- what is missing -------------------------------------------------------------------
to_install=()        # plain package names
pinned=()            # name=version

dev_version=$(installed_version "$DEV_PKG")
if [[ $dev_version != "$server_version" ]]; then
    if [[ -n $dev_version ]]; then
        log "$DEV_PKG $dev_version does not match $SERVER_PKG $server_version"
    fi
    pinned+=("${DEV_PKG}=${server_version}")
    # libpq-dev is a dependency of the headers; left to apt it would come at the newest
    # version and upgrade libpq5 with it. Pin it to the installed libpq5.
    libpq_version=$(installed_version libpq5)
    if [[ -n $libpq_version && -z $(installed_version libpq-dev) ]]; then
        pinned+=("libpq-dev=${libpq_version}")
    fi
fi

# package -> a command that proves it (empty: check the package only)
declare -A tools=(
    [cmake]=cmake
    [g++]=g++
    [make]=make
    [pkg-config]=pkg-config
    [libgtest-dev]=""
    [python3-psycopg]="" # examples/python, test/clients, test/fault
    [nodejs]=node        # clients/node, examples/node (test/node, test/clients; Node.js >= 18)
    [npm]=npm
    # test/fuzz (clang++ with libFuzzer) and test/model (spin; pan is compiled with gcc)
    [clang]=clang++
    [libclang-rt-dev]=""
    [spin]=spin
    [valgrind]=valgrind  # test/valgrind (memcheck of claim and finish), bench/profile.sh
    # test/metrics: the exporter configuration, the scrape, the rules
    [prometheus]=prometheus
    [prometheus-sql-exporter]=prometheus-sql-exporter
    [curl]=curl
    # clients/python: its wheel built offline, installed into a virtual environment
    [python3-setuptools]=""
    [python3-wheel]=""
    [python3-pip]=""
    [python3-venv]=""
    # test/console: the web console driven in a real browser (playwright-core, headless)
    [chromium]=chromium
)
for pkg in cmake g++ make pkg-config libgtest-dev python3-psycopg nodejs npm clang libclang-rt-dev spin valgrind \
    prometheus prometheus-sql-exporter curl python3-setuptools python3-wheel python3-pip python3-venv chromium; do
    cmd=${tools[$pkg]}
    if [[ -n $cmd ]] && command -v "$cmd" >/dev/null 2>&1; then
        continue
    fi
    if [[ -n $(installed_version "$pkg") ]]; then
        continue
    fi
    to_install+=("$pkg")
done

# pg_repack: a version built against the installed server (its newest build may require
# a newer server: it is then chosen among the archive's older builds, below).
need_repack=0
[[ -n $(installed_version "$REPACK_PKG") ]] || need_repack=1

# --- fast path ---------------------------------------------------------------------------
if ((${#to_install[@]} == 0 && ${#pinned[@]} == 0 && need_repack == 0)); then
    log "all present (${SERVER_PKG} ${server_version}, headers $(pg_config --version 2>/dev/null || echo '?')); nothing to do"
    exit 0
fi

[[ $(id -u) -eq 0 ]] || die "must run as root to install: ${pinned[*]} ${to_install[*]}"

export DEBIAN_FRONTEND=noninteractive
APT_INSTALL=(apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0)

log "installing: ${pinned[*]} ${to_install[*]}$( ((need_repack)) && echo " $REPACK_PKG")"
apt-get update -qq

# True when a postgres server process is running on this machine (any cluster).
server_running() {
    local comm
    for comm in /proc/[0-9]*/comm; do
        if [[ $(cat "$comm" 2>/dev/null) == postgres ]]; then
            return 0
        fi
    done
    return 1
}

# Refuse an apt transaction that would change the installed server (postgresql-15) or
# libpq5 while a server is running (it then fails to load its own libraries).
check_no_server_upgrade() {
    local upgrades
    upgrades=$("${APT_INSTALL[@]}" -s "$@" 2>/dev/null \
        | awk '/^Inst / && $3 ~ /^\[/ && $2 ~ /^(postgresql-[0-9]+|libpq5)(:|$)/ {print "  " $2, $3, $4}' \
        || true)
    if [[ -n $upgrades ]]; then
        log "this would change installed PostgreSQL server packages:"
        printf '%s\n' "$upgrades" >&2
        if server_running; then
            die "a PostgreSQL server is running; refusing to upgrade its packages"
        fi
    fi
}

if ((${#to_install[@]} > 0)); then
    "${APT_INSTALL[@]}" "${to_install[@]}"
fi

if ((${#pinned[@]} > 0)); then
    check_no_server_upgrade "${pinned[@]}"
    allow=()
    [[ -n $dev_version ]] && allow=(--allow-downgrades)
    if ! "${APT_INSTALL[@]}" "${allow[@]}" "${pinned[@]}"; then
        # The archive no longer has the server's version: take the newest headers, and
        # the server along with them so that both stay the same version (refused above
        # when a server is running).
        log "pinned install failed (version gone from the archive?); installing the newest $DEV_PKG"
        check_no_server_upgrade "$DEV_PKG" "$SERVER_PKG"
        "${APT_INSTALL[@]}" "$DEV_PKG" "$SERVER_PKG"
    fi
fi

if ((need_repack)); then
    # The newest version of pg_repack that installs with the server left at its installed
    # version (named in the same apt call, so apt cannot upgrade it for a dependency).
    server_version=$(installed_version "$SERVER_PKG")
    repack_version=""
    while read -r v; do
        if "${APT_INSTALL[@]}" -s "${REPACK_PKG}=${v}" "${SERVER_PKG}=${server_version}" >/dev/null 2>&1; then
            repack_version=$v
            break
        fi
    done < <(apt-cache madison "$REPACK_PKG" | awk -F'|' '{gsub(/ /, "", $2); print $2}')
    [[ -n $repack_version ]] || die "no version of $REPACK_PKG installs with $SERVER_PKG $server_version"
    check_no_server_upgrade "${REPACK_PKG}=${repack_version}" "${SERVER_PKG}=${server_version}"
    "${APT_INSTALL[@]}" "${REPACK_PKG}=${repack_version}" "${SERVER_PKG}=${server_version}"
fi

# --- verify ------------------------------------------------------------------------------
server_version=$(installed_version "$SERVER_PKG")
dev_version=$(installed_version "$DEV_PKG")
if [[ $dev_version != "$server_version" ]]; then
    die "$DEV_PKG $dev_version does not match $SERVER_PKG $server_version"
fi
for cmd in cmake g++ make pkg-config pg_config; do
    command -v "$cmd" >/dev/null 2>&1 || die "$cmd still missing"
done
[[ -f "$(pg_config --includedir-server)/postgres.h" ]] || die "server headers missing"
[[ -n $(installed_version "$REPACK_PKG") ]] || die "$REPACK_PKG still missing"
log "done (${SERVER_PKG} ${server_version})"
