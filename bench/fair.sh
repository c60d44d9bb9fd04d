#!/usr/bin/env bash
# The fair claim (baton.claim_fair, 0.13.0) under a noisy neighbour, its shares by
# weight, and its cost against today's claim.        bash bench/fair.sh [--quick] [options]
#
# Needs pg_baton installed in the server's extension directory (`make install`); this
# script builds and installs nothing. Every part runs in one throwaway cluster
# (scripts/cluster.sh: private socket, no TCP) with pg_baton preloaded (its reaper on),
# fsync and synchronous_commit on, shared_buffers 512MB, baton.claim_hint_targets 131072
# (--hint-targets, below). Tenant i is bench_tenant(i)
# (bench/sql/fair_setup.sql: ids that sort as their numbers do), each binding the
# target to the role pool; the clients connect as the superuser (a member of every
# role). Clients are pgbench -M prepared, -j 2.
#
#   noisy    1,000 tenants (--tenants) on one target, --workers (16) workers, each
#            looping on one claim, --work-us (1,000) microseconds of simulated work, one
#            finish; an empty claim rests --idle-us (5,000). The light tenants 2 .. 1000
#            start with --light-backlog (5) deliveries each, and a producer (pgbench -R
#            100: a hundred transactions a second, Poisson-spaced; bench/sql/fair_light.sql)
#            enqueues --light-rate (1,000) a second, one to each light tenant in turn:
#            each gets one every (tenants - 1) / rate seconds.
#            The noisy tenant, tenant 1, is kept at 100x (--factor) a light tenant's
#            starting backlog (bench/sql/fair_noisy.sql tops it up 50 times a second), or
#            is absent (no deliveries). Two pools:
#              fair  the workers call baton.claim_fair(target, lease, 1)
#                    (bench/sql/fair_worker.sql);
#              rr    the baseline a user has now: each worker cycles through the tenant
#                    list itself and calls baton.claim for the next tenant (from its own
#                    starting point; a rest after a whole pass that gave nothing:
#                    bench/sql/fair_rr_worker.sql).
#            Each claim is logged (bench_claims: tenant, id, the claim's now()) in its
#            own statement. A round runs fair+noisy, fair alone, rr+noisy, rr alone, each
#            on fresh tables for --secs (40) seconds, the first --warm (10) left out;
#            --rounds (2) rounds. Wait = the claim's now() - the delivery's created_at
#            (the enqueue's now()), for the light deliveries created in the measured part
#            up to 3 s before its end (one never claimed counts as waiting until the end,
#            and is reported). Per round, each light tenant's p99 wait (nearest rank: with
#            fewer than 100 samples, its longest wait); their median and maximum over the
#            tenants; the p50 and p99 of all light waits; claims a second, light and noisy.
#   shares   the same 1,000 tenants and fair pool, every tenant backlogged: the tenants
#            i % 10 = 3 weigh 2, i % 10 = 7 weigh 3, the rest 1 (sum of weights 1,300);
#            light tenants are topped up to --share-depth (64: 16 workers x weight 3 + a
#            margin) and the noisy tenant to 100x that, every 0.25 s
#            (bench/sql/fair_topup.sql, which logs how many tenants it found dry).
#            --share-secs (135) seconds, the first 15 left out; 60 s windows every 10 s.
#            Per window and tenant: share = its claims / all claims, expected = weight /
#            1,300; printed: the worst |share / expected - 1| over tenants and windows,
#            its 99th and 50th percentiles, each weight class's share / expected.
#   cost     claim_fair against today's claim on the same backlog, --clients (16)
#            clients, the two alternating round by round, --cost-rounds (3) rounds of
#            --cost-secs (5) s, each round on fresh tables; unbatched cycles (claim one,
#            finish it: bench/sql/fair_cycle.sql against fair_claim_cycle.sql) and batched
#            by --batch (50: claim 50, commit; finish them, one finish_batch per tenant
#            among them, commit: fair_batch.sql against fair_claim_batch.sql), on one
#            tenant and on 1,000 tenants with work (--many; today's claim names the
#            client's next tenant in turn). Then claim_fair unbatched on 100,000 tenants
#            with work (--wide; 3 deliveries each) against 100 (--narrow; 3,000 each), the
#            same 300,000 deliveries, both filled once and VACUUMed before each round.
#            Items are counted from the table (finished deliveries, after - before); the
#            time is pgbench's measured interval (transactions / tps).
#
# Every comparison alternates within one run (the machine is shared and noisy); a
# table shows the median over the rounds, and each ratio is the median of the
# per-round ratios. The raw data go to OUT (--out, default a new directory under /tmp,
# printed): waits.csv, throughput.csv, shares.csv, weights.csv, topup.csv, cost.csv,
# and pgbench's output of every run; bench/fair.py prints the summary from them (run it
# again on OUT alone to print it again).
#
# Options:
#   --quick          the ~5-minute smoke version: 1 round of 25 s (5 warm), shares 90 s,
#                    cost 2 rounds of 3 s
#   --only LIST      comma-separated parts: noisy,shares,cost (default all)
#   --rounds N --secs S --warm S           the noisy runs
#   --tenants N --workers N --work-us U --idle-us U --light-rate N --light-backlog N
#   --factor N --share-secs S --share-depth N --clients N --cost-rounds N --cost-secs S
#   --batch N --many N --wide N --narrow N --out DIR
#   --hint-targets N baton.claim_hint_targets (default 131072): the claim hints kept in
#                    shared memory, one per (database, tenant, target), never given back
#                    until a restart. pg_baton's default, 1024, is used up by the first
#                    parts (1,000 tenants each, in databases of their own), after which
#                    every claim of a tenant without a hint scans from the top of its
#                    claim order (the cost rounds measure that then, not the hinted claim);
#                    131072 holds every part's tenants, 100,000 of them included.
#   --keep           leave the cluster running at the end (prints how to reach it)
# Environment: PG_CONFIG, BATON_BENCH_PORT (first port to try, default 55560; ports up
# to 9 above it are tried).
# Exit status: 0 when it ran (whatever the goals say), 2 on an error.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SQL="$ROOT/bench/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

