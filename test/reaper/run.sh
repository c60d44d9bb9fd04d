#!/usr/bin/env bash
# The background reaper, on a throwaway cluster of its own started with
# shared_preload_libraries = 'pg_baton' and its own baton.reaper_databases (the restarts
# and kills here stay off test/run-all.sh's cluster).
#
#   bash test/reaper/run.sh          (PG_CONFIG exported; pg_baton installed into it)
#
# Checks, first with a list of database names: one worker per listed database; a listed
# database without the extension is skipped and said once; a listed database that does
# not exist yet gets its worker once it does (restarted every 5 s); expired leases become
# pending (or failed once attempts are spent) with no client calling reap; a fenced
# tenant is skipped; baton.health's reaper row, and a prepared transaction named by
# xmin_horizon; a schedule fires with no client calling fire_schedules; the side tables of
# deliveries vacuumed as soon as autovacuum's rule says so (not baton.deliveries), not one whose
# autovacuum_enabled is off, once only while a transaction holds the horizon; the scan
# floor: rounds that do not walk again the ended leases a held transaction keeps, a lease
# moved into the past and a tenant made active again reaped at once; a database whose
# pg_baton is older than the library is skipped, said once, and reaped once updated; an error inside
# a batch (a lock timeout) is logged and the worker goes on with the same pid; batches
# and reloads; after kill -9 the workers come back and reap again; a clean stop logs a
# clean exit.
# Then with the default baton.reaper_databases = '*': only databases with pg_baton get a
# reaper (no connection to the others), one launcher, leases reaped; a database created
# later is served within two intervals of its CREATE EXTENSION; DROP EXTENSION stops its
# worker and CREATE EXTENSION brings it back (one rolled back starts none); a CREATE
# EXTENSION by two-phase commit gets its reaper at COMMIT PREPARED (none while prepared,
# none after ROLLBACK PREPARED, one also when the server restarted in between); a
# database created from a template with pg_baton, and one pg_restore fills, are served; ALTER
# DATABASE ... RENAME, CREATE DATABASE ... TEMPLATE and DROP DATABASE of a reaped
# database succeed without FORCE, and a refused DROP DATABASE leaves the reaper alone; a
# terminated reaper is started again; after kill -9 the reapers are back and reap; out of
# worker slots is said once, naming the setting to raise; a clean stop.
# Last line: "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "FAIL - $*"; }
check() { # check NAME EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi
}
finish() {
    echo "$PASS passed, $FAIL failed"
    ((FAIL == 0))
}

DIR=$(mktemp -d /tmp/pg_baton-reaper.XXXXXX)
cleanup() { cluster_stop "$DIR" >/dev/null 2>&1 || true; }
trap cleanup EXIT

BINDIR=$(_cluster_bindir) || { not_ok "no server binaries"; finish; exit 1; }
port=$(cluster_free_port $((${PGPORT:-55500} + 1)))
if ! cluster_start "$DIR" "$port" "shared_preload_libraries = 'pg_baton'" \
    "baton.reaper_databases = 'reapdb, plaindb, latedb'" "baton.reaper_interval = '200ms'" \
    "max_prepared_transactions = 2"; then
    not_ok "cluster with the preload starts"
    finish
    exit 1
fi
LOG=$CLUSTER_LOG

q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
pgctl() { (cd "$DIR" && _cluster_as_owner "$BINDIR/pg_ctl" -D "$DIR/data" "$@"); }
# wait_for DB SQL [SECONDS]: until SQL returns t (polls every 0.2 s).
wait_for() {
    local db=$1 sql=$2 limit=${3:-15} i
    for ((i = 0; i < limit * 5; i++)); do
        [[ $(q -d "$db" -c "$sql" 2>/dev/null) == t ]] && return 0
        sleep 0.2
    done
    return 1
}
worker_pid() { q -d postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = '$1'"; }

# Two of the listed databases exist before the workers connect (create them, then
# restart); latedb comes later.
q -d postgres -c "CREATE DATABASE reapdb" -c "CREATE DATABASE plaindb"
pgctl -w -t 60 -m fast restart -l "$LOG" >/dev/null || not_ok "restart"
# since_launch: the log since the last start of the launcher.
since_launch() { awk '/pg_baton launcher started/ { n = NR } { line[NR] = $0 } END { for (i = n; i <= NR; i++) print line[i] }' "$LOG"; }

# --- 1. workers --------------------------------------------------------------------
if wait_for postgres "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper'"; then
    ok "one reaper per existing listed database (2 running; latedb does not exist yet)"
else
    not_ok "one reaper per listed database: $(q -d postgres -c "SELECT string_agg(datname, ',') FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper'")"
fi
check "GUC baton.reaper_interval as configured" "200ms" "$(q -d postgres -c 'SHOW baton.reaper_interval')"
check "GUC baton.reaper_batch default" "1000" "$(q -d postgres -c 'SHOW baton.reaper_batch')"
check "GUC baton.reaper_databases is fixed at server start" "postmaster" \
    "$(q -d postgres -c "SELECT context FROM pg_settings WHERE name = 'baton.reaper_databases'")"

sleep 1
check "a database without pg_baton is skipped, said once" "1" \
    "$(since_launch | grep -c 'pg_baton is not installed in database "plaindb"')"

# A listed database that does not exist yet: the launcher says so once and starts its
# worker when the database appears.
check "a missing listed database is said once" "1" \
    "$(since_launch | grep -c 'database "latedb" of baton.reaper_databases does not exist; its reaper starts when it does')"
check "one launcher, connected to no database" "1" \
    "$(q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_baton launcher' AND datid IS NULL")"
