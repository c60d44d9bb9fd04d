# shellcheck shell=bash
# A throwaway three-node Citus cluster on this machine, for test/citus/. Source this
# file, then:
#
#   citus_require NAME
#       a suite's start: with PG_CONFIG (default pg_config) sets LIBDIR and BINDIR, puts
#       BINDIR first in PATH and sources scripts/cluster.sh; without Citus installed there
#       ($LIBDIR/citus.so) it prints "NAME: skipped: ..." and exits 0.
#   citus_cluster_start BASE PORT [postgresql.conf lines...]
#       a coordinator on PORT and two workers on PORT+1 and PORT+2, data in BASE/n0..n2,
#       one private socket directory BASE/sock (also the nodes' host name in Citus'
#       metadata, and each node's own, citus.local_hostname, for the connections a node
#       makes to itself, e.g. moving a shard), shared_preload_libraries = 'citus,pg_baton'
#       (Citus first: it refuses to start otherwise), max_prepared_transactions for
#       Citus' two-phase commits, then the extra lines given (e.g. wal_level = logical).
#       CREATE EXTENSION citus on every node, the coordinator registered and both workers
#       added. Exports PGHOST=BASE/sock, PGPORT=PORT (the coordinator), PGUSER,
#       PGDATABASE, and CITUS_PORTS (the three ports).
#   citus_node_start BASE I PORT [postgresql.conf lines...]
#       one more node like those (data in BASE/nI, on PORT), with Citus created in its
#       database; adding it to the cluster is the caller's (citus_add_node).
#   citus_cluster_stop BASE
#       stops the three servers by their data directories and removes BASE.
#   citus_suite_start NAME PORT [postgresql.conf lines...]
#       for a suite of test/citus/: such a cluster on the first three consecutive free
#       ports from PORT on, the lines given added on every node, data under a fresh
#       BASE (set, with p0, the coordinator's port), stopped and removed on exit
#       (citus_suite_stop; a suite with more to undo sets its own EXIT trap calling it).
#       When no port is free or the cluster does not start, it says so as NAME and
#       exits with "0 passed, 1 failed".
#   check NAME EXPECTED ACTUAL, q [psql args], code [psql args]
#       a suite's checks: "ok" or "FAIL" per check, counted in PASS and FAIL; psql
#       quiet, unaligned, tuples only; the SQLSTATE of the first error of the
#       statements, or "ok".
#
# BASE must be a fresh directory under /tmp (e.g. from mktemp -d).

citus_require() {
    PG_CONFIG=${PG_CONFIG:-pg_config}
    LIBDIR=$("$PG_CONFIG" --pkglibdir)
    if [[ ! -f $LIBDIR/citus.so ]]; then
        echo "$1: skipped: Citus is not installed ($LIBDIR/citus.so is absent)"
        exit 0
    fi
    BINDIR=$("$PG_CONFIG" --bindir)
    export PATH=$BINDIR:$PATH
    # shellcheck source=scripts/cluster.sh
    source "$(dirname -- "${BASH_SOURCE[0]}")/../../scripts/cluster.sh"
}

citus_cluster_start() {
    local base=${1%/} port=$2 i
    shift 2
    mkdir -p "$base/sock" || return 1
    chmod 0755 "$base" "$base/sock"
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres:postgres "$base/sock" || return 1
    fi
    for i in 0 1 2; do
        citus_node_start "$base" "$i" $((port + i)) "$@" || return 1
    done
    export PGHOST="$base/sock" PGPORT=$port PGUSER=postgres PGDATABASE=postgres
    export CITUS_PORTS="$port $((port + 1)) $((port + 2))"
    psql -X -q -At -v ON_ERROR_STOP=1 -p "$port" >/dev/null <<SQL || return 1
SELECT pg_catalog.citus_set_coordinator_host('$base/sock', $port);
SELECT pg_catalog.citus_add_node('$base/sock', $((port + 1)));
SELECT pg_catalog.citus_add_node('$base/sock', $((port + 2)));
SQL
}