die() {
    echo "fair.sh: $*" >&2
    exit 2
}
say() { printf '%s\n' "$*" >&2; }

ARGS=("$@")
QUICK=0 ONLY=noisy,shares,cost KEEP=0 OUT=
ROUNDS='' SECS='' WARM='' TENANTS=1000 WORKERS=16 WORK_US=1000 IDLE_US=5000 LIGHT_RATE=1000 LIGHT_BACKLOG=5
FACTOR=100 SHARE_SECS='' SHARE_DEPTH=64 CLIENTS=16 COST_ROUNDS='' COST_SECS='' BATCH=50 MANY=1000 WIDE=100000 NARROW=100
HINTS=131072
while (($# > 0)); do
    case $1 in
        --quick) QUICK=1 ;;
        --only) ONLY=${2:?--only LIST}; shift ;;
        --rounds) ROUNDS=${2:?}; shift ;;
        --secs) SECS=${2:?}; shift ;;
        --warm) WARM=${2:?}; shift ;;
        --tenants) TENANTS=${2:?}; shift ;;
        --workers) WORKERS=${2:?}; shift ;;
        --work-us) WORK_US=${2:?}; shift ;;
        --idle-us) IDLE_US=${2:?}; shift ;;
        --light-rate) LIGHT_RATE=${2:?}; shift ;;
        --light-backlog) LIGHT_BACKLOG=${2:?}; shift ;;
        --factor) FACTOR=${2:?}; shift ;;
        --share-secs) SHARE_SECS=${2:?}; shift ;;
        --share-depth) SHARE_DEPTH=${2:?}; shift ;;
        --clients) CLIENTS=${2:?}; shift ;;
        --cost-rounds) COST_ROUNDS=${2:?}; shift ;;
        --cost-secs) COST_SECS=${2:?}; shift ;;
        --batch) BATCH=${2:?}; shift ;;
        --many) MANY=${2:?}; shift ;;
        --wide) WIDE=${2:?}; shift ;;
        --narrow) NARROW=${2:?}; shift ;;
        --hint-targets) HINTS=${2:?}; shift ;;
        --out) OUT=${2:?}; shift ;;
        --keep) KEEP=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1' (try --help)" ;;
    esac
    shift
