#!/usr/bin/env bash
# Does transition_stage cost more on a run with a long history?   bash bench/history.sh
#
# Needs pg_baton already installed in the server's extension directory: run the README's
# test command (bash test/run-all.sh) or `make install` first. This script builds and
# installs nothing; in its own throwaway cluster it only runs CREATE EXTENSION pg_baton.
#
#   1. A throwaway cluster (scripts/cluster.sh: private socket, no TCP, fsync = on,
#      synchronous_commit = on: every commit waits for its WAL flush); the settings that
#      matter are printed.
#   2. The workflow "history_bench": one stage "step" whose declarative next is
#      ["step", "@finish"]; a plain entry always matches, so each transition enters "step"
#      again and the run never ends (bench/history/setup.sql).
#   3. Runs prepared through the real protocol (bench/history/grow.sql: submit,
#      acquire_run, then transition_stage + start_stage + complete_stage in a loop, a
#      COMMIT every 100 steps): the LONG run with 10,000 completed stages, and a pool of
#      SHORT runs with 10 each. Then VACUUM ANALYZE.
#   4. Rounds, alternating short, long, short, long, ... (the machine is shared and noisy;
#      alternating gives both the same noise). Each round is
#          pgbench -M prepared -n -c 1 -T SECS -f bench/history/step.sql
#      one full step per pgbench transaction, and ONE database transaction per step:
#          BEGIN; transition_stage; start_stage; complete_stage; COMMIT;
#      (after reading the run's id and generation by its idempotency key, the same way
#      for both kinds). A short round picks a random run of the pool for each step, so
#      each short run keeps a short history (10 plus its share of the steps); the long
#      round always steps the long run, whose history keeps growing, which only makes it
#      longer. Steps are counted from the table (completed stages before and after the
#      round), not from pgbench's tps, and divided by the wall time of that pgbench.
#   5. A table: per round, each kind's history at the start and steps/s, and long/short;
#      the medians; the ratio of the medians long/short (goal >= 0.9). Short rounds of a
#      few seconds, many of them, because the noise of a shared machine comes and goes
#      within seconds.
#   6. EXPLAIN (ANALYZE, BUFFERS) of the two lookups that could grow with history, on the
#      long run (bench/history/explain.sql).
#
# Options:
#   --quick          6 rounds x 2 s, a pool of 100 (about 30 s in all) instead of
#                    15 rounds x 3 s, a pool of 500 (about 2 minutes)
#   --rounds N       rounds per kind of run        --secs S     seconds per round
#   --long N         the long run's history (default 10000)
#   --pool N         short runs in the pool (default 500)
#   --split          each call its own transaction (bench/history/step_split.sql, three
#                    commits per step), as a worker that works between start and complete
#
# Statistics. pg_baton runs every statement with a generic plan made once per backend
# (src/pg/runtime/spi.cpp), from the statistics of that moment. On tables never analyzed the
# planner can choose an index that matches only `tenant` for a lookup by (tenant, id),
# and a session keeps that plan until an ANALYZE invalidates it; so grow.sql runs
# ANALYZE every 1000 steps, and the measurement starts after VACUUM ANALYZE, as
# autovacuum would have done on a live system. The EXPLAIN at the end shows the plans.
#
# Environment: BATON_BENCH_PORT (first port to try, default 54470).
# Exit status: 0 when the ratio meets the goal, 1 when it does not, 2 on an error.
set -euo pipefail
export LC_ALL=C # a dot in $EPOCHREALTIME and in printf

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
HERE="$ROOT/bench/history"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

ROUNDS=15
SECS=3
POOL=500
SHORT=10
LONG=10000
SCRIPT="$HERE/step.sql"
MODE="one transaction per step: BEGIN; transition_stage; start_stage; complete_stage; COMMIT"
GOAL=0.9
TENANT=b0000000-0000-4000-8000-00000000be7c

die() {
    echo "history.sh: $*" >&2
    exit 2
}

# calc EXPR: floating-point arithmetic (awk; bc is not always installed).
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