q -d postgres -c "CREATE DATABASE latedb"
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'latedb'" 20; then
    ok "its worker starts once the database exists"
else
    not_ok "its worker starts once the database exists"
fi

# --- 2. reaping without anyone calling reap ------------------------------------------
T1=00000000-0000-0000-0701-000000000001
T2=00000000-0000-0000-0701-000000000002
q -d reapdb -c "CREATE EXTENSION pg_baton" \
    -c "SELECT baton.create_tenant('$T1'), baton.create_tenant('$T2')" \
    -c "SELECT baton.enqueue('$T1', 'w', 'k' || i, max_attempts => 100) FROM generate_series(1, 5) i" \
    -c "SELECT baton.enqueue('$T1', 'once', 'o1', max_attempts => 1)" \
    -c "SELECT baton.enqueue('$T2', 'w', 'f1')" >/dev/null
# Leases of 2 s: long enough for the checks below on a loaded machine. T2's lease is
# claimed and its tenant fenced in one transaction, before any reaper round can see it.
check "claimed before expiry" "3" \
    "$(q -d reapdb -c "SELECT count(*) FROM baton.claim('$T1', 'w', '2 seconds', 3)" \
        -c "SELECT count(*) FROM baton.claim('$T1', 'once', '2 seconds')" \
        -c "BEGIN" -c "SELECT count(*) FROM baton.claim('$T2', 'w', '2 seconds')" \
        -c "SELECT baton.set_tenant_state('$T2', 'fenced')" -c "COMMIT" \
        -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND status = 'claimed'" | tail -n 1)"
if wait_for reapdb "SELECT count(*) = 5 FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND status = 'pending'"; then
    ok "expired leases are pending again with no reap call"
else
    not_ok "expired leases are pending again: $(q -d reapdb -c "SELECT string_agg(dedup_key || ':' || status, ',') FROM baton.deliveries")"
fi
check "reaped rows: generation bumped, reason recorded" "3" \
    "$(q -d reapdb -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND generation = 2 AND last_error = 'lease expired'")"
wait_for reapdb "SELECT status = 'failed' FROM baton.deliveries WHERE dedup_key = 'o1'" 5
check "attempts spent: failed" "failed" "$(q -d reapdb -c "SELECT status FROM baton.deliveries WHERE dedup_key = 'o1'")"
check "a fenced tenant's lease is left alone" "claimed 1" \
    "$(q -d reapdb -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$T2'")"
check "the reaper said when pg_baton appeared" "1" \
    "$(grep -c 'pg_baton is installed in database "reapdb"; its reaper starts reaping' "$LOG")"
# The counters, written by the reaper with no client calling flush_counts: every event
# of T1 so far; the fenced T2's wait in shared memory.
if wait_for reapdb "SELECT string_agg(concat_ws(' ', target, enqueued, claimed, finished, failed, retried, reaped), ',' ORDER BY target) = 'once 1 1 0 1 0 1,w 5 3 0 0 0 3' FROM baton.delivery_counters WHERE tenant = '$T1'" 10; then
    ok "the reaper writes the counters: enqueued, claimed, reaped, failed"
else
    not_ok "the reaper writes the counters: $(q -d reapdb -c "SELECT string_agg(concat_ws(' ', target, enqueued, claimed, finished, failed, retried, reaped), ',' ORDER BY target) FROM baton.delivery_counters")"
fi
check "a fenced tenant's counts are not written" "0" \
    "$(q -d reapdb -c "SELECT count(*) FROM baton.event_counts WHERE tenant = '$T2'")"

# --- 2b. baton.health: the reaper row, a prepared transaction ------------------------
# The reaper's last batch is in shared memory: reapdb's row is ok once its reaper ran;
# a database baton.reaper_databases does not name warns (the extension is dropped
# there again, so the '*' part below finds it absent).
check "baton.health: reapdb's reaper row is ok once its reaper ran" "ok true" \
    "$(q -d reapdb -c "SELECT status || ' ' || (detail LIKE 'the reaper of database reapdb last reaped % ago') FROM baton.health WHERE name = 'reaper'")"
check "baton.health: a database baton.reaper_databases leaves out warns, \"no reaper: ...\"" "warn true true" \
    "$(q -d postgres -c "CREATE EXTENSION pg_baton" -c "SELECT status || ' ' || (detail LIKE 'no reaper: baton.reaper_databases does not name database postgres%') || ' ' || (hint IS NOT NULL) FROM baton.health WHERE name = 'reaper'" -c "DROP EXTENSION pg_baton" | head -n 1)"
# A prepared transaction with a transaction id holds the horizon: the row names its gid.
q -d reapdb -c "BEGIN" -c "SELECT txid_current()" -c "PREPARE TRANSACTION 'baton_health_gid'" >/dev/null
check "baton.health: xmin_horizon names a prepared transaction's gid" "warn true true" \
    "$(q -d reapdb -c "SELECT txid_current()" -c "SET baton.health_xmin_warn = 0" -c "SELECT status || ' ' || (detail LIKE 'prepared transaction \"baton_health_gid\" (owner postgres, database reapdb) holds the xmin horizon: prepared % ago, % old') || ' ' || (hint LIKE '%ROLLBACK PREPARED ''baton_health_gid''%') FROM baton.health WHERE name = 'xmin_horizon'" | tail -n 1)"
