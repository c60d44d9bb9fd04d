#!/usr/bin/env bash
# A call served from the worker's own shards as one server serves it
# (src/pg/citus/local_group.hpp), against Citus' path over the same shards, on a
# three-node Citus cluster (test/citus/cluster.sh) with pg_baton created and
# distributed. Each check is printed as "ok" or "FAIL":
#
#   1. the differential: one workload (local.sql: enqueue, enqueue_batch with dedup hits
#      and a key taken with another payload, claims single and batched, finish and its
#      refusals, finish_batch with a stale pair, renew, retry, cancel, redrive, a tenant
#      quiescing and its writes refused, claim with `expected`) runs for tenant A with
#      baton.direct_access on and for tenant B with it off, both connected to worker 1,
#      which holds both tenants' shards: every call answers alike (ids past each run's
#      first); every row of the two tenants in baton.deliveries, ready and leases is
#      alike; A's claims, finishes and batches of finishes fired the fence trigger on no
#      shard (the direct path on the shards), B's fired it (Citus' statements on the
#      shards); the steps without a direct path fired it alike; neither run logged a
#      warning;
#   2. the same calls inside BEGIN ... COMMIT take Citus' path (the trigger fires), and
#      the transaction's later statements see what they wrote;
#   3. amcheck on worker 1 (verify_heapam on every shard of pg_baton's tables,
#      bt_index_parent_check with heapallindexed on each of their btree indexes);
#   4. once A's shard group moves to worker 2 (citus_move_shard_placement), a claim made
#      on worker 2 takes the direct path there and one made on worker 1 still answers
#      (Citus delegates it to worker 2), and the rows stand alike there;
#   5. claim hints on the worker: a claim passes the dead index entries of the rows
#      claimed before it; a coordinator's transaction that writes on both workers
#      (two-phase commit) turns the target's hint off, and it starts again from the top.
#
#   bash test/citus/local.sh        (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 57080)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/test/citus
# shellcheck source=test/citus/cluster.sh
source "$HERE/cluster.sh"
citus_require citus-local

citus_suite_start citus-local "${BATON_CITUS_PORT:-57080}"
read -r COORD W1 W2 <<<"$CITUS_PORTS"
setup_failed() { echo "citus-local: $1"; echo "$PASS passed, $((FAIL + 1)) failed"; exit 1; }
show() { head -n 40 | cut -c1-300 | sed 's/^/    /'; }

q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" >"$BASE/setup.log" 2>&1 \
    || setup_failed "CREATE EXTENSION and distribute() failed: $(tail -n 3 "$BASE/setup.log")"

