#!/usr/bin/env bash
# Where pg_baton's claim and finish spend their time.     bash bench/profile.sh
#
# Needs pg_baton installed (make install), valgrind (callgrind_annotate) and, for the
# sampling part, perf. Builds and installs nothing. In a throwaway cluster:
#
#   1. callgrind: the cluster is restarted under valgrind --tool=callgrind (a backend is a
#      fork of the postmaster, so each writes its own profile); one psql session per run,
#      on fresh tables: pg_baton's claim and finish, each its own statement and
#      transaction (prepared, as pgbench -M prepared), and the same with the plain SQL
#      statements of bench/sql/plain_cycle.sql. Three runs each (warm-up only; + N claims;
#      + N claim/finish cycles) give the instructions per claim and per finish, whole
#      statement (execute and commit) included. Then the functions
#      by inclusive cost (callgrind_annotate): pg_baton.so's, and the server's.
#   2. perf (if `perf record -e cpu-clock` works here): the backend of one pgbench client
#      running bench/sql/baton_cycle.sql for a few seconds, sampled; the top symbols.
#   4. plans: auto_explain of the statements pg_baton runs inside claim, renew, finish
#      and a stage step (its kept generic plans, which index each one uses).
#   3. wait events: 64 pgbench clients (--clients) of the pg_baton and plain SQL cycles,
#      unbatched and batched, with pg_stat_activity sampled every 50 ms: what the backends
#      wait for; then how many of the queue table's updates were HOT (no index entry).
#
# The server is preloaded, as in production (the claim hints and the counters in shared
# memory), with no background reaper. The callgrind part runs pg_baton's cycle twice: with
# the deliveries' counters on (as shipped) and off (baton.count_events = off, "uncounted"),
# so the difference is what counting costs a cycle, its commit included.
#
# Options: --calls N (default 2000), --clients N (of the wait events, default 64), --no-perf,
# --only callgrind (part 1 alone), --keep DIR (keep the callgrind outputs),
# --after-setup FILE (SQL run after every setup of pg_baton's tables, e.g. a schema
# change to profile against the installed one: see bench/row_rules.sh).
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
CLIENTS=64
PERF=1
ONLY=""
KEEP=""
AFTER_SETUP=""
while (($# > 0)); do
    case $1 in
        --calls) CALLS=${2:?--calls N}; shift ;;
        --clients) CLIENTS=${2:?--clients N}; shift ;;
        --no-perf) PERF=0 ;;
        --only) ONLY=${2:?--only callgrind}; [[ $ONLY == callgrind ]] || die "--only takes 'callgrind'"; PERF=0; shift ;;
        --keep) KEEP=${2:?--keep DIR}; shift ;;
        --after-setup) AFTER_SETUP=$(readlink -f "${2:?--after-setup FILE}"); shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then die "valgrind is needed"; fi
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
cluster_start "$CLUSTER" "$PORT" "shared_buffers = 512MB" "shared_preload_libraries = 'pg_baton'" \
    "baton.reaper_databases = ''" 2>/dev/null || die "could not start a cluster"
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
q -c "CREATE DATABASE prof"
# after_setup: the --after-setup SQL, if any, after each setup of pg_baton's tables.
after_setup() { if [[ -n $AFTER_SETUP ]]; then q -d prof -f "$AFTER_SETUP" >/dev/null || die "--after-setup failed"; fi; }
q -d prof -v tenant="$TENANT" -v rows=$((CALLS + 100000)) -f "$SQL/baton_setup.sql" >/dev/null 2>&1
after_setup
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
    perf record -e cpu-clock -F 999 --call-graph dwarf,16384 -p "$pid" -o "$WORK/perf.data" -- sleep 6 >/dev/null 2>&1 || true
    wait "$PGB" || true
    echo "-- top symbols by self time (perf report --no-children; [k] = kernel: WAL writes and fsync)"
    { perf report -i "$WORK/perf.data" --no-children -g none --percent-limit 0.4 --sort dso,symbol --stdio 2>/dev/null \
        | grep -E '^ +[0-9]' | head -40; } || true
    echo
    echo "-- share of samples per object (kernel = WAL writes, fsync, sockets, scheduling)"
    { perf report -i "$WORK/perf.data" --no-children -g none --sort dso --stdio 2>/dev/null \
        | grep -E '^ +[0-9]' | head -8; } || true
    echo
    echo "-- pg_baton.so's functions with their callees (perf report --children, DWARF unwinding, top 25)"
    { perf report -i "$WORK/perf.data" --children -g none --sort dso,symbol --stdio 2>/dev/null \
        | grep -E '^ +[0-9]' | grep pg_baton \
        | sed -E 's/\(anonymous namespace\):://g; s/baton::(pg::|api::)?//g' | cut -c1-160 | head -25; } || true
    echo
