#!/usr/bin/env bash
# Upgrades: pg_baton 0.1.0 -> 0.2.0 -> 0.3.0 -> 0.4.0 -> 0.5.0 -> 0.6.0 -> 0.7.0 -> 0.8.0 -> 0.9.0 -> 0.10.0 -> 0.11.0 -> 0.12.0 -> 0.13.0 -> 0.14.0 -> 0.15.0 with ALTER EXTENSION pg_baton UPDATE, against the
# running test cluster (PGHOST/PGPORT/PGUSER exported, PG_CONFIG exported, the extension
# installed). The library serves the schema of its own version only: on an older one it
# refuses every call and every write its triggers see (55000, docs/guide/versions.md), so rows
# are written at an older version by plain SQL. Scratch databases:
#   X  CREATE EXTENSION pg_baton (the default version), filled through the functions
#      (tenants in every state, deliveries in every status, a bound target, runs with
#      stages and markers, step entries, workflows with a decide function).
#   A  CREATE EXTENSION pg_baton VERSION '0.1.0', which refuses a call and a direct
#      write; X's rows copied in as 0.1.0's tables hold them (COPY of their columns with
#      triggers off, test/tooling/lib.sh's tooling_copy_rows), one decide function then
#      dropped; digested table by table; ALTER EXTENSION UPDATE; the digests must not
#      change; the functions of every version must work on the rows.
#   B  a fresh CREATE EXTENSION pg_baton (the default version, 0.15.0: the 0.3.0 script
#      and the updates to 0.4.0, 0.5.0, 0.6.0, 0.7.0, 0.8.0, 0.9.0, 0.10.0, 0.11.0, 0.12.0, 0.13.0, 0.14.0 and 0.15.0, as Postgres installs a version that has no
#      script of its own).
#   C  CREATE EXTENSION pg_baton VERSION '0.1.0', left at 0.1.0.
#   D  CREATE EXTENSION pg_baton VERSION '0.1.0': the grant_* helpers refused there;
#      roles granted 0.1.0's functions by GRANT, updated: the roles keep their grants and
#      lack the later functions and views until the helpers run again.
# The schemas of A and B, as pg_dump --schema-only --binary-upgrade prints them (the
# mode that lists an extension's member objects one by one) with object ids and
# transaction ids removed, must be identical; C's must differ from B's (the comparison
# sees what an update script leaves out). Last line: "N passed, N failed".
set -uo pipefail

