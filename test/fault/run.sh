#!/usr/bin/env bash
# The crash and kill suite of pg_baton (docs/internals/faults.md).
#
#   bash test/fault/run.sh --short    2 rounds of every fault, 2-4 minutes
#                                     (what test/run-all.sh runs)
#   bash test/fault/run.sh --long     15 rounds of every fault, 10-20 minutes
#   bash test/fault/run.sh --rounds N N rounds
#   bash test/fault/run.sh --claims C rounds until C claims of keyed deliveries were
#                                     acknowledged (at least one round; no self-test)
#
# Under a concurrent load (producers enqueueing and submitting runs, workers claiming,
# finishing and retrying deliveries and driving workflow runs, a reaper, an operator
# cancelling deliveries, a redriver sending failed and cancelled ones back, two clients
# firing schedules, keyed producers and workers under the limits of their keys), each
# round injects, one after another: an immediate shutdown and restart; kill -9 of a
# backend inside baton.claim; a worker frozen (SIGSTOP) past its leases and resumed;
# kill -9 of a backend inside baton.finish; a busy tenant fenced; kill -9 of a backend
# inside baton.transition_stage; kill -9 or an immediate restart while
# baton.fire_schedules waits inside its enqueue. After each fault it checks the
# invariants (one test each) and at the end prints the figures (with the number of keyed
# claims checked) and "N passed, N failed". Exit status 1 on any failure.
#
# The faults restart and kill the server, so the suite starts its OWN throwaway cluster
# (scripts/cluster.sh, track_commit_timestamp = on) and always stops it on exit; the
# extension must be installed (make install) for $PG_CONFIG. Run as root (or as the
# user that owns the cluster), with Debian's /usr/bin/python3 and python3-psycopg.
#
# Environment: PG_CONFIG; BATON_FAULT_PORT (first port to try, default 55200);
# BATON_FAULT_LOAD_SECONDS (load between faults, default 3); BATON_FAULT_VERBOSE=1;
# BATON_FAULT_KINDS (comma-separated subset of the fault kinds, for debugging);
# BATON_FAULT_LOAD=kworker=4,dworker=1 (the number of client processes of these roles);
# BATON_FAULT_MINUTES (with --claims: no fault begins after so many minutes);
# BATON_FAULT_EXTRA_CONF=$'a=1\nb=2' (extra postgresql.conf lines; e.g. synchronous_commit =
# off shows the suite catching lost acknowledged writes);
# BATON_KEEP_LOGS=1 (keep the acknowledgement logs and the server log).
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR/../.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

CLUSTER=""
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    if [[ -n $CLUSTER ]] && ! cluster_stop "$CLUSTER" 2>/dev/null; then
        echo "fault: could not stop the cluster in $CLUSTER"
    fi
    exit "$rc"
}

# The script is one function and one last line, each read whole by bash before it runs:
# editing this file during a run cannot change the running suite.
main() {
    local rounds claims rc extra_conf port args

    rounds=2
    claims=0
    case ${1:---short} in
        --short) rounds=2 ;;
        --long) rounds=15 ;;
        --rounds)
            rounds=${2:?--rounds needs a number}
            [[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "fault: bad --rounds '$rounds'"; exit 2; }
            ;;
        --claims)
            rounds=1
            claims=${2:?--claims needs a number}
            [[ $claims =~ ^[1-9][0-9]*$ ]] || { echo "fault: bad --claims '$claims'"; exit 2; }
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "usage: $0 [--short | --long | --rounds N | --claims C]"
            exit 2
            ;;
    esac

    PYTHON=/usr/bin/python3
    export PYTHONDONTWRITEBYTECODE=1
    if ! "$PYTHON" -c 'import psycopg' 2>/dev/null; then
        echo "fault: $PYTHON cannot import psycopg (apt-get install python3-psycopg)"
        echo "0 passed, 1 failed"
        exit 1
    fi
    export PG_CONFIG=${PG_CONFIG:-pg_config}
    if [[ ! -f $("$PG_CONFIG" --sharedir)/extension/pg_baton.control ]]; then
        echo "fault: pg_baton is not installed for $PG_CONFIG (run make install)"
        echo "0 passed, 1 failed"
        exit 1
    fi

    # The suite's own cluster: the caller's (PGHOST/PGPORT, if any) is never touched.
    CLUSTER=$(mktemp -d /tmp/pg_baton-fault.XXXXXX)
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    extra_conf=()
    if [[ -n ${BATON_FAULT_EXTRA_CONF:-} ]]; then
        mapfile -t extra_conf <<<"$BATON_FAULT_EXTRA_CONF"
    fi
    port=$(cluster_free_port "${BATON_FAULT_PORT:-55200}")
    # Preloaded, as in production: the claim hints (shared memory, rebuilt empty after
    # every crash restart) are under the same faults as the rest.
    # Its reaper is a client of its own (below), not the background one.
    if ! cluster_start "$CLUSTER" "$port" "track_commit_timestamp = on" "restart_after_crash = on" \
        "shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''" "${extra_conf[@]}"; then
        echo "fault: could not start a cluster"
        echo "0 passed, 1 failed"
        exit 1
    fi
    psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION pg_baton'

    PG_BINDIR=$("$PG_CONFIG" --bindir)
    export PG_BINDIR CLUSTER_DIR
    args=(--rounds "$rounds" --claims "$claims" --load-seconds "${BATON_FAULT_LOAD_SECONDS:-3}")
    [[ ${BATON_FAULT_VERBOSE:-0} == 1 ]] && args+=(--verbose)
    [[ -n ${BATON_FAULT_KINDS:-} ]] && args+=(--kinds "$BATON_FAULT_KINDS")
    [[ -n ${BATON_FAULT_LOAD:-} ]] && args+=(--load "$BATON_FAULT_LOAD")
    # A --claims run is long: its logs are read again for each sabotage of the self-test,
    # which --short runs.
    ((claims > 0)) && args+=(--no-self-test --minutes "${BATON_FAULT_MINUTES:-0}")
    rc=0
    if [[ ${BATON_KEEP_LOGS:-0} == 1 ]]; then
        cp "$CLUSTER/log" /tmp/pg_baton-fault-server.log
        echo "fault: server log kept in /tmp/pg_baton-fault-server.log"
    fi
    # The driver's own count line is held back: amcheck's verdict joins it below.
    "$PYTHON" "$ROOT/test/fault/driver.py" "${args[@]}" >"$CLUSTER/driver.out" 2>&1 || rc=$?
    grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$CLUSTER/driver.out" || true
    if [[ ${BATON_KEEP_LOGS:-0} == 1 ]]; then
        cp "$CLUSTER/log" /tmp/pg_baton-fault-server.log
    fi
    local count passed=0 failed=1 verdict tables indexes problems
    count=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$CLUSTER/driver.out" | tail -n 1)
    [[ $count =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]] && passed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]}
    # After every crash, kill and freeze: amcheck on every baton table and index.
    # shellcheck source=test/tooling/lib.sh
    source "$ROOT/test/tooling/lib.sh"
    verdict=$(tooling_amcheck "${PGDATABASE:-postgres}" 2>&1)
    read -r tables indexes problems <<<"$(head -n 1 <<<"$verdict")"
    if [[ $problems == 0 ]]; then
        passed=$((passed + 1))
        echo "fault: amcheck after the faults: $tables tables (with TOAST), $indexes indexes, no corruption"
    else
        failed=$((failed + 1))
        echo "fault: FAIL amcheck after the faults: $verdict"
    fi
    echo "$passed passed, $failed failed"
    ((failed == 0)) || rc=1
    return "$rc"
}

main "$@"; exit "$?"
