#!/usr/bin/env bash
# The cost of delegation on Citus.      bash bench/citus.sh [--rounds N] [--seconds S]
#
# One unbatched cycle (bench/sql/baton_cycle.sql: baton.claim, then baton.finish, each a
# statement and a transaction of its own) by pgbench clients of one tenant, three ways:
#
#   delegated  through the coordinator of a three-node cluster (test/citus/cluster.sh,
#              distributed with baton.distribute()): each call alone, so Citus delegates
#              it to the worker that holds the tenant (a coordinator backend, then a
#              round trip to the worker over the connection it keeps to it);
#   worker     the same calls made on that worker, connected to it directly (the call
#              runs there, on its local shards, no coordinator in the path);
#   single     one server without Citus (pg_baton alone) with the nodes' settings.
#
# at 1 and 8 clients. Every round runs each way in turn (the order rotating from round
# to round, because the machine is shared and noisy), on the same backlog for delegated
# and worker (the tenant's rows, topped up and vacuumed before each measurement).
# Items are counted from the tables (finished rows, after minus before), never from
# pgbench's transaction counts; the time is pgbench's measured interval (transactions /
# tps, without connection set-up). The table shows the median of the rounds and each
# ratio is the median of the per-round ratios. All four servers share this machine's
# cores: a worker's figures here include a coordinator competing with it for the CPU.
#
# With --synchronous-commit off every server acknowledges a commit before its WAL is
# flushed: the figures then show the calls' CPU and round trips rather than the disk.
#
# Needs Citus in the server pg_baton is installed into ($(pg_config --pkglibdir)/citus.so)
# and pg_baton installed (`make install`); it builds nothing. Not part of the tests.
# Options: --rounds N (default 3), --seconds S (default 8), --synchronous-commit on|off
# (default on).
# Environment: PG_CONFIG, BATON_BENCH_PORT (first of four consecutive ports, default 55540).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SQL="$ROOT/bench/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source-path=SCRIPTDIR/.. source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"

die() {
    echo "citus.sh: $*" >&2
    exit 2
}

ROUNDS=3
SECONDS_=8
SYNC=on
while (($# > 0)); do
    case $1 in
        --rounds) ROUNDS=${2:?--rounds N}; shift ;;
        --seconds) SECONDS_=${2:?--seconds S}; shift ;;
        --synchronous-commit) SYNC=${2:?--synchronous-commit on|off}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $SECONDS_ =~ ^[1-9][0-9]*$ ]] || die "--rounds and --seconds take positive integers"
[[ $SYNC == on || $SYNC == off ]] || die "--synchronous-commit takes on or off"
PG_CONFIG=${PG_CONFIG:-pg_config}
[[ -f $("$PG_CONFIG" --pkglibdir)/citus.so ]] || die "Citus is not installed ($("$PG_CONFIG" --pkglibdir)/citus.so is absent)"
BINDIR=$("$PG_CONFIG" --bindir)
export PATH=$BINDIR:$PATH
TENANT=b0000000-0000-4000-8000-00000000bec6
CLIENTS_LIST=(1 8)
TOP_UP=100000  # rows added when fewer than half as many are pending

p0=$(citus_free_ports "${BATON_BENCH_PORT:-55540}" 4) || die "no free port"
BASE=$(mktemp -d /tmp/pg_baton-bench-citus.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-citusw.XXXXXX)
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    citus_cluster_stop "$BASE/c" >/dev/null 2>&1
    cluster_stop "$BASE/single" >/dev/null 2>&1
    rm -rf -- "$BASE" "$WORK"
    exit "$rc"
}
trap cleanup EXIT
chmod 0755 "$BASE"
citus_cluster_start "$BASE/c" "$p0" >"$WORK/start.log" 2>&1 || { cat "$WORK/start.log" >&2; die "the cluster did not start"; }
# The single node: the settings citus_cluster_start gives its nodes, without Citus.
cluster_start "$BASE/single" $((p0 + 3)) "unix_socket_directories = '$BASE/c/sock'" \
    "shared_preload_libraries = 'pg_baton'" "shared_buffers = 64MB" "max_connections = 100" \
    >>"$WORK/start.log" 2>&1 || { cat "$WORK/start.log" >&2; die "the single node did not start"; }
