#!/usr/bin/env bash
# The background reaper on the workers of a distributed install: a three-node Citus
# cluster (test/citus/cluster.sh), pg_baton created and distributed, the workers
# restarted with baton.reaper_databases = 'postgres' (a postmaster setting) and a short
# baton.reaper_interval; leases of tenants on both workers are let expire, and the
# workers' reapers must give them back without any call through the coordinator;
# schedules of tenants on both workers fire, each slot once, by its tenant's node; and
# baton.health's reaper row on a worker counts that node's expired leases only.
#
#   bash test/citus/reaper.sh       (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first
#                                    port tried, default 56700)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed".
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-reaper

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
# Schedules: the workers' reapers also call fire_schedules, each over its own shards'
# due rows (SKIP LOCKED and the slots' dedup keys would keep every slot to one delivery
# even if two nodes fired the same row).
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
check "... each by its tenant's node (an id of that worker's range)" "t" \
    "$(q -c "SELECT bool_and(d.id >> 48 = p.groupid) FROM baton.deliveries d JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('baton.deliveries', d.tenant) WHERE d.target = 'ticks'")"
for i in 1 2; do
    check "worker $i: no error of fire_schedules in its log" "0" "$(grep -c 'fire_schedules' "$BASE/c/n$i/log")"
done
for i in 1 2; do
    check "worker $i: its reaper started" "1" "$(grep -c 'pg_baton reaper started in database "postgres"' "$BASE/c/n$i/log")"
done
# baton.health's reaper row on a worker weighs the expired leases of that node, which its
# reaper takes back: with both workers' reapers held (transactions read-only there) and a
# lease expired on one worker only, that worker's row is critical and the other's warns.
for i in 1 8; do
    q -c "SELECT baton.unschedule('00000000-0000-0000-0000-$(printf %012d "$i")', 'tick')" >/dev/null
done
t=00000000-0000-0000-0000-000000000001
wt=$(q -c "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('baton.deliveries', '$t'::uuid)")
wo=$((wt == p0 + 1 ? p0 + 2 : p0 + 1))
q -c "SELECT baton.enqueue('$t', 'held', 'h')" -c "SELECT count(*) FROM baton.claim('$t', 'held', '2 seconds')" >/dev/null
for port in "$wt" "$wo"; do
    q -p "$port" -c "ALTER SYSTEM SET default_transaction_read_only = on" -c "SELECT pg_reload_conf()" >/dev/null
done
sleep 3
# reaper_row PORT: the status of the reaper row and whether its detail counts one lease.
reaper_row() { q -p "$1" -c "SELECT status || ' ' || (detail LIKE '%, and 1 expired lease waits') FROM baton.health WHERE name = 'reaper'"; }
check "the reaper row of the held worker with an expired lease of its own: critical, counting it" "critical true" "$(reaper_row "$wt")"
check "... of the other held worker, whose tenants have none: warn (the lease is not its reaper's)" "warn false" "$(reaper_row "$wo")"
check "... while expired_leases there counts the cluster's" "1" \
    "$(q -p "$wo" -c "SELECT value FROM baton.health WHERE name = 'expired_leases'")"
for port in "$wt" "$wo"; do
    PGOPTIONS="-c default_transaction_read_only=off" q -p "$port" -c "ALTER SYSTEM RESET default_transaction_read_only" \
        -c "SELECT pg_reload_conf()" >/dev/null
done
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
