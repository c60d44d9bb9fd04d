#!/usr/bin/env bash
# THE demo of pg_baton:   bash demo/run.sh     (as root, from anywhere; under a minute)
#
# Builds and installs the extension (scripts/install-deps.sh, make -j2, make install),
# starts a throwaway cluster, and shows, in it:
# Part 1, leased deliveries at work (demo/deliveries.sh):
#   1. a throwaway cluster, CREATE EXTENSION pg_baton, a tenant
#   2. 12 deliveries for two targets (baton.enqueue and baton.enqueue_batch)
#   3. three competing workers drain them; worker-3 is killed with kill -9 mid-lease
#   4. the dead worker's delivery is stuck as claimed
#   5. its lease expires; baton.reap() gives it back (generation + 1)
#   6. a surviving worker claims it again (attempt 2) and finishes it
#   7. the dead holder's late finish is refused with DU001: it is fenced
#   8. final state and checks: every delivery finished exactly once, none lost
# Part 2, a workflow (demo/user_deletion/): a request to delete user u-42 from every
# community of an approved inventory, advanced one stage per worker process (step.sh):
#   1. the application's decide function and definition (workflow.sql)
#   2. submitted: a worker finds nothing to do, transition_stage refuses it (DU007)
#   3. the approval must carry the inputs' digest (a wrong one: DU006)
#   4. workers advance the run one stage each, each transition committed with its result
#   5. a failing purge_db waits for its retry deadline, then runs again as the same row
#   6. a worker is killed mid-stage: after its lease expires the next one resumes the
#      saved stage under generation G+1, and the dead one's generation G is fenced (DU001)
#   7. final state and checks: the run completed, every community done
# Exit status 0 when every check holds, non-zero otherwise.
#
# Environment (optional):
#   BATON_DEMO_SKIP_BUILD=1   use the pg_baton already installed (no install-deps, no make)
#   BATON_DEMO_PORT=N         first port to try for the cluster (default 54400)
#   NO_COLOR=1                no colours (they are off anyway when stdout is not a terminal)
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

TENANT=d3e0d3e0-0000-4000-8000-00000000ba70
LEASE='5 seconds'
STATE=""   # the demo's scratch directory (claim and finish logs)
CLUSTER="" # the throwaway cluster's directory
WORKER_PIDS=()

# --- output ----------------------------------------------------------------------------
if [[ -t 1 && -z ${NO_COLOR:-} ]]; then
    B=$'\e[1m' D=$'\e[2m' R=$'\e[31m' G=$'\e[32m' Y=$'\e[33m' M=$'\e[35m' C=$'\e[36m' N=$'\e[0m'
else
    B="" D="" R="" G="" Y="" M="" C="" N=""
fi
WORKER_COLOR=("" "$C" "$Y" "$M")
STEP_COUNT=8

step() {
    printf '\n%s━━ Step %s/%s · %s%s\n' "$B" "$1" "$STEP_COUNT" "$2" "$N"
}
say() { printf '  %s\n' "$*"; }
ok() { printf '  %s✔ %s%s\n' "$G" "$*" "$N"; }
fail() {
    printf '  %s✘ %s%s\n' "$R" "$*" "$N"
    exit 1
}

# show SQL: prints the statement, then runs it and prints its result table, indented.
show() {
    printf '  %ssql> %s%s\n' "$D" "$1" "$N"
    psql -X -q -v ON_ERROR_STOP=1 -P footer=off -c "$1" | sed 's/^./    &/'
}

# run SQL: prints the statement and runs it, for statements whose result says nothing.
run() {
    printf '  %ssql> %s%s\n' "$D" "$1" "$N"
    psql -X -q -v ON_ERROR_STOP=1 -o /dev/null -c "$1"
}

# q SQL: one value or unaligned rows (fields separated by |), for the script to use.
q() {
    psql -X -q -At -F '|' -v ON_ERROR_STOP=1 -c "$1"
}

# --- cleanup ---------------------------------------------------------------------------
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    set +e
    for pid in "${WORKER_PIDS[@]}"; do
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    if [[ -n $CLUSTER ]]; then
        cluster_stop "$CLUSTER" 2>/dev/null || echo "demo: could not stop the cluster in $CLUSTER" >&2
    fi
    [[ -n $STATE ]] && rm -rf -- "$STATE"
    echo
    if ((rc == 0)); then
        printf '%sdemo finished in %d s: all checks passed%s\n' "$G$B" "$SECONDS" "$N"
    else
        printf '%sdemo FAILED (exit %d)%s\n' "$R$B" "$rc" "$N"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ========================================================================================
printf '%spg_baton demo: leased deliveries, competing workers, a crash, and the fence; then a workflow%s\n' "$B" "$N"

# --- build -------------------------------------------------------------------------------
STATE=$(mktemp -d /tmp/pg_baton-demo.XXXXXX)
if [[ ${BATON_DEMO_SKIP_BUILD:-0} == 1 ]]; then
    printf '\n%sBuild skipped (BATON_DEMO_SKIP_BUILD=1): using the installed pg_baton%s\n' "$D" "$N"
else
    printf '\n%s━━ Build · install-deps, make -j2, make install%s\n' "$B" "$N"
    [[ $(id -u) -eq 0 ]] || say "${Y}warning: not root; installing the extension needs root${N}"
    build_log=$STATE/build.log
    say "scripts/install-deps.sh (a minute or two on a fresh machine, instant otherwise)"
    if ! bash "$ROOT/scripts/install-deps.sh" >"$build_log" 2>&1; then
        tail -n 30 "$build_log" | sed 's/^/    /'
        fail "scripts/install-deps.sh failed"
    fi
    say "make -j2 && make install (in $ROOT)"
    if ! (cd "$ROOT" && make -j2 && make install) >>"$build_log" 2>&1; then
        tail -n 40 "$build_log" | sed 's/^/    /'
        fail "the build failed"
    fi
    ok "pg_baton built and installed into ${DESTDIR:-}$(pg_config --pkglibdir)"
fi

# --- 1 -----------------------------------------------------------------------------------
step 1 "A throwaway cluster, the extension, a tenant"
CLUSTER=$(mktemp -d /tmp/pg_baton-demo-cluster.XXXXXX)
port=$(cluster_free_port "${BATON_DEMO_PORT:-54400}")
cluster_start "$CLUSTER" "$port" 2>"$STATE/cluster_start.log" || {
    sed 's/^/    /' "$STATE/cluster_start.log"
    fail "could not start a cluster in $CLUSTER"
}
say "PostgreSQL $(q 'SHOW server_version') running in $CLUSTER (port $port, Unix socket only)"
run "CREATE EXTENSION pg_baton"
run "SELECT baton.create_tenant('$TENANT')"
say "tenant $TENANT is $(q "SELECT state FROM baton.tenants WHERE tenant = '$TENANT'")"

# --- 2 to 8: leased deliveries -----------------------------------------------------------
# shellcheck source=demo/deliveries.sh
source "$ROOT/demo/deliveries.sh"

# --- part 2: a workflow, one step per worker process ------------------------------------
# shellcheck source=demo/user_deletion/demo.sh
source "$ROOT/demo/user_deletion/demo.sh"
