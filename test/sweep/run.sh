#!/usr/bin/env bash
# No query crashes the server: on a throwaway server of its own (scripts/cluster.sh,
# shared_preload_libraries = 'pg_baton', no Citus), every function of schema baton is
# called in every shape of test/sweep/calls.sql (alone, in FROM, in a subquery, a scalar
# subquery, a CTE, LATERAL, a UNION, a prepared statement executed six times, a PL/pgSQL
# loop), in two passes at once with a tenant each: each statement alone, and each inside
# BEGIN ... COMMIT. Each statement must answer or refuse with a SQLSTATE (refusals are
# fine), and the server log must name no backend terminated by a signal.
# test/citus/sweep.sh runs the same sweep on a Citus cluster.
#
#   bash test/sweep/run.sh          (PG_CONFIG exported; pg_baton installed into it)
#
# The last line is "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

PASS=0
FAIL=0
check() { # check NAME EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then PASS=$((PASS + 1)); echo "ok   - $1"; else FAIL=$((FAIL + 1)); echo "FAIL - $1 (expected '$2', got '$3')"; fi
}

BINDIR=$(_cluster_bindir) || { echo "sweep: no server binaries"; echo "0 passed, 1 failed"; exit 1; }
export PATH=$BINDIR:$PATH
DIR=$(mktemp -d /tmp/pg_baton-sweep.XXXXXX)
chmod 0755 "$DIR"
cleanup() { cluster_stop "$DIR/server" >/dev/null 2>&1 || true; rm -rf -- "$DIR"; }
trap cleanup EXIT
if ! cluster_start "$DIR/server" "$(cluster_free_port 55380)" "shared_preload_libraries = 'pg_baton'" \
    "baton.reaper_databases = ''" >"$DIR/start.log" 2>&1; then
    cat "$DIR/start.log"
    echo "sweep: the server did not start"
    echo "0 passed, 1 failed"
    exit 1
fi
psql -X -q -c "CREATE EXTENSION pg_baton" >/dev/null
SWEEP_DIR=$DIR
# shellcheck source=test/sweep/sweep.sh
source "$ROOT/test/sweep/sweep.sh"
sweep_prepare -p "$PGPORT"

(PASS=0 FAIL=0 sweep_pass alone 00000000-0000-4000-8000-000000000001 plain) >"$DIR/pass-0.log" 2>&1 &
(PASS=0 FAIL=0 sweep_pass in-transaction 00000000-0000-4000-8000-000000000002 txn) >"$DIR/pass-1.log" 2>&1 &
wait
for i in 0 1; do
    cat "$DIR/pass-$i.log"
    PASS=$((PASS + $(grep -c '^ok' "$DIR/pass-$i.log")))
    FAIL=$((FAIL + $(grep -c '^FAIL' "$DIR/pass-$i.log")))
done
sweep_logs "$CLUSTER_LOG"

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
