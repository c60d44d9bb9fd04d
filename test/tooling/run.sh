#!/usr/bin/env bash
# The tooling suite: pg_baton judged by PostgreSQL's own tools, each check on throwaway
# clusters of its own (scripts/cluster.sh), never the caller's:
#   dump.sh         pg_dump / pg_restore round trips, row by row
#   owner.sh        a database owner who is not a superuser installs, dumps and restores it
#   replica.sh      a streaming standby built under load, reads and refusals there, promotion
#   maintenance.sh  VACUUM FULL, CLUSTER, REINDEX CONCURRENTLY and pg_repack under load
# amcheck (lib.sh: tooling_amcheck) runs inside each. Last line: "N passed, N failed".
set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
pass=0
fail=0
for check in dump owner replica maintenance; do
    [[ -f $HERE/$check.sh ]] || continue
    echo "=== tooling: $check ==="
    log=$(mktemp /tmp/pg_baton-tooling-$check.XXXXXX)
    rc=0
    bash "$HERE/$check.sh" 2>&1 | tee "$log" | sed -u "s/^/[$check] /" || rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)
    rm -f -- "$log"
    if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        pass=$((pass + BASH_REMATCH[1]))
        fail=$((fail + BASH_REMATCH[2]))
        ((rc == 0 || BASH_REMATCH[2] > 0)) || fail=$((fail + 1))
    else
        echo "tooling: $check.sh reported no count (exit $rc)"
        fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
((fail == 0))
