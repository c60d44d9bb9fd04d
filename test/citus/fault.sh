#!/usr/bin/env bash
# Moving and losing nodes loses nothing: a three-node Citus cluster (test/citus/cluster.sh)
# with pg_baton created and distributed, under the load of the fault suite (test/fault:
# producers enqueueing with dedup keys, workers claiming, finishing and retrying, run
# workers driving a workflow through transition_stage, a reaper, an operator), all
# through the coordinator, logging every acknowledgement. Meanwhile a shard group is moved
# from worker S to worker D (citus_move_shard_placement, block_writes), another from D to
# S (force_logical), then D's postmaster is killed with SIGKILL and started again. Then
# (test/citus/fault.py) the fault suite's invariants against the logs, and here: the
# fence on each moved tenant (delegated, inside a transaction, direct SQL on the
# coordinator and on the shard) while another tenant writes, the nodes' health, amcheck
# on the killed worker's shards, no backend crash in any log. Before the load: pgoutput
# starts in a backend of each node that has read Citus' metadata (a logical move's
# walsender does).
#
#   bash test/citus/fault.sh    (PG_CONFIG as for run.sh; BATON_CITUS_PORT the first port
#                                tried, default 56900; BATON_CITUS_MOVE_MODES the moves'
#                                modes, default block_writes,force_logical;
#                                BATON_CITUS_FAULT_LOAD_SECONDS the load after each step,
#                                default 4; BATON_KEEP_LOGS=1 keeps the logs)
#
# Without Citus it prints one line saying so and exits 0. The last line is
# "N passed, N failed". Run as root (or the clusters' owner), with Debian's
# /usr/bin/python3 and python3-psycopg.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/citus/cluster.sh
source "$ROOT/test/citus/cluster.sh"
citus_require citus-fault
# shellcheck source=test/tooling/lib.sh
source "$ROOT/test/tooling/lib.sh"

PASS=0
FAIL=0
check() { # check NAME EXPECTED ACTUAL
    if [[ $2 == "$3" ]]; then PASS=$((PASS + 1)); echo "ok   - $1"; else FAIL=$((FAIL + 1)); echo "FAIL - $1 (expected '$2', got '$3')"; fi
}
q() { psql -X -q -At "$@"; }
# code [psql args]: the SQLSTATE of the first error of the statements, or "ok".
code() {
    local out
    out=$(psql -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "$@" 2>&1 >/dev/null) && { echo ok; return; }
    sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' <<<"$out" | head -n 1
}

PYTHON=/usr/bin/python3
if ! "$PYTHON" -c 'import psycopg' 2>/dev/null; then
    echo "citus-fault: $PYTHON cannot import psycopg (apt-get install python3-psycopg)"
    echo "0 passed, 1 failed"
    exit 1
fi
MODES=${BATON_CITUS_MOVE_MODES:-block_writes,force_logical}
extra=()
# A logical move needs logical decoding on the workers.
[[ $MODES == *force_logical* ]] && extra=("wal_level = logical")

p0=$(citus_free_ports "${BATON_CITUS_PORT:-56900}" 3) || { echo "citus-fault: no free port"; echo "0 passed, 1 failed"; exit 1; }
BASE=$(mktemp -d /tmp/pg_baton-citus-fault.XXXXXX)
chmod 0755 "$BASE"
cleanup() {
    citus_cluster_stop "$BASE/c" >/dev/null 2>&1
    rm -rf -- "$BASE"
}
trap cleanup EXIT
if ! citus_cluster_start "$BASE/c" "$p0" "restart_after_crash = on" "${extra[@]}" >"$BASE/start.log" 2>&1; then
    cat "$BASE/start.log"
    echo "citus-fault: the cluster did not start"
    echo "0 passed, 1 failed"
    exit 1
fi
q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.distribute()" >/dev/null

# A logical move decodes with pgoutput in a backend that has read Citus' metadata: Citus'
# relcache callbacks, pg_baton's and pgoutput's must fit in the ten slots of a backend
# (once pg_baton's three left none: "out of relcache_callback_list slots", FATAL).
if [[ $MODES == *force_logical* ]]; then
    for port in $CITUS_PORTS; do
        check "port $port: pgoutput starts in a backend that has read Citus' metadata" "ok" \
            "$(psql -X -q -At -v ON_ERROR_STOP=1 -p "$port" -c "SELECT count(*) FROM baton.deliveries" \
                -c "SELECT 1 FROM pg_catalog.pg_create_logical_replication_slot('baton_probe', 'pgoutput', true)" \
                -c "SELECT count(*) FROM pg_catalog.pg_logical_slot_peek_binary_changes('baton_probe', NULL, NULL, 'proto_version', '1', 'publication_names', 'baton_probe')" \
                >/dev/null 2>"$BASE/probe.err" && echo ok || grep -m 1 -o 'FATAL:.*\|ERROR:.*' "$BASE/probe.err")"
    done
fi