done
if ((QUICK)); then
    : "${ROUNDS:=1}" "${SECS:=25}" "${WARM:=5}" "${SHARE_SECS:=90}" "${COST_ROUNDS:=2}" "${COST_SECS:=3}"
else
    : "${ROUNDS:=2}" "${SECS:=40}" "${WARM:=10}" "${SHARE_SECS:=135}" "${COST_ROUNDS:=3}" "${COST_SECS:=5}"
fi
for v in ROUNDS SECS WARM TENANTS WORKERS WORK_US IDLE_US LIGHT_RATE LIGHT_BACKLOG FACTOR SHARE_SECS SHARE_DEPTH \
    CLIENTS COST_ROUNDS COST_SECS BATCH MANY WIDE NARROW HINTS; do
    opt=${v,,}
    [[ ${!v} =~ ^[0-9]+$ ]] || die "--${opt//_/-} takes a whole number (got '${!v}')"
done
((SECS > WARM + 5)) || die "--secs must exceed --warm by more than 5"
((SHARE_SECS >= 75)) || die "--share-secs must be at least 75 (15 warm + one 60 s window)"
((TENANTS >= 2 && LIGHT_RATE >= 20 && ROUNDS >= 1 && COST_ROUNDS >= 1)) || die "a size is too small"
want() { [[ ,$ONLY, == *,$1,* ]]; }
for part in ${ONLY//,/ }; do [[ $part =~ ^(noisy|shares|cost)$ ]] || die "unknown part '$part'"; done

[[ -n $OUT ]] || OUT=$(mktemp -d /tmp/pg_baton-fair.XXXXXX)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$("${PG_CONFIG:-pg_config}" --bindir) || die "no pg_config (set PG_CONFIG)"
SHAREDIR=$("${PG_CONFIG:-pg_config}" --sharedir)
grep -q "^default_version = '0\.\(1[3-9]\|[2-9][0-9]\)" "$SHAREDIR/extension/pg_baton.control" 2>/dev/null \
    || die "pg_baton 0.13.0 or later is not installed in $SHAREDIR/extension ('make install' first)"
PGBENCH=$BIN/pgbench
[[ -x $PGBENCH ]] || die "no pgbench in $BIN"
command -v python3 >/dev/null || die "python3 is needed for the summary (bench/fair.py)"

CLUSTER=$(mktemp -d /tmp/pg_baton-bench-fair.XXXXXX)
BG=()  # background loops of the script (the shares run's producer)
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$? pid
    trap - EXIT
    set +e
    for pid in "${BG[@]}"; do kill "$pid" 2>/dev/null; done
    cp "$CLUSTER/log" "$OUT/server.log" 2>/dev/null
    if ((KEEP)) && ((rc == 0)); then
        say "-- cluster kept: PGHOST=$CLUSTER/sock PGPORT=$PORT PGUSER=postgres (stop: source scripts/cluster.sh; cluster_stop $CLUSTER)"
    else
        cluster_stop "$CLUSTER" 2>/dev/null || say "fair.sh: could not stop the cluster in $CLUSTER"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

FIRST_PORT=${BATON_BENCH_PORT:-55560}
PORT=$(cluster_free_port "$FIRST_PORT") || die "no free port"
((PORT <= FIRST_PORT + 9)) || die "no free port in $FIRST_PORT-$((FIRST_PORT + 9))"
cluster_start "$CLUSTER" "$PORT" "shared_preload_libraries = 'pg_baton'" "shared_buffers = 512MB" \
    "max_connections = 200" "fsync = on" "synchronous_commit = on" "baton.claim_hint_targets = $HINTS" 2>/dev/null \
    || die "could not start a cluster"

q() { "$BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
now_epoch() { q -c "SELECT extract(epoch FROM clock_timestamp())::numeric(16, 3)"; }

CMD="bash bench/fair.sh${ARGS[*]:+ ${ARGS[*]}}"
echo "== bench/fair.sh ($(date -u '+%Y-%m-%d %H:%M UTC'); out $OUT)"
echo "   $CMD"
q -F ' = ' -c "SELECT name, current_setting(name) FROM pg_settings
                WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'shared_buffers', 'max_connections',
                               'shared_preload_libraries', 'autovacuum', 'baton.claim_hint_targets')
                ORDER BY name" | sed 's/^/   /'
for db in noisy shares cost wide narrow; do q -c "CREATE DATABASE $db"; done
q -d cost -c "CREATE EXTENSION pg_baton"
LIBDIR=$("${PG_CONFIG:-pg_config}" --pkglibdir)
echo "   pg_baton $(q -d cost -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'"), $("$PGBENCH" --version);" \
    "pg_baton.so built $(date -u -r "$LIBDIR/pg_baton.so" '+%Y-%m-%d %H:%M UTC'); repo at $(git -C "$ROOT" log -1 --format='%h' 2>/dev/null || echo '?')"
