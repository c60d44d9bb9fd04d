#!/usr/bin/env bash
# How fast the web console's pages answer on a large queue.
#     bash bench/console.sh [--rows N] [--fetches N]
#
# One throwaway cluster (pg_baton preloaded, no background reaper, auto_explain logging
# the plan of every statement), one tenant with N deliveries (default 1,000,000)
# written straight into baton.deliveries (pg_baton's triggers keep baton.ready and
# baton.leases as for any write): 4 targets, 90% finished, 5% pending, 4% claimed, 1%
# failed; 100,000 runs with a stage each; a schedule; the counters flushed; then VACUUM
# ANALYZE. A console (console/server.mjs) runs as a role given grant_admin and SELECT on
# the tables its listings read. Each page is fetched with curl --fetches times (default
# 7) after one warm-up fetch; the table shows the median and the slowest time in ms.
# Afterwards the plans auto_explain logged for those fetches are searched for a
# sequential scan of baton.deliveries, ready, runs or stages: there must be none
# (baton.leases, a row per claimed delivery, the overview reads whole, up to 100,000).
# Needs the console's npm packages (`npm ci` in console/). Not part of the tests.
# Environment: BATON_BENCH_PORT (first port to try, default 55560).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

ROWS=1000000
FETCHES=7
while (($# > 0)); do
    case $1 in
        --rows) ROWS=${2:?--rows N}; shift ;;
        --fetches) FETCHES=${2:?--fetches N}; shift ;;
        *) echo "console.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[[ -d $ROOT/console/node_modules ]] || (cd "$ROOT/console" && npm ci --no-audit --no-fund >/dev/null)

DIR=$(mktemp -d /tmp/pg_baton-bench-console.XXXXXX)
CONSOLE_PID=
stop() {
    [[ -n $CONSOLE_PID ]] && kill "$CONSOLE_PID" 2>/dev/null && wait "$CONSOLE_PID" 2>/dev/null
    cluster_stop "$DIR" >/dev/null 2>&1 || true
}
trap stop EXIT
port=$(cluster_free_port "${BATON_BENCH_PORT:-55560}")
cluster_start "$DIR" "$port" "shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''" \
    "shared_buffers = '256MB'" "max_wal_size = '4GB'" \
    "session_preload_libraries = 'auto_explain'" "auto_explain.log_min_duration = 0" \
    "auto_explain.log_nested_statements = on" "log_min_messages = warning" >/dev/null
BINDIR=$(_cluster_bindir)
q() { "$BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

T=00000000-0000-0000-0c0e-000000000001
ROLE=bench_console
echo "filling: $ROWS deliveries, 100000 runs"
q >/dev/null <<SQL
SET session_preload_libraries = '';
SET auto_explain.log_min_duration = -1;
CREATE EXTENSION pg_baton;
CREATE ROLE $ROLE LOGIN;
SELECT baton.grant_admin('$ROLE');
GRANT SELECT ON baton.tenants, baton.deliveries, baton.ready, baton.leases, baton.runs TO $ROLE;
SELECT baton.create_tenant('$T');
SELECT baton.define_workflow('bench', '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}');
INSERT INTO baton.runs (tenant, id, workflow, version, status, inputs_digest, owner, generation, lease_until)
SELECT '$T', gen_random_uuid(), 'bench', 1, 'running', 'd', 'o', 1, now() + interval '1 hour'
  FROM generate_series(1, 100000) i;
INSERT INTO baton.stages (tenant, run_id, stage, entry_seq, status)
SELECT tenant, id, 'a', 1, 'running' FROM baton.runs;
INSERT INTO baton.deliveries (tenant, target, dedup_key, status, generation, attempts, run_after, lease_until, settled_at, payload)
SELECT '$T', 't' || (i % 4), 'k' || i, s.status, 1, 1, now() - interval '1 minute',
       CASE WHEN s.status = 'claimed' THEN now() + interval '1 hour' END,
       CASE WHEN s.status IN ('finished', 'failed') THEN now() END,
       jsonb_build_object('i', i)
  FROM generate_series(1, $ROWS) i,
       LATERAL (SELECT CASE WHEN i % 100 < 90 THEN 'finished' WHEN i % 100 < 95 THEN 'pending'
                            WHEN i % 100 < 99 THEN 'claimed' ELSE 'failed' END AS status) s;
SELECT baton.schedule('$T', 'nightly', 't1', '0 3 * * *');
SELECT baton.flush_counts();
VACUUM ANALYZE;
SQL

RUN=$(q -c "SELECT id FROM baton.runs LIMIT 1")
MID=$(q -c "SELECT id FROM baton.deliveries WHERE tenant = '$T' AND target = 't1' AND id > $ROWS / 2 ORDER BY id LIMIT 1")
cursor() { node -e 'process.stdout.write(Buffer.from(JSON.stringify(process.argv.slice(1))).toString("base64url"))' "$@"; }

node "$ROOT/console/server.mjs" "postgresql://$ROLE@/postgres?host=$PGHOST&port=$PGPORT" --port 0 \
    --sample-seconds 5 >"$DIR/console.log" 2>&1 &
CONSOLE_PID=$!
for _ in $(seq 100); do grep -q listening "$DIR/console.log" && break; sleep 0.1; done
URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$DIR/console.log")
LOG_START=$(wc -l <"$CLUSTER_LOG")

D="/deliveries?tenant=$T&target=t1"
PAGES=(
    "overview|/"
    "deliveries, newest|$D"
    "deliveries, from the middle|$D&after=$(cursor "$MID")"
    "deliveries, pending|$D&state=pending"
    "deliveries, claimed|$D&state=claimed"
    "deliveries, failed|$D&state=failed"
    "deliveries, key prefix|$D&prefix=k12345"
    "deliveries, by id|$D&id=$MID"
    "delivery|/delivery?tenant=$T&id=$MID"
    "runs|/runs?tenant=$T"
    "run|/run?tenant=$T&id=$RUN"
    "schedules|/schedules"
)
printf '%-30s %10s %10s %8s\n' page "median ms" "max ms" status
for entry in "${PAGES[@]}"; do
    name=${entry%%|*}
    path=${entry#*|}
    curl -s -o /dev/null "$URL$path"
    times=()
    for _ in $(seq "$FETCHES"); do
        out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$URL$path")
        code=${out% *}
        times+=("${out#* }")
    done
    sorted=$(printf '%s\n' "${times[@]}" | sort -n)
    median=$(echo "$sorted" | awk -v n="$FETCHES" 'NR == int((n + 1) / 2) { printf "%.1f", $1 * 1000 }')
    max=$(echo "$sorted" | tail -1 | awk '{ printf "%.1f", $1 * 1000 }')
    printf '%-30s %10s %10s %8s\n' "$name" "$median" "$max" "$code"
done
seq_scans=$(tail -n +"$LOG_START" "$CLUSTER_LOG" | grep -cE 'Seq Scan on (deliveries|ready|runs|stages)\b' || true)
echo "sequential scans of deliveries, ready, runs or stages in the pages' plans: $seq_scans"