q -d reapdb -c "ROLLBACK PREPARED 'baton_health_gid'" >/dev/null

# --- 2c. schedules fire without anyone calling fire_schedules -------------------------
# The worker calls baton.fire_schedules() after each round of reaping: a schedule
# '@every 1 second' gets a delivery per slot, each slot once, with no client firing.
q -d reapdb -c "SELECT baton.schedule('$T1', 'tick', 'ticks', '@every 1 second')" >/dev/null
if wait_for reapdb "SELECT count(*) >= 2 FROM baton.deliveries WHERE tenant = '$T1' AND target = 'ticks'" 15; then
    ok "a schedule '@every 1 second' gets deliveries with no fire_schedules call"
else
    not_ok "a schedule '@every 1 second' gets deliveries with no fire_schedules call"
fi
check "each slot once, the last one recorded by the schedule" "t" \
    "$(q -d reapdb -c "SELECT count(*) = count(DISTINCT d.dedup_key) AND bool_or(d.id = s.last_delivery_id)
                        FROM baton.deliveries d, baton.schedules s
                        WHERE d.tenant = '$T1' AND d.target = 'ticks' AND s.tenant = '$T1' AND s.name = 'tick'")"
check "no error of fire_schedules in the log" "0" "$(grep -c 'fire_schedules' "$LOG")"
q -d reapdb -c "SELECT baton.unschedule('$T1', 'tick')" >/dev/null

# --- 2c'. the reaper vacuums the side tables of deliveries ------------------------------
# As soon as autovacuum's rule says so (dead rows over 1000 plus 1 % of the rows, the
# settings pg_baton gives them), not once per autovacuum_naptime; not a table whose
# autovacuum_enabled is off; once only while a transaction holds the horizon. Only the
# reaper runs a VACUUM that pg_stat counts as manual here.
vacuums() { q -d reapdb -c "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'baton.$1'::regclass"; }
# churn N: N deliveries of target 'vac' enqueued, claimed and finished, 500 a call (dead
# rows in all three tables).
churn() {
    local i
    q -d reapdb -c "SELECT count(*) FROM baton.enqueue_batch('$T1', (SELECT jsonb_agg(jsonb_build_object(
                      'target', 'vac', 'dedup_key', 'vac' || g || '-' || random())) FROM generate_series(1, $1) g))" >/dev/null
    for ((i = 0; i < $1 / 500; i++)); do
        q -d reapdb -c "WITH c AS (SELECT id, generation FROM baton.claim('$T1', 'vac', '1 hour', 500))
                        SELECT count(*) FROM baton.finish_batch('$T1', ARRAY(SELECT id FROM c ORDER BY id),
                                                                ARRAY(SELECT generation FROM c ORDER BY id))" >/dev/null
    done
}
ready0=$(vacuums ready) leases0=$(vacuums leases) deliveries0=$(vacuums deliveries)
churn 3000
if wait_for reapdb "SELECT bool_and(vacuum_count > CASE relname WHEN 'ready' THEN $ready0 ELSE $leases0 END)
                    FROM pg_stat_user_tables WHERE schemaname = 'baton' AND relname IN ('ready', 'leases')" 10; then
    ok "baton.ready and baton.leases vacuumed by the reaper once their dead rows pass the rule"
else
    not_ok "baton.ready and baton.leases vacuumed by the reaper once their dead rows pass the rule"
fi
check "baton.deliveries is left to autovacuum" "0" "$(($(vacuums deliveries) - deliveries0))"
q -d reapdb -c "ALTER TABLE baton.ready SET (autovacuum_enabled = false)"
sleep 1
ready0=$(vacuums ready) leases0=$(vacuums leases)
churn 3000
wait_for reapdb "SELECT vacuum_count > $leases0 FROM pg_stat_user_tables WHERE relid = 'baton.leases'::regclass" 10 || true
sleep 1
check "autovacuum_enabled = false on baton.ready: the reaper leaves it alone (and vacuums baton.leases)" "0 t" \
    "$(($(vacuums ready) - ready0)) $( (($(vacuums leases) > leases0)) && echo t || echo f)"
q -d reapdb -c "ALTER TABLE baton.ready RESET (autovacuum_enabled)"
# A transaction holding an xid: the dead rows stay, and one vacuum at most finds that out.
sleep 1
q -d reapdb -c "BEGIN" -c "SELECT txid_current()" -c "SELECT pg_sleep(6)" -c "COMMIT" >/dev/null &
HOLDER=$!
sleep 0.5
ready0=$(vacuums ready)
churn 3000
sleep 4
held=$(($(vacuums ready) - ready0))
check "while a transaction holds the horizon: at most one vacuum of baton.ready over 4 s of rounds" "t" \
    "$( ((held <= 1)) && echo t || echo "f ($held)")"
wait "$HOLDER"
check "once it ends: the dead rows are vacuumed away" "t" \
    "$(wait_for reapdb "SELECT n_dead_tup < 1000 AND vacuum_count > $ready0 FROM pg_stat_user_tables
                         WHERE relid = 'baton.ready'::regclass" 10 && echo t || echo f)"

