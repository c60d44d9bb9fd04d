#!/usr/bin/env bash
# The background reaper on the workers of a distributed install: a three-node Citus
# cluster (test/citus/cluster.sh), pg_baton created and distributed, the workers
# restarted with baton.reaper_databases = 'postgres' (a postmaster setting) and a short
# baton.reaper_interval; leases of tenants on both workers are let expire, and the
# workers' reapers must give them back without any call through the coordinator; and
# schedules of tenants on both workers fire, each slot once.
#
#   bash test/citus/reaper.sh       (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 56700)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
LIBDIR=$("$PG_CONFIG" --pkglibdir)
if [[ ! -f $LIBDIR/citus.so ]]; then
    echo "citus-reaper: skipped: Citus is not installed ($LIBDIR/citus.so is absent)"
    exit 0
fi
BINDIR=$("$PG_CONFIG" --bindir)
export PATH=$BINDIR:$PATH
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"

citus_suite_start citus-reaper "${BATON_CITUS_PORT:-56700}"
q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" >/dev/null
# The workers' reapers: a postmaster setting, so each worker restarts.
as_postgres=()
[[ $(id -u) -eq 0 ]] && as_postgres=(su postgres -c)
for i in 1 2; do
    q -p $((p0 + i)) -c "ALTER SYSTEM SET baton.reaper_databases = 'postgres'" -c "ALTER SYSTEM SET baton.reaper_interval = '200ms'"
    if ((${#as_postgres[@]})); then
        "${as_postgres[@]}" "$BINDIR/pg_ctl -D $BASE/c/n$i/data restart -w -m fast -l $BASE/c/n$i/log" >/dev/null
    else
        pg_ctl -D "$BASE/c/n$i/data" restart -w -m fast -l "$BASE/c/n$i/log" >/dev/null
    fi
done
for i in $(seq 1 8); do
    t=00000000-0000-0000-0000-$(printf %012d "$i")
    q -c "SELECT baton.create_tenant('$t')" -c "SELECT baton.enqueue('$t', 'rx', 'a')" \
        -c "SELECT baton.enqueue('$t', 'rx', 'b', max_attempts => 1)" >/dev/null
done
check "the tenants' rows are on both workers" "2" \
    "$(q -c "SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement WHERE shardid IN (SELECT get_shard_id_for_distribution_column('baton.deliveries', tenant) FROM baton.deliveries)")"
for i in $(seq 1 8); do
    t=00000000-0000-0000-0000-$(printf %012d "$i")
    q -c "SELECT count(*) FROM baton.claim('$t', 'rx', '1 second', 2)" >/dev/null
done
# The reapers may already have given some back (generation 2) when the last claim ends.
check "sixteen leases taken" "16" "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target = 'rx' AND generation >= 1")"
left=16
for _ in $(seq 1 50); do
    left=$(q -c "SELECT count(*) FROM baton.deliveries WHERE target = 'rx' AND status = 'claimed'")
    [[ $left == 0 ]] && break
    sleep 0.2
done
check "the workers' reapers gave back every expired lease, no call through the coordinator" "0" "$left"
check "... as on one node: given back, or failed by its attempts, 'lease expired'" "failed 8 pending 8" \
    "$(q -c "SELECT string_agg(status || ' ' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) n FROM baton.deliveries WHERE target = 'rx' AND last_error = 'lease expired' AND generation = 2 GROUP BY status) s")"
# Schedules: the workers' reapers also call fire_schedules (each reads the due rows of
# the whole cluster, so both fire the same rows: SKIP LOCKED and the slots' dedup keys
# keep every slot to one delivery).
for i in 1 8; do
    q -c "SELECT baton.schedule('00000000-0000-0000-0000-$(printf %012d "$i")', 'tick', 'ticks', '@every 1 second')" >/dev/null
done
fired=0
for _ in $(seq 1 75); do
    fired=$(q -c "SELECT count(DISTINCT tenant) FROM (SELECT tenant FROM baton.deliveries WHERE target = 'ticks' GROUP BY tenant HAVING count(*) >= 2) s")
    [[ $fired == 2 ]] && break
    sleep 0.2
done
check "the workers' reapers fire the schedules of two tenants, no call through the coordinator" "2" "$fired"
check "... each slot once" "t" "$(q -c "SELECT count(*) = count(DISTINCT (tenant, dedup_key)) FROM baton.deliveries WHERE target = 'ticks'")"
for i in 1 2; do
    check "worker $i: no error of fire_schedules in its log" "0" "$(grep -c 'fire_schedules' "$BASE/c/n$i/log")"
done
for i in 1 2; do
    check "worker $i: its reaper started" "1" "$(grep -c 'pg_baton reaper started in database "postgres"' "$BASE/c/n$i/log")"
done
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
