#!/usr/bin/env bash
# pg_baton without shared_preload_libraries: a cluster of its own, where the extension is
# loaded on first use. Checks that loading it late is harmless (no setting that only the
# preload may define), that claims work without claim hints, and that the claim hints'
# setting does not exist there, that baton.health's reaper row says "not preloaded", and
# that the deliveries' counters are written by the committing transactions themselves.
# Prints "N passed, N failed" last.
#   bash test/unpreloaded/run.sh      (BATON_UNPRELOADED_PORT: first port, default 55150)
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
DIR=$(mktemp -d /tmp/pg_baton-unpreloaded.XXXXXX)
trap 'cluster_stop "$DIR" >/dev/null 2>&1' EXIT
port=$(cluster_free_port "${BATON_UNPRELOADED_PORT:-55150}")
cluster_start "$DIR" "$port" >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
pass=0 fail=0
check() { # check NAME EXPECTED SQL
    local got
    got=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "$3" 2>&1)
    if [[ $got == "$2" ]]; then
        pass=$((pass + 1)); echo "ok   $1"
    else
        fail=$((fail + 1)); echo "FAIL $1: expected '$2', got '$got'"
    fi
}
T=00000000-0000-0000-0000-00000000beef
check "create extension without the preload" "" "CREATE EXTENSION pg_baton"
psql -X -q -c "SELECT baton.create_tenant('$T')" >/dev/null
check "enqueue" "3" "SELECT count(*) FROM (SELECT baton.enqueue('$T', 'w', 'k' || g) FROM generate_series(1, 3) g) e"
check "claim in order, then after a rollback" "k1,k2
1,2" "BEGIN; SELECT string_agg(dedup_key, ',' ORDER BY id) FROM baton.claim('$T', 'w', '1 min', 2); ROLLBACK; SELECT replace(string_agg(dedup_key, ',' ORDER BY id), 'k', '') FROM baton.claim('$T', 'w', '1 min', 2)" 
check "finish" "finished" "SELECT baton.finish('$T', d.id, d.generation) FROM baton.deliveries d WHERE d.dedup_key = 'k1'"
check "no claim hint setting" "unset" "SELECT coalesce(current_setting('baton.claim_hint_targets', true), 'unset')"
check "a new backend loads it again" "k3" "SELECT dedup_key FROM baton.claim('$T', 'w', '1 min')"
check "baton.health: the reaper row warns \"no reaper: not preloaded\", with a hint naming reap() and fire_schedules()" "warn|t|t" \
    "SELECT status, detail LIKE 'no reaper: pg_baton is not preloaded%', hint LIKE '%shared_preload_libraries%baton.fire_schedules()%' FROM baton.health WHERE name = 'reaper'"
# Without shared memory each committing transaction writes its own counts.
check "the counters without the preload: written by the committing transactions, nothing to flush (the rolled-back claims not counted)" "3|3|1|0" \
    "SELECT enqueued || '|' || claimed || '|' || finished || '|' || baton.flush_counts() FROM baton.delivery_counters WHERE tenant = '$T' AND target = 'w'"
check "no setting of shared memory for the counters" "unset" "SELECT coalesce(current_setting('baton.counted_targets', true), 'unset')"
echo "$pass passed, $fail failed"
((fail == 0))
