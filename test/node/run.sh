#!/usr/bin/env bash
# The Node.js package (clients/node) against a live server:   bash test/node/run.sh
#
# Runs against the server in PGHOST/PGPORT/PGUSER (run-all.sh's cluster, pg_baton
# installed), in a database of its own. The tarball is built from the repository
# (clients/node/build.sh, npm pack) and installed into a scratch project outside the
# repository: `npm ci` of the package's committed package-lock.json fills a private npm
# cache (from the npm registry), then `npm install --offline` installs the tarball from
# the scratch project seeded with that lock file (pg and its dependencies pinned): the
# install itself reads nothing from the network. The test's programs (worker.mjs,
# producer.mjs, runner.mjs here) run from the scratch project and import 'pg-baton'.
# Checks:
#   - the tarball builds and installs offline, its version is the extension's, and the
#     package imported is the installed one;
#   - ids past 2^53 (the test starts the sequences of delivery and stage ids there): kept
#     exact, as strings, by the producer, the worker and the runner;
#   - Producer: enqueue (the id, as a string, the same id again), a different payload
#     rejects with DuplicateKey (DU009, detail, hint), enqueueBatch ({ id, inserted } in
#     order), a keyed enqueue; an unknown tenant is TenantNotWritable (DU002), a malformed
#     cause InvalidArgument (22023); a stale generation is LeaseLost (DU001), a server
#     error; a system error (EPIPE) is not one, and fromPg leaves it as it is; isUuid;
#   - the worker (main() with a handler per target): two targets, two handlers,
#     concurrency 3: every item finished exactly once by its target's handler
#     (generation 1, attempt 1, the handler saw its exact id, the log names each id
#     once), handlers ran at once; a throwing handler is retried and finished at attempt
#     2; SIGTERM when idle: exit 0;
#   - a handler resolving with a value JSON cannot hold (a BigInt): retried as a failed
#     attempt (logged with the TypeError), finished at attempt 2; on its last attempt
#     failed, the TypeError as last_error;
#   - a refused reap: a worker logged in as a role without EXECUTE on baton.reap, poll
#     only (BATON_LISTEN=0), logs reap_failed (42501) on each poll and still claims and
#     finishes an item enqueued after those polls;
#   - renewals: a handler 2.5x longer than the lease while the test reaps every 0.3 s:
#     finished at generation 1, renewed on the way;
#   - a lost connection (its backend terminated) while two handlers run: the worker
#     reconnects, and both items are renewed and finished at generation 1 while the test
#     reaps;
#   - SIGKILL inside a handler: the lease expires and is reaped (generation 2), a second
#     worker finishes the item at generation 3;
#   - SIGTERM inside a handler past the grace period: exit 0 and the lease released at
#     once (pending, generation 2, no lease), not after its 60 s lease;
#   - the workflow runner: two runs walked, a marked action run once, a failed stage
#     retried; a runner killed inside a marked action leaves the marker in doubt for the
#     next owner (InDoubt, the action not run again), which releases the run; a handler
#     whose Producer call is refused (DuplicateKey) fails its stage (the error saved) and
#     runNext resolves, the run released; a stage named `constructor` without a handler
#     (not Object's constructor) rejects runNext, the run released.
# Prints "N passed, N failed" last.
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
DB=baton_node_$$
NOREAP=baton_node_noreap_$$ # a worker role without EXECUTE on baton.reap
WORK=$(mktemp -d /tmp/pg_baton-node.XXXXXX)
APP=$WORK/app # the scratch project, outside the repository
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1: expected '$2', got '$3'"; fi; }
q() { psql -X -q -At -d "$DB" -v ON_ERROR_STOP=1 "$@"; }
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS $NOREAP" >/dev/null 2>&1
    rm -rf -- "$WORK"
}
trap cleanup EXIT
finish() {
    echo "$pass passed, $fail failed"
    ((fail == 0))
    exit
}

