#!/usr/bin/env bash
# Upgrading and removing pg_baton on a distributed install: a three-node Citus cluster
# (test/citus/cluster.sh) and the procedures of docs/guide/scale-out.md ("Upgrades", "Removing
# pg_baton from a cluster"), each check printed as "ok" or "FAIL".
#
#   bash test/citus/upgrade.sh      (PG_CONFIG as for run.sh, as root; BATON_CITUS_PORT the
#                                    first port tried, default 56740)
#
#   1. CREATE EXTENSION pg_baton VERSION '0.6.0' through the coordinator (Citus creates
#      it on the workers in the same version): the library refuses distribute() there,
#      like every call on a schema older than its own (docs/guide/versions.md), so the rows
#      of 0.6.0 (twelve tenants, a workflow naming a decide function) are written by
#      plain SQL into the coordinator's tables, with triggers off. (Deliveries come after
#      the update: distribute() copies a table's rows into its shards, and the fence
#      trigger of a deliveries shard cannot yet find the side tables' shards for a
#      claimed or pending row then.)
#   2. ALTER EXTENSION pg_baton UPDATE through the coordinator, then SELECT
#      baton.distribute(): every node at the default version; the rows unchanged, tenants
#      on both workers, given deliveries in four statuses; a role granted by grant_admin
#      reads delivery_stats through the coordinator; the
#      indexes and constraints of every shard those of a single-node install of the
#      default version (and their column types and collations: 0.10.0's dedup_key,
#      0.11.0's workflows.decide); the leases the claimed deliveries hold in baton.leases, the pending ones in baton.ready (a fenced tenant's too);
#      the fence trigger of leases and ready on every placement (0.12.0), refusing a
#      direct write of the fenced tenant's side rows; cancel_delivery and redrive distributed by their tenant (on
#      every node's metadata) and delegated; the row rules of the new version on a shard
#      by direct SQL ('cancelled' accepted, 'bogus' refused); the same role reads
#      delivery_stats with the column 0.7.0 appended.
#   3. An update that adds an index and a CHECK constraint to baton.deliveries (a
#      throwaway update script, written into the server's extension directory for this
#      run and removed after): ALTER EXTENSION succeeds through the coordinator, the
#      shards lack both until distribute(), and have them after it (the constraint
#      refuses a row on its shard).
#   4. Removal: DROP EXTENSION alone is refused (2BP01, shards' triggers depend on
#      pg_baton's function) and changes nothing; the documented procedure leaves no
#      pg_baton object on any node (relations, shards, functions, the schema, Citus'
#      pg_dist_partition, pg_dist_shard and pg_dist_object rows); CREATE EXTENSION and
#      distribute() work again on the same cluster.
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-upgrade
EXTDIR=$("$PG_CONFIG" --sharedir)/extension

DEFAULT=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$EXTDIR/pg_baton.control")
PROBE=$DEFAULT-citus-probe
PROBE_SCRIPT=$EXTDIR/pg_baton--$DEFAULT--$PROBE.sql
citus_suite_start citus-upgrade "${BATON_CITUS_PORT:-56740}"
trap 'rm -f -- "$PROBE_SCRIPT"; citus_suite_stop' EXIT
NODES="$p0 $((p0 + 1)) $((p0 + 2))"
versions() { for p in $NODES; do q -p "$p" -c "SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'), 'none')"; done | tr '\n' ' ' | sed 's/ $//'; }

# The indexes, constraints, column types and collations of each of pg_baton's tables
# (table|digest), and of each shard on a node (logical table|digest), shard ids removed
# from the names, so that a shard's line equals its table's when it has every index and
# constraint of it, and no other, and its columns compare as the table's do.
DEFS="SELECT pg_catalog.pg_get_indexdef(i.indexrelid) d FROM pg_index i WHERE i.indrelid = r
      UNION ALL SELECT k.conname || ' ' || pg_get_constraintdef(k.oid) FROM pg_constraint k WHERE k.conrelid = r
      UNION ALL SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                       || CASE WHEN a.attcollation <> 0 THEN ' collate ' || a.attcollation::regcollation ELSE '' END
                 FROM pg_attribute a WHERE a.attrelid = r AND a.attnum > 0 AND NOT a.attisdropped"