BINDIR=$("${PG_CONFIG:-pg_config}" --bindir)
PASS=0
FAIL=0
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/tooling/lib.sh
source "$ROOT/test/tooling/lib.sh"
ok() { PASS=$((PASS + 1)); echo "ok   - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "FAIL - $*"; }
check() { # check NAME EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi
}
q() { "$BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

A=baton_upgrade_a
B=baton_upgrade_b
C=baton_upgrade_c
D=baton_upgrade_d
E=baton_upgrade_e
X=baton_upgrade_x
WORK=$(mktemp -d /tmp/pg_baton-upgrade.XXXXXX)
cleanup() {
    for db in $A $B $C $D $E $X; do q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1; done
    q -d postgres -c "DROP ROLE IF EXISTS baton_upgrade_role" >/dev/null 2>&1
    q -d postgres -c "DROP ROLE IF EXISTS baton_upgrade_exporter" >/dev/null 2>&1
    for r in producer worker admin; do q -d postgres -c "DROP ROLE IF EXISTS baton_up_$r" >/dev/null 2>&1; done
    rm -rf -- "$WORK"
}
trap cleanup EXIT
cleanup
mkdir -p "$WORK"
for db in $A $B $C $D $X; do q -d postgres -c "CREATE DATABASE $db" || not_ok "create $db"; done
q -d postgres -c "CREATE ROLE baton_upgrade_role"

# --- X: the rows, written by the functions; A: 0.1.0, refusing calls, given X's rows ---
T1=00000000-0000-0000-0703-000000000001
T2=00000000-0000-0000-0703-000000000002
T3=00000000-0000-0000-0703-000000000003
T4=00000000-0000-0000-0703-000000000004
UP_DEC='{"start": "a", "decide": "up_app.decide", "stages": {"a": {"next": ["b", "c"]}, "b": {"next": ["@finish"]}, "c": {"next": ["@finish"]}}}'
UP_GONE='{"start": "a", "decide": "up_app.gone", "stages": {"a": {"next": ["b", "c"]}, "b": {"next": ["@finish"]}, "c": {"next": ["@finish"]}}}'
UP_WF='{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"], "max_attempts": 5}}}'
# The decide functions, in X and in A (a workflow names its function by signature, which
# A's 0.1.0 column reads as A's own function).
DECIDE_FUNCTIONS="CREATE SCHEMA up_app;
CREATE FUNCTION up_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT '{\"next\": \"c\"}'::jsonb \$\$;
CREATE FUNCTION up_app.gone(ctx jsonb) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT '{\"next\": \"c\"}'::jsonb \$\$;"
q -d $X -c "CREATE EXTENSION pg_baton" -c "$DECIDE_FUNCTIONS" >/dev/null
if ! q -d $X >/dev/null <<SQL; then not_ok "fill X"; fi
SELECT baton.create_tenant('$T1'), baton.create_tenant('$T2'), baton.create_tenant('$T3'), baton.create_tenant('$T4');
SELECT baton.bind_target('$T1', 'bound', 'baton_upgrade_role');
-- Deliveries: pending, claimed, finished, failed, given back by retry (pending later).
SELECT baton.enqueue('$T1', 'w', 'k' || i, jsonb_build_object('i', i), '{"cause": {"event": "e"}}')
  FROM generate_series(1, 8) i;
SELECT baton.finish('$T1', c.id, c.generation) FROM baton.claim('$T1', 'w', '1 hour', 2) c;
SELECT baton.finish('$T1', c.id, c.generation, 'failed', '{"why": "no"}') FROM baton.claim('$T1', 'w', '1 hour', 1) c;
SELECT baton.retry('$T1', c.id, c.generation, 'again', '1 hour') FROM baton.claim('$T1', 'w', '1 hour', 1) c;
SELECT baton.claim('$T1', 'w', '1 hour', 2);
SELECT baton.enqueue('$T2', 'w', 'f1');
SELECT baton.enqueue('$T3', 'w', 'q1');
-- A workflow and runs: completed, running with a failed stage, awaiting approval, cancelled.
SELECT baton.define_workflow('up_wf', '$UP_WF');
SELECT baton.define_workflow('up_gate', '{"start": "a", "requires_approval": true, "stages": {"a": {"next": ["@finish"]}}}');
SELECT baton.submit('$T1', 'up_wf', '{"n": 1}', 'run1') AS r1 \gset
SELECT baton.submit('$T1', 'up_wf', '{"n": 2}', 'run2') AS r2 \gset
SELECT baton.submit('$T1', 'up_gate', '{"n": 3}', 'run3') AS r3 \gset
SELECT baton.submit('$T1', 'up_wf', '{"n": 4}', 'run4') AS r4 \gset
SELECT baton.acquire_run('$T1', :'r1', 'o', '1 hour');
SELECT stage_id AS s1 FROM baton.transition_stage('$T1', :'r1', 1) \gset
SELECT baton.start_stage('$T1', :'r1', 1, :s1);
SELECT baton.claim_marker('$T1', :s1, "position" => 0, kind => 'mail', operation_id => 'op-1');
SELECT baton.complete_marker('$T1', :s1, "position" => 0, state => 'done');
SELECT baton.complete_stage('$T1', :'r1', 1, :s1, '{"a": 1}');
SELECT stage_id AS s1b FROM baton.transition_stage('$T1', :'r1', 1) \gset
SELECT baton.start_stage('$T1', :'r1', 1, :s1b);
SELECT baton.complete_stage('$T1', :'r1', 1, :s1b, '{"b": 1}');
SELECT baton.transition_stage('$T1', :'r1', 1);
SELECT baton.enqueue('$T1', 'runw', 'of-r1', run_id => :'r1');
SELECT baton.acquire_run('$T1', :'r2', 'o', '1 hour');
SELECT stage_id AS s2 FROM baton.transition_stage('$T1', :'r2', 1) \gset
SELECT baton.start_stage('$T1', :'r2', 1, :s2);
SELECT baton.claim_marker('$T1', :s2, "position" => 0, kind => 'call');
SELECT baton.fail_stage('$T1', :'r2', 1, :s2, 'boom', '1 hour');
SELECT baton.cancel('$T1', :'r4', 'no longer needed');
-- Step entries outside the engine, with a marker.
SELECT entry_id AS e1 FROM baton.enter_step('$T1', 'user-1', 'purge', 'd1') \gset
SELECT baton.claim_marker('$T1', :e1, "position" => 1, kind => 'db');
-- Workflows with a decide function (kept by its oid until 0.11.0), in tenant T4: up_dec's
-- function picks c of a's next (routing alone would take b); up_gone's is dropped in A
-- before its update. A run of each has completed stage a, so its next transition takes
-- the decision.
SELECT baton.define_workflow('up_dec', '$UP_DEC');
SELECT baton.define_workflow('up_gone', '$UP_GONE');
SELECT baton.submit('$T4', 'up_dec', '{"n": 5}', 'run5') AS r5 \gset
SELECT baton.acquire_run('$T4', :'r5', 'o', '1 hour');
SELECT stage_id AS s5 FROM baton.transition_stage('$T4', :'r5', 1) \gset
SELECT baton.start_stage('$T4', :'r5', 1, :s5);
SELECT baton.complete_stage('$T4', :'r5', 1, :s5, '{"a": 5}');
SELECT baton.submit('$T4', 'up_gone', '{"n": 6}', 'run6') AS r6 \gset
SELECT baton.acquire_run('$T4', :'r6', 'o', '1 hour');
SELECT stage_id AS s6 FROM baton.transition_stage('$T4', :'r6', 1) \gset
SELECT baton.start_stage('$T4', :'r6', 1, :s6);
SELECT baton.complete_stage('$T4', :'r6', 1, :s6, '{"a": 6}');
-- Tenant states last: T2 fenced, T3 quiescing.
SELECT baton.set_tenant_state('$T2', 'fenced'), baton.set_tenant_state('$T3', 'quiescing');
SQL

q -d $A -c "CREATE EXTENSION pg_baton VERSION '0.1.0'" -c "$DECIDE_FUNCTIONS" >/dev/null
check "A starts at 0.1.0" "0.1.0" "$(q -d $A -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"
# what_refuses DB SQL: the SQLSTATE and hint the statement fails with, or "none".
what_refuses() {
    q -d "$1" -c "DO \$\$ DECLARE s text; h text; BEGIN $2; RAISE NOTICE 'none';
                  EXCEPTION WHEN OTHERS THEN GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, h = PG_EXCEPTION_HINT;
                  RAISE NOTICE '% %', s, h; END \$\$" 2>&1 | sed -n 's/^NOTICE:  //p'
}
REFUSED="55000 Run ALTER EXTENSION pg_baton UPDATE in this database."
check "at 0.1.0 the library refuses a call, with the hint to update" "$REFUSED" \
    "$(what_refuses $A "PERFORM baton.create_tenant('$T1')")"
check "at 0.1.0 the library refuses a direct write its trigger sees" "$REFUSED" \
    "$(what_refuses $A "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('$T1', 'w', 'direct')")"
if tooling_copy_rows $X $A; then ok "X's rows copied into A's 0.1.0 tables"; else not_ok "X's rows copied into A's 0.1.0 tables"; fi
GONE_OID=$(q -d $A -c "SELECT 'up_app.gone(jsonb)'::regprocedure::oid")
q -d $A -c "DROP FUNCTION up_app.gone(jsonb)"

# digests DB: one line per table (and sequence), the md5 of its rows in key order.
digests() {
    q -d "$1" <<'SQL'
SELECT 'tenants ' || md5(coalesce(string_agg(t::text, '|' ORDER BY tenant), '')) FROM baton.tenants t;
-- (0.13.0 appends weight and paused_at: the columns every version has.)
SELECT 'target_bindings ' || md5(coalesce(string_agg((t.tenant, t.target, t.role, t.created_at)::text, '|' ORDER BY tenant, target), '')) FROM baton.target_bindings t;
SELECT 'workflows ' || md5(coalesce(string_agg((t.name, t.version, t.definition, t.created_at)::text, '|' ORDER BY name, version), '')) FROM baton.workflows t;
-- decide changes its type in 0.11.0 (regprocedure, printed as an oid once its function is
-- gone, to text); the function each row finds must not change.
SELECT 'decides ' || string_agg(name || ':' || version || ':' || CASE WHEN decide IS NULL THEN 'none'
           WHEN decide::text ~ '^[0-9]+$' THEN 'nothing'
           ELSE coalesce(to_regprocedure(decide::text)::oid::text, 'nothing') END, ',' ORDER BY name, version)
  FROM baton.workflows;
SELECT 'runs ' || md5(coalesce(string_agg(t::text, '|' ORDER BY tenant, id), '')) FROM baton.runs t;
SELECT 'stages ' || md5(coalesce(string_agg(t::text, '|' ORDER BY tenant, id), '')) FROM baton.stages t;
SELECT 'step_entries ' || md5(coalesce(string_agg(t::text, '|' ORDER BY tenant, id), '')) FROM baton.step_entries t;
SELECT 'markers ' || md5(coalesce(string_agg(t::text, '|' ORDER BY tenant, entry_id, "position"), '')) FROM baton.markers t;
-- (0.14.0 appends key: the columns every version has.)
SELECT 'deliveries ' || md5(coalesce(string_agg((to_jsonb(t) - 'key')::text, '|' ORDER BY tenant, id), '')) FROM baton.deliveries t;
SELECT 'entry_id_seq ' || last_value FROM baton.entry_id_seq;
SELECT 'counts ' || (SELECT count(*) FROM baton.deliveries) || ' ' || (SELECT count(*) FROM baton.runs) || ' '
       || (SELECT count(*) FROM baton.stages) || ' ' || (SELECT count(*) FROM baton.markers);
SELECT 'statuses ' || string_agg(DISTINCT status, ',' ORDER BY status) FROM baton.deliveries;
SQL
}
digests $A >"$WORK/before"
check "A holds deliveries in every status" "statuses claimed,failed,finished,pending" "$(grep '^statuses' "$WORK/before")"
check "A holds deliveries, runs, stages, markers" "counts 11 6 5 3" "$(grep '^counts' "$WORK/before")"
check "0.1.0 -> 0.2.0 -> 0.3.0 -> 0.4.0 -> 0.5.0 -> 0.6.0 -> 0.7.0 -> 0.8.0 -> 0.9.0 -> 0.10.0 -> 0.11.0 -> 0.12.0 -> 0.13.0 -> 0.14.0 -> 0.15.0 is an update path" "0.1.0--0.15.0" \
    "$(q -d $A -c "SELECT source || '--' || target FROM pg_extension_update_paths('pg_baton') WHERE path = '0.1.0--0.2.0--0.3.0--0.4.0--0.5.0--0.6.0--0.7.0--0.8.0--0.9.0--0.10.0--0.11.0--0.12.0--0.13.0--0.14.0--0.15.0'")"

# --- the update --------------------------------------------------------------------
if q -d $A -c "ALTER EXTENSION pg_baton UPDATE"; then ok "ALTER EXTENSION pg_baton UPDATE"; else not_ok "ALTER EXTENSION pg_baton UPDATE"; fi
check "A is at 0.15.0" "0.15.0" "$(q -d $A -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"
digests $A >"$WORK/after"
if diff "$WORK/before" "$WORK/after"; then ok "no row changed in the update (digests of every table)"; else not_ok "rows changed in the update"; fi
# 0.9.0: the lease of every claimed delivery has its row in baton.leases, every
# pending delivery its row in baton.ready.
check "the update wrote the lease of each claimed delivery into baton.leases" "true 2" \
    "$(q -d $A -c "SELECT (count(*) = (SELECT count(*) FROM baton.deliveries WHERE status = 'claimed')) || ' ' || count(*) FROM baton.leases l JOIN baton.deliveries d ON d.tenant = l.tenant AND d.id = l.id AND d.generation = l.generation AND d.lease_until = l.lease_until AND d.status = 'claimed'")"
check "the update wrote a ready row for each pending delivery into baton.ready" "t" \
    "$(q -d $A -c "SELECT count(*) = (SELECT count(*) FROM baton.deliveries WHERE status = 'pending') AND count(*) = (SELECT count(*) FROM baton.ready) FROM baton.ready r JOIN baton.deliveries d ON d.tenant = r.tenant AND d.id = r.id AND d.target = r.target AND -d.priority = r.rank AND d.run_after = r.run_after AND d.status = 'pending'")"

# The upgraded database works: 0.1.0's functions and 0.2.0's views and purge.
check "claim after the update" "2" "$(q -d $A -c "SELECT count(*) FROM baton.claim('$T1', 'w', '1 hour', 10)")"
check "delivery_stats has its new columns" "w 1 4 2 1 0 2" \
    "$(q -d $A -c "SELECT target, pending, claimed, finished, failed, expired_leases, finished_last_5m FROM baton.delivery_stats WHERE tenant = '$T1' AND target = 'w'" | tr '|' ' ')"
check "run_stats reads the old runs" "up_gate 1 0 0|up_wf 0 1 1" \
    "$(q -d $A -c "SELECT workflow || ' ' || submitted || ' ' || running || ' ' || completed FROM baton.run_stats WHERE tenant = '$T1' ORDER BY workflow" | paste -sd'|')"
check "the fenced tenant's row is still there, fenced" "fenced 1" \
    "$(q -d $A -c "SELECT t.state || ' ' || count(*) FROM baton.deliveries d JOIN baton.tenants t USING (tenant) WHERE tenant = '$T2' GROUP BY t.state")"
q -d $A -c "SELECT baton.finish('$T1', c.id, c.generation) FROM baton.claim('$T1', 'runw', '1 hour') c" \
    -c "UPDATE baton.runs SET finished_at = now() - interval '2 days' WHERE idempotency_key = 'run1'" >/dev/null
check "purge works on the upgraded data (removes run1)" "1" "$(q -d $A -c "SELECT baton.purge('1 day')")"
check "run1 went with its stages, its marker and its delivery" "0 0 0 0" \
    "$(q -d $A -c "SELECT (SELECT count(*) FROM baton.runs WHERE idempotency_key = 'run1') || ' ' || (SELECT count(*) FROM baton.stages WHERE tenant = '$T1' AND stage IN ('a', 'b') AND status = 'completed') || ' ' || (SELECT count(*) FROM baton.markers WHERE operation_id = 'op-1') || ' ' || (SELECT count(*) FROM baton.deliveries WHERE dedup_key = 'of-r1')")"

# 0.7.0: cancel_delivery and redrive on the upgraded rows; then deliveries in all five
# statuses, counted by delivery_stats, and a redrive of the cancelled and failed ones.
check "cancel_delivery cancels an upgraded pending delivery" "cancelled" \
    "$(q -d $A -c "SELECT baton.cancel_delivery('$T1', (SELECT id FROM baton.deliveries WHERE tenant = '$T1' AND status = 'pending' ORDER BY id LIMIT 1), 'upgrade test')")"
check "A holds deliveries in every status, cancelled included" "cancelled,claimed,failed,finished,pending" \
    "$(q -d $A -c "SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM baton.deliveries")"
check "delivery_stats counts the cancelled delivery" "1" \
    "$(q -d $A -c "SELECT sum(cancelled) FROM baton.delivery_stats WHERE tenant = '$T1'")"
check "redrive sends the cancelled and failed deliveries of w back" \
    "$(q -d $A -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND status IN ('failed', 'cancelled')")" \
    "$(q -d $A -c "SELECT baton.redrive('$T1', 'w')")"

# 0.8.0: the upgraded database has a wake-up secret, and its channels are named.
check "the update made one wake-up secret of 32 bytes" "1 32" \
    "$(q -d $A -c "SELECT count(*) || ' ' || max(length(secret)) FROM baton.wakeup_key")"
check "wakeup_channel names the channel of an upgraded target" "t" \
    "$(q -d $A -c "SELECT baton.wakeup_channel('$T1', 'w') ~ '^baton_[0-9a-f]{32}$'")"
# 0.8.0: baton.health on the upgraded rows: its checks (paused, 0.13.0; waiting_on_limits, 0.14.0), the pending deliveries
# left above counted by oldest_pending.
check "baton.health answers on the upgraded database, one row per check" \
    "xmin_horizon,dead_rows,reaper,expired_leases,stuck_runs,markers_in_doubt,schedules_behind,paused,waiting_on_limits,oldest_pending" \
    "$(q -d $A -c "SELECT string_agg(name, ',') FROM baton.health")"
check "oldest_pending warns under a threshold of 0, naming a delivery of an upgraded tenant" "warn true" \
    "$(q -d $A -c "SET baton.health_pending_warn = 0" -c "SELECT status || ' ' || (detail ~ ' of tenant ($T1|$T2|$T3) ') FROM baton.health WHERE name = 'oldest_pending'")"
# 0.8.0: a schedule on the upgraded database, due at once (next_fire_at moved to the
# past, as after a pause), fires one delivery with its slot's dedup key.
q -d $A -c "SELECT baton.schedule('$T1', 'up_tick', 'ticks', '@every 1 hour')" \
    -c "UPDATE baton.schedule_rows SET next_fire_at = now() - interval '3 hours'" >/dev/null
check "fire_schedules fires the upgraded database's due schedule once" "1 1" \
    "$(q -d $A -c "SELECT baton.fire_schedules()" -c "SELECT count(*) FROM baton.deliveries WHERE dedup_key LIKE 'schedule:up_tick:%'" | paste -sd' ')"

# 0.11.0: baton.workflows.decide holds the decide function's schema-qualified signature
# (text: pg_upgrade refuses a regprocedure column and keeps no function's oid), and a
# transition finds the function by it.
run_of() { q -d $A -c "SELECT id FROM baton.runs WHERE tenant = '$T4' AND idempotency_key = '$1'"; }
# sqlstate_of DB SQL: the SQLSTATE the statement raises, or "none".
sqlstate_of() {
    q -d "$1" -c "DO \$\$ BEGIN $2; RAISE NOTICE 'none'; EXCEPTION WHEN OTHERS THEN RAISE NOTICE '%', SQLSTATE; END \$\$" 2>&1 \
        | sed -n 's/^NOTICE:  //p'
}
stages_of() {
    q -d $A -c "SELECT string_agg(s.stage || ':' || s.status, ',' ORDER BY s.id) || ' ' || min(r.status)
                  FROM baton.runs r JOIN baton.stages s ON s.tenant = r.tenant AND s.run_id = r.id
                  WHERE r.tenant = '$T4' AND r.idempotency_key = '$1'"
}
check "the update makes baton.workflows.decide text" "text" \
    "$(q -d $A -c "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'baton.workflows'::regclass AND attname = 'decide'")"
check "the update writes a decide function's schema-qualified signature, as pg_identify_object names it" \
    "up_app.decide(pg_catalog.jsonb) true" \
    "$(q -d $A -c "SELECT decide || ' ' || (decide = (pg_identify_object('pg_proc'::regclass, 'up_app.decide(jsonb)'::regprocedure, 0)).identity) FROM baton.workflows WHERE name = 'up_dec'")"
check "workflows without a decide function have none after the update" "up_gate,up_wf" \
    "$(q -d $A -c "SELECT string_agg(name, ',' ORDER BY name) FROM baton.workflows WHERE decide IS NULL")"
check "a run of a workflow defined before the update transitions through its decide function (c, not b)" "stage c" \
    "$(q -d $A -c "SELECT kind || ' ' || stage FROM baton.transition_stage('$T4', '$(run_of run5)', 1)")"
check "the update names a decide function dropped before it by a name that finds nothing" \
    "pg_catalog.\"dropped function $GONE_OID\"(pg_catalog.jsonb) true" \
    "$(q -d $A -c "SELECT decide || ' ' || (to_regprocedure(decide) IS NULL) FROM baton.workflows WHERE name = 'up_gone'")"
check "a run whose decide function was dropped before the update still refuses its transition (42883)" "42883" \
    "$(sqlstate_of $A "PERFORM baton.transition_stage('$T4', '$(run_of run6)', 1)")"
check "... and stays at its completed stage" "a:completed running" "$(stages_of run6)"
# That name is not the function's: created again, it is not found for the old version,
# and a definition naming it is a new version.
q -d $A -c "CREATE FUNCTION up_app.gone(ctx jsonb) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT '{\"next\": \"c\"}'::jsonb \$\$" >/dev/null
check "the function dropped before the update, created again, is not what that name finds (42883)" "42883" \
    "$(sqlstate_of $A "PERFORM baton.transition_stage('$T4', '$(run_of run6)', 1)")"
check "define_workflow naming it again makes a new version" "2" \
    "$(q -d $A -c "SELECT baton.define_workflow('up_gone', '$UP_GONE')")"
check "define_workflow of an identical definition after the update returns the existing version and stores none (with decide, without)" \
    "1 1 0" \
    "$(q -d $A -c "SELECT baton.define_workflow('up_dec', '$UP_DEC') || ' ' || baton.define_workflow('up_wf', '$UP_WF')" \
                 -c "SELECT count(*) FROM baton.workflows WHERE name IN ('up_dec', 'up_wf') AND version > 1" | paste -sd' ')"
# A decide function dropped and created again with the same signature after the update is
# found by its name: by a run's transition and by an identical definition.
q -d $A >/dev/null <<SQL
SELECT baton.submit('$T4', 'up_dec', '{"n": 7}', 'run7') AS r7 \gset
SELECT baton.acquire_run('$T4', :'r7', 'o', '1 hour');
SELECT stage_id AS s7 FROM baton.transition_stage('$T4', :'r7', 1) \gset
SELECT baton.start_stage('$T4', :'r7', 1, :s7);
SELECT baton.complete_stage('$T4', :'r7', 1, :s7, '{"a": 7}');
DROP FUNCTION up_app.decide(jsonb);
CREATE FUNCTION up_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT '{"next": "c"}'::jsonb \$\$;
SQL
check "a decide function dropped and created again with the same signature is found by its name" "stage c" \
    "$(q -d $A -c "SELECT kind || ' ' || stage FROM baton.transition_stage('$T4', '$(run_of run7)', 1)")"
check "... and an identical definition is still the same version" "1" \
    "$(q -d $A -c "SELECT baton.define_workflow('up_dec', '$UP_DEC')")"
# The schemas compared below are the extension's alone (B has no up_app).
q -d $A -c "DROP SCHEMA up_app CASCADE" >/dev/null 2>&1

# --- D: grants made before an update --------------------------------------------------
# At 0.1.0 the grant_* helpers are refused like every call. Roles granted 0.1.0's
# functions there by GRANT keep their grants through the update, but get what 0.7.0 and 0.8.0 added only when the grant_*
# helper runs (docs/guide/operations.md, "Upgrades").
q -d $D -c "CREATE EXTENSION pg_baton VERSION '0.1.0'"
for r in producer worker admin; do
    q -d postgres -c "CREATE ROLE baton_up_$r"
    check "grant_$r is refused on a database at 0.1.0, with the hint to update" "$REFUSED" \
        "$(what_refuses $D "PERFORM baton.grant_$r('baton_up_$r')")"
done
q -d $D -c "GRANT USAGE ON SCHEMA baton TO baton_up_producer, baton_up_worker, baton_up_admin" \
    -c "GRANT EXECUTE ON FUNCTION baton.enqueue(uuid, text, text, jsonb, jsonb, timestamptz, integer, integer, uuid) TO baton_up_producer" \
    -c "GRANT EXECUTE ON FUNCTION baton.claim(uuid, text, interval, integer, jsonb) TO baton_up_worker" \
    -c "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA baton TO baton_up_admin" >/dev/null
q -d $D -c "ALTER EXTENSION pg_baton UPDATE"
granted() {
    q -d $D -c "SELECT string_agg(x::text, ' ') FROM (VALUES
        (has_function_privilege('baton_up_producer', 'baton.cancel_delivery(uuid, bigint, text)', 'EXECUTE')),
        (has_function_privilege('baton_up_producer', 'baton.schedule(uuid, text, text, text, jsonb, jsonb, text)', 'EXECUTE')),
        (has_function_privilege('baton_up_worker', 'baton.wakeup_channel(uuid, text)', 'EXECUTE')),
        (has_function_privilege('baton_up_admin', 'baton.redrive(uuid, text, bigint[], integer)', 'EXECUTE')),
        (has_function_privilege('baton_up_admin', 'baton.fire_schedules(integer)', 'EXECUTE')),
        (has_table_privilege('baton_up_admin', 'baton.health', 'SELECT')),
        (has_table_privilege('baton_up_admin', 'baton.schedules', 'SELECT')),
        (has_function_privilege('baton_up_producer', 'baton.enqueue(uuid, text, text, jsonb, jsonb, timestamp with time zone, integer, integer, uuid)', 'EXECUTE')),
        (has_function_privilege('baton_up_worker', 'baton.claim(uuid, text, interval, integer, jsonb)', 'EXECUTE'))) v(x)"
}
check "after the update, roles granted at 0.1.0 keep their grants but have none of the later functions and views" \
    "false false false false false false false true true" "$(granted)"
