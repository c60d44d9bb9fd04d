#!/usr/bin/env bash
# Wake-ups wherever a worker listens, on a distributed install: a three-node Citus
# cluster (test/citus/cluster.sh) whose nodes run the launcher with its default
# baton.reaper_databases = '*', so that each node's background worker relays the other
# nodes' wake-ups (src/pg/workers/relay.hpp). A listener on every node, each on the
# channel its own node names; enqueues delegated from the coordinator, inside a
# transaction on the coordinator, delegated from the worker that does not hold the
# tenant, and on the tenant's worker; each must wake every listener within a deadline far
# below a fallback poll, and no listener of another target; then the same after the
# tenant's shard group moves (test/citus/wakeups.py). Then a command that needs the
# database free ends the relay sessions in it; a worker stopped is said once and
# listened to again once it is back; and the relays leave with the extension: DROP
# EXTENSION closes them on every node.
#
#   bash test/citus/wakeups.sh      (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 56720)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-wakeups

citus_suite_start citus-wakeups "${BATON_CITUS_PORT:-56720}" \
    "baton.reaper_databases = '*'" "baton.reaper_interval = '200ms'"
read -r -a P <<<"$CITUS_PORTS"
T=00000000-0000-0000-0301-000000000001
q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" -c "SELECT baton.create_tenant('$T')" >/dev/null

/usr/bin/python3 "$ROOT/test/citus/wakeups.py" "$PGHOST" "${P[@]}" "$T" >"$BASE/driver.out" 2>&1
driver_counts wakeups.py "$BASE/driver.out"

# relays_on EXPECTED PORT...: the relay sessions on each node, one line, once it reads
# EXPECTED (40 s at most: a relay connects again within seconds).
relays_on() {
    local expected=$1 now="" p
    shift
    for _ in $(seq 1 200); do
        now=$(for p in "$@"; do q -p "$p" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_baton relay'"; done | paste -sd' ')
        [[ $now == "$expected" ]] && break
        sleep 0.2
    done
    echo "$now"
}

# A command that needs the database free of sessions (here ALTER DATABASE ... RENAME on
# worker 1, from another database) ends the other nodes' relay sessions in it, as it
# stops the node's own reaper; they connect again once it is over. (Citus' maintenance
# daemon, also connected, makes the rename itself fail: only the relays are checked.)
q -p "${P[1]}" -d template1 -c "ALTER DATABASE postgres RENAME TO postgres_renamed" >/dev/null 2>&1 &&
    q -p "${P[1]}" -d template1 -c "ALTER DATABASE postgres_renamed RENAME TO postgres" >/dev/null
lost=$(grep -c "pg_baton relay lost its connection to node $PGHOST:${P[1]}" "$BASE/c/n0/log" "$BASE/c/n2/log" | awk -F: '{s += $2} END {print s}')
check "the rename's pause ended the relay sessions of both other nodes on worker 1" 2 "$lost"
check "the relays connect to worker 1 again" 2 "$(relays_on 2 "${P[1]}")"

# Worker 2 stopped: the coordinator's relay says once that it cannot listen there (it
# tries again every 10 s), and listens there again once worker 2 is back.
as_postgres=()
[[ $(id -u) -eq 0 ]] && as_postgres=(su postgres -c)
pg_ctl_n2() {
    if ((${#as_postgres[@]})); then
        "${as_postgres[@]}" "$BINDIR/pg_ctl -D $BASE/c/n2/data $* -l $BASE/c/n2/log" >/dev/null
    else
        pg_ctl -D "$BASE/c/n2/data" "$@" -l "$BASE/c/n2/log" >/dev/null
    fi
}
pg_ctl_n2 stop -w -m fast
sleep 12
check "worker 2 down: the coordinator's relay says once that it cannot listen there" 1 \
    "$(grep -c "pg_baton relay cannot listen on node $PGHOST:${P[2]}" "$BASE/c/n0/log")"
pg_ctl_n2 start -w
check "worker 2 back: both other relays listen there again" 2 "$(relays_on 2 "${P[2]}")"

# DROP EXTENSION: each node's relay closes its connections at its next look at the
# metadata (every few seconds). Citus may cancel the DROP as part of a distributed
# deadlock with a reaper's batch in flight on a node; it is run again then, after a
# pause that lets the reapers' rounds move on.
for attempt in 1 2 3 4 5 6 7 8 9 10; do
    q -c "DROP EXTENSION pg_baton CASCADE" >/dev/null 2>"$BASE/drop.err" && break
    echo "# DROP EXTENSION attempt $attempt: $(grep -m 1 ERROR "$BASE/drop.err")"
    sleep 1.$((RANDOM % 10))
done
check "after DROP EXTENSION no relay connection is left on any node" "0 0 0" "$(relays_on "0 0 0" "${P[@]}")"
for i in 0 1 2; do
    crashes=$(grep -c "terminated by signal" "$BASE/c/n$i/log")
    check "node $i: no backend died (server log)" 0 "$crashes"
done
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