table_defs() { # PORT DB
    q -p "$1" -d "$2" -c "SELECT t.relname || '|' || md5(string_agg(x.d, ' ; ' ORDER BY x.d))
        FROM pg_class t, LATERAL (SELECT t.oid AS r) o, LATERAL ($DEFS) x
        WHERE t.relnamespace = 'baton'::regnamespace AND t.relkind = 'r' AND t.relname <> 'in_use' GROUP BY t.relname"
}
shard_defs() { # PORT
    q -p "$1" -c "SELECT t.relname || '|' || md5(string_agg(regexp_replace(x.d, '_[0-9]{6,}', '', 'g'), ' ; ' ORDER BY regexp_replace(x.d, '_[0-9]{6,}', '', 'g')))
        FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid) JOIN pg_class t ON t.oid = s.logicalrelid,
             LATERAL (SELECT to_regclass(shard_name(s.logicalrelid, s.shardid)) AS r) o, LATERAL ($DEFS) x
        WHERE t.relnamespace = 'baton'::regnamespace AND p.groupid = (SELECT groupid FROM pg_dist_local_group)
        GROUP BY t.relname, s.shardid"
}
# shards_like REFERENCE_LINES: "N shards, N differ" over every node's shards.
shards_like() {
    local n=0 bad=0 line p
    for p in $NODES; do
        while IFS= read -r line; do
            [[ -n $line ]] || continue
            n=$((n + 1))
            grep -qxF -- "$line" <<<"$1" || bad=$((bad + 1))
        done < <(shard_defs "$p")
    done
    echo "$n shards, $bad differ"
}
# The rows of the tenants and deliveries, as a digest (the columns of 0.6.0).
rows() {
    q -c "SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM (SELECT tenant, state FROM baton.tenants) t" \
      -c "SELECT md5(string_agg(d::text, '|' ORDER BY d.id)) FROM (SELECT tenant, id, target, dedup_key, status, generation, attempts, payload, lease_until FROM baton.deliveries) d"
}
DISTRIBUTED_FUNCTIONS="SELECT count(*) FROM pg_dist_object o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid
    WHERE p.proname IN ('cancel_delivery', 'redrive') AND o.distribution_argument_index = 0"

# --- 1. pg_baton 0.6.0, refusing calls, with rows written by plain SQL ------------------
q -c "CREATE EXTENSION pg_baton VERSION '0.6.0'" >/dev/null
check "CREATE EXTENSION VERSION '0.6.0' through the coordinator: every node at 0.6.0" "0.6.0 0.6.0 0.6.0" "$(versions)"
check "at 0.6.0 distribute() is refused (55000), like every call on an older schema" "55000" \
    "$(code -c "SELECT baton.distribute()")"
