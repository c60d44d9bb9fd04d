#!/usr/bin/env bash
# fire_schedules with many schedules of which few are due.   bash bench/schedules.sh
#
# One throwaway cluster (pg_baton preloaded, its background reaper off, fsync on), two
# databases measured alternately in the same run:
#
#   many    10,000 schedules ('@daily'), 100 of them made due before each call
#   few        100 schedules, all 100 made due before each call
#
# Each call is one transaction of baton.fire_schedules(1000) fed 100 due slots; the
# time is the server's (clock_timestamp() around the call). If the due rows are found
# by the index on next_fire_at without reading the others, a call costs the same in
# both: the ratio many / few is about 1. The plan of the due-row query, as the function
# runs it (the generic plan), is printed with its buffers.
#
# Options: --rounds N (default 5). Environment: BATON_BENCH_PORT (default 55520).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

die() {
    echo "schedules.sh: $*" >&2
    exit 2
}

ROUNDS=5
while (($# > 0)); do
    case $1 in
        --rounds) ROUNDS=${2:?--rounds N}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
TENANT=b0000000-0000-4000-8000-00000000bec6

CLUSTER=$(mktemp -d /tmp/pg_baton-bench-sched.XXXXXX)
# shellcheck disable=SC2317
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    cluster_stop "$CLUSTER" 2>/dev/null
    exit "$rc"
}
trap cleanup EXIT

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55520}") || die "no free port"
cluster_start "$CLUSTER" "$PORT" "shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''" \
    "fsync = on" "synchronous_commit = on" 2>/dev/null || die "could not start a cluster"
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

# setup DB N: pg_baton with N schedules of one tenant, none due.
setup() {
    q -c "CREATE DATABASE $1"
    q -d "$1" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$TENANT')" \
        -c "SELECT count(baton.schedule('$TENANT', 's' || i, 'bench', '@daily')) FROM generate_series(1, $2) i" \
        -c "VACUUM ANALYZE baton.schedule_rows" >/dev/null
}
# fire DB: 100 schedules made due (and the deliveries of the last round removed: the
# same slot would find its delivery there and not count), then one call; prints "fired ms".
fire() {
    q -d "$1" -c "DELETE FROM baton.deliveries" -c "UPDATE baton.schedule_rows SET next_fire_at = now() - interval '1 minute'
                  WHERE tenant = '$TENANT' AND name IN (SELECT 's' || i FROM generate_series(1, 100) i)" \
        -c "CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t" \
        -c "SELECT baton.fire_schedules(1000) || ' ' || round(extract(epoch FROM clock_timestamp() - (SELECT t FROM t0)) * 1000, 2)"
}

setup many 10000
setup few 100

echo "== fire_schedules: 100 due slots among 10,000 schedules and among 100 ($(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds)"
echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A MS
for ((r = 1; r <= ROUNDS; r++)); do
    order=(many few)
    ((r % 2 == 0)) && order=(few many)
    for db in "${order[@]}"; do
        read -r fired ms <<<"$(fire "$db")"
        ((fired == 100)) || die "$db fired $fired slots, not 100"
        MS[$db.$r]=$ms
    done
    echo "   round $r: many ${MS[many.$r]} ms, few ${MS[few.$r]} ms (100 slots each)"
done
ratios=() m="" f=""
for ((r = 1; r <= ROUNDS; r++)); do
    m+="${MS[many.$r]} " f+="${MS[few.$r]} "
    ratios+=("$(awk "BEGIN { printf \"%.2f\", ${MS[many.$r]} / ${MS[few.$r]} }")")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mm=$(median $m) fm=$(median $f)
echo
echo "   per due slot (median call / 100): many $(awk "BEGIN { printf \"%.3f\", $mm / 100 }") ms, few $(awk "BEGIN { printf \"%.3f\", $fm / 100 }") ms"
echo "   many / few per round: ${ratios[*]} (median $(median "${ratios[@]}"))"
echo
echo "   the due-row query as fire_schedules runs it (generic plan), 100 of 10,000 due:"
q -d many -c "UPDATE baton.schedule_rows SET next_fire_at = now() - interval '1 minute'
              WHERE name IN (SELECT 's' || i FROM generate_series(1, 100) i)" \
    -c "SET plan_cache_mode = force_generic_plan" \
    -c "PREPARE due(int, timestamptz) AS SELECT s.tenant, s.name FROM baton.schedule_rows s
        JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) s.tenant
        WHERE t.state OPERATOR(pg_catalog.=) 'active' AND s.next_fire_at OPERATOR(pg_catalog.<=) \$2
        ORDER BY s.next_fire_at LIMIT \$1" \
    -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE due(1000, now())" | sed 's/^/     /'
echo "   load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
