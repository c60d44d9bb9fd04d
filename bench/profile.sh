#!/usr/bin/env bash
# Where pg_baton's claim and finish spend their time.     bash bench/profile.sh
#
# Needs pg_baton installed (make install), valgrind (callgrind_annotate) and, for the
# sampling part, perf. Builds and installs nothing. In a throwaway cluster:
#
#   1. callgrind: the cluster is stopped and ONE single-user backend (postgres --single)
#      runs under valgrind --tool=callgrind: N claims and N finishes of pg_baton, each
#      its own statement and transaction (fresh deliveries, generation 1), then the same
#      number of the plain SQL claim and finish statements of bench/sql/plain_cycle.sql
#      in a second run. Prints instructions per claim and per finish for both (inclusive
#      cost of baton_claim and baton_finish; of the plain statements' executor runs), the
#      top functions by inclusive cost inside baton_claim and baton_finish, and the
#      functions of pg_baton.so by their own cost (callgrind_annotate).
#   2. perf (if `perf record -e cpu-clock` works here): the backend of one pgbench client
#      running bench/sql/baton_cycle.sql for a few seconds, sampled; the top symbols.
#
# Options: --calls N (default 2000), --no-perf, --keep DIR (keep the callgrind outputs).
# Environment: BATON_BENCH_PORT (first port to try, default 55490).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
SQL="$ROOT/bench/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

die() {
    echo "profile.sh: $*" >&2
    exit 2
}

CALLS=2000
PERF=1
KEEP=""
while (($# > 0)); do
    case $1 in
        --calls) CALLS=${2:?--calls N}; shift ;;
        --no-perf) PERF=0 ;;
        --keep) KEEP=${2:?--keep DIR}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null || die "valgrind is needed"
BINDIR=$(_cluster_bindir) || die "no PostgreSQL server binaries"
TENANT=b0000000-0000-4000-8000-00000000bec4

CLUSTER=$(mktemp -d /tmp/pg_baton-bench-prof.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-profw.XXXXXX)
chmod 0777 "$WORK"
# shellcheck disable=SC2317
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    cluster_stop "$CLUSTER" 2>/dev/null
    if [[ -n $KEEP ]]; then
        mkdir -p "$KEEP" && cp "$WORK"/callgrind.* "$KEEP"/ 2>/dev/null
    fi
    rm -rf -- "$WORK"
    exit "$rc"
}
trap cleanup EXIT

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55490}") || die "no free port"
cluster_start "$CLUSTER" "$PORT" "shared_buffers = 512MB" 2>/dev/null || die "could not start a cluster"
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE DATABASE prof"
q -d prof -v tenant="$TENANT" -v rows=$((CALLS + 100000)) -f "$SQL/baton_setup.sql" >/dev/null 2>&1
q -d prof -v rows=$((CALLS + 100000)) -f "$SQL/plain_setup.sql" >/dev/null 2>&1