# --- 2e. the scan floor (core/scan_floor.hpp) ------------------------------------------
# A reaper started afresh (its first batch a full scan, which forgets earlier reports of
# early leases), then a transaction holding the horizon while 3,000 leases of 6 s are
# handed out and ended: their dead entries stay in baton.leases' index, and once they
# have expired the reaper's rounds (5 a second) do not walk them again, where a
# scan from the first entry each round would read all 3,000 a round. Meanwhile a
# tenant fenced with a lease of 6 s that expires, and a lease moved into the past by
# direct SQL (reported by its writer): both reaped within a few rounds, not at the next
# full scan a minute later.
T4=00000000-0000-0000-0701-000000000004
pid_before=$(worker_pid reapdb)
q -d postgres -c "SELECT pg_terminate_backend($pid_before)" >/dev/null
wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'reapdb' AND pid <> $pid_before" 20 || true
q -d reapdb -c "SELECT baton.create_tenant('$T4')" -c "SELECT baton.enqueue('$T4', 'w', 'u1')" \
    -c "SELECT baton.enqueue('$T1', 'early', 'e1')" -c "SELECT count(*) FROM baton.claim('$T1', 'early', '1 hour')" \
    -c "BEGIN" -c "SELECT count(*) FROM baton.claim('$T4', 'w', '6 seconds')" \
    -c "SELECT baton.set_tenant_state('$T4', 'fenced')" -c "COMMIT" >/dev/null
q -d reapdb -c "BEGIN" -c "SELECT txid_current()" -c "SELECT pg_sleep(40)" -c "COMMIT" >/dev/null &
HOLDER=$!
sleep 0.5
q -d reapdb -c "SELECT count(*) FROM baton.enqueue_batch('$T1', (SELECT jsonb_agg(jsonb_build_object(
                  'target', 'floor', 'dedup_key', 'fl' || g)) FROM generate_series(1, 3000) g))" >/dev/null
for ((i = 0; i < 6; i++)); do
    q -d reapdb -c "WITH c AS (SELECT id, generation FROM baton.claim('$T1', 'floor', '6 seconds', 500))
                    SELECT count(*) FROM baton.finish_batch('$T1', ARRAY(SELECT id FROM c ORDER BY id),
                                                            ARRAY(SELECT generation FROM c ORDER BY id))" >/dev/null
done
sleep 8
leases_read() { q -d reapdb -c "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = 'baton.leases_pkey'::regclass"; }
reads0=$(leases_read)
sleep 4
reads=$(($(leases_read) - reads0))
check "a transaction holding the horizon: 4 s of rounds read fewer than 3,000 entries of the ended leases' index ($reads)" "t" \
    "$( ((reads < 3000)) && echo t || echo "f ($reads)")"
q -d reapdb -c "UPDATE baton.deliveries SET lease_until = now() - interval '1 hour' WHERE dedup_key = 'e1'" >/dev/null
check "a lease moved into the past by direct SQL: reaped within 3 s" "t" \
    "$(wait_for reapdb "SELECT status = 'pending' FROM baton.deliveries WHERE dedup_key = 'e1'" 3 && echo t || echo f)"
q -d reapdb -c "SELECT baton.set_tenant_state('$T4', 'active')" >/dev/null
check "a tenant active again: its lease, expired while it was fenced, reaped within 3 s" "t" \
    "$(wait_for reapdb "SELECT status = 'pending' FROM baton.deliveries WHERE tenant = '$T4'" 3 && echo t || echo f)"
# Purge reads deliveries_created from its floor too (launcher::purge_scan_from): once the
# finished deliveries are purged under the held transaction, their dead entries stay,
# and five more calls start past them, where calls from the first entry would read them
# all, every call (more than 15,000 entries each).
created_read() { q -d reapdb -c "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = 'baton.deliveries_created'::regclass"; }
purged=0
while n=$(q -d reapdb -c "SELECT baton.purge('0 seconds', 10000)") && ((n > 0)); do purged=$((purged + n)); done
check "purge under the held transaction: the 3,000 finished deliveries and the earlier ones" "t" \
    "$( ((purged >= 3000)) && echo t || echo "f ($purged)")"
reads0=$(created_read)
for ((i = 0; i < 5; i++)); do q -d reapdb -c "SELECT baton.purge('0 seconds', 10000)" >/dev/null; done
reads=$(($(created_read) - reads0))
check "five purges after them, the transaction still held, read fewer than 3,000 entries of deliveries_created ($reads)" "t" \
    "$(kill -0 "$HOLDER" 2>/dev/null && ((reads < 3000)) && echo t || echo "f ($reads)")"
# A delivery enqueued by a transaction that began 6 s before, its creation time (that
# transaction's start) behind the floor a call made meanwhile left: enqueue_batch's
# direct write reports it, a call made before that transaction commits does not see the
# row and keeps the report, and a call after purges it, still reading from a floor.
q -d reapdb -c "BEGIN" -c "SELECT now()" -c "SELECT pg_sleep(6)" \
    -c "SELECT count(*) FROM baton.enqueue_batch('$T1', '[{\"target\": \"late\", \"dedup_key\": \"late1\"}]')" \
    -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
LATE=$!
sleep 3
q -d reapdb -c "SELECT baton.purge('0 seconds', 10000)" >/dev/null
sleep 4.5
q -d reapdb -c "SELECT baton.purge('0 seconds', 10000)" >/dev/null
wait "$LATE"
q -d reapdb -c "WITH c AS (SELECT id, generation FROM baton.claim('$T1', 'late', '1 minute'))
                SELECT baton.finish('$T1', id, generation) FROM c" >/dev/null