# --- the tarball ----------------------------------------------------------------------------
if bash "$ROOT/clients/node/build.sh" "$WORK/dist" >"$WORK/build.log" 2>&1; then
    ok "the tarball builds ($(basename "$(ls "$WORK"/dist/*.tgz)"))"
else
    not_ok "the tarball builds: $(tail -n 5 "$WORK/build.log")"
    finish
fi
TGZ=$(ls "$WORK"/dist/pg-baton-*.tgz)
export npm_config_cache=$WORK/npm-cache npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
mkdir -p "$WORK/deps" "$APP"
cp "$ROOT/clients/node/package.json" "$ROOT/clients/node/package-lock.json" "$WORK/deps/"
if ! (cd "$WORK/deps" && timeout 300 npm ci --loglevel=error) >"$WORK/ci.log" 2>&1; then
    not_ok "npm ci of clients/node/package-lock.json fills the npm cache (registry unreachable?): $(tail -n 3 "$WORK/ci.log")"
    finish
fi
echo '{ "name": "pg-baton-scratch", "private": true, "type": "module" }' >"$APP/package.json"
node -e '
const fs = require("fs");
const lock = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
lock.name = "pg-baton-scratch";
delete lock.version;
lock.packages[""] = { name: "pg-baton-scratch" };
fs.writeFileSync(process.argv[2], JSON.stringify(lock, null, 2));' \
    "$ROOT/clients/node/package-lock.json" "$APP/package-lock.json"
if (cd "$APP" && npm install --offline --loglevel=error "$TGZ") >"$WORK/install.log" 2>&1; then
    ok "npm install --offline installs the tarball into a scratch project"
else
    not_ok "npm install --offline: $(tail -n 5 "$WORK/install.log")"
    finish
fi
cp "$ROOT/test/node/worker.mjs" "$ROOT/test/node/producer.mjs" "$ROOT/test/node/runner.mjs" "$APP/"
cd "$APP" || exit 1
version=$(sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$ROOT/pg_baton.control")
check "the package's version is the extension's" "$version $version" \
    "$(node --input-type=module -e 'import { version } from "pg-baton"; import { createRequire } from "node:module";
console.log(version, createRequire(import.meta.url)("pg-baton/package.json").version)')"
check "the package imported is the installed one, not the repository's" "$APP/node_modules/pg-baton/src/index.mjs" \
    "$(node --input-type=module -e 'console.log(new URL(import.meta.resolve("pg-baton")).pathname)')"

# --- the database ---------------------------------------------------------------------------
T=00000000-0000-0000-0000-00000000e0de
psql -X -q -d postgres -c "CREATE DATABASE $DB" >/dev/null
q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" >/dev/null
# Ids past 2^53: a Number would round every other one.
q -c "SELECT setval('baton.deliveries_id_seq', 9007199254740993), setval('baton.entry_id_seq', 9007199254740993)" >/dev/null
export PGDATABASE=$DB

# --- Producer and the errors ----------------------------------------------------------------
out=$(node producer.mjs "$T" 2>&1)
check "Producer: enqueue (an exact string id), the same id again, DuplicateKey (DU009, detail, hint), enqueueBatch, a keyed enqueue; TenantNotWritable, InvalidArgument; LeaseLost; EPIPE no server error; isUuid" \
    "id string true|same true|dup true DU009 true true|batch 2 true true false|keyed true|fenced true DU002|invalid true 22023|lost LeaseLost true DU001 true|epipe false true|uuid true false false" \
    "$(paste -sd'|' <<<"$out")"

# --- the worker -------------------------------------------------------------------------------
start_worker() { # start_worker LOG [VAR=value...]: the test's worker; its pid in WPID
    local log=$1
    shift
    env BATON_TENANT="$T" BATON_TARGET=w BATON_POLL_SECONDS=0.5 BATON_SHUTDOWN_GRACE_SECONDS=2 "$@" \
        node worker.mjs >"$log" 2>&1 &
    WPID=$!
    pids+=("$WPID")
}
wait_log() { # wait_log LOG REGEX [SECONDS]
    local i
    for ((i = 0; i < ${3:-30} * 5; i++)); do grep -qE -- "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
    return 1
}
wait_sql() { # wait_sql SQL SECONDS: until SQL answers t
    local i
    for ((i = 0; i < $2 * 5; i++)); do [[ $(q -c "$1" 2>/dev/null) == t ]] && return 0; sleep 0.2; done
    return 1
}
stop_worker() { # stop_worker PID: SIGTERM, waits up to 10 s; the exit status in WRC
    local i
    kill -TERM "$1" 2>/dev/null
    for ((i = 0; i < 100; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$1" 2>/dev/null; then
        kill -9 "$1"
        WRC=timeout
    else
        WRC=0
        wait "$1" || WRC=$?
    fi
}

# Two targets, two handlers, concurrency 3.
q -c "SELECT count(*) FROM baton.enqueue_batch('$T', (SELECT jsonb_agg(jsonb_build_object('target', t, 'dedup_key', t || i,
        'payload', jsonb_build_object('sleep', 0.2))) FROM unnest(ARRAY['na', 'nb']) t, generate_series(1, 15) i))" \
    -c "SELECT baton.enqueue('$T', 'nb', 'once', '{\"fail_attempts\": 1}')" >/dev/null
start_worker "$WORK/two.log" BATON_TARGET=na,nb BATON_CONCURRENCY=3 BATON_BATCH=4
wait_sql "SELECT count(*) = 31 FROM baton.deliveries WHERE target IN ('na', 'nb') AND status = 'finished'" 40
check "two targets: all 31 items finished" "31" \
    "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('na', 'nb') AND status = 'finished'")"
check "two targets: each claimed once (generation 1, attempt 1), by its target's handler, which saw its exact id" "30" \
    "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('na', 'nb') AND dedup_key <> 'once'
               AND generation = 1 AND attempts = 1 AND result->>'handled_by' = target AND result->>'target' = target
               AND result->>'id' = id::text AND id > 9007199254740992")"
check "two targets: the log names each id finished once, with its target" \
    "$(q -c "SELECT string_agg(target || ' ' || id, ' ' ORDER BY id) FROM baton.deliveries WHERE target IN ('na', 'nb')")" \
    "$(grep -oE '^[0-9T:.Z-]+ worker\[node\] finished target=n[ab] id=[0-9]+ ' "$WORK/two.log" \
        | sed -E 's/.*target=(n[ab]) id=([0-9]+) $/\1 \2/' | sort -k2,2n | tr '\n' ' ' | sed 's/ $//')"
check "concurrency 3: handlers ran at once (at most 3)" "t" \
    "$(q -c "SELECT max((result->>'running')::int) BETWEEN 2 AND 3 FROM baton.deliveries WHERE target IN ('na', 'nb')")"
check "a throwing handler: retried, then finished at attempt 2" "finished 2 1" \
    "$(q -c "SELECT status || ' ' || attempts || ' ' || (last_error LIKE '%test failure on attempt 1%')::int FROM baton.deliveries WHERE dedup_key = 'once'")"
check "its log lines carry the time and the shape worker[node] EVENT key=value" "t" \
    "$(grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z worker\[node\] retried target=nb id=[0-9]+ generation=1 attempt=1 status=pending ' "$WORK/two.log" && echo t)"
stop_worker "$WPID"
check "SIGTERM when idle: exit 0, stopped" "0 1" "$WRC $(grep -c ' stopped$' "$WORK/two.log")"

# A handler's value JSON cannot hold: the attempt fails, as if the handler threw.
once=$(q -c "SELECT baton.enqueue('$T', 'w', 'big-once', '{\"bigint_attempts\": 1}')")
last=$(q -c "SELECT baton.enqueue('$T', 'w', 'big-last', '{\"bigint_attempts\": 9}', '{}', NULL, 0, 1)")
start_worker "$WORK/json.log"
wait_sql "SELECT count(*) = 2 FROM baton.deliveries WHERE id IN ($once, $last) AND status IN ('finished', 'failed')" 15
check "a result JSON cannot hold (a BigInt) on attempt 1: retried, the TypeError logged; finished at attempt 2" \
    "finished 2 1" "$(q -c "SELECT status || ' ' || attempts FROM baton.deliveries WHERE id = $once") $(grep -cE \
        " retried id=$once generation=1 attempt=1 status=pending error=\"the handler's result is not JSON: Do not know how to serialize a BigInt\"$" "$WORK/json.log")"
check "a result JSON cannot hold on the last attempt: failed, the TypeError as last_error" \
    "failed 1 TypeError: the handler's result is not JSON: Do not know how to serialize a BigInt" \
    "$(q -c "SELECT status || ' ' || attempts || ' ' || last_error FROM baton.deliveries WHERE id = $last")"
stop_worker "$WPID"

# A refused reap: logged, and the worker goes on claiming (poll only: no wake-up helps it).
psql -X -q -d postgres -c "CREATE ROLE $NOREAP LOGIN" >/dev/null
q -c "SELECT baton.grant_worker('$NOREAP')" -c "REVOKE EXECUTE ON FUNCTION baton.reap(integer) FROM $NOREAP" >/dev/null
start_worker "$WORK/reap.log" PGUSER="$NOREAP" BATON_LISTEN=0
wait_log "$WORK/reap.log" ' idle$' 10
wait_log "$WORK/reap.log" ' reap_failed sqlstate=42501 ' 5
sleep 1 # two more polls, each refused
id=$(q -c "SELECT baton.enqueue('$T', 'w', 'after-refused-reaps', '{}')")
wait_sql "SELECT status = 'finished' FROM baton.deliveries WHERE id = $id" 10
n=$(grep -c ' reap_failed sqlstate=42501 ' "$WORK/reap.log")
check "a refused reap (42501) is logged as reap_failed on each poll ($n >= 2), and an item enqueued after them is still claimed and finished" \
    "t finished" "$( ((n >= 2)) && echo t) $(q -c "SELECT status FROM baton.deliveries WHERE id = $id")"
stop_worker "$WPID"

# Renewals: a 5 s handler on a 2 s lease, while the test reaps.
start_worker "$WORK/renew.log" BATON_LEASE_SECONDS=2 BATON_REAP=0
wait_log "$WORK/renew.log" ' idle' 10
id=$(q -c "SELECT baton.enqueue('$T', 'w', 'slow', '{\"sleep\": 5}')")
t0=$SECONDS
while ((SECONDS - t0 < 15)) && [[ $(q -c "SELECT status FROM baton.deliveries WHERE id = $id") != finished ]]; do
    q -c "SELECT baton.reap()" >/dev/null
    sleep 0.3
done
check "renewals: a handler 2.5x longer than the lease finishes at generation 1 while the test reaps" "finished 1 1" \
    "$(q -c "SELECT status || ' ' || generation || ' ' || attempts FROM baton.deliveries WHERE id = $id")"
n=$(grep -cE "renewed id=$id generation=1$" "$WORK/renew.log")
check "renewals: every lease/3 on the way ($n, expected >= 5)" "t" "$( ((n >= 5)) && echo t)"
stop_worker "$WPID"

# A lost connection while two handlers run: the worker reconnects, its leases survive.
ids=$(q -c "SELECT baton.enqueue('$T', 'w', 'recon' || g, '{\"sleep\": 4}') FROM generate_series(1, 2) g" | paste -sd,)
start_worker "$WORK/recon.log" BATON_CONCURRENCY=2 BATON_LEASE_SECONDS=3 BATON_REAP=0
if wait_log "$WORK/recon.log" "claimed id=${ids#*,} " 20; then
    q -c "SELECT pg_terminate_backend($(grep -oE 'connected pid=[0-9]+' "$WORK/recon.log" | tail -n 1 | sed 's/.*=//'))" >/dev/null
    t0=$SECONDS
    while ((SECONDS - t0 < 15)) && [[ $(q -c "SELECT count(*) FROM baton.deliveries WHERE id IN ($ids) AND status = 'finished'") != 2 ]]; do
        q -c "SELECT baton.reap()" >/dev/null
        sleep 0.3
    done
    check "a lost connection: the worker reconnects, both running items renewed and finished at generation 1 while the test reaps" \
        "2 finished 1|finished 1" \
        "$(grep -c ' connected pid=' "$WORK/recon.log") $(q -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE id IN ($ids) ORDER BY id" | paste -sd'|')"
else
    not_ok "the worker claimed both items at once: $(tail -n 3 "$WORK/recon.log")"
fi
stop_worker "$WPID"

# SIGKILL inside a handler.
id=$(q -c "SELECT baton.enqueue('$T', 'w', 'long', '{\"sleep\": 30}')")
start_worker "$WORK/kill.log" BATON_LEASE_SECONDS=2 BATON_REAP=0
if wait_log "$WORK/kill.log" "claimed id=$id " 20; then
    kill -9 "$WPID"
    wait "$WPID" 2>/dev/null
    sleep 2.5
    q -c "SELECT baton.reap()" >/dev/null
    check "SIGKILL inside its handler: the lease expires and is reaped (the reap raises the generation)" "pending 2" \
        "$(q -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE id = $id")"
    q -c "UPDATE baton.deliveries SET payload = '{}' WHERE id = $id" >/dev/null
    start_worker "$WORK/kill2.log"
    if wait_log "$WORK/kill2.log" "finished id=$id generation=3 " 30; then
        ok "a second worker finishes the item at the next claim's generation, 3"
    else
        not_ok "a second worker finishes the item: $(tail -n 3 "$WORK/kill2.log")"
    fi
    stop_worker "$WPID"
else
    not_ok "the worker claimed the long item: $(tail -n 3 "$WORK/kill.log")"
fi

# SIGTERM inside a long handler: released at once.
id=$(q -c "SELECT baton.enqueue('$T', 'w', 'longer', '{\"sleep\": 120}')")
start_worker "$WORK/term.log" BATON_LEASE_SECONDS=60 BATON_SHUTDOWN_GRACE_SECONDS=1
if wait_log "$WORK/term.log" "claimed id=$id " 20; then
    t0=$SECONDS
    stop_worker "$WPID"
    check "SIGTERM inside a handler past the grace period: exit 0" "0" "$WRC"
    check "SIGTERM: the lease released at once (pending, generation 2, no lease, claimable now, attempt counted)" \
        "pending 2 true true 1 released: worker shutting down" \
        "$(q -c "SELECT status || ' ' || generation || ' ' || (lease_until IS NULL) || ' ' || (run_after <= now()) || ' ' || attempts || ' ' || last_error FROM baton.deliveries WHERE id = $id")"
    check "SIGTERM: released within 10 s ($((SECONDS - t0)) s), not after the 60 s lease; the log says so" "t" \
        "$( ((SECONDS - t0 < 10)) && grep -qE " abandoned id=$id generation=1$" "$WORK/term.log" \
            && grep -qE " released id=$id generation=1 status=pending$" "$WORK/term.log" && echo t)"
else
    not_ok "the worker claimed the longer item: $(tail -n 3 "$WORK/term.log")"
fi

# --- the workflow runner --------------------------------------------------------------------
q -c "SELECT baton.define_workflow('node_flow', '{\"start\": \"a\", \"stages\": {\"a\": {\"next\": [\"b\"]}, \"b\": {\"next\": [\"@finish\"], \"max_attempts\": 3}}}')" \
    -c "SELECT baton.submit('$T', 'node_flow', jsonb_build_object('n', g), 'r' || g) FROM generate_series(1, 2) g" >/dev/null
check "the runner walks both runs: stage a once each, its marker once each, stage b failed then retried" \
    "walked 2 calls 2 4 2" "$(node runner.mjs walk "$T" 2>&1)"
check "both runs completed: stages a and b in their history, b on its second attempt" "completed a:1 b:2|completed a:1 b:2" \
    "$(q -c "SELECT r.status || ' ' || (SELECT string_agg(h.stage || ':' || h.attempt, ' ') FROM baton.run_history('$T', r.id) h)
               FROM baton.runs r WHERE r.tenant = '$T' AND r.idempotency_key IN ('r1', 'r2') ORDER BY r.id" | paste -sd'|')"
q -c "SELECT baton.submit('$T', 'node_flow', '{}', 'r-killed')" >/dev/null
node runner.mjs doomed "$T" >/dev/null 2>&1
check "a runner dies inside a marked action (exit 9), the marker claimed" "9 in_progress" \
    "$? $(q -c "SELECT m.state FROM baton.runs r, baton.run_history('$T', r.id) h, baton.marker('$T', h.id, 0) m
                 WHERE r.tenant = '$T' AND r.idempotency_key = 'r-killed'")"
sleep 1.5
check "the next owner gets InDoubt (with a hint) and does not run the action again" "in doubt 0 true" \
    "$(node runner.mjs heir "$T" 2>&1)"
check "InDoubt releases the run (no owner, no lease)" "t" \
    "$(q -c "SELECT owner IS NULL AND lease_until IS NULL FROM baton.runs WHERE tenant = '$T' AND idempotency_key = 'r-killed'")"

# Errors of a handler that are not LeaseLost or InDoubt fail the stage; the run is released.
q -c "SELECT baton.define_workflow('node_dup', '{\"start\": \"a\", \"stages\": {\"a\": {\"next\": [\"@finish\"]}}}')" \
    -c "SELECT baton.define_workflow('node_proto', '{\"start\": \"constructor\", \"stages\": {\"constructor\": {\"next\": [\"@finish\"]}}}')" \
    -c "SELECT baton.enqueue('$T', 'nd', 'dup', '{\"n\": 1}')" \
    -c "SELECT baton.submit('$T', 'node_dup', '{}', 'dup1'), baton.submit('$T', 'node_proto', '{}', 'proto1')" >/dev/null
run_state() { # run_state KEY: the run's stages (status, error) and whether it is released
    q -c "SELECT (SELECT string_agg(s.stage || ' ' || s.status || ' ' || coalesce(split_part(s.error, ':', 1), '-'), ',' ORDER BY s.id)
                    FROM baton.stages s WHERE s.tenant = r.tenant AND s.run_id = r.id)
                 || ' released ' || (r.owner IS NULL AND r.lease_until IS NULL)
            FROM baton.runs r WHERE r.tenant = '$T' AND r.idempotency_key = '$1'"
}
check "a handler's refused Producer call (DuplicateKey) fails its stage: runNext resolves" "resolved true" \
    "$(node runner.mjs dup "$T" 2>&1)"
check "the stage failed with the DuplicateKey as its error, the run released" "a failed DuplicateKey released true" \
    "$(run_state dup1)"
check "a stage named constructor without a handler (not Object's constructor): runNext rejects" \
    "rejected BatonError no handler for stage constructor of workflow node_proto" "$(node runner.mjs proto "$T" 2>&1)"
check "the stage not started, the run released" "constructor pending - released true" "$(run_state proto1)"

finish
