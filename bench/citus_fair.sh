#!/usr/bin/env bash
# The fair claim on Citus.             bash bench/citus_fair.sh [--seconds S] [--clients N]
#
# A three-node cluster (test/citus/cluster.sh, distributed with baton.distribute()) and
# 12 tenants of one target, their shards on both workers, weights 1, 2 and 3 (four
# tenants each), every tenant kept backlogged (20,000 deliveries each, more than a run
# takes). pgbench clients run bench/sql/citus_fair_cycle.sql: one baton.claim_fair of up
# to 10 deliveries of the target, then baton.finish of each (one transaction), for
# --seconds (30) twice: connected to the coordinator, then to the first worker (whose
# claim_fair serves the other worker's tenants too, through Citus). Claims are counted
# from the tables (finished rows per tenant, after minus before).
#
# Reported per way: items/s, and each tenant's share of the finished items against its
# weight's share (weight / 24): the largest deviation, relative to the weight's share,
# and the share of each weight class. A session's round covers every node's tenants, so
# the shares hold across nodes; docs/guide/scale-out.md ("The fair claim across nodes").
#
# Needs Citus in the server pg_baton is installed into ($(pg_config --pkglibdir)/citus.so)
# and pg_baton installed (`make install`); it builds nothing. Not part of the tests.
# Environment: PG_CONFIG, BATON_BENCH_PORT (first of three consecutive ports, default 55550).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source-path=SCRIPTDIR/.. source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"

die() {
    echo "citus_fair.sh: $*" >&2
    exit 2
}

SECONDS_=30
CLIENTS=8
while (($# > 0)); do
    case $1 in
        --seconds) SECONDS_=${2:?--seconds S}; shift ;;
        --clients) CLIENTS=${2:?--clients N}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
[[ $SECONDS_ =~ ^[1-9][0-9]*$ && $CLIENTS =~ ^[1-9][0-9]*$ ]] || die "--seconds and --clients take positive integers"
PG_CONFIG=${PG_CONFIG:-pg_config}
[[ -f $("$PG_CONFIG" --pkglibdir)/citus.so ]] || die "Citus is not installed ($("$PG_CONFIG" --pkglibdir)/citus.so is absent)"
export PATH=$("$PG_CONFIG" --bindir):$PATH

p0=$(citus_free_ports "${BATON_BENCH_PORT:-55550}" 3) || die "no free port"
BASE=$(mktemp -d /tmp/pg_baton-bench-citusfair.XXXXXX)
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    citus_cluster_stop "$BASE/c" >/dev/null 2>&1
    rm -rf -- "$BASE"
    exit "$rc"
}
trap cleanup EXIT
chmod 0755 "$BASE"
citus_cluster_start "$BASE/c" "$p0" >"$BASE/start.log" 2>&1 || { cat "$BASE/start.log" >&2; die "the cluster did not start"; }
export PGHOST=$BASE/c/sock
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
COORD=$p0 W1=$((p0 + 1))

# Tenant i (1..12): weight 1 + (i - 1) % 3.
q -p "$COORD" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" >/dev/null
for i in $(seq 1 12); do
    t=f0000000-0000-4000-8000-$(printf %012d "$i")
    q -p "$COORD" -c "SELECT baton.create_tenant('$t')" \
        -c "SELECT baton.bind_target('$t', 'fx', current_user::regrole)" \
        -c "SELECT baton.set_weight('$t', 'fx', $((1 + (i - 1) % 3)))" \
        -c "INSERT INTO baton.deliveries (tenant, target, dedup_key) SELECT '$t', 'fx', 'f' || g FROM generate_series(1, 20000) g" >/dev/null
done
q -p "$COORD" -c "VACUUM ANALYZE baton.deliveries" >/dev/null
nodes=$(q -p "$COORD" -c "SELECT count(DISTINCT p.nodeport) FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'baton.tenants'::regclass AND EXISTS (SELECT 1 FROM generate_series(1, 12) i WHERE get_shard_id_for_distribution_column('baton.tenants', ('f0000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid) = s.shardid)")

finished() {
    q -p "$COORD" -c "SELECT right(tenant::text, 2) || ' ' || count(*) FROM baton.deliveries WHERE target = 'fx' AND status = 'finished' GROUP BY tenant ORDER BY tenant"
}

echo "== the fair claim on Citus ($(date -u '+%Y-%m-%d %H:%M UTC'), ${SECONDS_} s a way, $CLIENTS clients, claim_fair of 10)"
echo "   12 tenants of target fx on $nodes workers, weights 1, 2, 3 (four tenants each); coordinator :$COORD, first worker :$W1"
echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for way in coordinator worker; do
    port=$COORD
    [[ $way == worker ]] && port=$W1
    finished >"$BASE/before"
    pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_" -h "$PGHOST" -p "$port" \
        -f "$ROOT/bench/sql/citus_fair_cycle.sql" postgres >"$BASE/pgbench.log" 2>&1 \
        || { cat "$BASE/pgbench.log" >&2; die "pgbench failed ($way)"; }
    finished >"$BASE/after"
    tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$BASE/pgbench.log")
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$BASE/pgbench.log")
    [[ -n $tx && -n $tps ]] || { cat "$BASE/pgbench.log" >&2; die "could not read pgbench's output"; }
    # Per tenant: items in the run; its weight; share against the weight's share.
    join -a 2 -e 0 -o 2.1,1.2,2.2 "$BASE/before" "$BASE/after" | awk -v secs="$(awk "BEGIN { print $tx / $tps }")" -v way="$way" '
        { n = $3 - $2; i = $1 + 0; w = 1 + (i - 1) % 3; got[i] = n; wt[i] = w; total += n }
        END {
            worst = 0
            for (i in got) {
                dev = (got[i] / total) / (wt[i] / 24) - 1
                if (dev < 0 ? -dev > worst : dev > worst) worst = dev < 0 ? -dev : dev
                cls[wt[i]] += got[i]
            }
            printf "   %-11s %8.0f items/s  largest deviation of a tenant from its weight'"'"'s share %5.1f %%;", way, total / secs, 100 * worst
            printf "  weight classes 1/2/3 at %.3f / %.3f / %.3f of their share\n", (cls[1] / total) / (4 / 24), (cls[2] / total) / (8 / 24), (cls[3] / total) / (12 / 24)
        }'
done
echo "   load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
