#!/usr/bin/env bash
# Growing and shrinking a distributed install: a three-node Citus cluster
# (test/citus/cluster.sh) with pg_baton created, distributed and holding rows of twelve
# tenants in every delivery status, then the procedures of docs/guide/scale-out.md ("Adding and
# removing workers"), each check printed as "ok" or "FAIL":
#
#   1. a fourth node added (citus_add_node): Citus creates pg_baton there; distribute()
#      again gives it an id range of its own;
#   2. the shards rebalanced onto it (rebalance_table_shards, block_writes): every row
#      unchanged; the tenants now on the new node served by delegated calls (enqueue with
#      an id of the new node's range, claim, finish), fenced there by direct SQL on the
#      shard, and reaped through the coordinator; ids unique across the cluster;
#   3. a worker drained (citus_drain_node) and removed (citus_remove_node): every row
#      unchanged, every tenant served, nothing placed on the removed node.
#
#   bash test/citus/grow.sh     (PG_CONFIG as for run.sh, as root; BATON_CITUS_PORT the
#                                first port tried, default 56960; uses four ports)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-grow

port=$(citus_free_ports "${BATON_CITUS_PORT:-56960}" 4) || { echo "citus-grow: no free port"; echo "0 passed, 1 failed"; exit 1; }
citus_suite_start citus-grow "$port"
NEW=$((p0 + 3))
[[ $(cluster_free_port "$NEW") == "$NEW" ]] || { echo "citus-grow: port $NEW is taken"; echo "0 passed, 1 failed"; exit 1; }
SOCK=$PGHOST

tenant() { printf '00000000-0000-0000-0960-%012d\n' "$1"; }
TENANTS=$(for i in $(seq 1 12); do tenant "$i"; done)

# Every delivery row, as one digest: moves must change none.
ROWS="SELECT pg_catalog.md5(pg_catalog.string_agg(d::text, ',' ORDER BY d.tenant, d.id)) FROM baton.deliveries d"
# The port of the node that holds a tenant's rows.
node_of() {
    q -c "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
          WHERE p.shardid = pg_catalog.get_shard_id_for_distribution_column('baton.deliveries', '$1'::uuid)"
}
# The name of the shard of baton.deliveries that holds a tenant's rows.
shard_of() {
    q -c "SELECT pg_catalog.format('baton.deliveries_%s', pg_catalog.get_shard_id_for_distribution_column('baton.deliveries', '$1'::uuid))"
}
# One delegated enqueue, claim and finish of each tenant given: "ok" or the first error.
serve() {
    local t out=ok
    for t in "$@"; do
        code -v ON_ERROR_STOP=1 <<SQL | grep -qx ok || out="tenant $t refused"
SELECT baton.enqueue('$t', 'grow', 'serve-$RANDOM-$RANDOM');
SELECT id AS id, generation AS g FROM baton.claim('$t', 'grow', '1 minute') LIMIT 1 \gset
SELECT baton.finish('$t', :id, :g);
SQL
    done
    echo "$out"
}

# --- rows of twelve tenants in every status ------------------------------------------
q -v ON_ERROR_STOP=1 >/dev/null <<SQL || { echo "citus-grow: setup failed"; echo "0 passed, 1 failed"; exit 1; }
CREATE EXTENSION pg_baton;
SELECT baton.distribute();
SQL
for t in $TENANTS; do
    q -v ON_ERROR_STOP=1 >/dev/null <<SQL || { echo "citus-grow: rows of $t failed"; echo "0 passed, 1 failed"; exit 1; }
SELECT baton.create_tenant('$t');
SELECT baton.enqueue('$t', 'w', 'k' || i) FROM generate_series(1, 6) i;
SELECT id AS a, generation AS ga FROM baton.claim('$t', 'w', '1 minute') LIMIT 1 \gset
SELECT baton.finish('$t', :a, :ga);
SELECT id AS b, generation AS gb FROM baton.claim('$t', 'w', '1 minute') LIMIT 1 \gset
SELECT baton.cancel_delivery('$t', (SELECT id FROM baton.deliveries WHERE tenant = '$t' AND dedup_key = 'k3'));
SELECT id AS c, generation AS gc FROM baton.claim('$t', 'w', '1 minute') LIMIT 1 \gset
SELECT baton.retry('$t', :c, :gc, 'again', '0 seconds');
SQL
done
before=$(q -c "$ROWS")
count_before=$(q -c "SELECT count(*) FROM baton.deliveries")
check "rows of twelve tenants in several statuses" "t" \
    "$(q -c "SELECT count(DISTINCT status) >= 4 AND count(*) = 72 FROM baton.deliveries")"

