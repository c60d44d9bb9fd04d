#!/usr/bin/env bash
# The cost of delegation on Citus.      bash bench/citus.sh [--workload W] [--rounds N] [--seconds S]
#
# One workload by pgbench clients of one tenant (--workload): cycle, the unbatched cycle
# (bench/sql/baton_cycle.sql: baton.claim, then baton.finish, each a statement and a
# transaction of its own); batch, the batched one (baton_batch.sql: a claim of up to 50,
# then their finish_batch); enqueue, enqueue_batch calls of 100 new items each
# (citus_enqueue_batch.sql), counted by the rows they add. Three ways:
#
#   delegated  through the coordinator of a three-node cluster (test/citus/cluster.sh,
#              distributed with baton.distribute()): each call alone, so Citus delegates
#              it to the worker that holds the tenant (a coordinator backend, then a
#              round trip to the worker over the connection it keeps to it);
#   worker     the same calls made on that worker, connected to it directly (the call
#              runs there, on its local shards, no coordinator in the path);
#   single     one server without Citus (pg_baton alone) with the nodes' settings.
#
# at 1 and 8 clients. Every round runs each way in turn (the order rotating from round
# to round, because the machine is shared and noisy), on the same backlog for delegated
# and worker (the tenant's rows, topped up and vacuumed before each measurement).
# Items are counted from the tables (rows, after minus before), never from
# pgbench's transaction counts; the time is pgbench's measured interval (transactions /
# tps, without connection set-up). The table shows the median of the rounds and each
# ratio is the median of the per-round ratios. All four servers share this machine's
# cores: a worker's figures here include a coordinator competing with it for the CPU.
#
# With --synchronous-commit off every server acknowledges a commit before its WAL is
# flushed: the figures then show the calls' CPU and round trips rather than the disk.
#
# With --spread it measures instead where the clients connect: --clients N (default 8)
# clients of the same cycle on the three-node cluster, one tenant each (N tenants, taken
# so that they alternate between the two workers), one pgbench client per process,
#
#   coordinator  every client connected to the coordinator;
#   spread       client i connected to node i mod 3 (coordinator, worker, worker), which
#                is not necessarily its tenant's: a worker delegates other nodes' tenants;
#   routed       every client connected to its tenant's worker;
#
# each round every way in turn (the order rotating), each tenant's backlog topped up by
# 5000 rows when under 2500 pending and vacuumed before each measurement (a smaller
# backlog than the default mode's: a claim on a distributed install reads more of a
# larger one). The cluster's items/s: the finished rows of all the tenants
# (after minus before) over the mean of the pgbench processes' measured intervals; the
# ratios spread/coordinator and routed/coordinator are medians of the per-round ratios.
#
# Needs Citus in the server pg_baton is installed into ($(pg_config --pkglibdir)/citus.so)
# and pg_baton installed (`make install`); it builds nothing. Not part of the tests.
# Options: --rounds N (default 3), --seconds S (default 8), --synchronous-commit on|off
# (default on), --workload cycle|batch|enqueue (default cycle), --spread (the cycle),
# --clients N (with --spread, default 8).
# Environment: PG_CONFIG, BATON_BENCH_PORT (first of four consecutive ports, default 55540).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SQL="$ROOT/bench/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source-path=SCRIPTDIR/.. source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"

die() {
    echo "citus.sh: $*" >&2
    exit 2
}

ROUNDS=3
SECONDS_=8
SYNC=on
SPREAD=0
CLIENTS=8
WORKLOAD=cycle
while (($# > 0)); do
    case $1 in
        --rounds) ROUNDS=${2:?--rounds N}; shift ;;
        --seconds) SECONDS_=${2:?--seconds S}; shift ;;
        --synchronous-commit) SYNC=${2:?--synchronous-commit on|off}; shift ;;
        --spread) SPREAD=1 ;;
        --clients) CLIENTS=${2:?--clients N}; shift ;;
        --workload) WORKLOAD=${2:?--workload cycle|batch|enqueue}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $SECONDS_ =~ ^[1-9][0-9]*$ ]] || die "--rounds and --seconds take positive integers"