for r in producer worker admin; do q -d $D -c "SELECT baton.grant_$r('baton_up_$r')" >/dev/null; done
check "grant_producer, grant_worker and grant_admin run after the update give them" \
    "true true true true true true true true true" "$(granted)"

# 0.12.0: the side tables behind the fence. T2 is fenced and T3 quiescing since before
# the update, each with a pending delivery (its row in baton.ready); T1's are active.
check "a direct UPDATE of baton.ready is refused for a fenced and a quiescing tenant (DU002), passes for an active one" \
    "DU002 DU002 none" \
    "$(for t in $T2 $T3 $T1; do sqlstate_of $A "UPDATE baton.ready SET run_after = run_after WHERE tenant = '$t'"; done | paste -sd' ')"
# T1 (its claimed deliveries hold rows of baton.leases) fenced for the check, then active again.
check "a direct DELETE from baton.leases is refused for a fenced tenant (DU002)" "DU002" \
    "$(q -d $A -c "SELECT baton.set_tenant_state('$T1', 'fenced')" >/dev/null; sqlstate_of $A "DELETE FROM baton.leases WHERE tenant = '$T1'"; q -d $A -c "SELECT baton.set_tenant_state('$T1', 'active')" >/dev/null)"
check "TRUNCATE of baton.leases and baton.ready is refused (DU007)" "DU007 DU007" \
    "$(for t in leases ready; do sqlstate_of $A "TRUNCATE baton.$t"; done | paste -sd' ')"