while (($# > 0)); do
    case $1 in
        --quick) ROUNDS=6 SECS=2 POOL=100 ;;
        --rounds) ROUNDS=${2:?--rounds N}; shift ;;
        --secs) SECS=${2:?--secs S}; shift ;;
        --long) LONG=${2:?--long N}; shift ;;
        --pool) POOL=${2:?--pool N}; shift ;;
        --split)
            SCRIPT="$HERE/step_split.sql"
            MODE="each call its own transaction (three commits per step)"
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1' (try --help)" ;;
    esac
    shift
done
for v in "$ROUNDS" "$SECS" "$LONG" "$POOL"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || die "--rounds, --secs, --long and --pool take positive integers"
done

BINDIR=$(_cluster_bindir) || die "no PostgreSQL server binaries"
PGBENCH=$BINDIR/pgbench
[[ -x $PGBENCH ]] || PGBENCH=$(command -v pgbench) || die "pgbench not found"
SHAREDIR=$("${PG_CONFIG:-pg_config}" --sharedir 2>/dev/null || echo /usr/share/postgresql/15)
[[ -f $SHAREDIR/extension/pg_baton.control ]] \
    || die "pg_baton is not installed ($SHAREDIR/extension/pg_baton.control is missing); run 'bash test/run-all.sh' or 'make install' first"

CLUSTER=$(mktemp -d /tmp/pg_baton-bench.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-out.XXXXXX)
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    cluster_stop "$CLUSTER" 2>/dev/null || echo "history.sh: could not stop the cluster in $CLUSTER" >&2
    rm -rf -- "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-54470}") || die "no free port"
cluster_start "$CLUSTER" "$PORT" 2>"$WORK/cluster.log" \
    || { cat "$WORK/cluster.log" >&2; die "could not start a cluster"; }

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

echo "== pg_baton: the cost of a stage step against the length of the run's history"
echo
echo "-- cluster settings (a throwaway cluster on a Unix socket, port $PORT)"
q -F ' = ' -c "SELECT name, setting || COALESCE(' ' || unit, '') FROM pg_settings
                WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'wal_sync_method',
                               'full_page_writes', 'shared_buffers', 'autovacuum',
                               'max_wal_size', 'checkpoint_timeout', 'plan_cache_mode')
                ORDER BY name" | sed 's/^/   /'
echo "   cpus = $(nproc 2>/dev/null || echo '?'), load average = $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

q -c "CREATE EXTENSION pg_baton" || die "CREATE EXTENSION pg_baton failed"
echo "   pg_baton = $(q -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"
q -v tenant="$TENANT" -f "$HERE/setup.sql" >/dev/null

# grow PREFIX COUNT STEPS COMMIT_EVERY ANALYZE_EVERY: COUNT runs of STEPS steps each.
grow() {
    local t0 t1
    t0=$EPOCHREALTIME
    q -v tenant="$TENANT" -v prefix="$1" -v count="$2" -v steps="$3" -v commit_every="$4" \
        -v analyze_every="$5" -f "$HERE/grow.sql" >/dev/null || die "could not prepare the runs '$1'"
    t1=$EPOCHREALTIME
    printf '   %-6s %4d run(s) x %5d steps in %5.1f s\n' "$1" "$2" "$3" "$(calc "$t1 - $t0")"
}

echo
echo "-- preparing the runs (transition_stage + start_stage + complete_stage)"
# ANALYZE now and then while growing, so the session's own plans follow the tables.
grow short "$POOL" "$SHORT" 100 1000
grow long 1 "$LONG" 100 1000
q -c "VACUUM ANALYZE baton.stages" -c "VACUUM ANALYZE baton.runs"
echo "   VACUUM ANALYZE baton.stages, baton.runs"
LONG_RUN=$(q -c "SELECT id FROM baton.runs WHERE tenant = '$TENANT' AND idempotency_key = 'long-1'")

# completed PREFIX: completed stages of the runs '<PREFIX>-*' (one per finished step).
completed() {
    q -c "SELECT count(*) FROM baton.stages s JOIN baton.runs r ON r.tenant = s.tenant AND r.id = s.run_id
           WHERE r.tenant = '$TENANT' AND r.idempotency_key LIKE '$1-%' AND s.status = 'completed'"
}