elif [[ -z $ONLY ]]; then
    echo "== perf: not available here (perf record -e cpu-clock failed); skipped"
    echo
fi

# ---------------------------------------------------------------------------
# 4. the plans pg_baton's statements run with (auto_explain, nested statements)
# ---------------------------------------------------------------------------
if [[ -z $ONLY ]]; then
echo "== plans of the statements pg_baton runs inside claim, renew, finish, finish_batch and a stage step"
echo "   (auto_explain of the nested SPI statements: kept generic plans, as every backend runs them;"
echo "   100,000 pending deliveries, ANALYZEd while none was claimed (a fresh or idle queue), then 50"
echo "   claimed; 2,000 finished runs of 10 stages)"
q -d prof -v tenant="$TENANT" -v clients=1 -f "$SQL/baton_wf_setup.sql" >/dev/null 2>&1
after_setup
q -d prof -c "INSERT INTO baton.deliveries (tenant, target, dedup_key)
              SELECT '$TENANT', 'bench', 'k' || g FROM generate_series(1, 100000) AS g" \
    -c "VACUUM ANALYZE" -c "SELECT count(*) FROM baton.claim('$TENANT', 'bench', '1 hour', 50)" >/dev/null
psql -X -q -d prof -v tenant="$TENANT" 2>&1 <<'EOF_PLANS' | awk '
    /^NOTICE:  duration/ { getline; sub(/^Query Text: /, ""); print "   -- " substr($0, 1, 150) (length($0) > 150 ? " ..." : ""); next }
    /Scan|Update on|Insert on|LockRows|Nested Loop|Hash|Sort|Limit|Index Cond|Filter/ { print "      " $0 }' | grep -v 'Function Scan on\|^ *-- SELECT baton\.' || true
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
SET client_min_messages = notice;
SELECT run, gen FROM bench_wf_clients WHERE client = 0 \gset
SELECT id, generation FROM baton.claim(:'tenant', 'bench', '30 seconds') \gset
SELECT baton.renew(:'tenant', :id, :generation, '1 minute');
SELECT baton.finish(:'tenant', :id, :generation);
SELECT count(*) AS n, array_agg(id) AS ids, array_agg(generation) AS gens FROM baton.claim(:'tenant', 'bench', '30 seconds', 5) \gset
SELECT count(*) FROM baton.finish_batch(:'tenant', :'ids'::bigint[], :'gens'::bigint[]);
BEGIN;
SELECT stage_id AS sid FROM baton.transition_stage(:'tenant', :'run', :gen) \gset
SELECT baton.start_stage(:'tenant', :'run', :gen, :sid);
SELECT baton.complete_stage(:'tenant', :'run', :gen, :sid, '{"ok": true}');
COMMIT;
EOF_PLANS
echo

# ---------------------------------------------------------------------------
# 3. what CLIENTS clients wait for (pg_stat_activity sampled every 50 ms for 6 s)
# ---------------------------------------------------------------------------
waits() { # SCRIPT LABEL TABLE
    q -d prof -v tenant="$TENANT" -v rows=100000 -f "$SQL/baton_setup.sql" >/dev/null 2>&1
    after_setup
    q -d prof -v rows=100000 -f "$SQL/plain_setup.sql" >/dev/null 2>&1
    "$BINDIR/pgbench" -n -M prepared -c "$CLIENTS" -j 2 -T 8 -D tenant="$TENANT" -D batch=50 -f "$SQL/$1" prof \
        >"$WORK/pgbench.log" 2>&1 &
    local pgb=$!
    sleep 1
    echo "-- $2: share of sampled active pgbench backends per wait event (CPU = not waiting)"
    q -d prof -F ' ' <<'EOF_WAITS' | sed 's/^/   /'
CREATE TEMP TABLE w (ev text);
DO $$ BEGIN
  FOR i IN 1 .. 120 LOOP
    PERFORM pg_stat_clear_snapshot();
    INSERT INTO w SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
      FROM pg_stat_activity WHERE application_name = 'pgbench' AND state = 'active';
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT lpad(round(100.0 * count(*) / sum(count(*)) OVER (), 1)::text, 5) || '%', ev FROM w GROUP BY ev ORDER BY count(*) DESC LIMIT 10;
EOF_WAITS
    wait "$pgb" || true
    q -d prof -F ' ' -c "SELECT format('updates of %s: %s, of which HOT %s (%s%%)', relname, n_tup_upd, n_tup_hot_upd,
        round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0), 1)) FROM pg_stat_user_tables WHERE relid = '$3'::regclass" \
        | sed 's/^/   /'
}
echo "== wait events at $CLIENTS clients"
waits baton_cycle.sql "pg_baton cycle, $CLIENTS clients" baton.deliveries
waits plain_cycle.sql "plain SQL cycle, $CLIENTS clients" q
waits baton_batch.sql "pg_baton batched, $CLIENTS clients" baton.deliveries
waits plain_batch.sql "plain SQL batched, $CLIENTS clients" q
echo
fi

