#!/usr/bin/env bash
# The background reaper on every node of a distributed install: a three-node Citus
# cluster (test/citus/cluster.sh) whose nodes run the launcher with its default
# baton.reaper_databases = '*' and a short baton.reaper_interval. CREATE EXTENSION
# pg_baton through the coordinator (which Citus commits on the workers by two-phase
# commit) starts a reaper on the coordinator and on each worker, no node restarted;
# then, with the coordinator restarted without its reaper (whose reap covers every
# node), leases of tenants on both workers are let expire, and the workers' reapers
# must give them back without any call through the coordinator; schedules of tenants on
# both workers fire, each slot once, by its tenant's node; baton.health's reaper row on
# a worker counts that node's expired leases only; and a fourth node added by
# citus_add_node, which creates pg_baton there, gets its reaper without a restart.
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

# The launcher's default (cluster.sh turns it off) and a short interval, on every node.
reaper_conf=("baton.reaper_databases = '*'" "baton.reaper_interval = '200ms'")
citus_suite_start citus-reaper "${BATON_CITUS_PORT:-56700}" "${reaper_conf[@]}"
# reapers PORT...: the count of pg_baton reapers in database postgres on each node.
reapers() {
    local port
    for port in "$@"; do
        q -p "$port" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname = 'postgres'"
    done | paste -sd' '
}
# wait_reapers EXPECTED PORT...: until reapers PORT... prints EXPECTED (10 s at most).
wait_reapers() {
    local expected=$1 i
    shift
    for ((i = 0; i < 50; i++)); do
        [[ $(reapers "$@") == "$expected" ]] && return 0
        sleep 0.2
    done
}
sleep 1
check "before CREATE EXTENSION pg_baton: no reaper on any node" "0 0 0" "$(reapers "$p0" $((p0 + 1)) $((p0 + 2)))"
# Citus' remote commands, logged for this statement: its CREATE EXTENSION on the
# workers is prepared there (PREPARE TRANSACTION) and committed by COMMIT PREPARED.
q -c "SET citus.log_remote_commands = on" -c "CREATE EXTENSION pg_baton" >"$BASE/create.out" 2>&1
check "CREATE EXTENSION through the coordinator reaches both workers by two-phase commit" "2 2" \
    "$(grep -c 'issuing PREPARE TRANSACTION' "$BASE/create.out") $(grep -c 'issuing COMMIT PREPARED' "$BASE/create.out")"
wait_reapers "1 1 1" "$p0" $((p0 + 1)) $((p0 + 2))
check "CREATE EXTENSION through the coordinator: a reaper on the coordinator and on each worker, no restart" "1 1 1" \
    "$(reapers "$p0" $((p0 + 1)) $((p0 + 2)))"
q -c "SELECT baton.distribute()" >/dev/null
# The coordinator's reap covers every node: it is left out (a postmaster setting, so the
# coordinator alone restarts) for the checks that the workers' reapers do their part.
as_postgres=()
[[ $(id -u) -eq 0 ]] && as_postgres=(su postgres -c)
q -c "ALTER SYSTEM SET baton.reaper_databases = ''" >/dev/null
if ((${#as_postgres[@]})); then
    "${as_postgres[@]}" "$BINDIR/pg_ctl -D $BASE/c/n0/data restart -w -m fast -l $BASE/c/n0/log" >/dev/null
else
    pg_ctl -D "$BASE/c/n0/data" restart -w -m fast -l "$BASE/c/n0/log" >/dev/null
fi
check "the coordinator restarted without its reaper, the workers' reapers still there" "0 1 1" \
    "$(reapers "$p0" $((p0 + 1)) $((p0 + 2)))"
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
# A node added later: citus_add_node creates pg_baton there, and its reaper starts
# without a restart; baton.health's reaper row there is ok once it ran.
p3=$(cluster_free_port $((p0 + 3)))
if citus_node_start "$BASE/c" 3 "$p3" "${reaper_conf[@]}" >"$BASE/n3.log" 2>&1; then
    sleep 1
    check "a fourth node, before citus_add_node: no reaper" "0" "$(reapers "$p3")"
    q -c "SELECT citus_add_node('$BASE/c/sock', $p3)" >/dev/null
    check "... citus_add_node created pg_baton there" "1" \
        "$(q -p "$p3" -c "SELECT count(*) FROM pg_extension WHERE extname = 'pg_baton'")"
    wait_reapers "1" "$p3"
    check "... and its reaper started, no restart" "1" "$(reapers "$p3")"
    sleep 0.5
    check "... baton.health's reaper row there: ok" "ok" "$(q -p "$p3" -c "SELECT status FROM baton.health WHERE name = 'reaper'")"
else
    check "a fourth node starts" "ok" "$(tail -n 3 "$BASE/n3.log")"
fi
for i in 0 1 2 3; do
    [[ -f $BASE/c/n$i/log ]] || continue
    check "node $i: no backend died (server log)" "0" \
        "$(grep -c 'terminated by signal\|server process .* was terminated' "$BASE/c/n$i/log")"
done

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
