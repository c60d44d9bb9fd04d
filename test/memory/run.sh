#!/usr/bin/env bash
# Memory of one backend over many pg_baton calls: a thousand calls, then about a
# million, all in ONE session (test/memory/memory.sql: rounds of enqueue, claim, renew,
# finish, retry, reads, and six refusals caught by PL/pgSQL EXCEPTION blocks). After each
# phase it reads the backend's memory: the sum of pg_backend_memory_contexts.total_bytes
# and RssAnon from /proc/<pid>/status. Each must grow by at most the bound between the
# two measurements.
#
#   bash test/memory/run.sh     (against the cluster of test/run-all.sh: PGHOST, PGPORT,
#                                PGUSER exported, pg_baton installed)
#   BATON_MEMORY_CALLS=N        calls in all (default 1000000)
#   BATON_MEMORY_BOUND_KB=N     allowed growth of each figure (default 4096 = 4 MB)
#
# The bound: a backend's caches (catalog, plans, PL/pgSQL) fill during the first thousand
# calls; what is left is what a leak would add, proportional to the calls. A leak of
# even 5 bytes a call would pass 4 MB over a million calls. The last line is
# "N passed, N failed": one count for the context bytes, one for RssAnon (and a failure
# when fewer calls were made than asked).
#
# Measured (2 busy cores, PostgreSQL 15): a million calls take about 90 s (11,000 calls/s);
# contexts 2,985 kB -> 2,915 kB, RssAnon 5,180 kB -> 5,312 kB. With a deliberate leak of
# 64 bytes in TopMemoryContext per baton.delivery call (6 calls of 20), both figures
# failed the bound within 200,000 calls (+7,994 kB and +4,720 kB).
set -uo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
CALLS=${BATON_MEMORY_CALLS:-1000000}
BOUND_KB=${BATON_MEMORY_BOUND_KB:-4096}
DB=baton_memory
TENANT=00000000-0000-0000-0006-00000000000a
export PGDATABASE=${PGDATABASE:-postgres}

fail_all() {
    echo "memory: $1"
    echo "0 passed, 2 failed"
    exit 1
}

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" \
    -c "CREATE DATABASE $DB" >/dev/null || fail_all "could not create database $DB"
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1' EXIT
psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "CREATE EXTENSION pg_baton" \
    -c "SELECT baton.create_tenant('$TENANT')" >/dev/null || fail_all "could not set up pg_baton"

echo "memory: $CALLS calls in one backend, bound ${BOUND_KB} kB of growth"
start=$SECONDS
out=$(psql -X -q -At -v ON_ERROR_STOP=1 -d "$DB" -v tenant="$TENANT" -v total_calls="$CALLS" \
    -f "$HERE/memory.sql" 2>&1) || { echo "$out"; fail_all "memory.sql failed"; }
secs=$((SECONDS - start))
read -r _ _ calls1 ctx1 rss1 < <(grep '^MEM thousand ' <<<"$out")
read -r _ _ calls2 ctx2 rss2 < <(grep '^MEM million ' <<<"$out")
[[ -n ${rss1:-} && -n ${rss2:-} ]] || { echo "$out"; fail_all "no measurements in the output"; }

kb() { echo $(( $1 / 1024 )); }
echo "memory: after $calls1 calls: contexts $(kb "$ctx1") kB, RssAnon $(kb "$rss1") kB"
echo "memory: after $calls2 calls: contexts $(kb "$ctx2") kB, RssAnon $(kb "$rss2") kB (${secs}s," \
    "$(( calls2 / (secs > 0 ? secs : 1) )) calls/s)"
passed=0
failed=0
for what in contexts:$ctx1:$ctx2 RssAnon:$rss1:$rss2; do
    IFS=: read -r name before after <<<"$what"
    growth=$(( (after - before) / 1024 ))
    if (( growth <= BOUND_KB )); then
        passed=$((passed + 1))
        echo "memory: PASS $name grew by $growth kB (bound $BOUND_KB kB)"
    else
        failed=$((failed + 1))
        echo "memory: FAIL $name grew by $growth kB (bound $BOUND_KB kB) over $((calls2 - calls1)) calls"
    fi
done
if (( calls2 < CALLS )); then
    failed=$((failed + 1))
    echo "memory: FAIL made $calls2 calls, fewer than the $CALLS asked for"
fi
echo "$passed passed, $failed failed"
((failed == 0))