# ---------------------------------------------------------------------------
# 1. callgrind on the backends of a postmaster run under valgrind
# ---------------------------------------------------------------------------
cluster_data=$CLUSTER/data
(cd "$CLUSTER" && as_owner "$BINDIR/pg_ctl" -D "$cluster_data" -m fast -w stop >/dev/null)
# The postmaster runs under callgrind; its backends are forks, so each backend writes its
# own profile (callgrind.pid.<pid>) when it exits.
(cd "$CLUSTER" && as_owner valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.pid.%p" \
    "$BINDIR/postgres" -D "$cluster_data" -c autovacuum=off -c fsync=off -c shared_buffers=128MB \
    >"$CLUSTER/valgrind.log" 2>&1 &)
for _ in $(seq 300); do
    q -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 1
done
q -c "SELECT 1" >/dev/null || die "the postmaster under callgrind did not start"

# The scripts. The fresh tables number their rows from 1 and claims take them in id order, so claim i takes row
# i at generation 1 and finish i can name it directly.
W=20 # warm-up: caches, kept plans, plan cache (generic plans after 5 executions)
# Prepared statements, as pgbench -M prepared runs them.
baton_prepare() {
    echo "PREPARE claim(uuid) AS SELECT count(*) FROM baton.claim(\$1, 'bench', '30 seconds');"
    echo "PREPARE finish(uuid, bigint, bigint) AS SELECT baton.finish(\$1, \$2, \$3);"
}
baton_claim() { echo "EXECUTE claim('$TENANT');"; }
baton_finish() { echo "EXECUTE finish('$TENANT', $1, 1);"; }
# The same with the deliveries' counters off for the session.
uncounted_prepare() { echo "SET baton.count_events = off;"; baton_prepare; }
uncounted_claim() { baton_claim; }
uncounted_finish() { baton_finish "$1"; }
plain_prepare() {
    echo "PREPARE claim AS WITH c AS (UPDATE q SET status = 'claimed', generation = generation + 1, lease_until = now() + interval '30 seconds' WHERE id = (SELECT id FROM q WHERE status = 'pending' AND run_after <= now() ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, generation) SELECT count(*), coalesce(max(id), 0), coalesce(max(generation), 0) FROM c;"
    echo "PREPARE finish(bigint, bigint) AS UPDATE q SET status = 'finished' WHERE id = \$1 AND generation = \$2 AND status = 'claimed';"
}
plain_claim() { echo "EXECUTE claim;"; }
plain_finish() { echo "EXECUTE finish($1, 1);"; }
# script SYSTEM CLAIMS FINISHES: W warm-up cycles, then CLAIMS claims, the first FINISHES
# of them each followed by its finish (claim, finish, claim, finish, ...: one lease in
# flight, as in an unbatched worker's loop).
script() {
    local sys=$1 claims=$2 finishes=$3 i
    "${sys}_prepare"
    for ((i = 1; i <= W; i++)); do "${sys}_claim"; "${sys}_finish" "$i"; done
    for ((i = 1; i <= claims; i++)); do
        "${sys}_claim"
        ((i <= finishes)) && "${sys}_finish" $((W + i))
    done
    return 0
}

# run_callgrind NAME SYSTEM CLAIMS FINISHES: one psql session (one backend) runs the
# script on fresh tables; prints its backend's total instructions.
run_callgrind() {
    local name=$1 pid
    script "$2" "$3" "$4" >"$WORK/$name.sql"
    q -d prof -v tenant="$TENANT" -v rows=$((CALLS + 1000)) -f "$SQL/baton_setup.sql" >/dev/null 2>&1 \
        || die "setup failed"
    after_setup
    q -d prof -v rows=$((CALLS + 1000)) -f "$SQL/plain_setup.sql" >/dev/null 2>&1 || die "setup failed"
    q -d prof -c CHECKPOINT
    { echo "SELECT pg_backend_pid();"; cat "$WORK/$name.sql"; } | q -d prof >"$WORK/$name.out" 2>"$WORK/$name.err" \
        || { head -5 "$WORK/$name.err" >&2; die "callgrind run '$name' failed"; }
    pid=$(head -1 "$WORK/$name.out")
    [[ -s $WORK/$name.err ]] && { head -5 "$WORK/$name.err" >&2; die "'$name' statements failed"; }
    for _ in $(seq 120); do
        [[ -s $WORK/callgrind.pid.$pid ]] && grep -q '^totals:\|^summary:' "$WORK/callgrind.pid.$pid" && break
        sleep 0.5
    done
    mv "$WORK/callgrind.pid.$pid" "$WORK/callgrind.$name" || die "no profile for backend $pid"
    total "$WORK/callgrind.$name"
}
total() { sed -n 's/^summary: \([0-9]*\).*/\1/p; s/^totals: \([0-9]*\).*/\1/p' "$1" | head -1; }

echo "== callgrind: the postmaster under valgrind --tool=callgrind (fsync off); one psql session per run, each statement its own transaction"
echo "   runs: $W warm-up cycles; + $CALLS claims; + $CALLS cycles (claim, finish, claim, ...); cost per call ="
echo "   difference of the backends' instruction counts between runs with and without those calls"
declare -A IR
for sys in baton uncounted plain; do
    IR[$sys.w]=$(run_callgrind "$sys.w" "$sys" 0 0)
    IR[$sys.c]=$(run_callgrind "$sys.c" "$sys" "$CALLS" 0)
    IR[$sys.cf]=$(run_callgrind "$sys.cf" "$sys" "$CALLS" "$CALLS")
done
per() { awk "BEGIN { printf \"%.0f\", ($1) / $CALLS }"; }
bc_=$(per "${IR[baton.c]} - ${IR[baton.w]}")
bf_=$(per "${IR[baton.cf]} - ${IR[baton.c]}")
pc_=$(per "${IR[plain.c]} - ${IR[plain.w]}")
pf_=$(per "${IR[plain.cf]} - ${IR[plain.c]}")
uc_=$(per "${IR[uncounted.c]} - ${IR[uncounted.w]}")
uf_=$(per "${IR[uncounted.cf]} - ${IR[uncounted.c]}")
printf '   %-10s %12s %12s %12s\n' "" claim finish cycle
printf '   %-10s %12s %12s %12s\n' pg_baton "$bc_" "$bf_" $((bc_ + bf_))
printf '   %-10s %12s %12s %12s\n' uncounted "$uc_" "$uf_" $((uc_ + uf_))
printf '   %-10s %12s %12s %12s\n' "plain SQL" "$pc_" "$pf_" $((pc_ + pf_))
printf '   %-10s %12.2f %12.2f %12.2f   (instructions per call, pg_baton / plain SQL)\n' ratio \
    "$(awk "BEGIN{print $bc_/$pc_}")" "$(awk "BEGIN{print $bf_/$pf_}")" "$(awk "BEGIN{print ($bc_+$bf_)/($pc_+$pf_)}")"
printf '   %-10s %12.3f %12.3f %12.3f   (instructions per call, counters on / off)\n' counters \
    "$(awk "BEGIN{print $bc_/$uc_}")" "$(awk "BEGIN{print $bf_/$uf_}")" "$(awk "BEGIN{print ($bc_+$bf_)/($uc_+$uf_)}")"

# Functions by inclusive cost in a run, without the unnamed static functions of the
# stripped server binary; names shortened.
inclusive_top() { # FILE N [FILTER]
    { callgrind_annotate --inclusive=yes --auto=no --threshold=99.9 "$1" 2>/dev/null | sed -n '/^Ir/,$p' \
        | grep -E '^ *[0-9]' | grep -v '???:0x' | grep -E "${3:-.}" \
        | sed -E 's/\[[^]]*\]$//; s/\(anonymous namespace\):://g; s/baton::(pg::|api::)?//g; s/\(FunctionCallInfoBaseData\*[^)]*\)//g' \
        | awk '!seen[$0]++' | cut -c1-160 | head -"$2"; } || true
}
echo
echo "-- pg_baton run ($CALLS cycles): pg_baton.so's functions by inclusive cost (top 30)"
inclusive_top "$WORK/callgrind.baton.cf" 30 'src/'
# cost FILE FUNCTION: inclusive instructions of FUNCTION (exact name) in a run.
costs() { callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$1" 2>/dev/null >"$1.incl" || true; }
cost() { awk -v f="$2" '{ n = $0; sub(/^ *[0-9,]+ \([ 0-9.]+%\) +/, "", n); sub(/ \[.*$/, "", n); sub(/ +$/, "", n) }
    n == "???:" f || n ~ ("[:]" f "$") { c = $1; gsub(",", "", c); print c; exit }' "$1.incl"; }
for r in baton.w baton.cf plain.w plain.cf; do costs "$WORK/callgrind.$r"; done
echo
echo "-- where a cycle's instructions go: inclusive cost of server functions per claim + finish"
echo "   ((run with N cycles - warm-up run) / N; nested calls are inside their callers' numbers)"
printf '   %-34s %12s %12s\n' function pg_baton "plain SQL"
for f in CommitTransactionCommand StartTransactionCommand pg_plan_query ExecutorStart ExecutorRun ExecutorEnd \
    SPI_execute_plan SPI_execute_snapshot SPI_connect SPI_finish ExecInitNode index_getnext_slot heap_update \
    ExecInsertIndexTuples ExecConstraints stringToNode ExecBRUpdateTriggers ExecARUpdateTriggers \
    AfterTriggerEndQuery LockAcquire GetSnapshotData GetLatestSnapshot CreateExecutorState \
    ExecInitExprWithParams ExecBuildProjectionInfo tuplestore_putvalues tuplestore_begin_heap \
    MemoryContextDelete AllocSetContextCreateInternal SearchCatCache1 RelationIdGetRelation; do
    bw=$(cost "$WORK/callgrind.baton.w" "$f"); bc=$(cost "$WORK/callgrind.baton.cf" "$f")
    pw=$(cost "$WORK/callgrind.plain.w" "$f"); pc=$(cost "$WORK/callgrind.plain.cf" "$f")
    printf '   %-34s %12s %12s\n' "$f" "$(awk "BEGIN { printf \"%.0f\", (${bc:-0} - ${bw:-0}) / $CALLS }")" \
        "$(awk "BEGIN { printf \"%.0f\", (${pc:-0} - ${pw:-0}) / $CALLS }")"
done
echo
echo "-- pg_baton.so's own functions per cycle (inclusive; the same run difference)"
awk -v n="$CALLS" '
    FNR == 1 { file++ }
    /src\/(api|pg|core|module)/ {
        c = $1; gsub(",", "", c); name = $0; sub(/^ *[0-9,]+ \([ 0-9.]+%\) +/, "", name); sub(/ \[.*$/, "", name)
        sub(/^.*src\//, "src/", name)
        if (file == 1) { if (!(name in w)) w[name] = c }
        else if (!(name in seen)) { seen[name] = 1; order[++k] = name; cf[name] = c }
    }
    END { for (i = 1; i <= k; i++) { nm = order[i]; v = (cf[nm] - w[nm]) / n; if (v >= 500) printf "%12.0f  %s\n", v, nm } }' \
    "$WORK/callgrind.baton.w.incl" "$WORK/callgrind.baton.cf.incl" \
    | sed -E 's/\(anonymous namespace\):://g; s/baton::(pg::|api::)?//g; s/\(FunctionCallInfoBaseData\*[^)]*\)//g' \
    | sort -rn | awk '!seen[$2]++' | cut -c1-170 | head -30 | sed 's/^/   /'
echo
echo "-- pg_baton run: the server's functions by inclusive cost (top 40)"
inclusive_top "$WORK/callgrind.baton.cf" 60 '\?\?\?:|libc' | sed -n '8,47p'
echo
echo "-- plain SQL run: the server's functions by inclusive cost (top 25)"
inclusive_top "$WORK/callgrind.plain.cf" 40 '\?\?\?:|libc' | sed -n '8,32p'
