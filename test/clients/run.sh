#!/usr/bin/env bash
# The example workers (examples/python/worker.py, examples/node/worker.mjs) against a
# live server:   bash test/clients/run.sh
#
# Runs against the server in PGHOST/PGPORT/PGUSER (run-all.sh's cluster, the extension
# installed), in a database of its own, created here and dropped at the end. The Node.js
# worker's dependencies come from the npm registry (`npm ci` in examples/node); when that
# fails, the Node.js checks fail (they are not skipped).
#
# For each worker, on its own targets:
#   batch      N items enqueued before the worker starts, claimed in batches: all
#              finished, each claimed once (generation 1, attempt 1), handled once (log)
#   renew      a handler more than twice as long as the lease, while the test reaps
#              every 0.3 s: finished at generation 1 (never reaped), renewed on the way
#   retry      a handler that throws on attempt 1: retried, then finished at attempt 2;
#              one that always throws: failed once max_attempts are spent
#   lease lost the test expires and reaps the worker's lease and claims the item itself:
#              the worker logs lease_lost and writes nothing (the test's finish holds);
#              the worker goes on working
#   wake-up    an idle worker with a 30 s fallback poll claims an item enqueued later
#              within 3 s; a poll-only worker (BATON_LISTEN=0) does not, in that window
#   reconnect  the worker's backend is terminated; it reconnects and works a new item
#   shutdown   SIGTERM while a handler runs past the grace period: the worker exits 0
#              and the item is pending again at once (generation bumped, no lease), not
#              after its 60 s lease; SIGTERM while a short handler runs within the grace
#              period: that item is finished
# and both workers at once on one target: every item finished exactly once.
#
# For each worker in fair mode (BATON_FAIR=1: baton.claim_fair, no BATON_TENANT), logged
# in as a role of its own, a member of the pool role that tenants FA, FB and FC bind the
# fair targets to (FD binds them to another role):
#   refused    BATON_TENANT with BATON_FAIR=1: the worker exits non-zero at once
#   drain      40 items of FA, 5 of FB, 5 of FC, 3 of FD before the worker starts
#              (batches of 4): every item of FA, FB and FC finished exactly once
#              (generation 1, attempt 1; the log names each (tenant, id) once), in turns:
#              the first 3 of three tenants, FB's and FC's last within the first 15 (not
#              after FA's backlog); FD's items untouched; the worker polls (listen=0)
#   pause      FB's binding paused: new items of FA and FC finished, FB's left pending
#              over two polls; after baton.resume, FB's finished
#   renew      a 5 s handler of FB on a 3 s lease while the test reaps every 0.3 s:
#              finished at generation 1, renewed with FB as tenant; an item of FC that
#              throws once: retried (tenant FC), finished at attempt 2
#   shutdown   SIGTERM while the worker holds 6 leases of 3 tenants (one handler running
#              past the grace period): exit 0, each lease released with its own tenant
#              (pending at once, generation 2, no lease), claimable by each tenant again
#
# Prints "N passed, N failed" last; exits non-zero when anything failed.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
PY=/usr/bin/python3
NODE=${NODE:-node}
DB=baton_clients_$$
T=5eed0000-0000-4000-8000-00000000c11e
# Fair mode's tenants (in this order of id: a fair claim's round goes by id) and roles.
FA=5eed0000-0000-4000-8000-00000000fa01
FB=5eed0000-0000-4000-8000-00000000fa02
FC=5eed0000-0000-4000-8000-00000000fa03
FD=5eed0000-0000-4000-8000-00000000fa04
POOL=baton_clients_pool_$$      # FA, FB and FC bind the fair targets to it
FAIR_USER=baton_clients_fair_$$ # the fair workers log in as this member of POOL
OTHER=baton_clients_other_$$    # FD binds them to it: not served
WORKDIR=$(mktemp -d /tmp/pg_baton-clients.XXXXXX)
PASS=0
FAIL=0
PIDS=()