# node_of TENANT: the port of the node that holds the tenant's shard group.
node_of() {
    q -c "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
          WHERE p.shardid = get_shard_id_for_distribution_column('baton.tenants', '$1'::uuid)"
}
# Two tenants whose shards are on worker 1, in two shard groups where there are two.
TENANTS=()
for i in $(seq 1 64); do
    t=$(printf '00000000-0000-0000-0a0c-%012d' "$i")
    [[ $(node_of "$t") == "$W1" ]] && TENANTS+=("$t")
    ((${#TENANTS[@]} == 2)) && break
done
((${#TENANTS[@]} == 2)) || setup_failed "no two tenants found on worker 1"
A=${TENANTS[0]} B=${TENANTS[1]}
q -v ON_ERROR_STOP=1 -c "SELECT baton.create_tenant('$A'), baton.create_tenant('$B')" >/dev/null \
    || setup_failed "create_tenant failed"

# --- 1. the differential ----------------------------------------------------------------
run_workload() { # run_workload NAME TENANT SETTING
    psql -X -q -At -p "$W1" -v ON_ERROR_STOP=1 -v t="$2" -v direct="$3" -f "$HERE/local.sql" \
        >"$BASE/$1.steps" 2>"$BASE/$1.stderr"
    echo "$1 run (tenant $2, baton.direct_access = $3): $(wc -l <"$BASE/$1.steps") steps, psql exit $?"
}
run_workload local "$A" on
run_workload routed "$B" off

# A step's kind, label and answer, the tenant's id named T and a delivery's id in an
# error message N (the workload shows ids past its first one elsewhere).
answers() { cut -d'|' -f1,3- "$BASE/$1.steps" | sed -E "s/$2/T/g; s/delivery [0-9]+/delivery N/g"; }
steps=$(wc -l <"$BASE/routed.steps")
if ((steps >= 20)) && diff <(answers local "$A") <(answers routed "$B") >"$BASE/answers.diff"; then
    check "every call answered alike ($steps steps)" t t
else
    check "every call answered alike ($steps steps; < local, > routed)" same differ
    show <"$BASE/answers.diff"
fi
check "the workload's refusals are those it asks for (a key taken, a stale finish, two writes while quiescing)" \
    "error DU009 error DU001 error DU002 error DU002" "$(grep -o 'error [0-9A-Z]*' "$BASE/local.steps" | xargs)"
fired() { awk -F'|' -v kind="$2" '$1 == kind {n += $2} END {print n + 0}' "$BASE/$1.steps"; }
local_fired=$(fired local direct) routed_fired=$(fired routed direct)
check "the claims, finishes and batches: served from the shards in A's run (the fence trigger fired $local_fired times), through Citus' statements in B's (fired $routed_fired times)" \
    "0 t" "$local_fired $( ((routed_fired > 0)) && echo t || echo f)"
check "the steps without a direct path (kind sql) fired the fence trigger alike in both runs" \
    "$(awk -F'|' '$1 == "sql" {print $2}' "$BASE/routed.steps" | xargs)" \
    "$(awk -F'|' '$1 == "sql" {print $2}' "$BASE/local.steps" | xargs)"
for run in local routed; do
    check "the $run run logged no warning" "" "$(head -c 300 "$BASE/$run.stderr")"
done

# rows NODE TENANT: the tenant's rows of deliveries, ready and leases, ids past its first
# less one, times as whether they are set.
rows() {
    q -p "$1" -c "
      WITH b AS (SELECT min(id) - 1 AS base FROM baton.deliveries WHERE tenant = '$2')
      SELECT 'deliveries', id - base, target, dedup_key, status, generation, attempts, priority, max_attempts,
             payload, result, lease_until IS NULL, settled_at IS NULL, run_after > now()
        FROM baton.deliveries, b WHERE tenant = '$2'
      UNION ALL
      SELECT 'ready', id - base, target, rank::text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
        FROM baton.ready, b WHERE tenant = '$2'
      UNION ALL
      SELECT 'leases', id - base, NULL, NULL, NULL, generation, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
        FROM baton.leases, b WHERE tenant = '$2'
      ORDER BY 1, 2"
}
rows "$COORD" "$A" >"$BASE/local.rows"
rows "$COORD" "$B" >"$BASE/routed.rows"
if [[ -s $BASE/routed.rows ]] && diff "$BASE/local.rows" "$BASE/routed.rows" >"$BASE/rows.diff"; then
    check "every row of the two tenants alike ($(awk -F'|' '{n[$1]++} END {for (t in n) printf "%s=%d ", t, n[t]}' "$BASE/routed.rows"| xargs))" t t
else
    check "every row of the two tenants alike (< A, > B)" same differ
    show <"$BASE/rows.diff"
fi
# The comparison can fail: A's rows with one status changed.
sed '0,/|finished|/s//|finishedX|/' "$BASE/local.rows" >"$BASE/changed.rows"
check "the row comparison tells a changed status" differ \
    "$(cmp -s "$BASE/changed.rows" "$BASE/routed.rows" && echo same || echo differ)"

# --- 2. inside a transaction block ----------------------------------------------------------
block=$(psql -X -q -At -p "$W1" -v ON_ERROR_STOP=1 2>&1 <<SQL
SET track_functions = 'all';
BEGIN;
SELECT count(*) FROM baton.enqueue_batch('$A', '[{"target": "blk", "dedup_key": "b1"}, {"target": "blk", "dedup_key": "b2"}]');
SELECT count(*) FROM baton.claim('$A', 'blk', '1 minute', 2);
SELECT count(*) FROM baton.deliveries WHERE tenant = '$A' AND target = 'blk' AND status = 'claimed';
SELECT coalesce(sum(calls), 0) > 0 FROM pg_stat_xact_user_functions WHERE schemaname = 'baton' AND funcname = 'fence_row';
COMMIT;
SQL
)
check "inside BEGIN ... COMMIT: Citus' path (the fence trigger fires), and the block's later statement sees the claims" \
    "2 2 2 t" "$(echo "$block" | xargs)"

# --- 3. amcheck on worker 1 ------------------------------------------------------------------
q -c "CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null 2>&1  # on every node
SHARDS="SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind = 'r'
        AND c.relname ~ '_[0-9]+\$'"
amcheck=$(PGOPTIONS="-c citus.override_table_visibility=off" q -p "$W1" -c "
  SELECT count(*) FILTER (WHERE v.msg IS NOT NULL) FROM ($SHARDS) s LEFT JOIN LATERAL verify_heapam(s.oid, check_toast => true) v ON true" 2>&1)
indexes=$(PGOPTIONS="-c citus.override_table_visibility=off" q -p "$W1" -c "
  SELECT count(*) FROM (SELECT bt_index_parent_check(i.indexrelid, heapallindexed => true) FROM pg_index i
    JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am a ON a.oid = ic.relam AND a.amname = 'btree'
   WHERE i.indrelid IN ($SHARDS)) checked" 2>&1)
check "amcheck on worker 1: no heap problem in pg_baton's shards, their btree indexes checked ($indexes)" \
    "0 t" "$amcheck $( [[ $indexes =~ ^[0-9]+$ ]] && ((indexes > 20)) && echo t || echo "f ($indexes)")"

# --- 4. after a move -------------------------------------------------------------------------
shard=$(q -c "SELECT get_shard_id_for_distribution_column('baton.tenants', '$A'::uuid)")
q -c "SELECT citus_move_shard_placement($shard, '$PGHOST', $W1, '$PGHOST', $W2, shard_transfer_mode => 'block_writes')" \
    >"$BASE/move.log" 2>&1 || setup_failed "the move failed: $(tail -n 3 "$BASE/move.log")"
check "A's shard group is on worker 2" "$W2" "$(node_of "$A")"
q -c "SELECT count(*) FROM baton.enqueue_batch('$A', pg_catalog.jsonb_build_array(
        '{\"target\": \"mv\", \"dedup_key\": \"m1\"}'::jsonb, '{\"target\": \"mv\", \"dedup_key\": \"m2\"}'::jsonb))" >/dev/null
claim_on() { # claim_on PORT: one claim of A's target mv and its finish, and the fence trigger's calls
    psql -X -q -At -p "$1" -v ON_ERROR_STOP=1 2>&1 <<SQL
SET track_functions = 'all';
SET citus.enable_ddl_propagation = off;
CREATE FUNCTION pg_temp.cycle() RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE
  n bigint;
  fired bigint;
BEGIN
  SELECT count(baton.finish('$A', c.id, c.generation)) INTO n FROM baton.claim('$A', 'mv', '1 minute') c;
  SELECT coalesce(sum(calls), 0) INTO fired FROM pg_stat_xact_user_functions
   WHERE schemaname = 'baton' AND funcname = 'fence_row';
  RETURN n || ' ' || fired;
END \$\$;
SELECT pg_temp.cycle();
SQL
}
check "a claim and its finish on worker 2, which now holds A: the direct path there" "1 0" "$(claim_on "$W2")"
check "the same on worker 1, which no longer does: answered (Citus' path)" "1" "$(claim_on "$W1" | cut -d' ' -f1)"
check "A's rows after the move: both finished, no lease or ready row left" "finished 2 0 0" \
    "$(q -c "SELECT max(status) || ' ' || count(*) || ' ' ||
                    (SELECT count(*) FROM baton.leases WHERE tenant = '$A' AND id IN (SELECT id FROM baton.deliveries WHERE tenant = '$A' AND target = 'mv')) || ' ' ||
                    (SELECT count(*) FROM baton.ready WHERE tenant = '$A' AND target = 'mv')
             FROM baton.deliveries WHERE tenant = '$A' AND target = 'mv'")"

# --- 5. claim hints on the worker -------------------------------------------------------------
# B's claims on worker 1 start past the rows claimed before them: with a transaction
# holding the horizon, 1,000 claimed and finished rows leave their dead entries in B's
# shard of ready_pkey, which a claim from the top reads again and a hinted one skips
# (idx_tup_read of that index, each claim a connection of its own, whose statistics
# reach the shared ones when it ends). A coordinator's transaction that writes B's
# target and A's (now on worker 2) commits by two-phase commit, which turns B's hint off
# on worker 1 (the rows change at COMMIT PREPARED); once no prepared transaction
# remains, the hint starts again from the top (test/hints/run.sh checks the rest on one
# server).
READY_INDEX=$(q -c "SELECT 'ready_pkey_' || get_shard_id_for_distribution_column('baton.ready', '$B'::uuid)")
reads() { PGOPTIONS="-c citus.override_table_visibility=off" q -p "$W1" -c "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = '$READY_INDEX'"; }
# claim_read: one claim of B's target h on worker 1 and its finish: the dedup key it got
# and the index entries it read.
claim_read() {
    local before key
    before=$(reads)
    key=$(q -p "$W1" -c "SELECT c.dedup_key || ' ' || baton.finish('$B', c.id, c.generation) FROM baton.claim('$B', 'h', '1 minute') c")
    echo "${key% *} $(($(reads) - before))"
}
q -c "SELECT count(*) FROM baton.enqueue_batch('$B', (SELECT jsonb_agg(jsonb_build_object('target', 'h', 'dedup_key', 'h' || g) ORDER BY g)
      FROM generate_series(1, 1200) g))" >/dev/null
q -p "$W1" -c "BEGIN" -c "SELECT txid_current()" -c "SELECT pg_sleep(20)" -c "COMMIT" >/dev/null 2>&1 &
HOLDER=$!
sleep 0.5
for i in $(seq 1 10); do
    q -p "$W1" -c "SELECT count(*) FROM (SELECT baton.finish_batch('$B', array_agg(id), array_agg(generation))
                                          FROM baton.claim('$B', 'h', '1 minute', 100)) f" >/dev/null
done
read -r key n < <(claim_read)
check "a claim past 1,000 rows claimed under a held horizon: the next row, its hint past their dead entries (read $n)" \
    "h1001 t" "$key $( ((n < 100)) && echo t || echo f)"
q -c "BEGIN" -c "SELECT baton.enqueue('$A', 'x', 'two-phase') > 0" -c "SELECT baton.enqueue('$B', 'h', 'urgent', priority => 5) > 0" \
    -c "COMMIT" >/dev/null
sleep 1.1  # the hint looks for prepared transactions once a second at most
read -r key1 n1 < <(claim_read)
read -r key2 n2 < <(claim_read)
read -r key3 n3 < <(claim_read)
check "after the coordinator's two-phase commit: its row first, then a claim from the top ($n2 entries), then the hint again ($n3)" \
    "urgent h1002 t h1003 t" "$key1 $key2 $( ((n2 >= 1000)) && echo t || echo f) $key3 $( ((n3 < 100)) && echo t || echo f)"
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
