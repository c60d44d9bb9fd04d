#!/usr/bin/env bash
# The background reaper, on a throwaway cluster of its own started with
# shared_preload_libraries = 'pg_baton' and its own baton.reaper_databases (the restarts
# and kills here stay off test/run-all.sh's cluster).
#
#   bash test/reaper/run.sh          (PG_CONFIG exported; pg_baton installed into it)
#
# Checks: one worker per listed database; a listed database without the extension is
# skipped and said once; a listed database that does not exist yet gets its worker once
# it does (restarted every 5 s); expired leases become pending (or failed once attempts are
# spent) with no client calling reap; a fenced tenant is skipped; an error inside a batch
# (a lock timeout) is logged and the worker goes on with the same pid; after kill -9 the
# workers come back and reap again; a clean stop logs a clean exit. Last line:
# "N passed, N failed".
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
    "baton.reaper_databases = 'reapdb, plaindb, latedb'" "baton.reaper_interval = '200ms'"; then
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
    "$(grep -c 'pg_baton is not installed in database "plaindb"' "$LOG")"

# A listed database that does not exist yet: its worker fails (FATAL, exit 1) and the
# postmaster starts it again every 5 s (bgw_restart_time) until the database exists.
if grep -q 'FATAL:  database "latedb" does not exist' "$LOG"; then
    ok "a missing database: its worker fails and says why"
else
    not_ok "a missing database: its worker fails and says why"
fi
q -d postgres -c "CREATE DATABASE latedb"
if wait_for postgres "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'latedb'" 20; then
    ok "its worker is restarted and connects once the database exists"
else
    not_ok "its worker is restarted and connects once the database exists"
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

# --- 3. an error inside a batch does not take the worker down -------------------------
pid_before=$(worker_pid reapdb)
q -d postgres -c "ALTER SYSTEM SET lock_timeout = '100ms'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
q -d reapdb -c "SET lock_timeout = 0" -c "BEGIN" -c "LOCK TABLE baton.deliveries IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(1.5)" \
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
lines_before=$(wc -l <"$LOG")
pgctl -w -t 60 -m fast stop >/dev/null || not_ok "fast stop"
tail -n +"$((lines_before + 1))" "$LOG" >"$DIR/stop.log"
check "each reaper says it shuts down" "3" "$(grep -c 'pg_baton reaper in database ".*" shutting down' "$DIR/stop.log")"
check "no reaper exits with an error at shutdown" "0" "$(grep -Ec 'pg_baton reaper.*exit code|FATAL|PANIC' "$DIR/stop.log")"
check "the server shut down" "1" "$(grep -c 'database system is shut down' "$DIR/stop.log")"
if ((FAIL > 0)); then
    echo "----- server log -----"
    tail -n 60 "$LOG"
fi

finish
