#!/usr/bin/env bash
# What baton.health costs on a large queue.   bash bench/health.sh [--rows N] [--runs N]
#
# One throwaway cluster (pg_baton preloaded, no background reaper), one tenant, N
# deliveries (default 1,000,000) written straight into baton.deliveries: 90% finished,
# 5% pending (a tenth of them due in the future), 4% claimed (a quarter of those with an
# expired lease), 1% failed; 2,000 runs, a tenth with an expired owner lease, and their
# stages; then VACUUM ANALYZE. Measured with pgbench (one client, --runs transactions
# each, the latency pgbench reports), in the same run:
#
#   health          SELECT * FROM baton.health
#   delivery_stats  SELECT * FROM baton.delivery_stats (reads every row: the yardstick)
#
# and the ratio of the two. Prints "health: X ms, delivery_stats: Y ms, ratio Y/X".
# Environment: BATON_BENCH_PORT (first port to try, default 55520).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

ROWS=1000000
RUNS=50
while (($# > 0)); do
    case $1 in
        --rows) ROWS=${2:?--rows N}; shift ;;
        --runs) RUNS=${2:?--runs N}; shift ;;
        *) echo "health.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

DIR=$(mktemp -d /tmp/pg_baton-bench-health.XXXXXX)
trap 'cluster_stop "$DIR" >/dev/null 2>&1 || true' EXIT
port=$(cluster_free_port "${BATON_BENCH_PORT:-55520}")
cluster_start "$DIR" "$port" "shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''" \
    "shared_buffers = '256MB'" "max_wal_size = '4GB'" >/dev/null
BINDIR=$(_cluster_bindir)
q() { "$BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

T=00000000-0000-0000-0be0-000000000001
echo "filling: $ROWS deliveries, 2000 runs"
q >/dev/null <<SQL
CREATE EXTENSION pg_baton;
SELECT baton.create_tenant('$T');
SELECT baton.define_workflow('bench', '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}');
INSERT INTO baton.runs (tenant, id, workflow, version, status, inputs_digest, owner, generation, lease_until)
SELECT '$T', gen_random_uuid(), 'bench', 1, 'running', 'd', 'o', 1,
       CASE WHEN i % 10 = 0 THEN now() - interval '1 hour' ELSE now() + interval '1 hour' END
  FROM generate_series(1, 2000) i;
INSERT INTO baton.stages (tenant, run_id, stage, entry_seq, status)
SELECT tenant, id, 'a', 1, 'running' FROM baton.runs;
INSERT INTO baton.deliveries (tenant, target, dedup_key, status, generation, attempts, run_after, lease_until, settled_at)
SELECT '$T', 't' || (i % 20), 'k' || i, s.status, 1, 1,
       CASE WHEN s.status = 'pending' AND i % 10 = 0 THEN now() + interval '1 hour' ELSE now() - interval '1 minute' END,
       CASE WHEN s.status = 'claimed' THEN
            CASE WHEN i % 4 = 0 THEN now() - interval '10 minutes' ELSE now() + interval '1 hour' END END,
       CASE WHEN s.status IN ('finished', 'failed') THEN now() END
  FROM generate_series(1, $ROWS) i,
       LATERAL (SELECT CASE WHEN i % 100 < 90 THEN 'finished' WHEN i % 100 < 95 THEN 'pending'
                            WHEN i % 100 < 99 THEN 'claimed' ELSE 'failed' END AS status) s;
VACUUM ANALYZE;
SQL
echo "SELECT * FROM baton.health;" >"$DIR/health.sql"
echo "SELECT * FROM baton.delivery_stats;" >"$DIR/stats.sql"
q -c "SELECT name, status, round(value::numeric, 1) FROM baton.health" | sed 's/^/  /'
# latency FILE: pgbench's average latency in ms over RUNS transactions (after 3 to warm up).
latency() {
    "$BINDIR/pgbench" -n -f "$1" -t 3 >/dev/null
    "$BINDIR/pgbench" -n -f "$1" -t "$RUNS" | sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p'
}
h=$(latency "$DIR/health.sql")
s=$(latency "$DIR/stats.sql")
echo "health: $h ms, delivery_stats: $s ms, ratio $(awk -v a="$s" -v b="$h" 'BEGIN { printf "%.0f", a / b }')"