pass() { PASS=$((PASS + 1)); echo "ok   - $*"; }
# A failure prints the tail of the current scenario's worker log (CURLOG).
fail() {
    FAIL=$((FAIL + 1))
    echo "FAIL - $*"
    if [[ -n ${CURLOG:-} && -f $CURLOG ]]; then show_log "$CURLOG"; fi
}
# check NAME COMMAND...: passes when the command succeeds.
check() {
    local name=$1
    shift
    if "$@"; then pass "$name"; else fail "$name"; fi
}

q() { psql -X -At -q -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null
    dropdb --if-exists -f "$DB" 2>/dev/null || true
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS $FAIR_USER, $POOL, $OTHER" 2>/dev/null || true
    rm -rf -- "$WORKDIR"
}
trap cleanup EXIT

# wait_sql SQL SECONDS: until SQL answers t.
wait_sql() {
    local deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        [[ $(q "$1" 2>/dev/null) == t ]] && return 0
        sleep 0.1
    done
    return 1
}

# wait_log FILE REGEX SECONDS [COUNT]: until FILE has COUNT (default 1) lines matching.
wait_log() {
    local deadline=$((SECONDS + $3)) want=${4:-1}
    while ((SECONDS < deadline)); do
        (($(grep -cE -- "$2" "$1" 2>/dev/null || true) >= want)) && return 0
        sleep 0.1
    done
    return 1
}

# start_worker LANG TARGET LOG [VAR=VALUE...]: starts a worker; its pid in WPID.
start_worker() {
    local lang=$1 target=$2 log=$3
    shift 3
    CURLOG=$log
    local cmd
    case $lang in
        python) cmd=("$PY" examples/python/worker.py) ;;
        node) cmd=("$NODE" examples/node/worker.mjs) ;;
    esac
    env PGDATABASE="$DB" BATON_TENANT="$T" BATON_TARGET="$target" BATON_POLL_SECONDS=1 \
        BATON_LEASE_SECONDS=10 BATON_SHUTDOWN_GRACE_SECONDS=2 "$@" "${cmd[@]}" >"$log" 2>&1 &
    WPID=$!
    PIDS+=("$WPID")
}

# stop_worker PID: SIGTERM, then waits (10 s at most); the exit status in WRC.
stop_worker() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        WRC=timeout
    else
        WRC=0
        wait "$pid" || WRC=$?
    fi
}

# wait_exit PID SECONDS: until PID exits; its status in WRC (running: it did not, and
# was killed).
wait_exit() {
    local pid=$1 deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)) && kill -0 "$pid" 2>/dev/null; do
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        WRC=running
    else
        WRC=0
        wait "$pid" || WRC=$?
    fi
}

# enqueue TARGET KEY PAYLOAD [extra named arguments]: prints the id.
enqueue() {
    q "SELECT baton.enqueue('$T', '$1', '$2', '$3'::jsonb${4:+, $4})"
}

show_log() {
    echo "----- $1 -----"
    tail -n 40 "$1"
}

