#!/usr/bin/env bash
# The cost of keys and their limits (0.14.0, docs/guide/limits.md): the claim/finish cycle on
# deliveries of limited keys against the same cycle on deliveries without a key.
#                                                  bash bench/limits.sh [--quick] [options]
#
# Needs pg_baton 0.14.0 or later installed in the server's extension directory (`make
# install`); this script builds and installs nothing. One throwaway cluster
# (scripts/cluster.sh: private socket, no TCP) with pg_baton preloaded (its reaper on),
# fsync and synchronous_commit on, shared_buffers 512MB; the extension's control file and
# scripts are copied aside as it starts (extension_control_path), so that a reinstall
# during the run cannot mix builds. One tenant (bench_tenant(1)),
# one target (bench) bound to the role pool; the clients connect as the superuser.
# Clients: pgbench -M prepared -j 2, --clients (16) of them, --failures-detailed (a
# deadlock or serialization failure fails its transaction and the client goes on; it is
# not retried).
#
# Variants, each run on a fresh backlog of --backlog (200,000; batched --batch-backlog,
# 1,500,000: a batched run must not run dry) pending deliveries in a new database
# (bench/sql/limits_setup.sql: enqueue_batch, ANALYZE, the limit, VACUUM ANALYZE, then a
# CHECKPOINT):
#   plain    deliveries without a key: today's claim, the baseline;
#   uncounted  the same with baton.count_events off for the clients: plain against it is
#            what the deliveries' counters cost (baton.delivery_counters);
#   keyed    keys 'k0' .. 'k99' (--keys) round robin in enqueue order, no limit;
#   limited  the same keys, baton.limit_key(t, target, 1000) (--limit) for every key (key
#            NULL): a limit a claim never meets, so the bookkeeping alone. With 2,000
#            (batched 15,000) deliveries a key, 1,000 of each are admitted and the rest
#            wait: a transaction that finishes a key's deliveries hands their slots to the
#            key's next waiting deliveries at its commit (moves them into the claim
#            order; the key's row of baton.key_slots stays as it is);
#   ordered  the same keys, baton.limit_key(t, target, 1, ordered => true) for every key:
#            at most 100 deliveries claimable at once; each finish admits its key's next.
#            A claim may come back empty (the pgbench transaction counts, no item does);
#   paced    the same keys, baton.rate_limit_key(t, target, 1000000 (--rate), '1 second')
#            for every key: a pace that never binds, so its bookkeeping alone (a claim of a
#            paced key locks and writes the key's row too).
# Two kinds of cycle:
#   cycle    unbatched: baton.claim of 1 (one transaction), baton.finish of it (another):
#            bench/sql/limits_cycle.sql;
#   batch    baton.claim of up to --batch (50) (one transaction), then one
#            baton.finish_batch of them in the order the claim gave them (another):
#            bench/sql/limits_batch.sql.
# (--claim fair: baton.claim_fair instead of baton.claim, limits_fair_cycle.sql and
# limits_fair_batch.sql.)
# A round runs every kind, and in each kind every variant for --secs (10) seconds, the
# variants in an order rotated by one each round; --rounds (3) rounds.
#
# Reading the output: items are the deliveries finished during the run (after - before,
# counted in the table); the time is pgbench's measured interval (transactions / tps,
# without connection time); items/s is their quotient. A table shows, per kind and
# variant, the median items/s over the rounds and the median of the per-round ratios to
# plain (a round's variants run one after the other: the machine is shared and noisy,
# read the ratios, not the absolute numbers); then pgbench -r's mean latency of the
# claim statement and of the finish statement, and the items a transaction. Failed
# transactions (deadlocks 40P01, serialization failures) and aborted clients are counted
# per run, with the server log's "deadlock detected" lines; a batch whose finish_batch
# failed stays leased (30 s, more than a run), its items uncounted. The goal (the
# project's issue): no limit at least 0.9x plain, limits set at least 0.8x (ordered has
# at most 100 claimable deliveries against 16 clients: below 0.8x batched is its limit at
# work, not only its cost).
# A run that ran dry (fewer pending deliveries left than clients x batch) is flagged: its
# rate is not its speed.
#
# Raw data go to OUT (--out, default a new directory under /tmp, printed): runs.csv
# (kind, variant, round, items, secs, transactions, failed, deadlock failures,
# serialization failures, aborted clients, "deadlock detected" in the server log,
# pending left, in the claim order left, claim ms, finish ms), setup-*.txt,
# pgbench-*.txt, server.log; bench/limits.py prints the summary from them (run it again
# on OUT alone to print it again).
#
# Options:
#   --quick          a ~4-minute smoke version: 2 rounds of 3 s, backlogs of 60,000 and
#                    300,000
#   --rounds N       rounds (3)                   --secs S      seconds a run (10)
#   --clients N      pgbench clients (16)         --batch N     the batch (50)
#   --backlog N      pending deliveries an unbatched run starts with (200,000)
#   --batch-backlog N  ... a batched run (1,500,000)
#   --keys N         keys (100)                   --limit N     limited's max_leased (1,000)
#   --rate N         paced's rate a second (1,000,000; burst the same)
#   --variants LIST  comma-separated, of plain,uncounted,keyed,limited,ordered,paced (default all;
#                    plain is always run: the ratios need it)
#   --kinds LIST     comma-separated, of cycle,batch (default both)
#   --claim C        claim (default: baton.claim) or fair (baton.claim_fair)
#   --statements     load pg_stat_statements (track = all: the statements the functions
#                    run inside too) and write each run's top statements by total time to
#                    OUT/statements-*.txt; it slows every statement, so the ratios of such
#                    a run are not the cost
#   --out DIR        the raw data's directory
#   --keep           leave the cluster running at the end (prints how to reach it)
# Environment: PG_CONFIG, BATON_BENCH_PORT (first port to try, default 55570; ports up
# to 9 above it are tried).
# Exit status: 0 when it ran (whatever the goals say), 2 on an error.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SQL="$ROOT/bench/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