# measure PREFIX POOL: one round; sets STEPS and SECONDS_TAKEN.
measure() {
    local before after t0 t1 log=$WORK/pgbench.log
    before=$(completed "$1")
    t0=$EPOCHREALTIME
    if ! "$PGBENCH" -M prepared -n -c 1 -T "$SECS" -D tenant="$TENANT" -D prefix="$1" -D pool="$2" \
        -f "$SCRIPT" >"$log" 2>&1; then
        cat "$log" >&2
        die "pgbench failed"
    fi
    t1=$EPOCHREALTIME
    if grep -Eq 'number of failed transactions: [1-9]' "$log"; then
        cat "$log" >&2
        die "pgbench reported failed transactions"
    fi
    after=$(completed "$1")
    STEPS=$((after - before))
    SECONDS_TAKEN=$(calc "$t1 - $t0")
    ((STEPS > 0)) || { cat "$log" >&2; die "no step completed in a round"; }
}

echo
echo "-- measuring: $ROUNDS rounds x $SECS s per kind of run, alternating short and long"
echo "   pgbench -M prepared -n -c 1 -T $SECS -f bench/history/$(basename "$SCRIPT")"
echo "   $MODE"
SHORT_HIST=() LONG_HIST=() SHORT_RATES=() LONG_RATES=()
for ((r = 1; r <= ROUNDS; r++)); do
    SHORT_HIST+=("$(calc "$(completed short) / $POOL")")
    measure short "$POOL"
    SHORT_RATES+=("$(calc "$STEPS / $SECONDS_TAKEN")")
    printf '   round %2d: short %6d steps in %.2f s' "$r" "$STEPS" "$SECONDS_TAKEN"
    LONG_HIST+=("$(completed long)")
    measure long 1
    LONG_RATES+=("$(calc "$STEPS / $SECONDS_TAKEN")")
    printf ', long %6d steps in %.2f s\n' "$STEPS" "$SECONDS_TAKEN"
done
LONG_END=$(completed long)

median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR % 2) printf "%.6f", v[(NR + 1) / 2]; else printf "%.6f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
SHORT_MED=$(median "${SHORT_RATES[@]}")
LONG_MED=$(median "${LONG_RATES[@]}")
RATIOS=()
for ((r = 0; r < ROUNDS; r++)); do RATIOS+=("$(calc "${LONG_RATES[r]} / ${SHORT_RATES[r]}")"); done

echo
echo "-- steps per second: completed stages counted in baton.stages / wall time of each pgbench"
echo "   (history: completed stages at the start of the round; for short, the mean over its $POOL runs)"
printf '   %6s  %14s %9s  %14s %9s  %10s\n' round 'short: history' steps/s 'long: history' steps/s long/short
for ((r = 0; r < ROUNDS; r++)); do
    printf '   %6d  %14.0f %9.1f  %14d %9.1f  %10.2f\n' $((r + 1)) "${SHORT_HIST[r]}" "${SHORT_RATES[r]}" \
        "${LONG_HIST[r]}" "${LONG_RATES[r]}" "${RATIOS[r]}"
done
printf '   %6s  %14s %9.1f  %14s %9.1f  %10.2f\n' median '' "$SHORT_MED" '' "$LONG_MED" "$(median "${RATIOS[@]}")"
echo "   (the long run ends with $LONG_END completed stages)"

RATIO=$(calc "$LONG_MED / $SHORT_MED")
if [[ $(awk "BEGIN { print ($RATIO >= $GOAL) }") == 1 ]]; then
    VERDICT="goal met"
    RC=0
else
    VERDICT="goal NOT met"
    RC=1
fi
echo
printf -- '-- ratio of the medians long/short = %.2f (goal >= %s): %s\n' "$RATIO" "$GOAL" "$VERDICT"
printf -- '   (the median of the per-round ratios, each pairing two neighbouring rounds: %.2f)\n' \
    "$(median "${RATIOS[@]}")"

echo
echo "-- the lookups on the long run ($LONG_END completed stages)"
q -v tenant="$TENANT" -v run="$LONG_RUN" -f "$HERE/explain.sql" 2>&1 | sed 's/^/   /'
echo
echo "-- done in $SECONDS s"

exit "$RC"