# 0.13.0: bindings with a weight and a pause, baton.ready in (target, tenant) order. The
# bound target keeps its role, has weight 1 and is not paused; the fair claim serves it
# and takes a pending delivery found through the rebuilt primary key.
check "the binding made at 0.1.0 keeps its role, with weight 1, not paused" "1 1 0" \
    "$(q -d $A -c "SELECT concat_ws(' ', count(*), min(weight), count(paused_at)) FROM baton.target_bindings")"
check "ready_pkey is (target, tenant, rank, id)" "PRIMARY KEY (target, tenant, rank, id)" \
    "$(q -d $A -c "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'ready_pkey'")"
check "the fair claim serves an upgraded tenant once it binds the target: every due pending delivery, no other tenant's" "2 2 2" \
    "$(q -d $A -c "BEGIN" -c "SELECT baton.bind_target('$T1', 'w', 'baton_upgrade_role')" -c "SELECT count(*) FROM baton.ready WHERE tenant = '$T1' AND target = 'w' AND run_after <= now()" \
        -c "CREATE TEMP TABLE got AS SELECT * FROM baton.claim_fair('w', '1 minute', 100)" -c "SELECT count(*) FROM got" -c "SELECT count(*) FROM got WHERE tenant = '$T1'" -c "ROLLBACK" | grep -E '^[0-9]+$' | paste -sd' ')"