reads0=$(created_read)
late=$(q -d reapdb -c "SELECT baton.purge('0 seconds', 10000)")
reads=$(($(created_read) - reads0))
check "a delivery created 6 s before its transaction wrote it: purged by the next call, which read fewer than 3,000 entries ($reads)" "1 t" \
    "$late $(kill -0 "$HOLDER" 2>/dev/null && ((reads < 3000)) && echo t || echo "f ($reads)")"
wait "$HOLDER"

# --- 2d. a database whose pg_baton is older than the library --------------------------
# The library refuses every call on an older schema (docs/guide/versions.md): latedb's reaper
# does not call, says so once (no error each round), and reaps once the database is
# updated. Its rows are written by plain SQL with triggers off (the only way in at 0.8.0):
# the in-use mark, a tenant, a delivery whose lease has expired; the update to 0.9.0
# writes its lease row.
T3=00000000-0000-0000-0701-000000000003
lines_before=$(wc -l <"$LOG")
since() { tail -n +"$((lines_before + 1))" "$LOG"; }
q -d latedb -c "CREATE EXTENSION pg_baton VERSION '0.8.0'" -c "SET session_replication_role = replica" \
    -c "INSERT INTO baton.in_use DEFAULT VALUES" -c "INSERT INTO baton.tenants (tenant) VALUES ('$T3')" \
    -c "INSERT INTO baton.deliveries (tenant, target, dedup_key, status, generation, attempts, lease_until)
        VALUES ('$T3', 'w', 'old1', 'claimed', 1, 1, now() - interval '1 minute')" >/dev/null
sleep 2
check "an older schema: its reaper waits, said once with the hint to update" "1 1" \
    "$(since | grep -c 'pg_baton in database "latedb" is at version 0.8.0, older than its library.s version .*; the pg_baton reaper waits') $(since | grep -c 'HINT:  Run ALTER EXTENSION pg_baton UPDATE in database "latedb"')"
check "an older schema: no error in the log, the expired lease left alone" "0 claimed 1" \
    "$(since | grep -c 'ERROR') $(q -d latedb -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$T3'")"
q -d latedb -c "ALTER EXTENSION pg_baton UPDATE" >/dev/null
if wait_for latedb "SELECT status = 'pending' AND generation = 2 FROM baton.deliveries WHERE tenant = '$T3'"; then
    ok "once updated, its reaper reaps the expired lease"
else
    not_ok "once updated, its reaper reaps the expired lease: $(q -d latedb -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$T3'")"
fi
check "... and says it reaps again" "1" \
    "$(since | grep -c 'pg_baton in database "latedb" is at the library.s version; the pg_baton reaper reaps again')"
q -d latedb -c "DROP EXTENSION pg_baton" >/dev/null

# --- 3. an error inside a batch does not take the worker down -------------------------
# (every reap reads baton.leases first: a lock held on it makes the batch time out)
pid_before=$(worker_pid reapdb)
q -d postgres -c "ALTER SYSTEM SET lock_timeout = '100ms'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
q -d reapdb -c "SET lock_timeout = 0" -c "BEGIN" -c "LOCK TABLE baton.leases IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(1.5)" \
    -c "COMMIT" >/dev/null
q -d postgres -c "ALTER SYSTEM RESET lock_timeout" -c "SELECT pg_reload_conf()" >/dev/null
if grep -q 'canceling statement due to lock timeout' "$LOG"; then
    ok "a batch that fails is logged"
else
    not_ok "a batch that fails is logged (no lock timeout in the log)"
fi
check "the worker survives its error (same pid)" "$pid_before" "$(worker_pid reapdb)"
q -d reapdb -c "SELECT count(*) FROM baton.claim('$T1', 'w', '200 milliseconds', 2)" >/dev/null
if wait_for reapdb "SELECT count(*) = 5 FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND status = 'pending'"; then
    ok "reaping goes on after the error"
else
    not_ok "reaping goes on after the error"
fi

# --- 3b. batches and reloads ---------------------------------------------------------
# baton.reaper_batch = 2 and a 10 s interval, by ALTER SYSTEM and a reload: five expired
# leases are all reaped in the one round a reload starts (batches of 2, 2, 1), not one
# batch per interval.
q -d postgres -c "ALTER SYSTEM SET baton.reaper_batch = 2" -c "ALTER SYSTEM SET baton.reaper_interval = '10s'" \
    -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
check "five claimed with a short lease" "5" \
    "$(q -d reapdb -c "SELECT count(*) FROM baton.claim('$T1', 'w', '100 milliseconds', 5)")"
sleep 0.5
q -d postgres -c "SELECT pg_reload_conf()" >/dev/null
if wait_for reapdb "SELECT count(*) = 5 FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND status = 'pending'" 3; then
    ok "a round reaps batch after batch until one comes back short"
else
    not_ok "a round reaps batch after batch: $(q -d reapdb -c "SELECT string_agg(dedup_key || ':' || status, ',') FROM baton.deliveries WHERE target = 'w'")"
fi
q -d postgres -c "ALTER SYSTEM RESET baton.reaper_batch" -c "ALTER SYSTEM RESET baton.reaper_interval" \
    -c "SELECT pg_reload_conf()" >/dev/null

