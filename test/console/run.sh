#!/usr/bin/env bash
# The web console (console/server.mjs) in a real browser:   bash test/console/run.sh [--screenshots]
#
# Runs against the server in PGHOST/PGPORT/PGUSER (run-all.sh's cluster, the extension
# installed), in a database of its own, created here and dropped at the end, with three
# roles of its own: an admin (grant_admin and SELECT on the tables the listings read), a
# viewer (the same without EXECUTE on cancel_delivery, redrive and retry) and a worker
# that a target is bound to. Loads fixtures.sql (deliveries in every state, a dedup key,
# payload, target and error holding <script> and <b>, a run with two stages and a marker
# in doubt, two schedules), starts a console as the admin and one as the viewer, and
# drives Debian's chromium headless with playwright-core (test/console/browser.mjs):
#   overview    health rows and statuses as baton.health; pending and leased of every
#               tenant and target as counted in SQL; the counters as delivery_counters;
#               the throughput plot counts 40 enqueued and 10 claimed after the start
#   deliveries  pages of 5 followed to the end = every id, newest first; each state
#               filter, 2 a page; pending in claim order; a dedup key prefix; by id; the
#               filter form; markup in key, payload, error and target shows as text
#   actions     cancel, redrive and retry change the row as the contract says; a retry
#               whose generation changed is DU001 (409) and a retry on a bound target
#               DU005 (403), each shown with SQLSTATE, message, detail or hint, nothing
#               changed; the viewer's redrive and cancel are 42501, nothing changed
#   forgery     a POST without or with a wrong token (one of the same length in non-ASCII
#               characters too: 403), from another origin, for another host name, and a
#               GET of the action: refused, nothing changed; an action named after what
#               an object inherits (constructor, hasOwnProperty, ...): 400 "unknown
#               action", no redirect, the token nowhere in the answer
#   sampler     a stop() while a sample is being read is not undone by its tick
#   parameters  malformed ones (a tenant that is no uuid, a negative limit, an unknown
#               state, a bad cursor, ...) are 400 with a message, no stack trace
#   runs        every run with its status, a status filter; a run's stages in chain order,
#               its saved decision, a timeline bar per stage, its markers in doubt
#   schedules   next and last fire as baton.schedules; pagination
# and no dialog opened, no error in the pages' consoles.
# With --screenshots the pages are saved as docs/img/console-*.png (else into a temp dir).
# The console's and the test's npm packages come from their package-lock.json (`npm ci`
# when node_modules is missing). Prints "N passed, N failed" last; exits non-zero on failure.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
NODE=${NODE:-node}
DB=baton_console_$$
ADMIN=baton_console_admin_$$
VIEWER=baton_console_viewer_$$
WORKER=baton_console_worker_$$
WORKDIR=$(mktemp -d /tmp/pg_baton-console.XXXXXX)
SHOTS=$WORKDIR/shots
[[ ${1:-} == --screenshots ]] && SHOTS=$ROOT/docs/img
PIDS=()

# shellcheck disable=SC2317 # called by the trap
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    psql -XqAt -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
    for r in "$ADMIN" "$VIEWER" "$WORKER"; do psql -XqAt -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1; done
    rm -rf "$WORKDIR"
}
trap cleanup EXIT
die() { echo "setup: $*"; echo "0 passed, 1 failed"; exit 1; }

for dir in console test/console; do
    if [[ ! -d $dir/node_modules ]]; then
        (cd "$dir" && npm ci --no-audit --no-fund >"$WORKDIR/npm.log" 2>&1) || die "npm ci in $dir failed: $(tail -5 "$WORKDIR/npm.log")"
    fi
done

psql -XqAt -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB" >/dev/null || die "cannot create database $DB"
psql -XqAt -d "$DB" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_baton" >/dev/null || die "cannot create the extension"
for r in "$ADMIN" "$VIEWER" "$WORKER"; do
    psql -XqAt -d postgres -v ON_ERROR_STOP=1 -c "CREATE ROLE $r LOGIN" >/dev/null || die "cannot create role $r"
done
psql -XqAt -d "$DB" -v ON_ERROR_STOP=1 -v admin="$ADMIN" -v viewer="$VIEWER" -v worker="$WORKER" \
    -f test/console/fixtures.sql >"$WORKDIR/fixtures.log" 2>&1 || die "fixtures: $(tail -5 "$WORKDIR/fixtures.log")"

# start_console ROLE LOG: starts a console as ROLE on a free port (its pid kept in PIDS);
# sets URL to its address.
start_console() {
    local role=$1 log=$2 i
    "$NODE" console/server.mjs "postgresql://$role@/$DB?host=${PGHOST:-/var/run/postgresql}&port=${PGPORT:-5432}" \
        --port 0 --sample-seconds 1 >"$log" 2>&1 &
    PIDS+=($!)
    URL=
    for ((i = 0; i < 100; i++)); do
        URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" 2>/dev/null)
        [[ -n $URL ]] && return 0
        sleep 0.1
    done
    return 1
}
start_console "$ADMIN" "$WORKDIR/admin.log" || die "the admin's console did not start: $(cat "$WORKDIR/admin.log")"
ADMIN_URL=$URL
start_console "$VIEWER" "$WORKDIR/viewer.log" || die "the viewer's console did not start: $(cat "$WORKDIR/viewer.log")"
VIEWER_URL=$URL
sleep 1.2 # a first sample of the counters

PGDATABASE=$DB ADMIN_URL=$ADMIN_URL VIEWER_URL=$VIEWER_URL SCREENSHOT_DIR=$SHOTS \
    "$NODE" test/console/browser.mjs >"$WORKDIR/out" 2>&1
status=$?
summary=$(tail -n 1 "$WORKDIR/out")
head -n -1 "$WORKDIR/out"
if ((status != 0)); then
    echo "# the admin's console's log:"
    sed 's/^/#   /' "$WORKDIR/admin.log" | tail -20
fi
[[ $summary =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]] || { echo "$summary"; summary="0 passed, 1 failed"; status=1; }
echo "$summary"
exit $status