[[ $SYNC == on || $SYNC == off ]] || die "--synchronous-commit takes on or off"
[[ $CLIENTS =~ ^[1-9][0-9]*$ ]] || die "--clients takes a positive integer"
case $WORKLOAD in
    # TOP_UP: rows added to the backlog when fewer than half as many are pending, so
    # that no measurement drains it.
    cycle) SCRIPT=baton_cycle.sql VARS=() COUNTED=finished TOP_UP=100000 ;;
    batch) SCRIPT=baton_batch.sql VARS=(-D batch=50) COUNTED=finished TOP_UP=400000 ;;
    enqueue) SCRIPT=citus_enqueue_batch.sql VARS=(-D batch=100) COUNTED=all TOP_UP=0 ;;
    *) die "--workload takes cycle, batch or enqueue" ;;
esac
PG_CONFIG=${PG_CONFIG:-pg_config}
[[ -f $("$PG_CONFIG" --pkglibdir)/citus.so ]] || die "Citus is not installed ($("$PG_CONFIG" --pkglibdir)/citus.so is absent)"
BINDIR=$("$PG_CONFIG" --bindir)
export PATH=$BINDIR:$PATH
TENANT=b0000000-0000-4000-8000-00000000bec6
CLIENTS_LIST=(1 8)

p0=$(citus_free_ports "${BATON_BENCH_PORT:-55540}" 4) || die "no free port"
BASE=$(mktemp -d /tmp/pg_baton-bench-citus.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-citusw.XXXXXX)
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    citus_cluster_stop "$BASE/c" >/dev/null 2>&1
    cluster_stop "$BASE/single" >/dev/null 2>&1
    rm -rf -- "$BASE" "$WORK"
    exit "$rc"
}
trap cleanup EXIT
chmod 0755 "$BASE"
citus_cluster_start "$BASE/c" "$p0" >"$WORK/start.log" 2>&1 || { cat "$WORK/start.log" >&2; die "the cluster did not start"; }
# The single node: the settings citus_cluster_start gives its nodes, without Citus.
cluster_start "$BASE/single" $((p0 + 3)) "unix_socket_directories = '$BASE/c/sock'" \
    "shared_preload_libraries = 'pg_baton'" "shared_buffers = 64MB" "max_connections = 100" \
    >>"$WORK/start.log" 2>&1 || { cat "$WORK/start.log" >&2; die "the single node did not start"; }
export PGHOST=$BASE/c/sock
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
COORD=$p0 SINGLE=$((p0 + 3))
for p in $COORD $((p0 + 1)) $((p0 + 2)) $SINGLE; do
    q -p "$p" -c "ALTER SYSTEM SET synchronous_commit = $SYNC" -c "SELECT pg_reload_conf()" >/dev/null
done

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