# 0.14.0: keys and their limits on upgraded rows. The upgraded deliveries carry no key;
# a limit on the upgraded tenant's bound target admits one of two keyed deliveries and
# holds the other back, and its finish lets the other in.
check "the upgraded deliveries carry no key" "0" "$(q -d $A -c "SELECT count(key) FROM baton.deliveries")"
check "a key limited to one on an upgraded tenant: one admitted, one waiting; a finish admits the other" "1 1 0" \
    "$(q -d $A -c "SELECT baton.bind_target('$T1', 'kw', 'baton_upgrade_role')" -c "SELECT baton.limit_key('$T1', 'kw', 1, 'k')" \
        -c "SELECT baton.enqueue_keyed('$T1', 'kw', 'k' || g, 'k') FROM generate_series(1, 2) g" >/dev/null
       q -d $A -c "CREATE TEMP TABLE got AS SELECT * FROM baton.claim('$T1', 'kw', '1 minute', 10)" \
        -c "SELECT 'n' || count(*) FROM got" -c "SELECT 'n' || count(*) FROM baton.key_waiting WHERE tenant = '$T1'" \
        -c "SELECT baton.finish('$T1', id, generation) FROM got" \
        -c "SELECT 'n' || count(*) FROM baton.key_waiting WHERE tenant = '$T1'" | sed -n 's/^n//p' | paste -sd' ')"