echo "   cpus = $(nproc 2>/dev/null || echo '?'), load average at start = $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

# setup DB TENANTS BACKLOG FIRST_BACKLOG WEIGHTED TARGET: fresh pg_baton (fair_setup.sql).
setup() {
    q -d "$1" -v tenants="$2" -v backlog="$3" -v first_backlog="$4" -v weighted="$5" -v target="$6" \
        -f "$SQL/fair_setup.sql" >"$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log" >&2; die "fair_setup.sql failed on $1"; }
    q -d "$1" -c CHECKPOINT
}
# pgbench_ok LOG: fails on a failed or aborted client.
pgbench_ok() {
    if grep -Eq 'aborted|number of failed transactions: [1-9]' "$1"; then
        cat "$1" >&2
        die "pgbench reported failed or aborted clients ($1)"
    fi
}
# pgbench_secs LOG: pgbench's measured interval (transactions / tps, without connections).
pgbench_secs() {
    local ntx tps
    ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1")
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$1")
    [[ -n $ntx && -n $tps ]] || { cat "$1" >&2; die "could not read pgbench's output ($1)"; }
    calc "$ntx / $tps"
}
PGB=("$PGBENCH" -n -M prepared)
TICKS=100  # the light producer's transactions a second

# ---------------------------------------------------------------------------
# noisy: the noisy neighbour, fair pool and today's round-robin pool
# ---------------------------------------------------------------------------
# noisy_run SYSTEM NOISY ROUND: one run on fresh tables; appends to waits.csv and
# throughput.csv.
noisy_run() {
    local sys=$1 noisy=$2 round=$3 depth=0 tag worker t0 t1 pids=()
    ((noisy)) && depth=$((FACTOR * LIGHT_BACKLOG))
    tag=$sys-$([[ $noisy == 1 ]] && echo noisy || echo alone)-r$round
    setup noisy "$TENANTS" "$LIGHT_BACKLOG" "$depth" 0 fair
    worker=fair_worker.sql
    [[ $sys == rr ]] && worker=fair_rr_worker.sql
    t0=$(now_epoch)
    "${PGB[@]}" -c 1 -T "$SECS" -R "$TICKS" -D target=fair -D tenants="$TENANTS" -D s=0 \
        -D n=$((LIGHT_RATE / TICKS)) -f "$SQL/fair_light.sql" noisy >"$OUT/pgbench-$tag-light.txt" 2>&1 &
    pids+=($!)
    if ((noisy)); then
        "${PGB[@]}" -c 1 -T "$SECS" -R 50 -D target=fair -D depth="$depth" -f "$SQL/fair_noisy.sql" noisy \
            >"$OUT/pgbench-$tag-noisy.txt" 2>&1 &
        pids+=($!)
    fi
    "${PGB[@]}" -c "$WORKERS" -j 2 -T "$SECS" -D target=fair -D tenants="$TENANTS" -D k=0 -D dry=0 \
        -D work="$WORK_US" -D idle="$IDLE_US" -f "$SQL/$worker" noisy >"$OUT/pgbench-$tag-workers.txt" 2>&1 \
        || { cat "$OUT/pgbench-$tag-workers.txt" >&2; die "the workers failed ($tag)"; }
    local p
    for p in "${pids[@]}"; do wait "$p" || die "a producer failed ($tag; $OUT/pgbench-$tag-*.txt)"; done
    t1=$(now_epoch)
    pgbench_ok "$OUT/pgbench-$tag-workers.txt"
    # Light deliveries: tenant, created (epoch), wait in ms (empty: never claimed).
    q -d noisy -F, -c "SELECT '$sys', $noisy, $round, right(d.tenant::text, 12)::int,
                              extract(epoch FROM d.created_at)::numeric(16, 4),
                              (1000 * extract(epoch FROM c.claimed_at - d.created_at))::numeric(12, 3)
                         FROM baton.deliveries d
                         LEFT JOIN (SELECT tenant, id, min(claimed_at) AS claimed_at FROM bench_claims GROUP BY 1, 2) c
                           USING (tenant, id)
                        WHERE d.dedup_key LIKE 'l%'" >>"$OUT/waits.csv"
    # The claims of the measured part, light and noisy; the workers' claim calls (pgbench's
    # transactions) and claims over the whole run.
    local calls
    calls=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$OUT/pgbench-$tag-workers.txt")
    q -d noisy -F, -c "SELECT '$sys', $noisy, $round, $t0 + $WARM, $t1,
                              count(*) FILTER (WHERE tenant <> bench_tenant(1) AND claimed_at >= to_timestamp($t0 + $WARM)),
                              count(*) FILTER (WHERE tenant = bench_tenant(1) AND claimed_at >= to_timestamp($t0 + $WARM)),
                              ${calls:-0}, count(*)
                         FROM bench_claims" >>"$OUT/throughput.csv"
    printf '   %-6s %-5s round %d: %s claims (light, noisy) in %.0f s; %s light pending at the end\n' "$sys" \
        "$([[ $noisy == 1 ]] && echo noisy || echo alone)" "$round" \
        "$(tail -1 "$OUT/throughput.csv" | cut -d, -f6,7)" "$(calc "$t1 - $t0 - $WARM")" \
        "$(q -d noisy -c "SELECT count(*) FROM baton.ready WHERE tenant <> bench_tenant(1)")" >&2
}
if want noisy; then
    say
    say "-- noisy: $TENANTS tenants, $WORKERS workers (${WORK_US} us of work), light tenants fed $LIGHT_RATE/s," \
        "the noisy one kept at $((FACTOR * LIGHT_BACKLOG)); $ROUNDS rounds of $SECS s ($WARM warm)"
    : >"$OUT/waits.csv"
    : >"$OUT/throughput.csv"
    for ((r = 1; r <= ROUNDS; r++)); do
        for sys in fair rr; do
            for noisy in 1 0; do
                noisy_run "$sys" "$noisy" "$r"
            done
        done
    done