# --- the scenarios, for one worker -------------------------------------------------------
scenarios() {
    local L=$1 log id id2 ids n t0 elapsed pid

    # batch: claimed in batches of 5, each finished once.
    log=$WORKDIR/$L-batch.log
    q "SELECT count(*) FROM baton.enqueue_batch('$T', (SELECT jsonb_agg(jsonb_build_object(
           'target', '$L-batch', 'dedup_key', 'k' || i)) FROM generate_series(1, 40) i))" >/dev/null
    start_worker "$L" "$L-batch" "$log" BATON_BATCH=5
    wait_sql "SELECT count(*) = 40 FROM baton.deliveries WHERE target = '$L-batch' AND status = 'finished'" 30
    check "$L batch: all 40 items finished" \
        test "$(q "SELECT count(*) FROM baton.deliveries WHERE target = '$L-batch' AND status = 'finished'")" = 40
    check "$L batch: each claimed once (generation 1, attempts 1)" \
        test "$(q "SELECT count(*) FROM baton.deliveries WHERE target = '$L-batch' AND generation = 1 AND attempts = 1")" = 40
    ids=$(q "SELECT string_agg(id::text, ' ' ORDER BY id) FROM baton.deliveries WHERE target = '$L-batch'")
    check "$L batch: each handled and finished once (the log names every id once)" \
        test "$(grep -oE '^([0-9T:.Z-]+ )?worker\[[a-z]+\] finished id=[0-9]+' "$log" | sed 's/.*id=//' | sort -n | tr '\n' ' ' | sed 's/ $//')" = "$ids"
    check "$L batch: the results are the handler's" \
        test "$(q "SELECT count(*) FROM baton.deliveries WHERE target = '$L-batch' AND result->>'handled_by' = '$L'")" = 40
    stop_worker "$WPID"
    check "$L batch: SIGTERM when idle: exit 0 ($WRC), stopped" \
        bash -c "[[ $WRC == 0 ]] && grep -q ' stopped' '$log'"

    # renew: a 7 s handler on a 3 s lease while the test reaps.
    log=$WORKDIR/$L-renew.log
    start_worker "$L" "$L-renew" "$log" BATON_LEASE_SECONDS=3 BATON_REAP=0
    wait_log "$log" ' idle' 10
    id=$(enqueue "$L-renew" slow '{"sleep": 7}')
    t0=$SECONDS
    while ((SECONDS - t0 < 15)) \
        && [[ $(q "SELECT status FROM baton.delivery('$T', $id)") != finished ]]; do
        q "SELECT baton.reap()" >/dev/null
        sleep 0.3
    done
    check "$L renew: a handler 2x longer than the lease finishes at generation 1" \
        test "$(q "SELECT status || ' ' || generation || ' ' || attempts FROM baton.delivery('$T', $id)")" = "finished 1 1"
    n=$(grep -cE "renewed id=$id " "$log" || true)
    check "$L renew: renewed at lease/3 on the way ($n renewals, expected >= 5)" test "$n" -ge 5
    stop_worker "$WPID"

    # retry: fails once, then succeeds; always fails with max_attempts 2.
    log=$WORKDIR/$L-retry.log
    start_worker "$L" "$L-retry" "$log"
    id=$(enqueue "$L-retry" once '{"fail_attempts": 1}')
    id2=$(enqueue "$L-retry" always '{"fail_attempts": 99}' 'max_attempts => 2')
    wait_sql "SELECT count(*) = 2 FROM baton.deliveries WHERE target = '$L-retry' AND status IN ('finished', 'failed')" 15
    check "$L retry: a throwing handler is retried, then finished at attempt 2" \
        test "$(q "SELECT status || ' ' || attempts || ' ' || (last_error LIKE '%demo failure on attempt 1%') FROM baton.delivery('$T', $id)")" = "finished 2 true"
    check "$L retry: the worker logged the retry" grep -qE "retried id=$id .*status=pending" "$log"
    check "$L retry: always throwing: failed once max_attempts (2) are spent" \
        test "$(q "SELECT status || ' ' || attempts FROM baton.delivery('$T', $id2)")" = "failed 2"
    stop_worker "$WPID"

    # lease lost: the test takes the item from under the worker.
    log=$WORKDIR/$L-lost.log
    start_worker "$L" "$L-lost" "$log" BATON_LEASE_SECONDS=3
    id=$(enqueue "$L-lost" stolen '{"sleep": 8}')
    wait_log "$log" "claimed id=$id " 10
    local gen
    gen=$(q "UPDATE baton.deliveries SET lease_until = now() - interval '1 second'
              WHERE tenant = '$T' AND id = $id AND status = 'claimed';
             SELECT baton.reap() >= 1;
             SELECT generation FROM baton.claim('$T', '$L-lost', interval '60 seconds')" | tail -n 1)
    check "$L lease lost: the test holds the item now (generation 3)" test "$gen" = 3
    wait_log "$log" "lease_lost id=$id " 10
    check "$L lease lost: the worker saw DU001 and dropped the item" grep -qE "lease_lost id=$id " "$log"
    sleep 0.5
    check "$L lease lost: the worker wrote nothing (still claimed by the test at generation 3)" \
        test "$(q "SELECT status || ' ' || generation FROM baton.delivery('$T', $id)")" = "claimed 3"
    check "$L lease lost: the new holder's finish holds" \
        test "$(q "SELECT baton.finish('$T', $id, 3)")" = finished
    id2=$(enqueue "$L-lost" after '{}')
    check "$L lease lost: the worker goes on working" \
        wait_sql "SELECT status = 'finished' FROM baton.delivery('$T', $id2)" 10
    stop_worker "$WPID"

    # wake-up: a listening worker with a 30 s poll against a poll-only one.
    log=$WORKDIR/$L-wake.log
    start_worker "$L" "$L-wake" "$log" BATON_POLL_SECONDS=30 BATON_REAP=0
    local wpid=$WPID
    start_worker "$L" "$L-nowake" "$WORKDIR/$L-nowake.log" BATON_POLL_SECONDS=30 BATON_LISTEN=0
    local npid=$WPID
    wait_log "$log" ' idle' 10
    wait_log "$WORKDIR/$L-nowake.log" ' idle' 10
    sleep 0.5
    id=$(enqueue "$L-wake" ping '{}')
    id2=$(enqueue "$L-nowake" ping '{}')
    t0=$(date +%s.%N)
    wait_sql "SELECT status = 'finished' FROM baton.delivery('$T', $id)" 3
    elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    check "$L wake-up: an idle listening worker finished an item ${elapsed}s after its enqueue (poll is 30 s)" \
        test "$(q "SELECT status FROM baton.delivery('$T', $id)")" = finished
    sleep 1
    check "$L wake-up: the poll-only worker had not claimed its item after the same wait" \
        test "$(q "SELECT status FROM baton.delivery('$T', $id2)")" = pending
    stop_worker "$npid"
    check "$L wake-up: a worker whose claim never came exits 0 on SIGTERM" test "$WRC" = 0

    # reconnect: terminate the listening worker's backend.
    pid=$(grep -oE 'connected pid=[0-9]+' "$log" | tail -n 1 | sed 's/.*=//')
    q "SELECT pg_terminate_backend($pid)" >/dev/null
    wait_log "$log" 'connected pid=' 10 2
    check "$L reconnect: the worker reconnected after its backend was terminated" \
        test "$(grep -c 'connected pid=' "$log")" -ge 2
    id=$(enqueue "$L-wake" after-reconnect '{}')
    check "$L reconnect: and works (and wakes) again" \
        wait_sql "SELECT status = 'finished' FROM baton.delivery('$T', $id)" 3
    stop_worker "$wpid"

    # shutdown: SIGTERM mid-item, past the grace period, then within it.
    log=$WORKDIR/$L-stop.log
    start_worker "$L" "$L-stop" "$log" BATON_LEASE_SECONDS=60 BATON_SHUTDOWN_GRACE_SECONDS=1
    id=$(enqueue "$L-stop" long '{"sleep": 120}')
    wait_log "$log" "claimed id=$id " 10
    t0=$SECONDS
    stop_worker "$WPID"
    check "$L shutdown: SIGTERM mid-item: exit 0 within 10 s" test "$WRC" = 0
    check "$L shutdown: the lease was released: pending again at once (generation 2, no lease, attempt counted)" \
        test "$(q "SELECT status || ' ' || generation || ' ' || attempts || ' ' || (lease_until IS NULL) || ' ' || (run_after <= now()) || ' ' || last_error FROM baton.delivery('$T', $id)")" = \
        "pending 2 1 true true released: worker shutting down"
    check "$L shutdown: released after $((SECONDS - t0)) s, before the 60 s lease" test $((SECONDS - t0)) -lt 30
    check "$L shutdown: another worker can claim it now" \
        test "$(q "SELECT count(*) FROM baton.claim('$T', '$L-stop', interval '5 seconds')")" = 1
    log=$WORKDIR/$L-stop2.log
    start_worker "$L" "$L-stop2" "$log" BATON_SHUTDOWN_GRACE_SECONDS=5
    id=$(enqueue "$L-stop2" short '{"sleep": 1}')
    wait_log "$log" "claimed id=$id " 10
    stop_worker "$WPID"
    check "$L shutdown: a handler that ends within the grace period is finished, not released" \
        test "$(q "SELECT status || ' ' || generation FROM baton.delivery('$T', $id)")" = "finished 1"
}