node_of() { q -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('baton.tenants', '$1'::uuid)"; }
A=00000000-0000-0000-0000-000000000001
# Twelve tenants, and a workflow whose decide function 0.6.0 stores by its oid
# (regprocedure).
q -c "CREATE SCHEMA up_app" \
  -c "CREATE FUNCTION up_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT '{\"finish\": \"completed\"}'::jsonb \$\$" >/dev/null
q -c "SET session_replication_role = replica" \
  -c "INSERT INTO baton.tenants (tenant) SELECT ('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid FROM generate_series(1, 12) i" \
  -c "INSERT INTO baton.workflows (name, version, definition, decide)
      VALUES ('up_wf', 1, '{\"start\": \"a\", \"decide\": \"up_app.decide\", \"stages\": {\"a\": {\"next\": [\"@finish\"]}}}', 'up_app.decide(jsonb)')" >/dev/null
BEFORE=$(rows)

# --- 2. ALTER EXTENSION pg_baton UPDATE; SELECT baton.distribute() ------------------------
check "ALTER EXTENSION pg_baton UPDATE through the coordinator" "ok" "$(code -c "ALTER EXTENSION pg_baton UPDATE")"
check "every node at $DEFAULT" "$DEFAULT $DEFAULT $DEFAULT" "$(versions)"
check "before distribute(): cancel_delivery and redrive are not distributed yet" "0" "$(q -c "$DISTRIBUTED_FUNCTIONS")"
check "distribute() after the update" "ok" "$(code -c "SELECT baton.distribute()")"
check "the rows are unchanged" "$BEFORE" "$(rows)"
B=$(for i in $(seq 2 12); do t=00000000-0000-0000-0000-$(printf %012d "$i"); [[ $(node_of "$t") != "$(node_of "$A")" ]] && echo "$t"; done | head -n 1)
# Each tenant's deliveries: k1 finished, k2 failed, k3 claimed for an hour, k4 pending.
for i in $(seq 1 12); do
    t=00000000-0000-0000-0000-$(printf %012d "$i")
    q -c "SELECT baton.enqueue('$t', 'w', 'k' || g) FROM generate_series(1, 4) g" >/dev/null
    q -c "SELECT baton.finish('$t', c.id, c.generation) FROM baton.claim('$t', 'w', '1 hour') c" \
      -c "SELECT baton.finish('$t', c.id, c.generation, 'failed') FROM baton.claim('$t', 'w', '1 hour') c" \
      -c "SELECT count(*) FROM baton.claim('$t', 'w', '1 hour')" >/dev/null
done
check "deliveries in four statuses" "claimed 12 failed 12 finished 12 pending 12" \
    "$(q -c "SELECT string_agg(status || ' ' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) n FROM baton.deliveries GROUP BY status) s")"
check "tenants on both workers" "2" "$(q -c "SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement WHERE shardid IN (SELECT get_shard_id_for_distribution_column('baton.tenants', tenant) FROM baton.tenants)")"
# A role granted by grant_admin reads delivery_stats through the coordinator, whose body
# distribute() made read delivery_stats_rows() (docs/internals/citus.md).
q -c "CREATE ROLE up_admin LOGIN" -c "SELECT baton.grant_admin('up_admin')" >/dev/null
# 0.11.0: the decide function by its signature, on the workflows placement of every node.
check "workflows.decide holds the function's signature on every node (0.11.0)" \
    "up_app.decide(pg_catalog.jsonb) up_app.decide(pg_catalog.jsonb) up_app.decide(pg_catalog.jsonb)" \
    "$(for p in $NODES; do q -p "$p" -c "SELECT string_agg(decide, ',') FROM baton.workflows WHERE name = 'up_wf'"; done | tr '\n' ' ' | sed 's/ $//')"
check "an identical definition through the coordinator is the same version" "1" \
    "$(q -c "SELECT baton.define_workflow('up_wf', '{\"start\": \"a\", \"decide\": \"up_app.decide\", \"stages\": {\"a\": {\"next\": [\"@finish\"]}}}')" 2>&1)"
check "the lease of each of the 12 claimed deliveries is in baton.leases (0.9.0)" "12" \
    "$(q -c "SELECT count(*) FROM baton.leases l JOIN baton.deliveries d ON d.tenant = l.tenant AND d.id = l.id AND d.generation = l.generation AND d.lease_until = l.lease_until WHERE d.status = 'claimed'")"
check "... and a ready row for each of the 12 pending ones into baton.ready" "12" \
    "$(q -c "SELECT count(*) FROM baton.ready r JOIN baton.deliveries d ON d.tenant = r.tenant AND d.id = r.id AND d.target = r.target AND -d.priority = r.rank AND d.run_after = r.run_after WHERE d.status = 'pending'")"
# 0.12.0: the fence trigger of leases and ready on every placement of every node
# (fence_truncate stays on the logical tables, where Citus fires a TRUNCATE's triggers).
# A tenant F (neither A nor B, with a claimed and a pending delivery) fenced for the
# checks, then active again.
for i in $(seq 2 12); do
    F=00000000-0000-0000-0000-$(printf %012d "$i")
    [[ $F != "$B" ]] && break