q -d $A -c "SELECT baton.unlimit_key('$T1', 'kw', 'k')" >/dev/null

# 0.15.0: baton.schedule() returns the schedule's next slot. Its result type changes in
# place: in a database updated from 0.14.0, a role granted it at 0.14.0 (as grant_producer
# grants, which this library refuses to run on an older schema) keeps EXECUTE, and its
# call returns next_fire_at.
q -d postgres -c "CREATE DATABASE $E" >/dev/null
q -d $E -c "CREATE EXTENSION pg_baton VERSION '0.14.0'" -c "GRANT USAGE ON SCHEMA baton TO baton_upgrade_role" \
    -c "GRANT EXECUTE ON FUNCTION baton.schedule(uuid, text, text, text, jsonb, jsonb, text) TO baton_upgrade_role" >/dev/null
check "at 0.14.0, schedule() returns void" "void" \
    "$(q -d $E -c "SELECT prorettype::regtype FROM pg_proc WHERE oid = 'baton.schedule(uuid, text, text, text, jsonb, jsonb, text)'::regprocedure")"
q -d $E -c "ALTER EXTENSION pg_baton UPDATE TO '0.15.0'" -c "SELECT baton.create_tenant('$T1')" >/dev/null
check "updated to 0.15.0, schedule() returns timestamptz and a producer granted it at 0.14.0 may still call it" \
    "timestamp with time zone true" \
    "$(q -d $E -c "SELECT prorettype::regtype || ' ' || has_function_privilege('baton_upgrade_role', oid, 'EXECUTE') FROM pg_proc WHERE oid = 'baton.schedule(uuid, text, text, text, jsonb, jsonb, text)'::regprocedure")"
