#!/usr/bin/env bash
# Instructions per transition_stage call, counted by callgrind.   bash bench/transition.sh
#
# Needs pg_baton installed (make install) and valgrind. In a throwaway cluster whose
# postmaster runs under valgrind --tool=callgrind, collecting only inside the C symbol
# baton_transition_stage (--toggle-collect), two runs of one workflow step each
# (transition_stage, start_stage, complete_stage, one transaction per step): declarative
# routing (bench_loop) and a decide function (bench_decide, a SQL function). Each is
# measured as two sessions, W and W + N steps; (cost(W + N) - cost(W)) / N is the cost of
# one call with its plans kept, the first calls' planning left out.
#
# Options: --steps N (default 200). Environment: BATON_BENCH_PORT (default 55490);
# BATON_BENCH_KEEP=DIR keeps the profiles there (callgrind_annotate --inclusive=yes).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
STEPS=200
WARM=20
if [[ ${1:-} == --steps ]]; then STEPS=${2:?--steps N}; fi
command -v valgrind >/dev/null || { echo "transition.sh: valgrind is needed" >&2; exit 2; }
BINDIR=$(_cluster_bindir)
TENANT=b0000000-0000-4000-8000-00000000bec4
CLUSTER=$(mktemp -d /tmp/pg_baton-bench-tr.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-trw.XXXXXX)
chmod 0777 "$WORK"
cleanup() {
    set +e
    cluster_stop "$CLUSTER" 2>/dev/null
    [[ -z ${BATON_BENCH_KEEP:-} ]] || { mkdir -p "$BATON_BENCH_KEEP" && cp "$WORK"/callgrind.* "$BATON_BENCH_KEEP"/; }
    rm -rf -- "$WORK"
}
trap cleanup EXIT
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55490}")
cluster_start "$CLUSTER" "$PORT" >/dev/null 2>&1
q -c "CREATE DATABASE prof"
q -d prof -v tenant="$TENANT" -v clients=4 -f "$ROOT/bench/sql/baton_wf_setup.sql" >/dev/null 2>&1
# A second workflow with a decide function; clients 2 and 3 run it.
q -d prof -v tenant="$TENANT" >/dev/null <<'EOF'
SELECT set_config('bench.tenant', :'tenant', false);
CREATE FUNCTION public.bench_decide(ctx jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE
    AS $$ SELECT '{"next": "step", "state": {"seen": true}, "reason": "again"}'::jsonb $$;
SELECT baton.define_workflow('bench_decide',
    '{"start": "step", "decide": "public.bench_decide", "stages": {"step": {"next": ["step", "@finish"]}}}');
DO $$
DECLARE
    t uuid := current_setting('bench.tenant');
    r uuid; g bigint; s bigint;
BEGIN
    DELETE FROM bench_wf_clients WHERE client >= 2;
    FOR c IN 2 .. 3 LOOP
        r := baton.submit(t, 'bench_decide', '{"k": [1, 2.50, "x"]}', 'decide-' || c);
        g := baton.acquire_run(t, r, 'bench-' || c, '1 day');
        SELECT stage_id INTO s FROM baton.transition_stage(t, r, g);
        PERFORM baton.start_stage(t, r, g, s);
        PERFORM baton.complete_stage(t, r, g, s, '{"ok": true}');
        INSERT INTO bench_wf_clients VALUES (c, r, g);
    END LOOP;
END $$;
EOF

data=$CLUSTER/data
(cd "$CLUSTER" && as_owner "$BINDIR/pg_ctl" -D "$data" -m fast -w stop >/dev/null)
(cd "$CLUSTER" && as_owner valgrind --tool=callgrind --toggle-collect=baton_transition_stage \
    --callgrind-out-file="$WORK/callgrind.pid.%p" \
    "$BINDIR/postgres" -D "$data" -c autovacuum=off -c fsync=off >"$CLUSTER/valgrind.log" 2>&1 &)
for _ in $(seq 300); do
    q -c "SELECT 1" >/dev/null 2>&1 && break
    sleep 1
done

# steps CLIENT COUNT: one backend taking its run COUNT steps; prints that backend's Ir.
steps() {
    local pid
    pid=$(q -d prof -v tenant="$TENANT" -v client="$1" -v n="$2" <<'EOF' | tail -n 1
SELECT run, gen FROM bench_wf_clients WHERE client = :client \gset
SELECT set_config('bench.tenant', :'tenant', false), set_config('bench.run', :'run', false),
       set_config('bench.gen', :'gen', false), set_config('bench.n', :'n', false) \gset
DO $$
DECLARE
    t uuid := current_setting('bench.tenant');
    r uuid := current_setting('bench.run');
    g bigint := current_setting('bench.gen');
    s bigint;
BEGIN
    FOR i IN 1 .. current_setting('bench.n')::int LOOP
        SELECT stage_id INTO s FROM baton.transition_stage(t, r, g);
        PERFORM baton.start_stage(t, r, g, s);
        PERFORM baton.complete_stage(t, r, g, s, '{"ok": true}');
    END LOOP;
END $$;
SELECT pg_backend_pid();
EOF
)
    for _ in $(seq 100); do
        [[ -s $WORK/callgrind.pid.$pid ]] && grep -q '^totals:' "$WORK/callgrind.pid.$pid" && break
        sleep 0.5
    done
    awk '/^totals:/ {print $2}' "$WORK/callgrind.pid.$pid"
}

for label in "declarative routing:0:1" "decide function:2:3"; do
    IFS=: read -r name warm_client client <<<"$label"
    a=$(steps "$warm_client" "$WARM")
    b=$(steps "$client" $((WARM + STEPS)))
    echo "transition_stage, $name: $(((b - a) / STEPS)) instructions per call ($STEPS calls)"
done
