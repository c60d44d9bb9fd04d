#!/usr/bin/env bash
# What a session is told besides results, against a live server:   bash test/reports/run.sh
#
# Runs against the server in PGHOST/PGPORT/PGUSER (run-all.sh's cluster, pg_baton
# installed), in a database of its own, created here and dropped at the end.
#
#   location  a refusal's LOCATION (psql's VERBOSITY verbose) is the function and file
#             that raised it, never the boundary that turned the C++ exception into the
#             Postgres error: a NULL argument where the entry point reads it, a fenced
#             write in the fence, a bad lease in the core's rule, a spec in the
#             schedule parser, a stale generation where the lease is checked
#   redrive   a redrive that moves deliveries wakes the target's listeners (a LISTEN
#             on baton.wakeup_channel() hears it at commit); one that moves nothing,
#             and one rolled back, do not; each id a redrive by ids skips is named in
#             its NOTICE with the reason
#
# Prints "N passed, N failed" last.
set -uo pipefail
DB=baton_reports_$$
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }
q() { psql -X -q -At -d "$DB" -v ON_ERROR_STOP=1 "$@"; }

psql -X -q -d postgres -c "CREATE DATABASE $DB" >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1' EXIT
T=00000000-0000-0000-0000-00000000a11e
F=00000000-0000-0000-0000-00000000fe0c
q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" -c "SELECT baton.create_tenant('$F')" \
    -c "SELECT baton.set_tenant_state('$F', 'fenced')" >/dev/null

# --- location --------------------------------------------------------------------------
# location NAME SQL FUNCTION FILE: the LOCATION of SQL's error is "FUNCTION, FILE:line".
location() {
    local got
    got=$(psql -X -q -d "$DB" -v VERBOSITY=verbose -c '\set VERBOSITY verbose' -c "$2" 2>&1 | sed -n 's/^LOCATION:  //p')
    if [[ $got =~ ^$3,\ $4:[0-9]+$ ]]; then
        ok "location: $1 ($got)"
    else
        not_ok "location: $1: expected '$3, $4:<line>', got '$got'"
    fi
}
location "a NULL argument, where the entry point reads it" \
    "SELECT baton.create_tenant(NULL)" create_tenant tenants.cpp
location "a write to a fenced tenant, in the fence" \
    "SELECT baton.enqueue('$F', 'w', 'k')" require_row_writable fence.cpp
location "a lease that is not positive, in the core's rule" \
    "SELECT * FROM baton.claim('$T', 'w', '-1 second')" check_lease_usec delivery.cpp
location "a cron line out of range, in the schedule parser" \
    "SELECT baton.schedule('$T', 'n', 'w', '0 24 * * *')" refuse schedule.cpp
id=$(q -c "SELECT baton.enqueue('$T', 'stale', 's1')")
q -c "SELECT id FROM baton.claim('$T', 'stale', '1 hour')" >/dev/null
location "a stale generation, where the lease is checked" \
    "SELECT baton.finish('$T', $id, 99)" throw_lease_lost leases.cpp
n=$(psql -X -q -d "$DB" -c '\set VERBOSITY verbose' -c "SELECT baton.create_tenant(NULL)" \
    -c "SELECT baton.enqueue('$F', 'w', 'k')" -c "SELECT baton.redrive('$T', 'w', max_rows => 0)" 2>&1 | grep -c 'boundary.cpp')
if [[ $n == 0 ]]; then ok "location: no refusal is placed in boundary.cpp"; else not_ok "location: $n refusals placed in boundary.cpp"; fi

# --- redrive ---------------------------------------------------------------------------
channel=$(q -c "SELECT baton.wakeup_channel('$T', 'redo')")
a=$(q -c "SELECT baton.enqueue('$T', 'redo', 'r1')")
b=$(q -c "SELECT baton.enqueue('$T', 'redo', 'r2')")
q -c "SELECT baton.cancel_delivery('$T', $a)" >/dev/null
# heard SQL: the notifications a session listening on the channel got by SQL's commit.
heard() { psql -X -q -d "$DB" -c "LISTEN \"$channel\"" -c "$1" -c "SELECT 1" 2>&1 | grep -c "Asynchronous notification \"$channel\""; }
got=$(heard "BEGIN; SELECT baton.redrive('$T', 'redo', ARRAY[$a]::bigint[]); ROLLBACK;")
if [[ $got == 0 ]]; then ok "redrive: one rolled back wakes nobody"; else not_ok "redrive: rolled back, yet $got notifications"; fi
got=$(heard "SELECT baton.redrive('$T', 'redo', ARRAY[$a]::bigint[])")
if [[ $got == 1 ]]; then ok "redrive: moving a delivery wakes the target's listener"; else not_ok "redrive: moved one, $got notifications"; fi
got=$(heard "SELECT baton.redrive('$T', 'redo')")
if [[ $got == 0 ]]; then ok "redrive: moving nothing wakes nobody"; else not_ok "redrive: moved nothing, yet $got notifications"; fi
notice=$(q -c "SELECT baton.redrive('$T', 'redo', ARRAY[$b, 0]::bigint[])" 2>&1)
want="NOTICE:  redrive skipped 2 of the 2 deliveries named
DETAIL:  Delivery $b is pending: only failed and cancelled deliveries are redriven.
Delivery 0 does not exist.
HINT:  baton.delivery(tenant, id) shows a delivery as it is.
0"
if [[ $notice == "$want" ]]; then ok "redrive: each skipped id named with its reason"; else not_ok "redrive: the NOTICE was '$notice'"; fi

echo "$pass passed, $fail failed"
((fail == 0))
