#!/usr/bin/env bash
# No query crashes a node: on a three-node Citus cluster (test/citus/cluster.sh) with
# pg_baton created and distributed, every function of schema baton is called in every
# shape of test/sweep/calls.sql (alone, in FROM, in a subquery, a scalar subquery, a
# CTE, LATERAL, a UNION, a prepared statement executed six times, a PL/pgSQL loop), in
# four passes at once, each with a tenant of its own:
#   - through the coordinator, each statement alone (the call alone is delegated to the
#     tenant's worker) and each inside BEGIN ... COMMIT (run on the coordinator);
#   - on a worker, alone with a tenant of the other worker (delegated there), and inside
#     BEGIN ... COMMIT with a tenant of its own.
# Each statement must answer or refuse with a SQLSTATE (refusals are fine); the caller
# then checks that no server log names a backend terminated by a signal.
# test/sweep/run.sh runs the same sweep on one server without Citus.
#
# test/citus/run.sh sources this file and calls
#   citus_sweep DIR COORDINATOR_PORT WORKER_PORT OTHER_WORKER_PORT
# on its cluster (pg_baton distributed), with its check(); DIR holds the passes' files.
# Run alone, it starts a cluster of its own, distributes pg_baton, sweeps and checks the
# nodes' logs:
#
#   bash test/citus/sweep.sh        (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 56780)
#
# Without Citus it then prints one line saying so and exits 0. The last line is
# "N passed, N failed".

citus_sweep() {
    local dir=$1 coordinator=$2 w1=$3 w2=$4 i start
    local root
    root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
    SWEEP_DIR=$dir
    # shellcheck source=test/sweep/sweep.sh
    source "$root/test/sweep/sweep.sh"
    sweep_prepare -p "$coordinator"
    # tenant_on PORT N: the Nth (from 0) of a fixed list of tenants whose shard is on PORT.
    tenant_on() {
        psql -X -q -At -p "$coordinator" -c "SELECT c.t FROM (SELECT ('00000000-0000-4000-8000-'
                || lpad(i::text, 12, '0'))::uuid AS t, i FROM generate_series(1, 200) i) c
              JOIN pg_dist_shard_placement p ON p.shardid = get_shard_id_for_distribution_column('baton.tenants', c.t)
             WHERE p.nodeport = $1 ORDER BY c.i LIMIT 1 OFFSET $2"
    }
    local passes=(
        "coordinator-alone $(tenant_on "$w1" 0) plain -p $coordinator"
        "coordinator-in-transaction $(tenant_on "$w2" 0) txn -p $coordinator"
        "worker-alone-other-workers-tenant $(tenant_on "$w2" 1) plain -p $w1"
        "worker-in-transaction-own-tenant $(tenant_on "$w1" 1) txn -p $w1"
    )
    start=$(date +%s)
    for i in "${!passes[@]}"; do
        # shellcheck disable=SC2086
        (PASS=0 FAIL=0 sweep_pass ${passes[$i]}) >"$dir/pass-$i.log" 2>&1 &
    done
    wait
    for i in "${!passes[@]}"; do
        cat "$dir/pass-$i.log"
        PASS=$((PASS + $(grep -c '^ok' "$dir/pass-$i.log")))
        FAIL=$((FAIL + $(grep -c '^FAIL' "$dir/pass-$i.log")))
    done
    echo "     the sweep's four passes took $(($(date +%s) - start)) s"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    set -uo pipefail
    ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
    # shellcheck source=test/citus/cluster.sh
    source "$ROOT/test/citus/cluster.sh"
    citus_require citus-sweep
    citus_suite_start citus-sweep "${BATON_CITUS_PORT:-56780}"
    q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" >/dev/null
    citus_sweep "$BASE" "$p0" $((p0 + 1)) $((p0 + 2))
    sweep_logs "$BASE/c/n0/log" "$BASE/c/n1/log" "$BASE/c/n2/log"
    echo "$PASS passed, $FAIL failed"
    ((FAIL == 0))
fi
