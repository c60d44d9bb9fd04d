#!/usr/bin/env bash
# Concurrency promises through the coordinator of a distributed install:
# pg_isolation_regress runs test/citus/isolation/specs/*.spec against the coordinator of
# a three-node Citus cluster (test/citus/cluster.sh) on which pg_baton is created and
# distributed and the specs' tenants exist, and compares with
# test/citus/isolation/expected/.
#
#   bash test/citus/isolation.sh    (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 56680)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed" (one per spec).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-isolation
PG_ISOLATION_REGRESS=$(dirname "$("$PG_CONFIG" --pgxs)")/../test/isolation/pg_isolation_regress

citus_suite_start citus-isolation "${BATON_CITUS_PORT:-56680}"
psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || { echo "citus-isolation: setup failed"; echo "0 passed, 1 failed"; exit 1; }
CREATE EXTENSION pg_baton;
SELECT baton.distribute();
SELECT baton.create_tenant('00000000-0000-0000-0201-000000000001');
SELECT baton.create_tenant('00000000-0000-0000-0202-000000000001');
SELECT baton.create_tenant('00000000-0000-0000-0203-000000000001');
SELECT baton.create_tenant('00000000-0000-0000-0204-000000000001');
SELECT baton.create_tenant('00000000-0000-0000-0205-000000000001');
SELECT baton.create_tenant('00000000-0000-0000-0206-000000000001');
-- citus_authz_cache's roles (Citus creates them, and their memberships, on every node).
CREATE ROLE iso_citus_worker LOGIN;
CREATE ROLE iso_citus_team;
CREATE ROLE iso_citus_other;
SELECT baton.grant_worker('iso_citus_worker');
SELECT baton.grant_producer('iso_citus_worker');
-- The isolation tester asks pg_isolation_test_session_is_blocked whether a step waits;
-- Postgres' own sees only the coordinator's locks. Citus' replacement sees a wait on a
-- worker too (a delegated call, or a statement routed there), as Citus' own tests do.
SELECT citus_internal.replace_isolation_tester_func();
SQL

specs=$(find "$ROOT/test/citus/isolation/specs" -name '*.spec' -printf '%f\n' | sed 's/\.spec$//' | sort)
mkdir -p "$BASE/out"
# shellcheck disable=SC2086
"$PG_ISOLATION_REGRESS" --inputdir="$ROOT/test/citus/isolation" --outputdir="$BASE/out" --bindir="$BINDIR" \
    --host="$PGHOST" --port="$PGPORT" --user=postgres --use-existing --dbname=postgres $specs >"$BASE/out/log" 2>&1
grep -E '^(ok|not ok|test )' "$BASE/out/log" | sed 's/ *[0-9]* ms$//'
[[ -f $BASE/out/regression.diffs ]] && cp "$BASE/out/regression.diffs" /tmp/pg_baton-citus-isolation.diffs
pass=$(grep -cE '^(ok|test .* \.\.\. ok)' "$BASE/out/log")
# A spec that did not pass failed, whatever pg_isolation_regress said of it (a missing
# expected file is neither "ok" nor "FAILED"); its output is kept for a look.
fail=$(($(wc -w <<<"$specs") - pass))
if ((fail > 0)); then
    rm -rf /tmp/pg_baton-citus-isolation.results
    cp -r "$BASE/out/results" /tmp/pg_baton-citus-isolation.results 2>/dev/null
    echo "citus-isolation: output in /tmp/pg_baton-citus-isolation.results, differences in /tmp/pg_baton-citus-isolation.diffs"
fi
echo "$pass passed, $fail failed"
((fail == 0 && pass > 0))