done
q -c "SELECT baton.set_tenant_state('$F', 'fenced')" >/dev/null
check "every placement of leases and ready has the trigger fence (0.12.0)" "8 placements, 0 lack it" \
    "$(for p in $NODES; do q -p "$p" -c "SELECT count(*) || ' ' || count(*) FILTER (WHERE
            NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = o.r AND g.tgfoid = 'baton.fence_row'::regproc))
        FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid), LATERAL (SELECT to_regclass(shard_name(s.logicalrelid, s.shardid)) r) o
        WHERE s.logicalrelid IN ('baton.leases'::regclass, 'baton.ready'::regclass)
          AND p.groupid = (SELECT groupid FROM pg_dist_local_group)"; done | awk '{ n += $1; bad += $2 } END { print n " placements, " bad " lack it" }')"
check "through the coordinator, a direct write of the fenced tenant's side rows is refused (DU002), an active one's passes, a TRUNCATE is refused (DU007)" \
    "DU002 DU002 ok DU007" \
    "$(code -c "UPDATE baton.ready SET run_after = run_after WHERE tenant = '$F'") $(code -c "DELETE FROM baton.leases WHERE tenant = '$F'") $(code -c "BEGIN" -c "UPDATE baton.ready SET run_after = run_after WHERE tenant = '$A'" -c "ROLLBACK") $(code -c "TRUNCATE baton.leases")"
q -c "SELECT baton.set_tenant_state('$F', 'active')" >/dev/null
check "... the same role reads delivery_stats with 0.7.0's column cancelled appended" "12 12 12 12 0 12" \
    "$(q -U up_admin -c "SELECT concat_ws(' ', sum(pending), sum(claimed), sum(finished), sum(failed), sum(cancelled)) FROM baton.delivery_stats" 2>&1) $(q -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'baton.delivery_stats'::regclass AND attnum > 0")"
q -c "CREATE DATABASE single" >/dev/null 2>&1
q -d single -c "CREATE EXTENSION pg_baton" >/dev/null
SINGLE=$(table_defs "$p0" single)
check "a single-node install has the ten tenant tables, workflows, wakeup_key, paused_targets, the three tables of key limits and event_counts" "17" "$(grep -c . <<<"$SINGLE")"
check "every shard (and the reference tables' placements) has the indexes, constraints, column types and collations of a single-node $DEFAULT install" \
    "49 shards, 0 differ" "$(shards_like "$SINGLE")"
# 0.10.0: the dedup key's constraint replaced and its column in byte order, on every
# shard; a key enqueued before the update is found again on both workers.
check "the deliveries shards have deliveries_dedup, not the old dedup constraint, and dedup_key in \"C\"" "0 0" \
    "$(for p in $((p0 + 1)) $((p0 + 2)); do q -p "$p" -c "SELECT count(*) FROM pg_dist_shard s, LATERAL (SELECT to_regclass(shard_name(s.logicalrelid, s.shardid)) r) o
        WHERE s.logicalrelid = 'baton.deliveries'::regclass AND o.r IS NOT NULL
          AND (NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = o.r AND k.conname LIKE 'deliveries_dedup%' AND pg_get_constraintdef(k.oid) = 'UNIQUE (tenant, dedup_key, target)')
               OR EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = o.r AND k.conname LIKE 'deliveries_tenant_target_dedup_key_key%')
               OR (SELECT attcollation FROM pg_attribute WHERE attrelid = o.r AND attname = 'dedup_key') <> 'pg_catalog.\"C\"'::regcollation)"; done | tr '\n' ' ' | sed 's/ $//')"
check "enqueue of a key written before returns its id, on both workers" "t t" \
    "$(for t in "$A" "$B"; do
           id=$(q -c "SELECT id FROM baton.deliveries WHERE tenant = '$t' AND target = 'w' AND dedup_key = 'k1'")
           [[ -n $id && $(q -c "SELECT baton.enqueue('$t', 'w', 'k1')") == "$id" ]] && echo t || echo f
       done | tr '\n' ' ' | sed 's/ $//')"
