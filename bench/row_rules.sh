#!/usr/bin/env bash
# What declarative CHECK constraints on baton.deliveries would cost.   bash bench/row_rules.sh
#
# The row rules of a delivery (status among the four, max_attempts at least 1) are held
# by the fence trigger (docs/internals/performance.md, "The row rules in the trigger"). This A/B puts
# the same rules back as CHECK constraints on top of the trigger and measures both
# forms in one throwaway cluster (pg_baton preloaded, fsync on), alternating, fresh
# tables for every measurement:
#
#   cycle     16 pgbench clients of bench/sql/baton_cycle.sql (claim; finish), items/s
#   batched   16 pgbench clients of bench/sql/baton_batch.sql (claim 50; finish_batch)
#   enqueue   bench/sql/baton_enqueue.sql: baton.enqueue_batch, 10,000 items a call
#
# "trigger" is the schema as installed; "check" adds deliveries_status_check and
# deliveries_max_attempts_check (bench/sql/check_constraints.sql; the trigger still checks too, so "check" is the cost of
# the constraints, a few hundred instructions of the trigger's check aside).
# Items are counted from the table (finished rows), never from pgbench's tps.
#
# Options: --rounds N (default 3), --seconds S (default 8).
# Environment: BATON_BENCH_PORT (first port to try, default 55510).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SQL="$ROOT/bench/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

die() {
    echo "row_rules.sh: $*" >&2
    exit 2
}

ROUNDS=3
SECONDS_=8
while (($# > 0)); do
    case $1 in
        --rounds) ROUNDS=${2:?--rounds N}; shift ;;
        --seconds) SECONDS_=${2:?--seconds S}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
BINDIR=$(_cluster_bindir) || die "no PostgreSQL server binaries"
TENANT=b0000000-0000-4000-8000-00000000bec5

CLUSTER=$(mktemp -d /tmp/pg_baton-bench-rules.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-rulesw.XXXXXX)
# shellcheck disable=SC2317
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    cluster_stop "$CLUSTER" 2>/dev/null
    rm -rf -- "$WORK"
    exit "$rc"
}
trap cleanup EXIT

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55510}") || die "no free port"
cluster_start "$CLUSTER" "$PORT" "shared_buffers = 512MB" "max_connections = 200" \
    "shared_preload_libraries = 'pg_baton'" "fsync = on" "synchronous_commit = on" 2>/dev/null \
    || die "could not start a cluster"
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE DATABASE rules"

# setup VARIANT ROWS: pg_baton afresh with ROWS pending deliveries; "check" then adds the
# constraints (validated over the rows, as an update script would).
setup() {
    q -d rules -v tenant="$TENANT" -v rows="$2" -f "$SQL/baton_setup.sql" >/dev/null 2>&1 || die "setup failed"
    if [[ $1 == check ]]; then
        q -d rules -f "$SQL/check_constraints.sql" >/dev/null
    fi
    q -d rules -c CHECKPOINT
}
finished() { q -d rules -c "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'"; }
pending() { q -d rules -c "SELECT count(*) FROM baton.deliveries WHERE status = 'pending'"; }

# drain VARIANT SCRIPT ROWS: items/s of 16 clients running SCRIPT for SECONDS_.
drain() {
    setup "$1" "$3"
    local t0 t1 n
    t0=$(date +%s.%N)
    "$BINDIR/pgbench" -n -M prepared -c 16 -j 2 -T "$SECONDS_" -D tenant="$TENANT" -D batch=50 \
        -f "$SQL/$2" rules >"$WORK/pgbench.log" 2>&1 || { cat "$WORK/pgbench.log" >&2; die "pgbench failed"; }
    t1=$(date +%s.%N)
    n=$(finished)
    (($(pending) > 0)) || echo "   (warning: the backlog ran out)" >&2
    awk "BEGIN { printf \"%.0f\", $n / ($t1 - $t0) }"
}

# enqueue VARIANT: items/s of baton.enqueue_batch, 200,000 items.
enqueue() {
    setup "$1" 0
    local t0 t1
    t0=$(date +%s.%N)
    q -d rules -v tenant="$TENANT" -v rows=200000 -v batch=10000 -f "$SQL/baton_enqueue.sql" >/dev/null
    t1=$(date +%s.%N)
    awk "BEGIN { printf \"%.0f\", 200000 / ($t1 - $t0) }"
}

echo "== row rules: fence trigger versus CHECK constraints ($(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds, ${SECONDS_} s)"
echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A R
for ((r = 1; r <= ROUNDS; r++)); do
    # Alternate which form goes first.
    order=(trigger check)
    ((r % 2 == 0)) && order=(check trigger)
    for v in "${order[@]}"; do
        R[$v.cycle.$r]=$(drain "$v" baton_cycle.sql 200000)
        R[$v.batch.$r]=$(drain "$v" baton_batch.sql 600000)
        R[$v.enqueue.$r]=$(enqueue "$v")
        echo "   round $r $v: cycle ${R[$v.cycle.$r]}, batched ${R[$v.batch.$r]}, enqueue_batch ${R[$v.enqueue.$r]} items/s"
    done
done
echo
printf '   %-10s %-30s %-30s %s\n' workload trigger check "check / trigger per round (median)"
for w in cycle batch enqueue; do
    t="" c="" ratios=()
    for ((r = 1; r <= ROUNDS; r++)); do
        t+="${R[trigger.$w.$r]} " c+="${R[check.$w.$r]} "
        ratios+=("$(awk "BEGIN { printf \"%.3f\", ${R[check.$w.$r]} / ${R[trigger.$w.$r]} }")")
    done
    med=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    printf '   %-10s %-30s %-30s %s (%s)\n' "$w" "$t" "$c" "${ratios[*]}" "$med"
done
echo "   load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
