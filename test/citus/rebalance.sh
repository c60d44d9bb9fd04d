#!/usr/bin/env bash
# Rebalancing under load loses nothing: a three-node Citus cluster (test/citus/cluster.sh,
# eight shards per table, wal_level = logical) whose every node runs pg_baton's
# background reaper (the launcher's default, a short interval), pg_baton created and
# distributed, two tenants in every shard group, each with two schedules (@every 1 and
# 2 seconds) the reapers fire. Under the load of the fault suite (test/fault/clients.py
# as test/citus/fault.py runs it: producers with dedup keys, workers claiming, finishing
# and retrying, run workers driving a workflow, a reaper, an operator) through the
# coordinator (test/citus/rebalance.py):
#
#   1. a fourth node added (citus_add_node), distribute() again, citus_rebalance_start()
#      and citus_rebalance_wait(): the job finished, the new node holds shard groups;
#   2. the first worker drained (citus_drain_node, block_writes): it holds none;
#   3. it takes shards again and rebalance_table_shards() spreads them: every worker
#      holds some.
#
# Then, the load stopped: the fault suite's invariants I1..I10 against the clients'
# acknowledgement logs (nothing lost, nothing duplicated, generations never back, every
# finish by the claim's generation, no stale write accepted, no error the contract does
# not name outside the operations' windows), stage rows unique, ids unique across the
# cluster, every tenant's shard group on one node, a reaper on each of the four nodes,
# the tenants on the new node served, each schedule slot stored once and none skipped
# outside the operations' windows; here: every node reaches every node, no backend
# crash in any server log. Prints the throughput (deliveries finished per second)
# before, during and after the operations; asserts none of it.
#
#   bash test/citus/rebalance.sh    (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 56820, four ports;
#                                    BATON_CITUS_REBALANCE_LOAD_SECONDS the load before,
#                                    between and after the operations, default 6;
#                                    BATON_KEEP_LOGS=1 keeps the logs)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed". Run as root (or the clusters' owner), with Debian's
# /usr/bin/python3 and python3-psycopg.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-rebalance

PYTHON=/usr/bin/python3
if ! "$PYTHON" -c 'import psycopg' 2>/dev/null; then
    echo "citus-rebalance: $PYTHON cannot import psycopg (apt-get install python3-psycopg)"
    echo "0 passed, 1 failed"
    exit 1
fi
# Every node: the background reaper (the launcher's default, which cluster.sh turns
# off) with a short interval, logical decoding for the rebalancer's logical moves, and
# enough shard groups that a rebalance moves several.
conf=("baton.reaper_databases = '*'" "baton.reaper_interval = '200ms'" "wal_level = logical"
      "citus.shard_count = 8")
port=$(citus_free_ports "${BATON_CITUS_PORT:-56820}" 4) || { echo "citus-rebalance: no free port"; echo "0 passed, 1 failed"; exit 1; }
citus_suite_start citus-rebalance "$port" "${conf[@]}"
NEW=$((p0 + 3))
if [[ $(cluster_free_port "$NEW") != "$NEW" ]] || ! citus_node_start "$BASE/c" 3 "$NEW" "${conf[@]}" >"$BASE/n3.log" 2>&1; then
    cat "$BASE/n3.log" 2>/dev/null
    echo "citus-rebalance: the fourth node did not start on port $NEW"
    echo "0 passed, 1 failed"
    exit 1
fi
q -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" -c "CREATE EXTENSION pg_baton" \
    -c "SELECT baton.distribute()" >/dev/null ||
    { echo "citus-rebalance: CREATE EXTENSION pg_baton or distribute() failed"; echo "0 passed, 1 failed"; exit 1; }

# --- the load, the operations, the invariants (rebalance.py) -----------------------------
export PYTHONDONTWRITEBYTECODE=1 CITUS_BASE="$BASE/c" CITUS_NEW_PORT=$NEW
"$PYTHON" "$ROOT/test/citus/rebalance.py" \
    --load-seconds "${BATON_CITUS_REBALANCE_LOAD_SECONDS:-6}" >"$BASE/driver.out" 2>&1
driver_counts rebalance.py "$BASE/driver.out"

# --- the nodes ---------------------------------------------------------------------------
check "citus_check_cluster_node_health: every node reaches every node" "0" \
    "$(q -c "SELECT count(*) FROM pg_catalog.citus_check_cluster_node_health() WHERE NOT coalesce(result, false)")"
for i in 0 1 2 3; do
    check "node $i: no backend killed by a signal, no PANIC (server log)" "0" \
        "$(grep -c -E 'terminated by signal|PANIC:' "$BASE/c/n$i/log")"
done
[[ ${BATON_KEEP_LOGS:-0} == 1 ]] && cp -r "$BASE/c" /tmp/pg_baton-citus-rebalance-cluster 2>/dev/null
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