check "the producer's schedule() returns the schedule's next_fire_at" "t" \
    "$(q -d $E -c "SET ROLE baton_upgrade_role" -c "CREATE TEMP TABLE s AS SELECT baton.schedule('$T1', 'nightly', 'w', '0 3 * * *') AS next" -c "RESET ROLE" \
        -c "SELECT s.next = r.next_fire_at FROM s, baton.schedule_rows r WHERE r.name = 'nightly'")"
q -d postgres -c "DROP DATABASE $E" >/dev/null

# --- B: fresh 0.15.0, C: 0.1.0 --------------------------------------------------------
q -d $B -c "CREATE EXTENSION pg_baton"
check "B installs 0.15.0 by default" "0.15.0" "$(q -d $B -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"
q -d $C -c "CREATE EXTENSION pg_baton VERSION '0.1.0'"

# schema DB: the extension's objects as pg_dump prints them, without oids, xids and
# sequence positions (data that binary-upgrade mode prints with the schema); the
# configuration tables are compared by name below.
schema() {
    "$BINDIR/pg_dump" --schema-only --binary-upgrade -d "$1" \
        | grep -v -E 'binary_upgrade_set_next_|^SET relfrozenxid|^WHERE oid = |^UPDATE pg_catalog.pg_class$|^\\(un)?restrict |^-- For binary upgrade, set heap|^SELECT pg_catalog.setval\(' \
        | grep -v -E '^-- Dumped (from|by)' \
        | sed -e "s/$1/DB/g" \
            -e "/binary_upgrade_create_empty_extension/s/'{[0-9,]*}'/'{configuration table oids}'/"
}
schema $A >"$WORK/a.sql"
schema $B >"$WORK/b.sql"
schema $C >"$WORK/c.sql"
members=$(grep -c '^ALTER EXTENSION pg_baton ADD ' "$WORK/b.sql")
if ((members > 50)); then
    ok "the dump lists the extension's member objects ($members)"
else
    not_ok "the dump lists the extension's member objects (only $members)"
fi
if diff -u "$WORK/b.sql" "$WORK/a.sql" >"$WORK/ab.diff"; then
    ok "upgraded schema (A) = fresh 0.15.0 schema (B)"
else
    not_ok "upgraded schema (A) differs from a fresh 0.15.0 install (B):"
    head -n 80 "$WORK/ab.diff"
fi
if diff -q "$WORK/b.sql" "$WORK/c.sql" >/dev/null; then
    not_ok "a 0.1.0 schema (C) differs from 0.15.0 (B): the comparison sees nothing"
else
    ok "a 0.1.0 schema (C) differs from 0.15.0 (B): the comparison can fail"
fi
for obj in 'FUNCTION baton.purge' 'VIEW baton.run_stats' 'INDEX deliveries_created' 'INDEX runs_finished' \
    'FUNCTION baton.health_checks' 'VIEW baton.health' \
    'FUNCTION baton.fire_schedules' 'VIEW baton.schedules' 'INDEX schedule_rows_due' \
    'TABLE baton.leases' 'leases_pkey' 'TABLE baton.ready' 'ready_pkey' 'INDEX ready_due' \
    'TABLE baton.paused_targets' 'VIEW baton.targets' 'FUNCTION baton.claim_fair' 'FUNCTION baton.set_weight'; do
    if grep -q "$obj" "$WORK/a.sql" && ! grep -q "$obj" "$WORK/c.sql"; then
        ok "the update adds $obj"
    else
        not_ok "the update adds $obj"
    fi
done
# 0.9.0: the indexes on columns a claim or a finish writes leave baton.deliveries (the
# side tables hold what they ordered; purge reads deliveries_created), and its pages
# leave room for HOT updates. 0.10.0: the dedup key's old constraint goes too.
for obj in 'INDEX deliveries_claimable' 'INDEX deliveries_leases' 'INDEX deliveries_settled' 'INDEX deliveries_due' \
    'deliveries_tenant_target_dedup_key_key'; do
    if ! grep -q "$obj" "$WORK/a.sql"; then
        ok "the update drops $obj"
    else
        not_ok "the update drops $obj"
    fi
done
check "baton.deliveries leaves seven tenths of each page free (fillfactor 30)" "{fillfactor=30}" \
    "$(q -d $A -c "SELECT reloptions FROM pg_class WHERE oid = 'baton.deliveries'::regclass" | grep -o 'fillfactor=30' | sed 's/.*/{&}/')"
# 0.10.0: the dedup key compared in byte order, its index keyed (tenant, dedup_key,
# target); the keys of the rows written before the update are all still there, unique.
check "the update keys the dedup index (tenant, dedup_key, target), dedup_key in byte order" \
    "deliveries_dedup UNIQUE (tenant, dedup_key, target) \"C\"" \
    "$(q -d $A -c "SELECT c.conname || ' ' || pg_get_constraintdef(c.oid) || ' ' || a.attcollation::regcollation FROM pg_constraint c, pg_attribute a WHERE c.conrelid = 'baton.deliveries'::regclass AND c.contype = 'u' AND a.attrelid = c.conrelid AND a.attname = 'dedup_key'")"