# --- 1. a fourth node -----------------------------------------------------------------
if ! citus_node_start "$BASE/c" 3 "$NEW" >"$BASE/n3.log" 2>&1; then
    cat "$BASE/n3.log"
    echo "citus-grow: the fourth node did not start"; echo "$PASS passed, $((FAIL + 1)) failed"; exit 1
fi
check "citus_add_node of a fourth node" "ok" "$(code -c "SELECT pg_catalog.citus_add_node('$SOCK', $NEW)")"
check "Citus created pg_baton on the new node, at the coordinator's version" \
    "$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")" \
    "$(q -p "$NEW" -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"
check "distribute() again" "ok" "$(code -c "SELECT baton.distribute()")"
group=$(q -c "SELECT groupid FROM pg_dist_node WHERE nodeport = $NEW")
check "the new node's id sequences start in its own range (group $group << 48)" "2" \
    "$(q -p "$NEW" -c "SELECT count(*) FROM pg_sequences WHERE schemaname = 'baton'
        AND sequencename IN ('deliveries_id_seq', 'entry_id_seq')
        AND pg_catalog.nextval(pg_catalog.format('baton.%I', sequencename)) >= ($group::int8 << 48)")"

# --- 2. rebalanced onto it ------------------------------------------------------------
check "rebalance_table_shards (block_writes)" "ok" \
    "$(code -c "SELECT pg_catalog.rebalance_table_shards(shard_transfer_mode => 'block_writes')")"
check "the new node holds shards of baton.deliveries" "t" \
    "$(q -c "SELECT count(*) > 0 FROM pg_dist_placement p JOIN pg_dist_shard s USING (shardid)
        WHERE p.groupid = $group AND s.logicalrelid = 'baton.deliveries'::regclass")"
check "every row unchanged by the rebalance" "$before" "$(q -c "$ROWS")"
moved=""
for t in $TENANTS; do [[ $(node_of "$t") == "$NEW" ]] && moved="$moved $t"; done
m=$(awk '{print $1}' <<<"$moved")
check "some tenants now live on the new node" "t" "$([[ -n $m ]] && echo t || echo f)"
check "each tenant on the new node is served (delegated enqueue, claim, finish)" "ok" "$(serve $moved)"
check "a delegated enqueue there takes an id of the new node's range" "$group" \
    "$(($(q -c "SELECT baton.enqueue('$m', 'grow', 'range-probe')") >> 48))"
check "direct SQL on the new node's shard of a tenant fenced through the coordinator is refused (DU002)" "DU002" \
    "$(code -c "SELECT baton.set_tenant_state('$m', 'fenced')" \
        -c "INSERT INTO $(shard_of "$m") (tenant, target, dedup_key) VALUES ('$m', 'w', 'fenced-probe')" -p "$NEW")"
q -c "SELECT baton.set_tenant_state('$m', 'active')" >/dev/null
q -c "UPDATE baton.deliveries SET lease_until = now() - interval '1 second' WHERE tenant = '$m' AND status = 'claimed'" >/dev/null
check "reap through the coordinator gives back the expired leases on the new node" "t 0" \
    "$(q -c "SELECT baton.reap() > 0") $(q -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$m' AND status = 'claimed'")"
check "ids unique across the cluster" "t" "$(q -c "SELECT count(*) = count(DISTINCT id) FROM baton.deliveries")"

# --- 3. a worker drained and removed --------------------------------------------------
after_grow=$(q -c "$ROWS")
OLD=$((p0 + 1))
check "citus_drain_node of the first worker (block_writes)" "ok" \
    "$(code -c "SELECT pg_catalog.citus_drain_node('$SOCK', $OLD, shard_transfer_mode => 'block_writes')")"
check "citus_remove_node of the drained worker" "ok" "$(code -c "SELECT pg_catalog.citus_remove_node('$SOCK', $OLD)")"
check "nothing placed on the removed worker" "0" \
    "$(q -c "SELECT count(*) FROM pg_dist_placement p WHERE p.groupid NOT IN (SELECT groupid FROM pg_dist_node)")"
check "every row unchanged by the drain" "$after_grow" "$(q -c "$ROWS")"
# shellcheck disable=SC2086
check "every tenant is served after the drain" "ok" "$(serve $TENANTS)"
check "ids unique across the cluster after the drain" "t" "$(q -c "SELECT count(*) = count(DISTINCT id) FROM baton.deliveries")"
check "no row lost: the first rows are all there" "$count_before" \
    "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target = 'w'")"

for i in 0 1 2 3; do
    if grep -E "PANIC|server process .* was terminated by signal" "$BASE/c/n$i/log" >/dev/null 2>&1; then
        check "no backend crash in node $i's log" "none" "$(grep -E -m1 "PANIC|terminated by signal" "$BASE/c/n$i/log")"
    fi
done
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