export PGHOST=$BASE/c/sock
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
COORD=$p0 SINGLE=$((p0 + 3))
for p in $COORD $((p0 + 1)) $((p0 + 2)) $SINGLE; do
    q -p "$p" -c "ALTER SYSTEM SET synchronous_commit = $SYNC" -c "SELECT pg_reload_conf()" >/dev/null
done
q -p "$COORD" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" -c "SELECT baton.create_tenant('$TENANT')" >/dev/null
q -p "$SINGLE" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$TENANT')" >/dev/null
WORKER=$(q -p "$COORD" -c "SELECT p.nodeport FROM pg_dist_shard_placement p WHERE p.shardid = get_shard_id_for_distribution_column('baton.tenants', '$TENANT'::uuid)")
# Where each way connects, and which server holds its rows.
declare -A PORT=([delegated]=$COORD [worker]=$WORKER [single]=$SINGLE)
declare -A DATA=([delegated]=$COORD [worker]=$COORD [single]=$SINGLE)

count() { q -p "${DATA[$1]}" -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$TENANT' AND status = '$2'"; }

# prepare WAY: the backlog topped up (as superuser, through the fence triggers; on Citus
# through the coordinator, routed to the tenant's shard), vacuumed, a checkpoint.
prepare() {
    local port=${DATA[$1]} pending
    pending=$(count "$1" pending)
    if ((pending < TOP_UP / 2)); then
        q -p "$port" -c "INSERT INTO baton.deliveries (tenant, target, dedup_key) SELECT '$TENANT', 'bench', 'k' || g || '-' || clock_timestamp() FROM generate_series(1, $TOP_UP) g" >/dev/null
    fi
    q -p "$port" -c "VACUUM ANALYZE baton.deliveries" >/dev/null
    for p in $COORD $WORKER $SINGLE; do q -p "$p" -c CHECKPOINT >/dev/null; done
}

# measure WAY CLIENTS: items/s of CLIENTS pgbench clients running the cycle for SECONDS_.
measure() {
    local before after tx tps
    prepare "$1"
    before=$(count "$1" finished)
    pgbench -n -M prepared -c "$2" -j $(($2 < 2 ? $2 : 2)) -T "$SECONDS_" -D tenant="$TENANT" \
        -h "$PGHOST" -p "${PORT[$1]}" -f "$SQL/baton_cycle.sql" postgres >"$WORK/pgbench.log" 2>&1 \
        || { cat "$WORK/pgbench.log" >&2; die "pgbench failed ($1, $2 clients)"; }
    after=$(count "$1" finished)
    tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.log")
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/pgbench.log")
    [[ -n $tx && -n $tps ]] || { cat "$WORK/pgbench.log" >&2; die "could not read pgbench's output"; }
    awk "BEGIN { printf \"%.0f\", ($after - $before) / ($tx / $tps) }"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

WAYS=(delegated worker single)
echo "== the cost of delegation ($(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds, ${SECONDS_} s each, synchronous_commit $SYNC)"
echo "   claim + finish cycle, one tenant; coordinator :$COORD, the tenant's worker :$WORKER, single node :$SINGLE"
echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A R
for ((r = 1; r <= ROUNDS; r++)); do
    order=("${WAYS[@]:$(((r - 1) % 3))}" "${WAYS[@]:0:$(((r - 1) % 3))}")
    for c in "${CLIENTS_LIST[@]}"; do
        line=""
        for w in "${order[@]}"; do
            R[$w.$c.$r]=$(measure "$w" "$c")
            line+=" $w ${R[$w.$c.$r]}"
        done
        echo "   round $r, $c client(s):$line items/s"
    done
done
echo
printf '   %-8s %-10s %-10s %-10s %-18s %-18s %s\n' clients delegated worker single delegated/worker delegated/single worker/single
for c in "${CLIENTS_LIST[@]}"; do
    cells=()
    for w in "${WAYS[@]}"; do
        cells+=("$(for ((r = 1; r <= ROUNDS; r++)); do echo "${R[$w.$c.$r]}"; done | median)")
    done
    ratios=()
    for pair in delegated/worker delegated/single worker/single; do
        a=${pair%/*} b=${pair#*/}
        ratios+=("$(for ((r = 1; r <= ROUNDS; r++)); do
            awk "BEGIN { printf \"%.3f\n\", ${R[$a.$c.$r]} / ${R[$b.$c.$r]} }"
        done | median)")
    done
    printf '   %-8s %-10s %-10s %-10s %-18s %-18s %s\n' "$c" "${cells[@]}" "${ratios[@]}"
done
echo "   load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