check "after the update, enqueue of a key written before it returns its id" "t" \
    "$(q -d $A -c "SELECT baton.enqueue(d.tenant, d.target, d.dedup_key, d.payload, d.binding) = d.id FROM baton.deliveries d WHERE d.tenant = '$T1' AND d.run_id IS NULL ORDER BY d.id LIMIT 1")"

# 0.3.0: every table and sequence is configuration, so pg_dump keeps their rows, and an
# updated database holds exactly what a fresh install holds.
config() {
    q -d "$1" -c "SELECT string_agg(c::regclass::text, ',' ORDER BY c::regclass::text) FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'pg_baton'"
}
check "the update marks every table and sequence as configuration" \
    "baton.deliveries,baton.deliveries_id_seq,baton.entry_id_seq,baton.event_counts,baton.key_limits,baton.markers,baton.paused_targets,baton.runs,baton.schedule_rows,baton.stages,baton.step_entries,baton.target_bindings,baton.tenants,baton.workflows" \
    "$(config $A)"
check "a fresh install marks the same" "$(config $A)" "$(config $B)"
check "0.1.0 marks none (a dump of it holds no rows)" "" "$(config $C)"

# 0.4.0: the extension's owner holds rights of its own on the tables, sequences, views and
# functions (what its calls use when it is not a superuser; test/tooling/owner.sh); here a
# superuser owns both, and the update leaves what a fresh install has.
owner_rights() {
    q -d "$1" -c "SELECT string_agg(c.relname || ':' || a.privilege_type || ':' || a.is_grantable, ',' ORDER BY c.relname, a.privilege_type)
                  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'baton',
                       aclexplode(c.relacl) a, pg_extension e
                  WHERE e.extname = 'pg_baton' AND a.grantee = e.extowner AND c.relname IN ('deliveries', 'entry_id_seq', 'run_stats')
                    AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'USAGE', 'TRUNCATE', 'TRIGGER')"
}
check "the update grants the extension's owner its rights, as a fresh install does" "$(owner_rights $B)" "$(owner_rights $A)"

# 0.5.0: the row rules of baton.deliveries, held by its trigger "fence", are described
# on the table, its columns and the trigger (what \d+ and \dt+ show); the update leaves
# what a fresh install has, and the rows are refused alike.
rule_comments() {
    q -d "$1" -c "SELECT (obj_description('baton.deliveries'::regclass, 'pg_class') LIKE '%status is one of pending, claimed, finished, failed, cancelled; max_attempts is at least 1.%')
                         || ' ' || (SELECT col_description(attrelid, attnum) FROM pg_attribute
                                     WHERE attrelid = 'baton.deliveries'::regclass AND attname = 'status')
                         || ' ' || (SELECT obj_description(t.oid, 'pg_trigger') IS NOT NULL FROM pg_trigger t
                                     WHERE t.tgrelid = 'baton.deliveries'::regclass AND t.tgname = 'fence')"
}
check "a fresh install describes the row rules of deliveries" \
    "true Row rule (trigger \"fence\", 23514): one of pending, claimed, finished, failed, cancelled. true" "$(rule_comments $B)"
check "the update describes them as a fresh install does" "$(rule_comments $B)" "$(rule_comments $A)"
check "0.1.0 holds them as CHECK constraints, described nowhere" "" "$(rule_comments $C)"
check "the updated database refuses a row that breaks a rule (23514, naming the trigger)" "23514 fence" \
    "$(q -d $A -c "DO \$\$ DECLARE s text; c text; BEGIN
                     UPDATE baton.deliveries SET status = 'done' WHERE tenant = '$T1' AND dedup_key = 'k8';
                   EXCEPTION WHEN check_violation THEN
                     GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, c = CONSTRAINT_NAME;
                     RAISE NOTICE '% %', s, c;
                   END \$\$" 2>&1 | sed -n 's/^NOTICE:  //p')"

# --- the exporter's queries run on the upgraded schema ---------------------------------
# contrib/sql_exporter/pg_baton.yml: every query runs on the upgraded database A (a key
# limited again, so that baton.limited_keys has a row; the counts of the calls since the
# update written, as no reaper runs here), as a role that has only what the
# file's header grants, and returns exactly its label and value columns.
q -d $A -c "CREATE ROLE baton_upgrade_exporter" \
    -c "GRANT USAGE ON SCHEMA baton TO baton_upgrade_exporter" \
    -c "GRANT SELECT ON baton.delivery_stats, baton.delivery_counters, baton.run_stats, baton.limited_keys, baton.health TO baton_upgrade_exporter" \
    -c "GRANT EXECUTE ON FUNCTION baton.health_checks() TO baton_upgrade_exporter" \
    -c "SELECT baton.limit_key('$T1', 'kw', 1, 'k')" -c "SELECT baton.flush_counts()" >/dev/null
while IFS=$'\t' read -r name columns query; do
    got=$(q -d $A -c "SET ROLE baton_upgrade_exporter" -c "SELECT string_agg(key, ',' ORDER BY ord) FROM (SELECT to_jsonb(x) AS j FROM ($query) x LIMIT 1) s, LATERAL jsonb_object_keys(j) WITH ORDINALITY AS k(key, ord)" 2>&1)
    want=$(tr ',' '\n' <<<"$columns" | sort | paste -sd,)
    got_sorted=$(tr ',' '\n' <<<"$got" | sort | paste -sd,)
    check "exporter query $name runs and returns its metrics' columns" "$want" "$got_sorted"
done < <(/usr/bin/python3 - "$ROOT/contrib/sql_exporter/pg_baton.yml" <<'PY'
import sys, yaml
for job in yaml.safe_load(open(sys.argv[1]))["jobs"]:
    for spec in job["queries"]:
        cols = ",".join(spec["labels"] + spec["values"])
        print(spec["name"], cols, " ".join(spec["query"].split()), sep="\t")
PY
)
q -d $A -c "DROP OWNED BY baton_upgrade_exporter" -c "DROP ROLE baton_upgrade_exporter" >/dev/null

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