# --- fair mode, for one worker ---------------------------------------------------------------
# start_fair LANG TARGET LOG [VAR=VALUE...]: a worker with BATON_FAIR=1, no BATON_TENANT,
# logged in as FAIR_USER; its pid in WPID.
start_fair() {
    local lang=$1 target=$2 log=$3
    shift 3
    start_worker "$lang" "$target" "$log" PGUSER="$FAIR_USER" BATON_TENANT= BATON_FAIR=1 "$@"
}

# fenqueue TENANT TARGET N PREFIX [PAYLOAD]: N items of TENANT, keys PREFIX1..PREFIXN.
fenqueue() {
    local payload=${5:-}
    [[ -n $payload ]] || payload='{}'
    q "SELECT count(*) FROM baton.enqueue_batch('$1', (SELECT jsonb_agg(jsonb_build_object(
           'target', '$2', 'dedup_key', '$4' || i, 'payload', '$payload'::jsonb))
           FROM generate_series(1, $3) i))" >/dev/null
}

# fcount TARGET TENANT PREFIX CONDITION: how many items of the tenant with keys
# PREFIX<n> meet CONDITION.
fcount() {
    q "SELECT count(*) FROM baton.deliveries WHERE target = '$1' AND tenant = '$2'
         AND dedup_key ~ '^$3[0-9]+\$' AND $4"
}