die() {
    echo "limits.sh: $*" >&2
    exit 2
}
say() { printf '%s\n' "$*" >&2; }

ARGS=("$@")
QUICK=0 KEEP=0 OUT='' STATEMENTS=0
ROUNDS='' SECS='' BACKLOG='' BATCH_BACKLOG='' CLIENTS=16 BATCH=50 KEYS=100 LIMIT=1000 RATE=1000000
VARIANTS=plain,uncounted,keyed,limited,ordered,paced KINDS=cycle,batch CLAIM=claim
while (($# > 0)); do
    case $1 in
        --quick) QUICK=1 ;;
        --rounds) ROUNDS=${2:?}; shift ;;
        --secs) SECS=${2:?}; shift ;;
        --clients) CLIENTS=${2:?}; shift ;;
        --batch) BATCH=${2:?}; shift ;;
        --backlog) BACKLOG=${2:?}; shift ;;
        --batch-backlog) BATCH_BACKLOG=${2:?}; shift ;;
        --keys) KEYS=${2:?}; shift ;;
        --limit) LIMIT=${2:?}; shift ;;
        --rate) RATE=${2:?}; shift ;;
        --variants) VARIANTS=${2:?--variants LIST}; shift ;;
        --kinds) KINDS=${2:?--kinds LIST}; shift ;;
        --claim) CLAIM=${2:?--claim claim|fair}; shift ;;
        --statements) STATEMENTS=1 ;;
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
    : "${ROUNDS:=2}" "${SECS:=3}" "${BACKLOG:=60000}" "${BATCH_BACKLOG:=300000}"
else
    : "${ROUNDS:=3}" "${SECS:=10}" "${BACKLOG:=200000}" "${BATCH_BACKLOG:=1500000}"
fi
for v in ROUNDS SECS BACKLOG BATCH_BACKLOG CLIENTS BATCH KEYS LIMIT RATE; do
    opt=${v,,}
    [[ ${!v} =~ ^[0-9]+$ ]] || die "--${opt//_/-} takes a whole number (got '${!v}')"