if ((SPREAD)); then
    q -p "$COORD" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" >/dev/null
    W1=$((p0 + 1)) W2=$((p0 + 2))
    # The port of the node that holds each candidate tenant; N tenants taken alternately
    # from the two workers.
    mapfile -t CAND < <(q -p "$COORD" -F ' ' -c "SELECT t, n.nodeport
        FROM (SELECT pg_catalog.format('b0000000-0000-4000-8000-%s', pg_catalog.lpad(g::text, 12, '0'))::uuid AS t, g
              FROM pg_catalog.generate_series(1, 40 * $CLIENTS) g) c
        JOIN pg_catalog.pg_dist_placement p ON p.shardid = pg_catalog.get_shard_id_for_distribution_column('baton.deliveries', c.t)
        JOIN pg_catalog.pg_dist_node n ON n.groupid = p.groupid ORDER BY c.g")
    declare -A FREE=([$W1]="" [$W2]="")
    for line in "${CAND[@]}"; do FREE[${line#* }]+=" ${line% *}"; done
    read -r -a ON1 <<<"${FREE[$W1]}"
    read -r -a ON2 <<<"${FREE[$W2]}"
    ((${#ON1[@]} >= (CLIENTS + 1) / 2 && ${#ON2[@]} >= (CLIENTS + 1) / 2)) || die "too few tenants on a worker"
    TEN=() TPORT=()
    for ((i = 0; i < CLIENTS; i++)); do
        if ((i % 2 == 0)); then TEN+=("${ON1[i / 2]}") TPORT+=("$W1"); else TEN+=("${ON2[i / 2]}") TPORT+=("$W2"); fi
        q -p "$COORD" -c "SELECT baton.create_tenant('${TEN[i]}')" >/dev/null
    done
    TLIST=$(printf "'%s'," "${TEN[@]}")
    TLIST="ARRAY[${TLIST%,}]::uuid[]"
    SPREAD_TOP_UP=5000  # rows added to a tenant's backlog when fewer than half as many are pending

    # port WAY I: the node client I connects to.
    port_of() {
        case $1 in
            coordinator) echo "$COORD" ;;
            spread) echo $((p0 + $2 % 3)) ;;
            routed) echo "${TPORT[$2]}" ;;
        esac
    }
    count_all() { q -p "$COORD" -c "SELECT count(*) FROM baton.deliveries WHERE tenant = ANY ($TLIST) AND status = '$1'"; }
    prepare_spread() {
        local t
        declare -A pending=()
        while read -r t n; do pending[$t]=$n; done < <(q -p "$COORD" -F ' ' -c "SELECT tenant, count(*) FROM baton.deliveries
            WHERE tenant = ANY ($TLIST) AND status = 'pending' GROUP BY tenant")
        for t in "${TEN[@]}"; do
            if ((${pending[$t]:-0} < SPREAD_TOP_UP / 2)); then
                q -p "$COORD" -c "INSERT INTO baton.deliveries (tenant, target, dedup_key) SELECT '$t', 'bench', 'k' || g || '-' || clock_timestamp() FROM generate_series(1, $SPREAD_TOP_UP) g" >/dev/null
            fi
        done
        q -p "$COORD" -c "VACUUM ANALYZE baton.deliveries, baton.ready" >/dev/null
        for p in $CITUS_PORTS; do q -p "$p" -c CHECKPOINT >/dev/null; done
    }
    # measure_spread WAY: the cluster's items/s, one pgbench process per client.
    measure_spread() {
        local before after i pids=() tx tps sum=0 n=0
        prepare_spread
        before=$(count_all finished)
        for ((i = 0; i < CLIENTS; i++)); do
            pgbench -n -M prepared -c 1 -j 1 -T "$SECONDS_" -D tenant="${TEN[i]}" -h "$PGHOST" -p "$(port_of "$1" "$i")" \
                -f "$SQL/baton_cycle.sql" postgres >"$WORK/pgbench.$i.log" 2>&1 &
            pids+=($!)
        done
        for ((i = 0; i < CLIENTS; i++)); do
            wait "${pids[i]}" || { cat "$WORK/pgbench.$i.log" >&2; die "pgbench failed ($1, client $i)"; }
        done
        after=$(count_all finished)
        for ((i = 0; i < CLIENTS; i++)); do
            tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.$i.log")
            tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/pgbench.$i.log")
            [[ -n $tx && -n $tps ]] || { cat "$WORK/pgbench.$i.log" >&2; die "could not read pgbench's output"; }
            ((tx > 0)) || continue
            sum=$(awk "BEGIN { print $sum + $tx / $tps }") n=$((n + 1))
        done
        ((n > 0)) || die "no client completed a transaction ($1)"
        awk "BEGIN { printf \"%.0f\", ($after - $before) / ($sum / $n) }"
    }

    WAYS=(coordinator spread routed)
    echo "== clients spread over the nodes ($(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds, ${SECONDS_} s each, synchronous_commit $SYNC)"
    echo "   claim + finish cycle, $CLIENTS clients, a tenant each, alternately on worker :$W1 and :$W2; coordinator :$COORD"
    echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    declare -A R
    for ((r = 1; r <= ROUNDS; r++)); do
        order=("${WAYS[@]:$(((r - 1) % 3))}" "${WAYS[@]:0:$(((r - 1) % 3))}")
        line=""
        for w in "${order[@]}"; do
            R[$w.$r]=$(measure_spread "$w")
            line+=" $w ${R[$w.$r]}"
        done
        echo "   round $r:$line items/s"
    done
    echo
    printf '   %-12s %-12s %-12s %-20s %s\n' coordinator spread routed spread/coordinator routed/coordinator
    cells=()
    for w in "${WAYS[@]}"; do
        cells+=("$(for ((r = 1; r <= ROUNDS; r++)); do echo "${R[$w.$r]}"; done | median)")
    done
    for w in spread routed; do
        cells+=("$(for ((r = 1; r <= ROUNDS; r++)); do
            awk "BEGIN { printf \"%.3f\n\", ${R[$w.$r]} / ${R[coordinator.$r]} }"
        done | median)")
    done
    printf '   %-12s %-12s %-12s %-20s %s\n' "${cells[@]}"
    echo "   load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi

q -p "$COORD" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" -c "SELECT baton.create_tenant('$TENANT')" >/dev/null
q -p "$SINGLE" -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$TENANT')" >/dev/null
WORKER=$(q -p "$COORD" -c "SELECT p.nodeport FROM pg_dist_shard_placement p WHERE p.shardid = get_shard_id_for_distribution_column('baton.tenants', '$TENANT'::uuid)")
# Where each way connects, and which server holds its rows.
declare -A PORT=([delegated]=$COORD [worker]=$WORKER [single]=$SINGLE)
declare -A DATA=([delegated]=$COORD [worker]=$COORD [single]=$SINGLE)

# count WAY STATUS: the tenant's deliveries in STATUS (all: every one).
count() {
    local where="AND status = '$2'"
    [[ $2 == all ]] && where=""
    q -p "${DATA[$1]}" -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$TENANT' $where"
}

# prepare WAY: the backlog topped up (as superuser, through the fence triggers; on Citus
# through the coordinator, routed to the tenant's shard), vacuumed, a checkpoint. The
# ready rows are analyzed with the deliveries: until baton.ready has statistics, the
# planner of a claim statement on a shard estimates a target's pending rows as a few and
# sorts all of them on every claim instead of reading the index in order.
prepare() {
    local port=${DATA[$1]} pending
    pending=$(count "$1" pending)
    if ((pending < TOP_UP / 2)); then
        q -p "$port" -c "INSERT INTO baton.deliveries (tenant, target, dedup_key) SELECT '$TENANT', 'bench', 'k' || g || '-' || clock_timestamp() FROM generate_series(1, $TOP_UP) g" >/dev/null
    fi
    q -p "$port" -c "VACUUM ANALYZE baton.deliveries, baton.ready" >/dev/null
    for p in $COORD $WORKER $SINGLE; do q -p "$p" -c CHECKPOINT >/dev/null; done
}

# measure WAY CLIENTS: items/s of CLIENTS pgbench clients running the workload for
# SECONDS_ (finished rows for a cycle, new rows for enqueue).
measure() {
    local before after tx tps
    prepare "$1"
    before=$(count "$1" "$COUNTED")
    pgbench -n -M prepared -c "$2" -j $(($2 < 2 ? $2 : 2)) -T "$SECONDS_" -D tenant="$TENANT" "${VARS[@]}" \
        -h "$PGHOST" -p "${PORT[$1]}" -f "$SQL/$SCRIPT" postgres >"$WORK/pgbench.log" 2>&1 \
        || { cat "$WORK/pgbench.log" >&2; die "pgbench failed ($1, $2 clients)"; }
    after=$(count "$1" "$COUNTED")
    tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.log")
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/pgbench.log")
    [[ -n $tx && -n $tps ]] || { cat "$WORK/pgbench.log" >&2; die "could not read pgbench's output"; }
    awk "BEGIN { printf \"%.0f\", ($after - $before) / ($tx / $tps) }"
}

WAYS=(delegated worker single)
echo "== the cost of delegation ($(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds, ${SECONDS_} s each, synchronous_commit $SYNC)"
echo "   workload $WORKLOAD ($SCRIPT ${VARS[*]}), one tenant; coordinator :$COORD, the tenant's worker :$WORKER, single node :$SINGLE"
echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A R
for ((r = 1; r <= ROUNDS; r++)); do
    order=("${WAYS[@]:$(((r - 1) % 3))}" "${WAYS[@]:0:$(((r - 1) % 3))}")
    for c in "${CLIENTS_LIST[@]}"; do
        line=""
        for w in "${order[@]}"; do
            R[$w.$c.$r]=$(measure "$w" "$c")
            line+=" $w ${R[$w.$c.$r]}"
        done
        echo "   round $r, $c client(s):$line items/s"
    done
done
echo
printf '   %-8s %-10s %-10s %-10s %-18s %-18s %s\n' clients delegated worker single delegated/worker delegated/single worker/single
for c in "${CLIENTS_LIST[@]}"; do
    cells=()
    for w in "${WAYS[@]}"; do
        cells+=("$(for ((r = 1; r <= ROUNDS; r++)); do echo "${R[$w.$c.$r]}"; done | median)")
    done
    ratios=()
    for pair in delegated/worker delegated/single worker/single; do
        a=${pair%/*} b=${pair#*/}
        ratios+=("$(for ((r = 1; r <= ROUNDS; r++)); do
            awk "BEGIN { printf \"%.3f\n\", ${R[$a.$c.$r]} / ${R[$b.$c.$r]} }"
        done | median)")
    done
    printf '   %-8s %-10s %-10s %-10s %-18s %-18s %s\n' "$c" "${cells[@]}" "${ratios[@]}"
done
echo "   load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