# --- 4. restart after a crash ---------------------------------------------------------
pid_before=$(worker_pid reapdb)
if [[ -n $pid_before ]] && kill -9 "$pid_before"; then
    ok "killed the reaper (kill -9 $pid_before)"
else
    not_ok "no reaper pid to kill"
fi
sleep 1
if wait_for postgres "SELECT count(*) = 3 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND pid <> ${pid_before:-0}" 30; then
    ok "the reapers are back after the crash"
else
    not_ok "the reapers are back after the crash"
fi
wait_for reapdb "SELECT true" 30 || true
check "claimed again after the restart" "4" \
    "$(q -d reapdb -c "SELECT count(*) FROM baton.claim('$T1', 'w', '200 milliseconds', 4)")"
if wait_for reapdb "SELECT count(*) FILTER (WHERE status = 'claimed') = 0 AND count(*) FILTER (WHERE status = 'pending') = 5 FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w'" 20; then
    ok "the restarted reaper reaps"
else
    not_ok "the restarted reaper reaps: $(q -d reapdb -c "SELECT string_agg(dedup_key || ':' || status || ':' || generation, ',') FROM baton.deliveries")"
fi

# --- 5. clean exit on shutdown --------------------------------------------------------
# Counts committed just before the stop are written by the reaper on its way out (or by
# its last round): found after the restart below.
q -d reapdb -c "SELECT baton.enqueue('$T1', 'last-words', 'l' || i) FROM generate_series(1, 3) i" >/dev/null
lines_before=$(wc -l <"$LOG")
pgctl -w -t 60 -m fast stop >/dev/null || not_ok "fast stop"
tail -n +"$((lines_before + 1))" "$LOG" >"$DIR/stop.log"
check "each reaper says it shuts down" "3" "$(grep -c 'pg_baton reaper in database ".*" shutting down' "$DIR/stop.log")"
check "no reaper exits with an error at shutdown" "0" "$(grep -Ec 'pg_baton reaper.*exit code|FATAL|PANIC' "$DIR/stop.log")"
check "the server shut down" "1" "$(grep -c 'database system is shut down' "$DIR/stop.log")"
# === baton.reaper_databases = '*' (the default) ======================================
# The same cluster restarted with the setting removed: reapdb has pg_baton, plaindb and
# latedb do not.
sed -i '/^baton.reaper_databases/d' "$DIR/data/postgresql.conf"
echo "baton.reaper_interval = '500ms'" >>"$DIR/data/postgresql.conf"
lines_before=$(wc -l <"$LOG")
pgctl -w -t 60 start -l "$LOG" >/dev/null || not_ok "start with the default '*'"
since() { tail -n +"$((lines_before + 1))" "$LOG"; }
reapers_in() { q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = '$1'"; }
check "the default of baton.reaper_databases is '*'" "*" "$(q -d postgres -c 'SHOW baton.reaper_databases')"
check "the counters survive a clean restart, with the counts committed just before the stop" "3 5" \
    "$(q -d reapdb -c "SELECT (SELECT enqueued FROM baton.delivery_counters WHERE tenant = '$T1' AND target = 'last-words') || ' ' || (SELECT enqueued FROM baton.delivery_counters WHERE tenant = '$T1' AND target = 'w')")"
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'reapdb'" 20; then
    ok "'*': the database with pg_baton gets its reaper"
else
    not_ok "'*': the database with pg_baton gets its reaper"
fi
sleep 2
check "'*': only there (no worker in plaindb, latedb, postgres)" "1" \
    "$(q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper'")"
check "'*': a database without pg_baton has no long-lived connection of pg_baton" "0" \
    "$(q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'pg_baton%' AND datname IN ('plaindb', 'latedb', 'postgres')")"
check "'*': one launcher, connected to no database" "1" \
    "$(q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_baton launcher' AND datid IS NULL")"
check "'*': a database without pg_baton is not mentioned" "0" "$(since | grep -c 'database "plaindb"')"
check "'*': the reaper reaps (claimed, lease expired, pending again)" "2" \
    "$(q -d reapdb -c "SELECT count(*) FROM baton.claim('$T1', 'w', '200 milliseconds', 2)")"
if wait_for reapdb "SELECT count(*) = 5 FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND status = 'pending'" 10; then
    ok "'*': expired leases are pending again"
else
    not_ok "'*': expired leases are pending again"
fi

# A database created after the start: served within two intervals of its CREATE
# EXTENSION (1 s here), its first expired lease reaped within two intervals.
q -d postgres -c "CREATE DATABASE newdb"
T3=00000000-0000-0000-0701-000000000003
q -d newdb -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T3')" \
    -c "SELECT baton.enqueue('$T3', 'w', 'n' || i) FROM generate_series(1, 3) i" >/dev/null
t0=$(date +%s%N)
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'newdb'" 10; then
    ms=$((($(date +%s%N) - t0) / 1000000))
    if ((ms <= 1000)); then ok "CREATE EXTENSION in a new database: its reaper within two intervals (${ms} ms)"; else not_ok "CREATE EXTENSION: its reaper after ${ms} ms (more than two intervals)"; fi
else
    not_ok "CREATE EXTENSION in a new database: its reaper starts"