as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# ---------------------------------------------------------------------------
# 2. perf first (needs the running cluster)
# ---------------------------------------------------------------------------
if ((PERF)) && command -v perf >/dev/null && perf record -e cpu-clock -o /dev/null true >/dev/null 2>&1; then
    echo "== perf: the backend of one pgbench client running baton_cycle.sql (cpu-clock samples)"
    "$BINDIR/pgbench" -n -M prepared -c 1 -T 12 -D tenant="$TENANT" -f "$SQL/baton_cycle.sql" prof \
        >"$WORK/pgbench.log" 2>&1 &
    PGB=$!
    pid=""
    for _ in $(seq 50); do
        pid=$(q -d prof -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' LIMIT 1")
        [[ -n $pid ]] && break
        sleep 0.1
    done
    [[ -n $pid ]] || die "no pgbench backend"
    perf record -e cpu-clock -F 2000 -g -p "$pid" -o "$WORK/perf.data" -- sleep 8 >/dev/null 2>&1 || true
    wait "$PGB" || true
    echo "-- top symbols, self time (perf report --no-children)"
    perf report -i "$WORK/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null \
        | grep -E '^ +[0-9]' | head -40
    echo
    echo "-- pg_baton.so symbols, with their callees (perf report --children, dso pg_baton.so)"
    perf report -i "$WORK/perf.data" --children --sort symbol --dsos pg_baton.so --stdio 2>/dev/null \
        | grep -E '^ +[0-9]' | head -25
    echo
else
    echo "== perf: not available here (perf record -e cpu-clock failed); skipped"
    echo
fi

# ---------------------------------------------------------------------------
# 1. callgrind on a single-user backend
# ---------------------------------------------------------------------------
cluster_data=$CLUSTER/data
(cd "$CLUSTER" && as_owner "$BINDIR/pg_ctl" -D "$cluster_data" -m fast -w stop >/dev/null)

# Statements, one per line (single-user mode reads a statement per newline).
{
    for ((i = 0; i < 20; i++)); do # warm-up: caches, kept plans
        echo "SELECT count(*) FROM baton.claim('$TENANT', 'bench', '30 seconds');"
    done
    for ((i = 0; i < CALLS; i++)); do
        echo "SELECT count(*) FROM baton.claim('$TENANT', 'bench', '30 seconds');"
    done
    # Finish what was claimed, oldest first: generation 1 (fresh rows, first claim).
    echo "CREATE TEMP TABLE c AS SELECT id, row_number() OVER (ORDER BY id) AS n FROM baton.deliveries WHERE status = 'claimed';"
    for ((i = 1; i <= CALLS + 20; i++)); do
        echo "SELECT baton.finish('$TENANT', (SELECT id FROM c WHERE n = $i), 1);"
    done
} >"$WORK/baton.sql"
{
    for ((i = 0; i < 20; i++)); do
        echo "WITH c AS (UPDATE q SET status = 'claimed', generation = generation + 1, lease_until = now() + interval '30 seconds' WHERE id = (SELECT id FROM q WHERE status = 'pending' AND run_after <= now() ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, generation) SELECT count(*), max(id) FROM c;"
    done
    for ((i = 0; i < CALLS; i++)); do
        echo "WITH c AS (UPDATE q SET status = 'claimed', generation = generation + 1, lease_until = now() + interval '30 seconds' WHERE id = (SELECT id FROM q WHERE status = 'pending' AND run_after <= now() ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, generation) SELECT count(*), max(id) FROM c;"
    done
    echo "CREATE TEMP TABLE c AS SELECT id, row_number() OVER (ORDER BY id) AS n FROM q WHERE status = 'claimed';"
    for ((i = 1; i <= CALLS + 20; i++)); do
        echo "UPDATE q SET status = 'finished' WHERE id = (SELECT id FROM c WHERE n = $i) AND generation = 1 AND status = 'claimed';"
    done
} >"$WORK/plain.sql"
chmod 0644 "$WORK"/*.sql

run_callgrind() {
    local name=$1
    (cd "$CLUSTER" && as_owner valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.$name" \
        --dump-instr=no --collect-jumps=no \
        "$BINDIR/postgres" --single -D "$cluster_data" -j -c shared_buffers=128MB -c fsync=off prof \
        <"$WORK/$name.sql" >"$WORK/$name.out" 2>"$WORK/$name.err") || {
        tail -20 "$WORK/$name.err" >&2
        die "callgrind run '$name' failed"
    }
    grep -q ERROR "$WORK/$name.out" && { grep -m5 ERROR "$WORK/$name.out" >&2; die "'$name' statements failed"; }
    return 0
}
echo "== callgrind: one single-user backend, $CALLS claims then $CALLS finishes (each its own statement), fsync off"
run_callgrind baton
run_callgrind plain

# inclusive FUNCTION FILE: the inclusive Ir of the functions matching FUNCTION.
inclusive() {
    callgrind_annotate --inclusive=yes --threshold=100 "$2" 2>/dev/null \
        | awk -v f="$1" '$0 ~ f { gsub(",", "", $1); print $1; exit }'
}
calls_of() { # calls of FUNCTION in FILE (from the callgrind "calls=" records)
    awk -v f="$1" '/^cfn=/ { hit = ($0 ~ f) } /^calls=/ && hit { split($1, a, "="); n += a[2]; hit = 0 } END { print n + 0 }' "$2"
}
b=$WORK/callgrind.baton
p=$WORK/callgrind.plain
claim_ir=$(inclusive ':baton_claim ' "$b")
finish_ir=$(inclusive ':baton_finish ' "$b")
claim_n=$(calls_of 'baton_claim$' "$b")
finish_n=$(calls_of 'baton_finish$' "$b")
stmt_b=$(inclusive 'exec_simple_query' "$b")
stmt_p=$(inclusive 'exec_simple_query' "$p")
echo
printf '   pg_baton claim : %8.0f instructions per call inside baton_claim (%d calls)\n' "$(awk "BEGIN{print $claim_ir/$claim_n}")" "$claim_n"
printf '   pg_baton finish: %8.0f instructions per call inside baton_finish (%d calls)\n' "$(awk "BEGIN{print $finish_ir/$finish_n}")" "$finish_n"
nb=$(grep -c . "$WORK/baton.sql")
np=$(grep -c . "$WORK/plain.sql")
printf '   whole statements (exec_simple_query, parse + plan + execute + commit): pg_baton %.0f, plain SQL %.0f instructions per statement on average\n' \
    "$(awk "BEGIN{print $stmt_b/$nb}")" "$(awk "BEGIN{print $stmt_p/$np}")"
echo
echo "-- inclusive cost, whole pg_baton run (top 40, callgrind_annotate --inclusive=yes)"
callgrind_annotate --inclusive=yes "$b" 2>/dev/null | sed -n '/^Ir/,$p' | grep -v '^-' | sed -n '2,41p'
echo
echo "-- pg_baton.so's own functions, self cost (top 20)"
callgrind_annotate "$b" 2>/dev/null | sed -n '/^Ir/,$p' | grep -E 'pg_baton|src/' | head -20
echo
echo "-- inclusive cost, whole plain SQL run (top 25)"
callgrind_annotate --inclusive=yes "$p" 2>/dev/null | sed -n '/^Ir/,$p' | grep -v '^-' | sed -n '2,26p'