citus_node_start() {
    local base=${1%/} i=$2 port=$3 host=${PGHOST:-} pgport=${PGPORT:-}
    shift 3
    # The later unix_socket_directories line wins over the one cluster_start writes.
    # No background reaper (test/citus/reaper.sh starts the workers'): the checks reap
    # and fire schedules when they mean to.
    cluster_start "$base/n$i" "$port" \
        "unix_socket_directories = '$base/sock'" \
        "citus.local_hostname = '$base/sock'" \
        "shared_preload_libraries = 'citus,pg_baton'" \
        "max_prepared_transactions = 50" \
        "shared_buffers = 64MB" \
        "max_connections = 100" \
        "citus.shard_count = 4" \
        "baton.reaper_databases = ''" \
        "log_min_messages = warning" "$@" || return 1
    # cluster_start exported its own socket and port: the caller's come back.
    export PGHOST=$host PGPORT=$pgport
    [[ -n $host ]] || unset PGHOST
    [[ -n $pgport ]] || unset PGPORT
    psql -X -q -v ON_ERROR_STOP=1 -h "$base/sock" -p "$port" -U postgres -d postgres \
        -c 'CREATE EXTENSION citus' >/dev/null
}

citus_cluster_stop() {
    local base=${1%/} i rc=0
    [[ -d $base ]] || return 0
    for i in 0 1 2 3; do
        [[ -d $base/n$i ]] && { cluster_stop "$base/n$i" || rc=1; }
    done
    ((rc == 0)) && rm -rf -- "$base"
    return $rc
}

# citus_free_ports PORT N: the first port from PORT on such that it and the N - 1 after
# it are all free (a cluster's nodes, and any extra server a check starts).
citus_free_ports() {
    local port=$1 n=$2 p0 i ok
    while :; do
        p0=$(cluster_free_port "$port") || return 1
        ok=1
        for ((i = 1; i < n; i++)); do
            [[ $(cluster_free_port $((p0 + i))) == $((p0 + i)) ]] || { ok=0; break; }
        done
        ((ok)) && { echo "$p0"; return 0; }
        port=$((p0 + 1))
    done
}

citus_suite_start() {
    local name=$1
    p0=$(citus_free_ports "$2" 3) || { echo "$name: no free port"; echo "0 passed, 1 failed"; exit 1; }
    shift 2
    BASE=$(mktemp -d "/tmp/pg_baton-$name.XXXXXX")
    chmod 0755 "$BASE"
    trap citus_suite_stop EXIT
    if ! citus_cluster_start "$BASE/c" "$p0" "$@" >"$BASE/start.log" 2>&1; then
        cat "$BASE/start.log"
        echo "$name: the cluster did not start"
        echo "0 passed, 1 failed"
        exit 1
    fi
}

citus_suite_stop() {
    citus_cluster_stop "$BASE/c" >/dev/null 2>&1
    rm -rf -- "$BASE"
}

PASS=0
FAIL=0
check() {
    if [[ $2 == "$3" ]]; then PASS=$((PASS + 1)); echo "ok   - $1"; else FAIL=$((FAIL + 1)); echo "FAIL - $1 (expected '$2', got '$3')"; fi
}
q() { psql -X -q -At "$@"; }
# driver_counts NAME FILE: a Python driver's output FILE printed but for its count line,
# whose counts are added to PASS and FAIL (one failure when it printed none).
driver_counts() {
    local count
    grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$2"
    count=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$2" | tail -n 1)
    if [[ $count =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        PASS=$((PASS + BASH_REMATCH[1])) FAIL=$((FAIL + BASH_REMATCH[2]))
    else
        FAIL=$((FAIL + 1))
        echo "FAIL - $1 reported no count"
    fi
}
code() {
    local out
    out=$(psql -X -q -At -v VERBOSITY=sqlstate "$@" 2>&1 >/dev/null | sed -n 's/^ERROR:  //p' | head -n 1)
    echo "${out:-ok}"
}
