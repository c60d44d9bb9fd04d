#!/usr/bin/env bash
# Enqueue-to-claim latency of a worker woken by its wake-up, one server against a Citus
# cluster.                                               bash bench/citus_wakeup.sh [COUNT]
#
# Needs pg_baton and Citus installed for PG_CONFIG's server, and Debian's python3-psycopg.
# In one run: a throwaway server (scripts/cluster.sh) and a three-node Citus cluster
# (test/citus/cluster.sh) with the launcher serving every database (the reaper's process
# relays the wake-ups between the nodes, src/pg/workers/relay.hpp). bench/citus_wakeup.py
# on each: a worker LISTENs, a producer enqueues COUNT items (default 200) one at a time,
# the worker claims on each notification; latency from the enqueue to the claim's
# return. On Citus: both on the coordinator (the enqueue delegated to the tenant's
# worker, its wake-up relayed back), and the worker on the coordinator with the producer
# on the worker that does not hold the tenant. Prints median, p90, p99 and max (ms) of
# each and the ratios of the medians to one server's.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
COUNT=${1:-200}
PG_CONFIG=${PG_CONFIG:-pg_config}
[[ -f $("$PG_CONFIG" --pkglibdir)/citus.so ]] || { echo "citus_wakeup.sh: Citus is not installed" >&2; exit 2; }
export PATH=$("$PG_CONFIG" --bindir):$PATH
T=b0000000-0000-4000-8000-00000000a7e1
ONE=$(mktemp -d /tmp/pg_baton-bench-wk1.XXXXXX)
BASE=$(mktemp -d /tmp/pg_baton-bench-wkc.XXXXXX)
chmod 0755 "$ONE" "$BASE"
cleanup() {
    cluster_stop "$ONE" >/dev/null 2>&1 || true
    citus_cluster_stop "$BASE/c" >/dev/null 2>&1 || true
    rm -rf -- "$ONE" "$BASE"
}
trap cleanup EXIT

p=$(cluster_free_port "${BATON_BENCH_PORT:-55560}")
cluster_start "$ONE" "$p" "shared_preload_libraries = 'pg_baton'" >/dev/null
psql -X -q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" >/dev/null
one=$(/usr/bin/python3 "$ROOT/bench/citus_wakeup.py" "$PGHOST" "$p" "$T" "$COUNT" one-server)
cluster_stop "$ONE" >/dev/null

p0=$(citus_free_ports $((p + 1)) 3)
citus_cluster_start "$BASE/c" "$p0" "baton.reaper_databases = '*'" >/dev/null
read -r -a P <<<"$CITUS_PORTS"
psql -X -q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" -c "SELECT baton.create_tenant('$T')" >/dev/null
home=$(psql -X -At -c "SELECT nodeport FROM pg_dist_shard_placement
                      WHERE shardid = get_shard_id_for_distribution_column('baton.tenants', '$T'::uuid)")
other=${P[1]}
[[ $other == "$home" ]] && other=${P[2]}
# The relays connected: each node has the two others' sessions.
for _ in $(seq 1 100); do
    n=$(for q in "${P[@]}"; do psql -X -At -p "$q" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_baton relay'"; done | paste -sd' ')
    [[ $n == "2 2 2" ]] && break
    sleep 0.2
done
coord=$(/usr/bin/python3 "$ROOT/bench/citus_wakeup.py" "$PGHOST" "${P[0]}" "$T" "$COUNT" citus-coordinator)
relayed=$(/usr/bin/python3 "$ROOT/bench/citus_wakeup.py" "$PGHOST" "${P[0]}" "$T" "$COUNT" citus-from-other-worker "$other")

echo "# enqueue-to-claim latency (ms), $COUNT items each: label median p90 p99 max"
printf '%s\n' "$one" "$coord" "$relayed"
m1=$(awk '{print $2}' <<<"$one")
for line in "$coord" "$relayed"; do
    awk -v m1="$m1" '{printf "# %s: median %.1fx one server'"'"'s\n", $1, $2 / m1}' <<<"$line"
done