check "cancel_delivery and redrive are distributed by their tenant" "2" "$(q -c "$DISTRIBUTED_FUNCTIONS")"
check "... colocated with the tables: every function taking the tenant first is" "0" \
    "$(q -c "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'baton'::regnamespace AND p.proargtypes[0] = 'uuid'::regtype AND p.proargnames[1] = 'tenant'
        AND NOT EXISTS (SELECT 1 FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid AND o.distribution_argument_index = 0
        AND o.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'baton.tenants'::regclass))")"
check "... in the workers' metadata too" "2 2" "$(for p in $((p0 + 1)) $((p0 + 2)); do q -p "$p" -c "$DISTRIBUTED_FUNCTIONS"; done | tr '\n' ' ' | sed 's/ $//')"
for t in "$A" "$B"; do
    id=$(q -c "SELECT min(id) FROM baton.deliveries WHERE tenant = '$t' AND status = 'pending'")
    out=$(q -c "SET client_min_messages = debug1" -c "SELECT baton.cancel_delivery('$t', $id, 'not needed')" 2>&1)
    check "cancel_delivery delegated to the tenant's node ($(node_of "$t"))" "1 cancelled" "$(grep -c 'pushing down the function call' <<<"$out") $(tail -n 1 <<<"$out")"
    out=$(q -c "SET client_min_messages = debug1" -c "SELECT baton.redrive('$t', 'w')" 2>&1)
    check "redrive delegated, sends the failed and the cancelled delivery back" "1 2" "$(grep -c 'pushing down the function call' <<<"$out") $(tail -n 1 <<<"$out")"