# --- the load, the move, the kill, the invariants (fault.py) ---------------------------
export PYTHONDONTWRITEBYTECODE=1 CITUS_BASE="$BASE/c" PG_BINDIR=$BINDIR
"$PYTHON" "$ROOT/test/citus/fault.py" --modes "$MODES" \
    --load-seconds "${BATON_CITUS_FAULT_LOAD_SECONDS:-4}" >"$BASE/driver.out" 2>&1
driver_counts fault.py "$BASE/driver.out"
if [[ ! -f $BASE/c/fault.json ]]; then
    echo "$PASS passed, $FAIL failed"
    exit 1
fi
field() { "$PYTHON" -c 'import json, sys; v = json.load(open(sys.argv[1]))[sys.argv[2]]; print(" ".join(map(str, v)) if isinstance(v, list) else v)' "$BASE/c/fault.json" "$1"; }
read -r -a MOVED <<<"$(field moved)"
read -r -a DEST <<<"$(field dest)"
OTHER=$(field other)
KILLED=$(field killed)

# --- the fence on each moved tenant, on its new node ------------------------------------
for i in "${!MOVED[@]}"; do
    t=${MOVED[$i]}
    q -c "SELECT baton.set_tenant_state('$t', 'fenced')" >/dev/null
    check "moved tenant $i fenced from the coordinator: a delegated enqueue is refused (DU002)" "DU002" \
        "$(code -c "SELECT baton.enqueue('$t', 'alpha', 'after-fence-1')")"
    check "... an enqueue inside BEGIN ... COMMIT (run on the coordinator)" "DU002" \
        "$(code -c "BEGIN" -c "SELECT baton.enqueue('$t', 'alpha', 'after-fence-2')" -c "COMMIT")"
    check "... a direct INSERT into baton.deliveries" "DU002" \
        "$(code -c "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('$t', 'alpha', 'after-fence-3')")"
    shard=$(q -c "SELECT 'baton.deliveries_' || pg_catalog.get_shard_id_for_distribution_column('baton.deliveries', '$t'::uuid)")
    check "... a direct INSERT into its shard on its new worker ($shard, port ${DEST[$i]})" "DU002" \
        "$(code -p "${DEST[$i]}" -c "SET citus.enable_manual_changes_to_shards = on" \
            -c "INSERT INTO $shard (tenant, target, dedup_key) VALUES ('$t', 'alpha', 'after-fence-4')")"
    check "... while another tenant writes on" "ok" "$(code -c "SELECT baton.enqueue('$OTHER', 'alpha', 'during-fence-$i')")"
    q -c "SELECT baton.set_tenant_state('$t', 'active')" >/dev/null
    check "... unfenced, it takes writes again" "ok" "$(code -c "SELECT baton.enqueue('$t', 'alpha', 'after-unfence')")"
done
check "nothing of the refused writes is stored" "0" \
    "$(q -c "SELECT count(*) FROM baton.deliveries WHERE dedup_key LIKE 'after-fence-%'")"

# --- the nodes, the killed worker's shards ----------------------------------------------
check "citus_check_cluster_node_health: every node reaches every node" "0" \
    "$(q -c "SELECT count(*) FROM pg_catalog.citus_check_cluster_node_health() WHERE NOT coalesce(result, false)")"
# The moves leave their old placements to Citus' deferred cleanup, which may drop them
# while amcheck reads them: cleaned up first.
q -c "CALL pg_catalog.citus_cleanup_orphaned_resources()" >/dev/null 2>&1
q -c "CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null
# The shards are hidden from pg_class on a worker unless override_table_visibility is off.
read -r tables indexes problems < <(PGPORT=$KILLED PGOPTIONS="-c citus.override_table_visibility=off" \
    tooling_amcheck postgres 2>/dev/null | head -n 1)
check "amcheck on the killed worker's tables and shards (port $KILLED: $tables tables, $indexes indexes)" "0" "$problems"
check "... its shards were checked" "t" "$( ((tables > 9)) && echo t || echo f)"
# A backend killed by a signal other than the suite's SIGKILL, or a PANIC: none, except
# in the killed worker's log between the kill and its restart, where backends left
# without their postmaster end (a PANIC there is counted, not failed: see
# docs/internals/citus.md).
crashes() { grep -c -E 'terminated by signal ([0-8]|[1-9][0-9])\b|PANIC:'; }
LOG=$(field log)
for i in 0 1 2; do
    if [[ $BASE/c/n$i/log == "$LOG" ]]; then
        n=$( (head -c "$(field log_kill)" "$LOG"; tail -c +"$(($(field log_start) + 1))" "$LOG") | crashes)
        echo "killed worker: $(head -c "$(field log_start)" "$LOG" | tail -c +"$(($(field log_kill) + 1))" | crashes) PANIC lines of its orphaned backends"
    else
        n=$(crashes <"$BASE/c/n$i/log")
    fi
    check "node $i: no backend died by another signal than the kill, no PANIC (server log)" "0" "$n"
done
[[ ${BATON_KEEP_LOGS:-0} == 1 ]] && cp -r "$BASE/c" /tmp/pg_baton-citus-fault-cluster 2>/dev/null
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