# fair_tenants LOG EVENT: the tenant of each EVENT line of LOG, in order, one a line.
fair_tenants() {
    grep -oE "^([0-9T:.Z-]+ )?worker\[[a-z]+\] $2 tenant=[0-9a-f-]+ " "$1" | sed -E 's/.*tenant=([0-9a-f-]+) $/\1/'
}

fair_scenarios() {
    local L=$1 tgt=$1-fair log id id2 n t0 first last_b last_c order db_ids log_ids

    # refused: BATON_TENANT (start_worker sets it) with BATON_FAIR=1.
    log=$WORKDIR/$L-fair-refused.log
    start_worker "$L" "$tgt" "$log" BATON_FAIR=1
    wait_exit "$WPID" 10
    check "$L fair refused: BATON_TENANT with BATON_FAIR=1: exits non-zero at once ($WRC), says why" \
        bash -c "[[ $WRC != 0 && $WRC != running ]] && grep -q 'BATON_TENANT must not be set with BATON_FAIR=1' '$log'"

    # drain: a deep backlog in FA, a few items in FB and FC, some in FD (another role's).
    fenqueue "$FA" "$tgt" 40 d
    fenqueue "$FB" "$tgt" 5 d
    fenqueue "$FC" "$tgt" 5 d
    fenqueue "$FD" "$tgt" 3 d
    log=$WORKDIR/$L-fair.log
    start_fair "$L" "$tgt" "$log" BATON_BATCH=4 BATON_LEASE_SECONDS=3 BATON_REAP=0
    local fpid=$WPID
    wait_sql "SELECT count(*) = 50 FROM baton.deliveries WHERE target = '$tgt' AND status = 'finished'" 30
    check "$L fair drain: the 50 items of FA, FB and FC finished, each claimed once (generation 1, attempt 1)" \
        test "$(q "SELECT count(*) FROM baton.deliveries WHERE target = '$tgt' AND tenant IN ('$FA', '$FB', '$FC')
                     AND status = 'finished' AND generation = 1 AND attempts = 1")" = 50
    db_ids=$(q "SELECT string_agg(tenant || ' ' || id, ' ' ORDER BY tenant, id) FROM baton.deliveries
                 WHERE target = '$tgt' AND tenant IN ('$FA', '$FB', '$FC')")
    log_ids=$(grep -oE '^([0-9T:.Z-]+ )?worker\[[a-z]+\] finished tenant=[0-9a-f-]+ id=[0-9]+ ' "$log" \
        | sed -E 's/.*tenant=([0-9a-f-]+) id=([0-9]+) $/\1 \2/' | sort -k1,1 -k2,2n | tr '\n' ' ' | sed 's/ $//')
    check "$L fair drain: the log names each (tenant, id) finished once" test "$log_ids" = "$db_ids"
    check "$L fair drain: the results are the handler's" \
        test "$(q "SELECT count(*) FROM baton.deliveries WHERE target = '$tgt' AND result->>'handled_by' = '$L'")" = 50
    order=$(fair_tenants "$log" finished)
    first=$(head -n 3 <<<"$order" | sort -u | wc -l)
    last_b=$(grep -nx "$FB" <<<"$order" | tail -n 1 | cut -d: -f1)
    last_c=$(grep -nx "$FC" <<<"$order" | tail -n 1 | cut -d: -f1)
    check "$L fair drain: turns: the first 3 finished are of $first tenants (expected 3)" test "$first" = 3
    check "$L fair drain: turns: FB's and FC's last items finished at ${last_b:-never} and ${last_c:-never} of 50, not after FA's backlog of 40 (expected <= 15)" \
        test "${last_b:-99}" -le 15 -a "${last_c:-99}" -le 15
    check "$L fair drain: FD binds the target to another role: its 3 items untouched (pending, generation 0)" \
        test "$(fcount "$tgt" "$FD" d "status = 'pending' AND generation = 0")" = 3
    check "$L fair drain: the worker logs as fair, polls (listen=0), names the tenant in every item line" \
        bash -c "grep -q ' starting fair=1 target=$tgt ' '$log' && grep -q ' connected pid=[0-9]* listen=0' '$log' \
            && ! grep -E ' (claimed|finished) ' '$log' | grep -qv ' tenant='"

    # pause: FB's binding paused, FA and FC go on; resume gives FB's items back.
    check "$L fair pause: baton.pause(FB, target)" test "$(q "SELECT baton.pause('$FB', '$tgt')")" = t
    fenqueue "$FA" "$tgt" 3 p
    fenqueue "$FB" "$tgt" 3 p
    fenqueue "$FC" "$tgt" 3 p
    wait_sql "SELECT count(*) = 6 FROM baton.deliveries WHERE target = '$tgt' AND tenant IN ('$FA', '$FC')
                AND dedup_key LIKE 'p%' AND status = 'finished'" 10
    check "$L fair pause: the new items of FA and FC finished" \
        test "$(fcount "$tgt" "$FA" p "status = 'finished'")$(fcount "$tgt" "$FC" p "status = 'finished'")" = 33
    sleep 2.5 # more than two polls
    check "$L fair pause: FB's items not taken over two more polls (pending, generation 0)" \
        test "$(fcount "$tgt" "$FB" p "status = 'pending' AND generation = 0")" = 3
    check "$L fair pause: baton.resume(FB, target)" test "$(q "SELECT baton.resume('$FB', '$tgt')")" = t
    wait_sql "SELECT count(*) = 3 FROM baton.deliveries WHERE target = '$tgt' AND tenant = '$FB'
                AND dedup_key LIKE 'p%' AND status = 'finished'" 10
    check "$L fair pause: after resume, FB's items finished (generation 1)" \
        test "$(fcount "$tgt" "$FB" p "status = 'finished' AND generation = 1")" = 3

    # renew and retry: every lease call names the item's tenant.
    id=$(q "SELECT baton.enqueue('$FB', '$tgt', 'slow', '{\"sleep\": 5}'::jsonb)")
    id2=$(q "SELECT baton.enqueue('$FC', '$tgt', 'once', '{\"fail_attempts\": 1}'::jsonb)")
    t0=$SECONDS
    while ((SECONDS - t0 < 20)) && [[ $(q "SELECT count(*) FROM baton.deliveries
            WHERE target = '$tgt' AND dedup_key IN ('slow', 'once') AND status = 'finished'") != 2 ]]; do
        q "SELECT baton.reap()" >/dev/null
        sleep 0.3
    done
    check "$L fair renew: FB's 5 s handler on a 3 s lease finished at generation 1 (never reaped)" \
        test "$(q "SELECT status || ' ' || generation || ' ' || attempts FROM baton.delivery('$FB', $id)")" = "finished 1 1"
    n=$(grep -cE "renewed tenant=$FB id=$id " "$log" || true)
    check "$L fair renew: renewed as FB's ($n renewals, expected >= 3)" test "$n" -ge 3
    check "$L fair retry: FC's throwing item retried as FC's, then finished at attempt 2" \
        bash -c "[[ '$(q "SELECT status || ' ' || attempts FROM baton.delivery('$FC', $id2)")' == 'finished 2' ]] \
            && grep -qE 'retried tenant=$FC id=$id2 .*status=pending' '$log'"
    stop_worker "$fpid"
    check "$L fair: SIGTERM when idle: exit 0 ($WRC), stopped" bash -c "[[ $WRC == 0 ]] && grep -q ' stopped' '$log'"

    # shutdown: 6 leases of three tenants held, the first handler past the grace period.
    tgt=$L-fairstop
    fenqueue "$FA" "$tgt" 2 s '{"sleep": 120}'
    fenqueue "$FB" "$tgt" 2 s '{"sleep": 120}'
    fenqueue "$FC" "$tgt" 2 s '{"sleep": 120}'
    log=$WORKDIR/$L-fairstop.log
    start_fair "$L" "$tgt" "$log" BATON_BATCH=6 BATON_LEASE_SECONDS=60 BATON_SHUTDOWN_GRACE_SECONDS=1
    wait_log "$log" ' claimed tenant=' 10
    check "$L fair shutdown: the worker holds 6 leases of 3 tenants" \
        test "$(q "SELECT count(*) || ' ' || count(DISTINCT tenant) FROM baton.deliveries
                     WHERE target = '$tgt' AND status = 'claimed'")" = "6 3"
    t0=$SECONDS
    stop_worker "$WPID"
    check "$L fair shutdown: SIGTERM mid-item: exit 0 ($WRC)" test "$WRC" = 0
    check "$L fair shutdown: every lease released: pending at once (generation 2, no lease, attempt counted)" \
        test "$(q "SELECT count(*) FROM baton.deliveries WHERE target = '$tgt' AND status = 'pending'
                     AND generation = 2 AND attempts = 1 AND lease_until IS NULL AND run_after <= now()
                     AND last_error = 'released: worker shutting down'")" = 6
    check "$L fair shutdown: the log released each with its own tenant (2 of each of 3 tenants)" \
        test "$(grep -E ' released tenant=[0-9a-f-]+ id=[0-9]+ generation=1 status=pending$' "$log" \
                | sed -E 's/.*tenant=([0-9a-f-]+) .*/\1/' | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ')" = "2 2 2 "
    check "$L fair shutdown: released after $((SECONDS - t0)) s, before the 60 s lease; each tenant can claim its 2 now" \
        test "$(q "SELECT (SELECT count(*) FROM baton.claim('$FA', '$tgt', interval '5 seconds', 10)) || ' '
                       || (SELECT count(*) FROM baton.claim('$FB', '$tgt', interval '5 seconds', 10)) || ' '
                       || (SELECT count(*) FROM baton.claim('$FC', '$tgt', interval '5 seconds', 10))")" = "2 2 2"
}

# --- setup ----------------------------------------------------------------------------------
if ! createdb "$DB" || ! q "CREATE EXTENSION pg_baton; SELECT baton.create_tenant('$T')" >/dev/null; then
    fail "setup: could not create database $DB with pg_baton"
    echo "$PASS passed, $FAIL failed"
    exit 1
fi
# Fair mode: four tenants, the pool role and its login, another role; the bindings.
if ! psql -X -q -v ON_ERROR_STOP=1 -d "$DB" >/dev/null <<SQL; then
CREATE ROLE $POOL NOLOGIN;
CREATE ROLE $OTHER NOLOGIN;
CREATE ROLE $FAIR_USER LOGIN IN ROLE $POOL;
SELECT baton.grant_worker('$FAIR_USER');
SELECT baton.create_tenant(t::uuid) FROM unnest(ARRAY['$FA', '$FB', '$FC', '$FD']) t;
SELECT baton.bind_target(t::uuid, l || s, '$POOL')
  FROM unnest(ARRAY['$FA', '$FB', '$FC']) t, unnest(ARRAY['python', 'node']) l, unnest(ARRAY['-fair', '-fairstop']) s;
SELECT baton.bind_target('$FD', l || s, '$OTHER')
  FROM unnest(ARRAY['python', 'node']) l, unnest(ARRAY['-fair', '-fairstop']) s;
SQL
    fail "setup: could not create the fair mode's tenants, roles and bindings"
    echo "$PASS passed, $FAIL failed"
    exit 1
fi
echo "clients: database $DB, python $($PY -c 'import psycopg; print("psycopg", psycopg.__version__)'), node $($NODE --version 2>/dev/null || echo missing)"

LANGS=${BATON_CLIENTS:-python node} # a subset while working on one worker

if [[ " $LANGS " == *" python "* ]]; then
    echo "# Python worker (examples/python/worker.py)"
    scenarios python
    fair_scenarios python
fi

node_ok=1
[[ " $LANGS " == *" node "* ]] || node_ok=0
if ((node_ok)); then echo "# Node.js worker (examples/node/worker.mjs)"; fi
if ((!node_ok)); then
    :
elif ! command -v "$NODE" >/dev/null; then
    fail "node: Node.js is not installed (need node >= 18 for examples/node)"
    node_ok=0
elif ! (cd examples/node && timeout 300 npm ci --no-audit --no-fund --loglevel=error); then
    fail "node: 'npm ci' in examples/node failed (npm registry unreachable?): the Node.js worker is NOT tested"
    node_ok=0
fi
if ((node_ok)); then
    scenarios node
    fair_scenarios node
fi
if ((node_ok)) && [[ " $LANGS " == *" python "* ]]; then

    # Both at once on one target: each item finished exactly once.
    q "SELECT count(*) FROM baton.enqueue_batch('$T', (SELECT jsonb_agg(jsonb_build_object(
           'target', 'mixed', 'dedup_key', 'm' || i, 'payload', '{\"sleep\": 0.01}'::jsonb))
           FROM generate_series(1, 100) i))" >/dev/null
    start_worker python mixed "$WORKDIR/mixed-py.log" BATON_BATCH=3
    p1=$WPID
    start_worker node mixed "$WORKDIR/mixed-node.log" BATON_BATCH=3
    p2=$WPID
    wait_sql "SELECT count(*) = 100 FROM baton.deliveries WHERE target = 'mixed' AND status = 'finished'" 60
    stop_worker "$p1"
    stop_worker "$p2"
    check "both workers: 100 items finished, each claimed once" \
        test "$(q "SELECT count(*) FROM baton.deliveries WHERE target = 'mixed' AND status = 'finished' AND generation = 1")" = 100
    npy=$(grep -c ' finished id=' "$WORKDIR/mixed-py.log" || true)
    nnode=$(grep -c ' finished id=' "$WORKDIR/mixed-node.log" || true)
    check "both workers: no item finished twice across the two logs (python $npy, node $nnode)" \
        test "$(cat "$WORKDIR"/mixed-*.log | grep -oE ' finished id=[0-9]+' | sort -u | wc -l)" = 100 -a $((npy + nnode)) = 100
    check "both workers: both took part" test "$npy" -gt 0 -a "$nnode" -gt 0
fi

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