fi

# ---------------------------------------------------------------------------
# shares: every tenant backlogged, weights 1, 2, 3
# ---------------------------------------------------------------------------
if want shares; then
    say
    say "-- shares: $TENANTS tenants backlogged (light $SHARE_DEPTH, noisy $((FACTOR * SHARE_DEPTH)) pending), weights 1/2/3," \
        "$WORKERS workers, $SHARE_SECS s (15 warm)"
    setup shares "$TENANTS" "$SHARE_DEPTH" $((FACTOR * SHARE_DEPTH)) 1 fair
    q -d shares -F, -c "SELECT right(tenant::text, 12)::int, weight FROM baton.target_bindings WHERE target = 'fair'
                         ORDER BY 1" >"$OUT/weights.csv"
    : >"$OUT/topup.csv"
    (while sleep 0.25; do
        q -d shares -F, -v tenants="$TENANTS" -v target=fair -v depth="$SHARE_DEPTH" \
            -v first_depth=$((FACTOR * SHARE_DEPTH)) -f "$SQL/fair_topup.sql" 2>>"$OUT/topup.err" || true
    done) >>"$OUT/topup.csv" &
    BG+=($!)
    t0=$(now_epoch)
    "${PGB[@]}" -c "$WORKERS" -j 2 -T "$SHARE_SECS" -D target=fair -D work="$WORK_US" -D idle="$IDLE_US" \
        -f "$SQL/fair_worker.sql" shares >"$OUT/pgbench-shares-workers.txt" 2>&1 \
        || { cat "$OUT/pgbench-shares-workers.txt" >&2; die "the workers failed (shares)"; }
    t1=$(now_epoch)
    kill "${BG[-1]}" 2>/dev/null || true
    wait "${BG[-1]}" 2>/dev/null || true
    unset 'BG[-1]'
    pgbench_ok "$OUT/pgbench-shares-workers.txt"
    echo "$t0,$t1" >"$OUT/shares_window.csv"
    q -d shares -F, -c "SELECT right(tenant::text, 12)::int, floor(extract(epoch FROM claimed_at))::bigint, count(*)
                          FROM bench_claims GROUP BY 1, 2 ORDER BY 2, 1" >"$OUT/shares.csv"
    say "   $(wc -l <"$OUT/shares.csv") (tenant, second) counts; top-ups that found a tenant dry:" \
        "$(awk -F, '$2 > 0' "$OUT/topup.csv" | wc -l) of $(wc -l <"$OUT/topup.csv")"