done
shard=$(q -c "SELECT shard_name('baton.deliveries', get_shard_id_for_distribution_column('baton.deliveries', '$A'::uuid))")
port=$(q -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('baton.deliveries', '$A'::uuid)")
check "on the shard ($shard), by direct SQL: a cancelled row is accepted" "ok" \
    "$(code -p "$port" -c "INSERT INTO $shard (tenant, id, target, dedup_key, status) VALUES ('$A', 900001, 'w', 'direct-cancelled', 'cancelled')")"
check "... a bogus status still refused (23514)" "23514" \
    "$(code -p "$port" -c "INSERT INTO $shard (tenant, id, target, dedup_key, status) VALUES ('$A', 900002, 'w', 'direct-bogus', 'bogus')")"

# The shards' fence triggers are pg_baton's own (fence_102008): the trigger on a deliveries
# shard still writes the side rows by heap access, which fires no trigger, not by
# statements. fence_row's calls on A's node (track_functions = all, each node's counters
# read after they are flushed) grow by one per enqueue, not two.
for p in $NODES; do q -p "$p" -c "ALTER SYSTEM SET track_functions = 'all'" -c "SELECT pg_reload_conf()" >/dev/null; done
fence_calls() { sleep 11; q -p "$(node_of "$A")" -c "SELECT coalesce((SELECT calls FROM pg_stat_user_functions WHERE funcname = 'fence_row'), 0)"; }
calls_before=$(fence_calls)
q -c "SELECT baton.enqueue('$A', 'side', 'side-' || g) FROM generate_series(1, 10) g" >/dev/null
check "10 enqueues fire the fence trigger 10 times on the tenant's node (the ready rows by heap access)" "10" \
    "$(( $(fence_calls) - calls_before ))"
for p in $NODES; do q -p "$p" -c "ALTER SYSTEM RESET track_functions" -c "SELECT pg_reload_conf()" >/dev/null; done

# --- 3. an update that adds an index and a constraint --------------------------------------
cat >"$PROBE_SCRIPT" <<'SQL'
-- Written by test/citus/upgrade.sh for one run: an update that changes a tenant table.
CREATE INDEX deliveries_probe ON baton.deliveries (tenant, settled_at);
ALTER TABLE baton.deliveries ADD CONSTRAINT deliveries_probe_check CHECK (priority > -1000000);
SQL
check "an update adding an index and a constraint, through the coordinator" "ok" "$(code -c "ALTER EXTENSION pg_baton UPDATE TO '$PROBE'")"
check "every node at $PROBE" "$PROBE $PROBE $PROBE" "$(versions)"
SHELLS=$(table_defs "$p0" postgres)
check "before distribute(): the deliveries shards lack them" "49 shards, 4 differ" "$(shards_like "$SHELLS")"
check "distribute() after the update" "ok" "$(code -c "SELECT baton.distribute()")"
check "every shard has its table's indexes and constraints" "49 shards, 0 differ" "$(shards_like "$SHELLS")"
check "the new constraint refuses a row on its shard (23514)" "23514" \
    "$(code -p "$port" -c "INSERT INTO $shard (tenant, id, target, dedup_key, priority) VALUES ('$A', 900003, 'w', 'direct-low', -2000000)")"
check "distribute() again changes nothing" "ok 49 shards, 0 differ" "$(code -c "SELECT baton.distribute()") $(shards_like "$SHELLS")"
check "the rows are still there" "59" "$(q -c "SELECT count(*) FROM baton.deliveries")"

# --- 4. removal ---------------------------------------------------------------------------
check "DROP EXTENSION alone is refused: the shards' triggers depend on pg_baton (2BP01)" "2BP01" "$(code -c "DROP EXTENSION pg_baton")"
check "... and changes nothing" "$PROBE $PROBE $PROBE 59" "$(versions) $(q -c "SELECT count(*) FROM baton.deliveries")"
cat >"$BASE/remove.sql" <<'SQL'
BEGIN;
SELECT pg_catalog.citus_drop_all_shards(p.logicalrelid, 'baton', c.relname, false)
  FROM pg_catalog.pg_dist_partition p JOIN pg_catalog.pg_class c ON c.oid = p.logicalrelid
 WHERE c.relnamespace = 'baton'::pg_catalog.regnamespace;
DROP EXTENSION pg_baton;
DROP SCHEMA baton;
COMMIT;
SQL
check "the removal procedure" "ok" "$(code -v ON_ERROR_STOP=1 -f "$BASE/remove.sql")"
for p in $NODES; do
    check "node :$p: no extension, schema, relation, shard, function or Citus metadata of pg_baton left" "0 0 0 0 0 0 0" \
        "$(q -p "$p" -c "SELECT concat_ws(' ',
            (SELECT count(*) FROM pg_extension WHERE extname = 'pg_baton'),
            (SELECT count(*) FROM pg_namespace WHERE nspname = 'baton'),
            (SELECT count(*) FROM pg_class WHERE relname ~ '^(tenants|runs|target_bindings|stages|step_entries|markers|deliveries|workflows|in_use|delivery_stats)(_|$)'),
            (SELECT count(*) FROM pg_proc WHERE proname IN ('enqueue', 'claim', 'fence_row', 'distribute', 'cancel_delivery', 'delivery_stats_rows')),
            (SELECT count(*) FROM pg_dist_partition p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.logicalrelid)),
            (SELECT count(*) FROM pg_dist_shard s WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = s.logicalrelid)),
            (SELECT count(*) FROM pg_dist_object o WHERE (pg_identify_object(o.classid, o.objid, o.objsubid)).identity IS NULL
                OR (pg_identify_object(o.classid, o.objid, o.objsubid)).identity ~ '^baton(\.|$)'))")"
done
check "CREATE EXTENSION and distribute() again on the same cluster" "ok ok $DEFAULT $DEFAULT $DEFAULT" \
    "$(code -c "CREATE EXTENSION pg_baton") $(code -c "SELECT baton.distribute()") $(versions)"
check "... a tenant on a worker takes and claims a delivery (delegated)" "1 1" \
    "$(q -c "SELECT baton.create_tenant('$B')" -c "SELECT baton.enqueue('$B', 'w', 'again')" >/dev/null
       out=$(q -c "SET client_min_messages = debug1" -c "SELECT count(*) FROM baton.claim('$B', 'w', '1 hour')" 2>&1)
       echo "$(grep -c 'pushing down the function call' <<<"$out") $(tail -n 1 <<<"$out")")"

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