done
((ROUNDS >= 1 && SECS >= 1 && CLIENTS >= 1 && KEYS >= 1 && BACKLOG >= KEYS && BATCH_BACKLOG >= KEYS)) || die "a size is too small"
((BATCH >= 1 && BATCH <= 1000)) || die "--batch must be 1 to 1000 (finish_batch takes 1,000 at most)"
((LIMIT >= 1 && LIMIT <= 1000000 && RATE >= 1 && RATE <= 1000000)) || die "--limit and --rate must be 1 to 1,000,000"
[[ $CLAIM =~ ^(claim|fair)$ ]] || die "--claim takes claim or fair"
VLIST=(plain)
for v in ${VARIANTS//,/ }; do
    [[ $v =~ ^(plain|uncounted|keyed|limited|ordered|paced)$ ]] || die "unknown variant '$v'"
    [[ $v == plain ]] || VLIST+=("$v")
done
KLIST=()
for k in ${KINDS//,/ }; do
    [[ $k =~ ^(cycle|batch)$ ]] || die "unknown kind '$k'"
    KLIST+=("$k")
done
((${#KLIST[@]} > 0)) || die "no kind to run"

[[ -n $OUT ]] || OUT=$(mktemp -d /tmp/pg_baton-limits.XXXXXX)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$("${PG_CONFIG:-pg_config}" --bindir) || die "no pg_config (set PG_CONFIG)"
SHAREDIR=$("${PG_CONFIG:-pg_config}" --sharedir)
grep -q "^default_version = '0\.\(1[4-9]\|[2-9][0-9]\)" "$SHAREDIR/extension/pg_baton.control" 2>/dev/null \
    || die "pg_baton 0.14.0 or later is not installed in $SHAREDIR/extension ('make install' first)"
PGBENCH=$BIN/pgbench
[[ -x $PGBENCH ]] || die "no pgbench in $BIN"
command -v python3 >/dev/null || die "python3 is needed for the summary (bench/limits.py)"

CLUSTER=$(mktemp -d /tmp/pg_baton-bench-limits.XXXXXX)
EXTDIR=$(mktemp -d /tmp/pg_baton-bench-limits-ext.XXXXXX)
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    cp "$CLUSTER/log" "$OUT/server.log" 2>/dev/null
    if ((KEEP)) && ((rc == 0)); then
        say "-- cluster kept: PGHOST=$CLUSTER/sock PGPORT=$PORT PGUSER=postgres (stop: source scripts/cluster.sh; cluster_stop $CLUSTER)"
    else
        cluster_stop "$CLUSTER" 2>/dev/null || say "limits.sh: could not stop the cluster in $CLUSTER"
        rm -rf "$EXTDIR"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PRELOAD=pg_baton
EXTRA=()
if ((STATEMENTS)); then
    PRELOAD=pg_baton,pg_stat_statements
    EXTRA=("pg_stat_statements.track = all" "pg_stat_statements.max = 1000")
fi
# The extension's control file and scripts are copied aside as the server starts (and
# preloads pg_baton.so) and found there first (extension_control_path): a reinstall
# during the run cannot give CREATE EXTENSION scripts of another build than the library
# every backend runs. A library changed while the server started fails the run.
LIBDIR=$("${PG_CONFIG:-pg_config}" --pkglibdir)
installed() { cat "$LIBDIR/pg_baton.so" "$SHAREDIR/extension/pg_baton.control" "$SHAREDIR"/extension/pg_baton--*.sql | md5sum | cut -c1-12; }
SUM=$(installed)
cp "$SHAREDIR/extension/pg_baton.control" "$SHAREDIR"/extension/pg_baton--*.sql "$EXTDIR/"
chmod -R a+rX "$EXTDIR"
FIRST_PORT=${BATON_BENCH_PORT:-55570}
PORT=$(cluster_free_port "$FIRST_PORT") || die "no free port"
((PORT <= FIRST_PORT + 9)) || die "no free port in $FIRST_PORT-$((FIRST_PORT + 9))"
cluster_start "$CLUSTER" "$PORT" "shared_preload_libraries = '$PRELOAD'" "shared_buffers = 512MB" \
    "max_connections = 100" "fsync = on" "synchronous_commit = on" "extension_control_path = '$EXTDIR:\$system'" \
    "${EXTRA[@]}" 2>/dev/null || die "could not start a cluster"
[[ $(installed) == "$SUM" ]] || die "pg_baton was being reinstalled as the server started: run again"

q() { "$BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

CMD="bash bench/limits.sh${ARGS[*]:+ ${ARGS[*]}}"
echo "== bench/limits.sh ($(date -u '+%Y-%m-%d %H:%M UTC'); out $OUT)"
echo "   $CMD"
q -F ' = ' -c "SELECT name, current_setting(name) FROM pg_settings
                WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'shared_buffers', 'max_connections',
                               'shared_preload_libraries', 'autovacuum', 'extension_control_path')
                ORDER BY name" | sed 's/^/   /'
q -c "CREATE DATABASE probe"
q -d probe -c "CREATE EXTENSION pg_baton"
echo "   pg_baton $(q -d probe -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'"), $("$PGBENCH" --version);" \
    "pg_baton.so built $(date -u -r "$LIBDIR/pg_baton.so" '+%Y-%m-%d %H:%M UTC') (library and scripts: md5 $SUM...); repo at $(git -C "$ROOT" log -1 --format='%h' 2>/dev/null || echo '?')$(
        git -C "$ROOT" diff --quiet HEAD -- src sql 2>/dev/null || echo ' (src or sql changed since)')"
q -c "DROP DATABASE probe"
echo "   cpus = $(nproc 2>/dev/null || echo '?'), load average at start = $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo "   $CLIENTS clients, claim = baton.$([[ $CLAIM == fair ]] && echo claim_fair || echo claim), batch $BATCH," \
    "backlog $BACKLOG (batched $BATCH_BACKLOG), $KEYS keys, limit $LIMIT, rate $RATE/s; $ROUNDS rounds of $SECS s"

# setup VARIANT TAG BACKLOG: a new database bench with a fresh backlog (limits_setup.sql).
setup() {
    q -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" -c "CREATE DATABASE bench"
    q -d bench -v variant="$1" -v backlog="$3" -v keys="$KEYS" -v limit="$LIMIT" -v rate="$RATE" -v target=bench \
        -f "$SQL/limits_setup.sql" >"$OUT/setup-$2.txt" 2>&1 \
        || { cat "$OUT/setup-$2.txt" >&2; die "limits_setup.sql failed ($2)"; }
    ((STATEMENTS)) && q -d bench -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" -c "SELECT pg_stat_statements_reset()" >/dev/null
    q -d bench -c CHECKPOINT
}
# num LOG PATTERN: the number sed finds with PATTERN in LOG, else 0.
num() {
    local v
    v=$(sed -n "s/$2/\1/p" "$1" | head -1)
    echo "${v:-0}"
}
# one_run KIND VARIANT ROUND: one pgbench run on a fresh backlog; appends to runs.csv.
one_run() {
    local kind=$1 variant=$2 round=$3 tag script log before after ntx tps secs failed deadlocks serial aborted \
        logdl logpos left ready lat backlog=$BACKLOG
    [[ $kind == batch ]] && backlog=$BATCH_BACKLOG
    tag=$kind-$variant-r$round
    log=$OUT/pgbench-$tag.txt
    script=limits_$kind.sql
    [[ $CLAIM == fair ]] && script=limits_fair_$kind.sql
    setup "$variant" "$tag" "$backlog"
    before=$(q -d bench -c "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'")
    logpos=$(stat -c %s "$CLUSTER/log")
    local options=${PGOPTIONS:-}
    [[ $variant == uncounted ]] && options+=" -c baton.count_events=off"
    PGOPTIONS=$options "$PGBENCH" -n -M prepared --failures-detailed -r -c "$CLIENTS" -j 2 -T "$SECS" -D target=bench \
        -D batch="$BATCH" -f "$SQL/$script" bench >"$log" 2>&1 || say "   WARNING: pgbench exited with an error ($tag; $log)"
    after=$(q -d bench -c "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'")
    left=$(q -d bench -c "SELECT count(*) FROM baton.deliveries WHERE status = 'pending'")
    ready=$(q -d bench -c "SELECT count(*) FROM baton.ready")
    ntx=$(num "$log" '^number of transactions actually processed: \([0-9]*\).*')
    tps=$(num "$log" '^tps = \([0-9.]*\) (without initial connection time)')
    failed=$(num "$log" '^number of failed transactions: \([0-9]*\).*')
    deadlocks=$(num "$log" '^number of deadlock failures: \([0-9]*\).*')
    serial=$(num "$log" '^number of serialization failures: \([0-9]*\).*')
    aborted=$(grep -c 'aborted' "$log" || true)
    logdl=$(tail -c +"$((logpos + 1))" "$CLUSTER/log" | grep -c 'deadlock detected' || true)
    if [[ $tps == 0 || $ntx == 0 ]]; then
        cat "$log" >&2
        die "could not read pgbench's output, or no transaction ran ($tag; rerun if pg_baton was being reinstalled)"
    fi
    secs=$(calc "$ntx / $tps")
    # pgbench -r: the mean latency of the claim and of the finish, in ms (the claim's
    # includes the empty ones).
    # (The script's first SELECT is the claim, its second the finish.)
    lat=$(awk '/^statement latencies/ { on = 1; next }
               on && $3 == "SELECT" { if (++n == 1) c = $1; else f = $1 }
               END { printf "%s,%s", c == "" ? 0 : c, f == "" ? 0 : f }' "$log")
    echo "$kind,$variant,$round,$((after - before)),$secs,$ntx,$failed,$deadlocks,$serial,$aborted,$logdl,$left,$ready,$lat" \
        >>"$OUT/runs.csv"
    printf '   %-5s %-7s round %d: %8d items in %5.2f s = %9.1f /s; %d failed (%d deadlocks), %d aborted; %d pending left\n' \
        "$kind" "$variant" "$round" "$((after - before))" "$secs" "$(calc "($after - $before) / $secs")" \
        "$failed" "$deadlocks" "$aborted" "$left" >&2
    ((after - before > 0)) || say "   WARNING: no item was finished ($tag)"
    ((left >= CLIENTS * BATCH)) || say "   WARNING: the backlog ran dry ($tag): its rate is not its speed (raise --backlog)"
    ((aborted == 0)) || say "   WARNING: $aborted aborted clients ($tag; $log)"
    if ((STATEMENTS)); then
        q -d bench -P pager=off -P format=aligned -P tuples_only=off -c "SELECT calls, round(total_exec_time::numeric, 1) AS total_ms,
                                          round(mean_exec_time::numeric, 4) AS mean_ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 160) AS query
                                     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
                                    ORDER BY total_exec_time DESC LIMIT 25" >"$OUT/statements-$tag.txt"
    fi
}

: >"$OUT/runs.csv"
say
say "-- ${#VLIST[@]} variants (${VLIST[*]}), kinds ${KLIST[*]}; $ROUNDS rounds of $SECS s, each run on a fresh backlog" \
    "of $BACKLOG (batched $BATCH_BACKLOG)"
for ((r = 1; r <= ROUNDS; r++)); do
    for kind in "${KLIST[@]}"; do
        n=${#VLIST[@]}
        for ((i = 0; i < n; i++)); do
            one_run "$kind" "${VLIST[$(((i + r - 1) % n))]}" "$r"
        done
    done
done

echo "   load average at end = $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo
python3 "$ROOT/bench/limits.py" "$OUT" --batch "$BATCH" --clients "$CLIENTS" --command "$CMD" || die "limits.py failed"