fi

# ---------------------------------------------------------------------------
# cost: claim_fair against claim, then 100,000 tenants against 100
# ---------------------------------------------------------------------------
finished() { q -d "$1" -c "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'"; }
# cost_round GROUP SYSTEM ROUND DB SCRIPT TENANTS: one pgbench round; appends to cost.csv.
cost_round() {
    local group=$1 sys=$2 round=$3 db=$4 script=$5 tenants=$6 before after secs log
    log=$OUT/pgbench-cost-$group-$sys-r$round.txt
    before=$(finished "$db")
    "${PGB[@]}" -c "$CLIENTS" -j 2 -T "$COST_SECS" -D target=bench -D tenants="$tenants" -D k=0 -D batch="$BATCH" \
        -f "$SQL/$script" "$db" >"$log" 2>&1 || { cat "$log" >&2; die "pgbench failed ($group, $sys)"; }
    pgbench_ok "$log"
    after=$(finished "$db")
    secs=$(pgbench_secs "$log")
    echo "$group,$sys,$round,$((after - before)),$secs" >>"$OUT/cost.csv"
    printf '   %-14s %-10s round %d: %8d items in %5.2f s = %9.1f /s\n' "$group" "$sys" "$round" \
        "$((after - before))" "$secs" "$(calc "($after - $before) / $secs")" >&2
    ((after - before > 0)) || die "no item was finished ($group, $sys)"
}
if want cost; then
    say
    say "-- cost: claim_fair against claim, $CLIENTS clients, $COST_ROUNDS rounds of $COST_SECS s, batches of $BATCH;" \
        "then $WIDE tenants with work against $NARROW"
    : >"$OUT/cost.csv"
    for ((r = 1; r <= COST_ROUNDS; r++)); do
        for shape in one many; do
            n=1
            [[ $shape == many ]] && n=$MANY
            for kind in cycle batch; do
                rate=10000
                [[ $kind == batch ]] && rate=120000
                need=$((rate * COST_SECS * 12 / 10))
                per=$(((need + n - 1) / n))
                # The backlog a round needs, generously: unbatched cycles at up to 10,000
                # items a second, batched at up to 120,000; the same for both systems.
                for sys in fair claim; do
                    setup cost "$n" "$per" "$per" 0 bench
                    script=fair_$kind.sql
                    [[ $sys == claim ]] && script=fair_claim_$kind.sql
                    cost_round "$shape:$kind" "$sys" "$r" cost "$script" "$n"
                    left=$(q -d cost -c "SELECT count(*) FROM baton.ready")
                    ((left > 0)) || say "   WARNING: the backlog ran dry ($shape:$kind, $sys): its rate is not its speed"
                done
            done
        done
    done
    # 100,000 tenants with work against 100: the same deliveries, filled once.
    total=300000
    setup wide "$WIDE" $((total / WIDE)) $((total / WIDE)) 0 bench
    setup narrow "$NARROW" $((total / NARROW)) $((total / NARROW)) 0 bench
    for ((r = 1; r <= COST_ROUNDS; r++)); do
        for db in wide narrow; do
            q -d "$db" -c "VACUUM baton.deliveries" -c "VACUUM baton.ready" -c CHECKPOINT
            cost_round "tenants:cycle" "$db" "$r" "$db" fair_cycle.sql 1
        done
    done
    for db in wide narrow; do
        left=$(q -d "$db" -c "SELECT count(*) FROM baton.ready")
        ((left > 0)) || say "   WARNING: $db ran dry: its rate is not its speed"
    done
fi

echo "   load average at end = $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo
python3 "$ROOT/bench/fair.py" "$OUT" --warm "$WARM" --workers "$WORKERS" --command "$CMD" \
    || die "fair.py failed"