fi
check "claimed in the new database" "3" "$(q -d newdb -c "SELECT count(*) FROM baton.claim('$T3', 'w', '100 milliseconds', 3)")"
t0=$(date +%s%N)
if wait_for newdb "SELECT count(*) = 3 FROM baton.deliveries WHERE status = 'pending' AND last_error = 'lease expired'" 10; then
    ms=$((($(date +%s%N) - t0) / 1000000))
    if ((ms <= 1100)); then ok "reaped within two intervals of the lease's end (${ms} ms)"; else not_ok "reaped ${ms} ms after the claim (more than two intervals)"; fi
else
    not_ok "the new database is reaped"
fi

# DROP EXTENSION stops its worker; CREATE EXTENSION again brings it back.
q -d newdb -c "DROP EXTENSION pg_baton CASCADE" >/dev/null
if wait_for postgres "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'newdb'" 5; then
    ok "DROP EXTENSION stops its worker"
else
    not_ok "DROP EXTENSION stops its worker"
fi
check "the worker says why it exits" "1" "$(since | grep -c 'pg_baton is no longer installed in database "newdb"; its reaper exits')"
q -d newdb -c "CREATE EXTENSION pg_baton" >/dev/null
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'newdb'" 5; then
    ok "CREATE EXTENSION again: the worker is back"
else
    not_ok "CREATE EXTENSION again: the worker is back"
fi
# A CREATE EXTENSION rolled back announces nothing.
q -d plaindb -c "BEGIN" -c "CREATE EXTENSION pg_baton" -c "ROLLBACK" >/dev/null
sleep 1.5
check "a CREATE EXTENSION rolled back starts no worker" "0" "$(reapers_in plaindb)"

# pg_baton arriving by two-phase commit (as Citus creates it on its workers): no reaper
# while the transaction is prepared, one within two intervals of its COMMIT PREPARED
# from another session, none after a ROLLBACK PREPARED; and a prepared install the
# server restarted with gets its reaper at its COMMIT PREPARED too.
q -d postgres -c "CREATE DATABASE twopcdb"
q -d twopcdb -c "BEGIN" -c "CREATE EXTENSION pg_baton" -c "PREPARE TRANSACTION 'baton_install'" >/dev/null
sleep 1.5
check "a CREATE EXTENSION prepared, not committed: no reaper" "0" "$(reapers_in twopcdb)"
q -d twopcdb -c "COMMIT PREPARED 'baton_install'" >/dev/null
t0=$(date +%s%N)
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'twopcdb'" 10; then
    ms=$((($(date +%s%N) - t0) / 1000000))
    if ((ms <= 1000)); then ok "COMMIT PREPARED of a CREATE EXTENSION: its reaper within two intervals (${ms} ms)"; else not_ok "COMMIT PREPARED: its reaper after ${ms} ms (more than two intervals)"; fi
else
    not_ok "COMMIT PREPARED of a CREATE EXTENSION: its reaper starts"
fi
q -d postgres -c "CREATE DATABASE twopcdb2"
q -d twopcdb2 -c "BEGIN" -c "CREATE EXTENSION pg_baton" -c "PREPARE TRANSACTION 'baton_install_2'" >/dev/null
q -d twopcdb2 -c "ROLLBACK PREPARED 'baton_install_2'" >/dev/null
sleep 1.5
check "ROLLBACK PREPARED of a CREATE EXTENSION: no reaper" "0" "$(reapers_in twopcdb2)"
q -d twopcdb2 -c "BEGIN" -c "CREATE EXTENSION pg_baton" -c "PREPARE TRANSACTION 'baton_install_3'" >/dev/null
pgctl -w -t 60 -m fast restart -l "$LOG" >/dev/null || not_ok "restart with a prepared CREATE EXTENSION"
wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'twopcdb'" 20 || true
sleep 1.5
check "after a restart, a CREATE EXTENSION still prepared: no reaper" "0" "$(reapers_in twopcdb2)"
q -d twopcdb2 -c "COMMIT PREPARED 'baton_install_3'" >/dev/null
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'twopcdb2'" 5; then
    ok "... its COMMIT PREPARED after the restart starts its reaper"
else
    not_ok "... its COMMIT PREPARED after the restart starts its reaper"
fi

# A database created from a template that has pg_baton, and one restored by pg_restore
# (pg_baton created by the restore's CREATE EXTENSION), get their reapers; the template
# itself none.
q -d postgres -c "CREATE DATABASE batontpl IS_TEMPLATE true"
q -d batontpl -c "CREATE EXTENSION pg_baton" >/dev/null
q -d postgres -c "CREATE DATABASE fromtpl TEMPLATE batontpl"
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'fromtpl'" 5; then
    ok "a database created from a template with pg_baton gets its reaper"
else
    not_ok "a database created from a template with pg_baton gets its reaper"
fi
check "... the template none" "0" "$(reapers_in batontpl)"
"$BINDIR/pg_dump" -Fc -d twopcdb -f "$DIR/twopcdb.dump" || not_ok "pg_dump of twopcdb"
q -d postgres -c "CREATE DATABASE restoreddb"
"$BINDIR/pg_restore" -d restoreddb --single-transaction "$DIR/twopcdb.dump" >/dev/null 2>"$DIR/restore.err" || not_ok "pg_restore: $(head -c 300 "$DIR/restore.err")"
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'restoreddb'" 5; then
    ok "a database restored by pg_restore gets its reaper"
else
    not_ok "a database restored by pg_restore gets its reaper"
fi
q -d postgres -c "ALTER DATABASE batontpl IS_TEMPLATE false" -c "DROP DATABASE batontpl" -c "DROP DATABASE fromtpl" \
    -c "DROP DATABASE restoreddb" -c "DROP DATABASE twopcdb" -c "DROP DATABASE twopcdb2" >/dev/null

# Commands that need the database free of connections succeed while its reaper runs
# (without FORCE): PostgreSQL waits up to 5 s for other sessions, so each must finish
# well within that.
timed() { # timed NAME DB SQL: runs SQL, checks it succeeds in under 4 s
    local t0 ms
    t0=$(date +%s%N)
    if q -d "$2" -c "$3" >/dev/null 2>"$DIR/cmd.err"; then
        ms=$((($(date +%s%N) - t0) / 1000000))
        if ((ms < 4000)); then ok "$1 (${ms} ms)"; else not_ok "$1 took ${ms} ms"; fi
    else
        not_ok "$1: $(cat "$DIR/cmd.err")"
    fi
}
check "newdb has its reaper before the commands" "1" "$(reapers_in newdb)"
timed "ALTER DATABASE ... RENAME of a reaped database" postgres "ALTER DATABASE newdb RENAME TO newdb2"
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'newdb2'" 10; then
    ok "its reaper is back under the new name"
else
    not_ok "its reaper is back under the new name"
fi
timed "CREATE DATABASE ... TEMPLATE of a reaped database" postgres "CREATE DATABASE copydb TEMPLATE newdb2"
if wait_for postgres "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname IN ('newdb2', 'copydb')" 10; then
    ok "the template's reaper is back, and the copy (with pg_baton) gets one"
else
    not_ok "the template's reaper is back, and the copy gets one: $(q -d postgres -c "SELECT string_agg(datname, ',') FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper'")"
fi
timed "DROP DATABASE (without FORCE) of a reaped database" postgres "DROP DATABASE copydb"
sleep 1
check "no worker for the dropped database, the others stay" "0 1 1" \
    "$(reapers_in copydb) $(reapers_in newdb2) $(reapers_in reapdb)"
check "no error from the launcher or a reaper" "0" "$(since | grep -Ec '(pg_baton|reaper).*(ERROR|FATAL)|(ERROR|FATAL).*(pg_baton|reaper)')"
# A role that does not own the database cannot pause its reaper with a failing command.
q -d postgres -c "CREATE ROLE stranger LOGIN" >/dev/null
pid_before=$(worker_pid newdb2)
q -d postgres -U stranger -c "DROP DATABASE newdb2" >/dev/null 2>&1
sleep 0.5
check "a refused DROP DATABASE leaves the reaper alone" "$pid_before" "$(worker_pid newdb2)"

# pg_terminate_backend: the launcher starts another (after 5 s).
pid_before=$(worker_pid newdb2)
q -d postgres -c "SELECT pg_terminate_backend($pid_before)" >/dev/null
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'newdb2' AND pid <> $pid_before" 15; then
    ok "a terminated reaper is started again"
else
    not_ok "a terminated reaper is started again"
fi

# kill -9 of a reaper: the server restarts, the launcher too, and each database with
# pg_baton gets its reaper again.
pid_before=$(worker_pid reapdb)
kill -9 "$pid_before" 2>/dev/null || not_ok "kill -9 of the reaper"
sleep 1
if wait_for postgres "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname IN ('reapdb', 'newdb2') AND pid <> $pid_before" 30; then
    ok "'*': the reapers are back after kill -9"
else
    not_ok "'*': the reapers are back after kill -9"
fi
wait_for reapdb "SELECT true" 30 || true
q -d reapdb -c "SELECT count(*) FROM baton.claim('$T1', 'w', '100 milliseconds', 2)" >/dev/null
if wait_for reapdb "SELECT count(*) = 5 FROM baton.deliveries WHERE tenant = '$T1' AND target = 'w' AND status = 'pending'" 10; then
    ok "'*': the restarted reaper reaps"
else
    not_ok "'*': the restarted reaper reaps"
fi

# Out of worker slots: max_worker_processes = 3 leaves one slot beside the launcher and
# the logical replication launcher; two databases want a reaper: said once, with the
# setting to raise.
echo "max_worker_processes = 3" >>"$DIR/data/postgresql.conf"
lines_before=$(wc -l <"$LOG")
pgctl -w -t 60 -m fast restart -l "$LOG" >/dev/null || not_ok "restart with max_worker_processes = 3"
sleep 5
check "out of worker slots: said once" "1" "$(since | grep -c 'no background worker slot is free for a pg_baton reaper')"
check "the message names the setting to raise" "1" "$(since | grep -c 'HINT:  Raise max_worker_processes (now 3)')"
check "the one slot serves one database" "1" \
    "$(q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper'")"
sed -i '/^max_worker_processes/d' "$DIR/data/postgresql.conf"

lines_before=$(wc -l <"$LOG")
pgctl -w -t 60 -m fast stop >/dev/null || not_ok "fast stop"
check "'*': no reaper or launcher exits with an error at shutdown" "0" "$(since | grep -Ec 'pg_baton (reaper|launcher).*exit code|FATAL|PANIC')"
check "'*': the launcher says it shuts down" "1" "$(since | grep -c 'pg_baton launcher shutting down')"

if ((FAIL > 0)); then
    echo "----- server log -----"
    tail -n 60 "$LOG"
fi

finish
