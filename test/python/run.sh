#!/usr/bin/env bash
# The Python package (clients/python) against a live server:   bash test/python/run.sh
#
# Runs against the server in PGHOST/PGPORT/PGUSER (run-all.sh's cluster, pg_baton
# installed), in a database of its own. The wheel is built offline from the repository
# (clients/python/build.sh) and installed with pip --no-index into a virtual environment
# over Debian's Python (its psycopg). Checks:
#   - the wheel installs offline, its version is the extension's, `baton` is on the PATH;
#   - Producer: enqueue (an id, the same id again), a different payload raises
#     DuplicateKey with its SQLSTATE, detail and hint, enqueue_batch; a stale generation
#     raises LeaseLost;
#   - the workflow runner: two runs walked, a marked action run once, a failed stage
#     retried; a runner killed inside a marked action leaves the marker in doubt for the
#     next owner (InDoubt, the action not run again), which releases the run (a third
#     owner acquires it at once); a refusal inside a handler (DuplicateKey) and a result
#     that is not JSON fail the stage, which is retried and completes;
#   - the errors: a fenced tenant raises TenantNotWritable (the contract's TenantFenced,
#     DU002), a NULL argument InvalidArgument (22004);
#   - the worker of the package (examples/python/worker.py on the installed package):
#     finishes what is enqueued, exits 0 on SIGTERM; killed with SIGKILL inside a
#     handler, its lease is reaped and a second worker finishes the item at generation 3;
#   - a Worker of two targets, a handler each, concurrency 4 (the API), its backend
#     terminated while it works: every item finished exactly once (generation 1,
#     attempt 1) by its own target's handler, the log names each once with its target;
#     from the start and end stamps the handlers write: at least two handlers ran at
#     once, never more than 4, and a handler of each target ran at the same time; idle
#     with a 30 s poll, it claims an item of either target on its notification;
#   - BATON_TARGET=a,b and BATON_CONCURRENCY=3 (the example): SIGTERM while 3 handlers
#     run past the grace period and a fourth item waits: exit 0, every lease released at
#     once (pending, generation 2, no lease), 3 handlers abandoned; SIGKILL while 4
#     handlers run: every lease reaped (generation 2), and a second worker finishes every
#     item (generation 3);
#   - a handler that returns a set (not JSON): the item is retried, the same worker
#     finishes it on attempt 2 (no reap, the handler run once per attempt) and exits 0 on
#     SIGTERM;
#   - a worker whose role may claim but not call baton.reap() (EXECUTE revoked), polling
#     only: each refusal is logged as reap_failed (42501), it still claims and finishes,
#     exits 0 on SIGTERM;
#   - SIGTERM with grace 0 while one handler runs and one item waits, the waiting item's
#     release held up by a row lock: the handler that ends meanwhile is finished, not
#     released; the waiting item is released;
#   - baton, the command line: each listing as a table and as JSON, enqueue, cancel,
#     redrive, retry, pause and resume do what they say; a refusal prints its SQLSTATE,
#     message, detail and hint, no traceback, exit 4; a role without the grants sees
#     42501; health exits 1 when a check warns; a server that cannot be reached is one
#     line, exit 3; a wrong command line exits 64.
# Prints "N passed, N failed" last.
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
DB=baton_python_$$
WORK=$(mktemp -d /tmp/pg_baton-python.XXXXXX)
chmod 755 "$WORK"
# Out of the repository: Python puts the working directory first on its path, and an
# in-tree build leaves the extension's pg_baton.so there, which `import pg_baton` would find.
cd "$WORK" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1: expected '$2', got '$3'"; fi; }
q() { psql -X -q -At -d "$DB" -v ON_ERROR_STOP=1 "$@"; }
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    wait 2>/dev/null
    psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
    psql -X -q -d postgres -c "DROP ROLE IF EXISTS baton_python_nobody" -c "DROP ROLE IF EXISTS baton_python_noreap" >/dev/null 2>&1
    rm -rf -- "$WORK"
}
trap cleanup EXIT

# --- the wheel --------------------------------------------------------------------------
if bash "$ROOT/clients/python/build.sh" "$WORK/dist" >"$WORK/build.log" 2>&1; then
    ok "the wheel builds offline ($(basename "$(ls "$WORK"/dist/*.whl)"))"
else
    not_ok "the wheel builds: $(tail -n 5 "$WORK/build.log")"
    echo "$pass passed, $fail failed"
    exit 1
fi
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv"
if "$WORK/venv/bin/pip" install --quiet --no-index --no-deps "$WORK"/dist/*.whl >"$WORK/pip.log" 2>&1; then
    ok "pip installs it with --no-index"
else
    not_ok "pip install: $(tail -n 5 "$WORK/pip.log")"
fi
PY=$WORK/venv/bin/python
BATON=$WORK/venv/bin/baton
version=$(sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$ROOT/pg_baton.control")
check "the package's version is the extension's" "$version" "$("$PY" -c 'import pg_baton; print(pg_baton.__version__)')"
check "the package is the installed one, not the repository's" "$WORK/venv" \
    "$("$PY" -c 'import os, pg_baton; print(os.path.dirname(os.path.dirname(pg_baton.__file__)))' | sed 's|/lib/python.*||')"

# --- the database ------------------------------------------------------------------------
T=00000000-0000-0000-0000-0000000e7e71
PGOPTIONS="-c client_min_messages=warning" psql -X -q -d postgres -c "CREATE DATABASE $DB" \
    -c "DROP ROLE IF EXISTS baton_python_nobody" -c "CREATE ROLE baton_python_nobody LOGIN" \
    -c "DROP ROLE IF EXISTS baton_python_noreap" -c "CREATE ROLE baton_python_noreap LOGIN" >/dev/null
q -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" >/dev/null
CONN="dbname=$DB"

# --- Producer and the errors -------------------------------------------------------------
out=$("$PY" - "$CONN" "$T" <<'PY' 2>&1
import sys, psycopg
from pg_baton import Producer, DuplicateKey, LeaseLost
from pg_baton.errors import from_psycopg
conn = psycopg.connect(sys.argv[1], autocommit=True)
t = sys.argv[2]
p = Producer(conn)
a = p.enqueue(t, "py", "p1", {"n": 1})
print("same", p.enqueue(t, "py", "p1", {"n": 1}) == a)
try:
    p.enqueue(t, "py", "p1", {"n": 2})
except DuplicateKey as e:
    print("dup", e.sqlstate, bool(e.detail), bool(e.hint))
print("batch", p.enqueue_batch(t, [{"target": "py", "dedup_key": "b1"}, {"target": "py", "dedup_key": "p1", "payload": {"n": 1}}])[1] == (a, False))
print("keyed", p.enqueue(t, "py", "k1", key="acme") > 0)
row = conn.execute("SELECT id, generation FROM baton.claim(%s, 'py', '1 minute')", (t,)).fetchone()
try:
    conn.execute("SELECT baton.finish(%s, %s, %s)", (t, row[0], row[1] + 5))
except psycopg.Error as e:
    err = from_psycopg(e)
    print("lost", type(err).__name__, isinstance(err, LeaseLost), err.sqlstate)
PY
)
check "Producer: enqueue, the same id again, DuplicateKey (DU009, detail, hint), enqueue_batch, a keyed enqueue; LeaseLost" \
    "same True|dup DU009 True True|batch True|keyed True|lost LeaseLost True DU001" "$(paste -sd'|' <<<"$out")"

out=$("$PY" - "$CONN" <<'PY' 2>&1
import sys, psycopg
from pg_baton.errors import InvalidArgument, TenantFenced, TenantNotWritable, from_psycopg
conn = psycopg.connect(sys.argv[1], autocommit=True)
fenced = "00000000-0000-0000-0000-0000000e7e72"
conn.execute("SELECT baton.create_tenant(%s), baton.set_tenant_state(%s, 'fenced')", (fenced, fenced))
for sql, args in (("SELECT baton.enqueue(%s, 'py', 'f1')", (fenced,)), ("SELECT baton.enqueue(%s, NULL, 'n1')", (fenced,))):
    try:
        conn.execute(sql, args)
        print("accepted")
    except psycopg.Error as e:
        err = from_psycopg(e)
        print(type(err).__name__, err.sqlstate, isinstance(err, TenantFenced), isinstance(err, InvalidArgument))
PY
)
check "errors: a fenced tenant is TenantNotWritable (TenantFenced) DU002, a NULL argument InvalidArgument 22004" \
    "TenantNotWritable DU002 True False|InvalidArgument 22004 False True" "$(paste -sd'|' <<<"$out")"

# --- the worker of the package -------------------------------------------------------------
run_worker() { # run_worker LOG [VAR=value...]: the example worker on the installed package
    local log=$1
    shift
    env PGDATABASE="$DB" BATON_TENANT="$T" BATON_TARGET=w BATON_POLL_SECONDS=0.5 "$@" \
        "$PY" "$ROOT/examples/python/worker.py" >"$log" 2>&1 &
    pids+=($!)
    WPID=$!
}
wait_log() { # wait_log LOG REGEX [SECONDS]
    local i
    for ((i = 0; i < ${3:-30} * 5; i++)); do grep -qsE -- "$2" "$1" && return 0; sleep 0.2; done
    return 1
}
q -c "SELECT baton.enqueue('$T', 'w', 'w' || g) FROM generate_series(1, 3) g" >/dev/null
run_worker "$WORK/w1.log"
if wait_log "$WORK/w1.log" 'finished .*status=finished' 30 && sleep 1 \
    && [[ $(q -c "SELECT count(*) FROM baton.deliveries WHERE target = 'w' AND status = 'finished'") == 3 ]]; then
    ok "the package's worker finishes what is enqueued"
else
    not_ok "the package's worker: $(tail -n 5 "$WORK/w1.log")"
fi
check "its log lines carry the time" "t" "$(grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z worker\[python\] finished ' "$WORK/w1.log" && echo t)"
kill -TERM "$WPID"
wait "$WPID"
check "SIGTERM: exit 0, stopped" "0 1" "$? $(grep -c ' stopped' "$WORK/w1.log")"

id=$(q -c "SELECT baton.enqueue('$T', 'w', 'long', '{\"sleep\": 30}')")
run_worker "$WORK/w2.log" BATON_LEASE_SECONDS=2
if wait_log "$WORK/w2.log" "claimed id=$id " 20; then
    kill -9 "$WPID"
    wait "$WPID" 2>/dev/null
    sleep 2.5
    q -c "SELECT baton.reap()" >/dev/null
    check "killed inside its handler: the lease expires and is reaped (the reap raises the generation)" "pending 2" \
        "$(q -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE id = $id")"
    q -c "UPDATE baton.deliveries SET payload = '{}' WHERE id = $id" >/dev/null
    run_worker "$WORK/w3.log"
    if wait_log "$WORK/w3.log" "finished id=$id generation=3 " 30; then
        ok "a second worker finishes the item at the next claim's generation, 3"
    else
        not_ok "a second worker finishes the item: $(tail -n 3 "$WORK/w3.log")"
    fi
    kill -TERM "$WPID"
    wait "$WPID" 2>/dev/null
else
    not_ok "the worker claimed the long item: $(tail -n 3 "$WORK/w2.log")"
fi

# --- a worker of two targets, a handler each, four at once ------------------------------------
count_log() { grep -cE -- "$2" "$1" 2>/dev/null || true; }
wait_count() { # wait_count LOG REGEX N [SECONDS]: until LOG has N lines matching
    local i
    for ((i = 0; i < ${4:-30} * 5; i++)); do (($(count_log "$1" "$2") >= $3)) && return 0; sleep 0.2; done
    return 1
}
cat >"$WORK/two.py" <<'PY'
# Two targets, a handler each, four at once; each handler writes its start and end stamps.
import os, sys, time
from pg_baton.worker import Worker
stamps = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
def handler(name):
    def handle(item, lease_lost):
        os.write(stamps, f"start {item.target} {item.id} {time.monotonic_ns()}\n".encode())
        lease_lost.wait(float(item.payload.get("sleep", 0)))
        os.write(stamps, f"end {item.target} {item.id} {time.monotonic_ns()}\n".encode())
        return {"handled_by": name}
    return handle
sys.exit(Worker(sys.argv[2], {"ta": handler("a"), "tb": handler("b")}, concurrency=4, batch=3, lease=10,
                poll=30, reap=False).run())
PY
q -c "SELECT baton.enqueue('$T', t, t || g, '{\"sleep\": 0.4}') FROM unnest(ARRAY['ta', 'tb']) t, generate_series(1, 12) g" >/dev/null
PGDATABASE=$DB "$PY" "$WORK/two.py" "$WORK/stamps" "$T" >"$WORK/two.log" 2>&1 &
pids+=($!)
WPID=$!
if wait_log "$WORK/two.log" ' claimed ' 20; then
    pid=$(grep -oE 'connected pid=[0-9]+' "$WORK/two.log" | head -n 1 | sed 's/.*=//')
    q -c "SELECT pg_terminate_backend($pid)" >/dev/null
fi
for ((i = 0; i < 150; i++)); do
    [[ $(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('ta', 'tb') AND status = 'finished'") == 24 ]] && break
    sleep 0.2
done
check "two targets, concurrency 4: all 24 finished exactly once (generation 1, attempt 1)" "24" \
    "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('ta', 'tb') AND status = 'finished' AND generation = 1 AND attempts = 1")"
check "two targets: each item handled by its own target's handler" "ta a 12|tb b 12" \
    "$(q -c "SELECT target || ' ' || (result->>'handled_by') || ' ' || count(*) FROM baton.deliveries WHERE target IN ('ta', 'tb') GROUP BY target, result->>'handled_by' ORDER BY 1" | paste -sd'|')"
check "two targets: the log names each (target, id) finished once" \
    "$(q -c "SELECT string_agg(target || ' ' || id, ' ' ORDER BY target, id) FROM baton.deliveries WHERE target IN ('ta', 'tb')")" \
    "$(grep -oE 'worker\[python\] finished target=t[ab] id=[0-9]+ ' "$WORK/two.log" | sed -E 's/.*target=(t[ab]) id=([0-9]+) $/\1 \2/' | sort -k1,1 -k2,2n | paste -sd' ')"
check "two targets: its backend terminated while it worked, the worker reconnected" "t" \
    "$( (($(count_log "$WORK/two.log" ' connected pid=') >= 2)) && echo t)"
out=$("$PY" - "$WORK/stamps" <<'PY' 2>&1
import sys
events, starts = [], {}
for line in open(sys.argv[1]):
    kind, target, did, ns = line.split()
    events.append((int(ns), 1 if kind == "start" else -1, target))
    starts[kind] = starts.get(kind, 0) + 1
events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
now, most, both = {"ta": 0, "tb": 0}, 0, False
for _, delta, target in events:
    now[target] += delta
    most = max(most, now["ta"] + now["tb"])
    both = both or (now["ta"] > 0 and now["tb"] > 0)
print(starts.get("start", 0), starts.get("end", 0), "at_least_2" if most >= 2 else f"most_{most}",
      "at_most_4" if most <= 4 else f"most_{most}", "both" if both else "one_at_a_time")
PY
)
check "two targets: from the handlers' stamps: 24 started and ended, at least 2 at once, never more than 4, both targets' handlers at once" \
    "24 24 at_least_2 at_most_4 both" "$out"
wait_log "$WORK/two.log" ' idle' 10
id=$(q -c "SELECT baton.enqueue('$T', 'tb', 'wake-b')")
id2=$(q -c "SELECT baton.enqueue('$T', 'ta', 'wake-a')")
if wait_log "$WORK/two.log" "finished target=tb id=$id " 5 && wait_log "$WORK/two.log" "finished target=ta id=$id2 " 5; then
    ok "two targets: idle with a 30 s poll, it claims an item of each target on its notification"
else
    not_ok "two targets: woken by each target's channel: $(tail -n 3 "$WORK/two.log")"
fi
kill -TERM "$WPID"
wait "$WPID"
check "two targets: SIGTERM: exit 0, stopped" "0 1" "$? $(count_log "$WORK/two.log" ' stopped')"

q -c "SELECT baton.enqueue('$T', t, t || g, '{\"sleep\": 120}') FROM unnest(ARRAY['sa', 'sb']) t, generate_series(1, 2) g" >/dev/null
run_worker "$WORK/stop.log" BATON_TARGET=sa,sb BATON_CONCURRENCY=3 BATON_BATCH=2 BATON_LEASE_SECONDS=60 \
    BATON_SHUTDOWN_GRACE_SECONDS=1
if wait_count "$WORK/stop.log" ' claimed target=s[ab] ' 3 20 && sleep 0.5; then
    check "BATON_TARGET=sa,sb, BATON_CONCURRENCY=3: 3 handlers run, 4 leases held" "3 4" \
        "$(count_log "$WORK/stop.log" ' claimed ') $(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('sa', 'sb') AND status = 'claimed'")"
    t0=$SECONDS
    kill -TERM "$WPID"
    wait "$WPID"
    rc=$?
    check "SIGTERM while 3 handlers run past the grace period: exit 0 within 10 s, 3 abandoned" "0 t 3" \
        "$rc $( ((SECONDS - t0 < 10)) && echo t) $(count_log "$WORK/stop.log" ' abandoned ')"
    check "every lease released at once: pending, generation 2, no lease, claimable now; each logged" "4 4" \
        "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('sa', 'sb') AND status = 'pending' AND generation = 2
                   AND lease_until IS NULL AND run_after <= now() AND last_error = 'released: worker shutting down'") \
$(count_log "$WORK/stop.log" ' released target=s[ab] id=[0-9]+ generation=1 status=pending$')"
else
    not_ok "the worker of sa and sb started 3 handlers: $(tail -n 3 "$WORK/stop.log")"
fi

q -c "SELECT baton.enqueue('$T', t, t || g, '{\"sleep\": 30}') FROM unnest(ARRAY['ka', 'kb']) t, generate_series(1, 2) g" >/dev/null
run_worker "$WORK/kill.log" BATON_TARGET=ka,kb BATON_CONCURRENCY=4 BATON_BATCH=2 BATON_LEASE_SECONDS=2 BATON_REAP=0
if wait_count "$WORK/kill.log" ' claimed target=k[ab] ' 4 20; then
    kill -9 "$WPID"
    wait "$WPID" 2>/dev/null
    sleep 2.5
    q -c "SELECT baton.reap()" >/dev/null
    check "SIGKILL while 4 handlers run: every lease reaped (pending, generation 2)" "4" \
        "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('ka', 'kb') AND status = 'pending' AND generation = 2")"
    q -c "UPDATE baton.deliveries SET payload = '{}' WHERE target IN ('ka', 'kb')" >/dev/null
    run_worker "$WORK/kill2.log" BATON_TARGET=ka,kb BATON_CONCURRENCY=2
    wait_count "$WORK/kill2.log" ' finished target=k[ab] ' 4 30
    check "a second worker finishes every item (generation 3, attempt 2)" "4" \
        "$(q -c "SELECT count(*) FROM baton.deliveries WHERE target IN ('ka', 'kb') AND status = 'finished' AND generation = 3 AND attempts = 2")"
    kill -TERM "$WPID"
    wait "$WPID" 2>/dev/null
else
    not_ok "the worker of ka and kb started 4 handlers: $(tail -n 3 "$WORK/kill.log")"
fi

# --- a result that is not JSON, a refused reap, a handler that ends during the shutdown --------
cat >"$WORK/nonjson.py" <<'PY'
# The first attempt returns a set (not JSON), the second an object; each call is written down.
import os, sys
from pg_baton.worker import Worker
calls = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
def handle(item, lease_lost):
    os.write(calls, f"{item.id} {item.attempt}\n".encode())
    return {"not", "json"} if item.attempt == 1 else {"attempt": item.attempt}
sys.exit(Worker(sys.argv[2], {"nj": handle}, lease=30, poll=0.5, reap=False).run())
PY
id=$(q -c "SELECT baton.enqueue('$T', 'nj', 'set')")
PGDATABASE=$DB "$PY" "$WORK/nonjson.py" "$WORK/nonjson.calls" "$T" >"$WORK/nonjson.log" 2>&1 &
pids+=($!)
WPID=$!
wait_log "$WORK/nonjson.log" "finished id=$id " 15
check "a handler returning a set: retried (not JSON), then finished on attempt 2 by the same worker, no reap" \
    "finished 2 3 {\"attempt\": 2}|retried id=$id generation=1 attempt=1 status=pending|finished id=$id generation=3 attempt=2 status=finished" \
    "$(q -c "SELECT status || ' ' || attempts || ' ' || generation || ' ' || result FROM baton.deliveries WHERE id = $id")|$(grep -oE "(retried|finished) id=$id .*status=[a-z]+" "$WORK/nonjson.log" | paste -sd'|')"
check "a handler returning a set: the retry says why, the handler ran once per attempt" "1|$id 1 $id 2" \
    "$(count_log "$WORK/nonjson.log" "retried id=$id .*not JSON")|$(paste -sd' ' "$WORK/nonjson.calls" 2>/dev/null)"
kill -TERM "$WPID"
wait "$WPID"
check "a handler returning a set: the worker kept running (SIGTERM: exit 0, stopped)" "0 1" "$? $(count_log "$WORK/nonjson.log" ' stopped')"

# A role that may claim but not reap (EXECUTE on baton.reap revoked), polling only: every
# refused reap is logged and the worker still claims at each poll.
q -c "SELECT baton.grant_worker('baton_python_noreap')" \
  -c "REVOKE EXECUTE ON FUNCTION baton.reap(integer) FROM baton_python_noreap" >/dev/null
run_worker "$WORK/noreap.log" PGUSER=baton_python_noreap BATON_TARGET=nr BATON_LISTEN=0
if wait_count "$WORK/noreap.log" ' reap_failed sqlstate=42501 ' 2 15; then
    id=$(q -c "SELECT baton.enqueue('$T', 'nr', 'after-refusals')")
    wait_log "$WORK/noreap.log" "finished id=$id " 10
    check "baton.reap() refused (42501) at every poll: logged as reap_failed, the worker still claims and finishes" \
        "finished" "$(q -c "SELECT status FROM baton.deliveries WHERE id = $id")"
else
    not_ok "a worker whose reap is refused logs reap_failed and goes on: $(tail -n 3 "$WORK/noreap.log")"
fi
kill -TERM "$WPID"
wait "$WPID"
check "a worker whose reap is refused: SIGTERM: exit 0, stopped" "0 1" "$? $(count_log "$WORK/noreap.log" ' stopped')"

# Grace 0, one slot: A runs (2 s), B waits. B's row is locked for 5 s from another session,
# so that releasing B at SIGTERM takes that long; A's handler ends meanwhile: A is finished,
# not released.
a=$(q -c "SELECT baton.enqueue('$T', 'sd', 'a', '{\"sleep\": 2}')")
b=$(q -c "SELECT baton.enqueue('$T', 'sd', 'b')")
run_worker "$WORK/sd.log" BATON_TARGET=sd BATON_CONCURRENCY=1 BATON_BATCH=2 BATON_LEASE_SECONDS=60 \
    BATON_SHUTDOWN_GRACE_SECONDS=0 BATON_REAP=0
if wait_log "$WORK/sd.log" "claimed id=$a " 15; then
    PGAPPNAME=baton_python_lock q -c "BEGIN" -c "SELECT 1 FROM baton.deliveries WHERE id = $b FOR UPDATE" \
        -c "SELECT pg_sleep(5)" -c "COMMIT" >/dev/null &
    lock=$!
    for ((i = 0; i < 50; i++)); do
        [[ $(q -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'baton_python_lock' AND wait_event = 'PgSleep'") == 1 ]] && break
        sleep 0.1
    done
    kill -TERM "$WPID"
    wait "$WPID"
    rc=$?
    wait "$lock"
    check "grace 0, B's release held up: A running and B waiting at the stop; exit 0" "1 0" \
        "$(count_log "$WORK/sd.log" ' stopping running=1 waiting=1 ') $rc"
    check "a handler that ends while the waiting items are released is finished, not released; B released" \
        "finished 1 python|pending 2 released: worker shutting down|finished id=$a generation=1 attempt=1 status=finished|0" \
        "$(q -c "SELECT status || ' ' || generation || ' ' || (result->>'handled_by') FROM baton.deliveries WHERE id = $a")|$(q -c "SELECT status || ' ' || generation || ' ' || last_error FROM baton.deliveries WHERE id = $b")|$(grep -oE "finished id=$a .*" "$WORK/sd.log")|$(count_log "$WORK/sd.log" "released id=$a ")"
else
    not_ok "the shutdown worker claimed A: $(tail -n 3 "$WORK/sd.log")"
fi

# --- the workflow runner -----------------------------------------------------------------
q -c "SELECT baton.define_workflow('py_flow', '{\"start\": \"a\", \"stages\": {\"a\": {\"next\": [\"b\"]}, \"b\": {\"next\": [\"@finish\"], \"max_attempts\": 3}}}')" \
  -c "SELECT baton.submit('$T', 'py_flow', jsonb_build_object('n', g), 'r' || g) FROM generate_series(1, 2) g" >/dev/null
out=$("$PY" - "$CONN" "$T" <<'PY' 2>&1
import sys, psycopg
from pg_baton.workflow import Runner
conn = psycopg.connect(sys.argv[1], autocommit=True)
calls = {"a": 0, "b": 0, "mail": 0}
def a(stage):
    calls["a"] += 1
    def mail():
        calls["mail"] += 1
    stage.once(0, "mail", mail)
    stage.once(0, "mail", mail)  # the same marker again: not run twice
    return {"mailed": True}
def b(stage):
    calls["b"] += 1
    if stage.attempt == 1:
        raise RuntimeError("first attempt fails")
    return {"done": stage.inputs}
runner = Runner(conn, sys.argv[2], "py_flow", "py-runner", {"a": a, "b": b}, lease=30, retry_in=0)
walked = 0
while runner.run_next():
    walked += 1
print("walked", walked, "calls", calls["a"], calls["b"], calls["mail"])
PY
)
check "the runner walks both runs: stage a once each, its marker once each, stage b failed then retried" \
    "walked 2 calls 2 4 2" "$out"
check "both runs completed: stages a and b in their history, b on its second attempt" "completed a:1 b:2|completed a:1 b:2" \
    "$(q -c "SELECT r.status || ' ' || (SELECT string_agg(h.stage || ':' || h.attempt, ' ') FROM baton.run_history('$T', r.id) h) FROM baton.runs r WHERE r.tenant = '$T' AND r.idempotency_key IN ('r1', 'r2') ORDER BY r.id" | paste -sd'|')"
# A runner killed inside a marked action: the next owner finds the marker in doubt.
q -c "SELECT baton.submit('$T', 'py_flow', '{}', 'r-killed')" >/dev/null
"$PY" - "$CONN" "$T" <<'PY' >/dev/null 2>&1
import os, sys, psycopg
from pg_baton.workflow import Runner
conn = psycopg.connect(sys.argv[1], autocommit=True)
def a(stage):
    stage.once(0, "mail", lambda: os._exit(9))  # dies with the marker claimed
Runner(conn, sys.argv[2], "py_flow", "py-doomed", {"a": a, "b": a}, lease=1).run_next()
PY
sleep 1.5
out=$("$PY" - "$CONN" "$T" <<'PY' 2>&1
import sys, psycopg
from pg_baton.workflow import Runner, InDoubt
conn = psycopg.connect(sys.argv[1], autocommit=True)
ran = []
def a(stage):
    stage.once(0, "mail", lambda: ran.append(1))
    return {}
try:
    Runner(conn, sys.argv[2], "py_flow", "py-heir", {"a": a, "b": a}, lease=30).run_next()
    print("no doubt", ran)
except InDoubt as e:
    print("in doubt", len(ran), bool(e.hint))
PY
)
check "a runner killed inside a marked action: the next owner gets InDoubt and does not run it again" "in doubt 0 True" "$out"
out=$("$PY" - "$CONN" "$T" <<'PY' 2>&1
import sys, psycopg
from pg_baton.workflow import Runner, InDoubt
conn = psycopg.connect(sys.argv[1], autocommit=True)
def a(stage):
    stage.once(0, "mail", lambda: None)
    return {}
try:
    print("offered" if Runner(conn, sys.argv[2], "py_flow", "py-third", {"a": a, "b": a}, lease=30).run_next() else "not offered")
except InDoubt:
    print("in doubt again")
PY
)
check "InDoubt released the run: a third owner acquires it at once (and finds the marker in doubt too)" "in doubt again" "$out"
# A refusal inside a handler (DuplicateKey from a Producer call) fails the stage; it is retried.
q -c "SELECT baton.define_workflow('py_dup', '{\"start\": \"a\", \"stages\": {\"a\": {\"next\": [\"@finish\"], \"max_attempts\": 3}}}')" \
  -c "SELECT baton.submit('$T', 'py_dup', '{}', 'd1')" -c "SELECT baton.enqueue('$T', 'dupt', 'k', '{\"n\": 1}')" >/dev/null
out=$("$PY" - "$CONN" "$T" <<'PY' 2>&1
import sys, psycopg
from pg_baton import Producer
from pg_baton.workflow import Runner
conn = psycopg.connect(sys.argv[1], autocommit=True)
t = sys.argv[2]
def a(stage):
    if stage.attempt == 1:
        Producer(stage.runner.conn).enqueue(t, "dupt", "k", {"n": 2})  # DuplicateKey
    if stage.attempt == 2:
        return {"not", "json"}
    return {"attempt": stage.attempt}
runner = Runner(conn, t, "py_dup", "py-dup", {"a": a}, lease=30, retry_in=0)
walked = 0
while runner.run_next():
    walked += 1
print("walked", walked)
PY
)
check "the runner: a DuplicateKey inside a handler, then a result that is not JSON, fail the stage; attempt 3 completes the run" \
    "walked 1|completed a:3 {\"attempt\": 3}" \
    "$out|$(q -c "SELECT r.status || ' ' || (SELECT string_agg(h.stage || ':' || h.attempt || ' ' || h.result, ' ') FROM baton.run_history('$T', r.id) h) FROM baton.runs r WHERE r.tenant = '$T' AND r.idempotency_key = 'd1'")"

# --- the command line --------------------------------------------------------------------
b() { PGDATABASE=$DB "$BATON" "$@"; }
for c in tenants targets stats counters deliveries runs schedules health; do
    out=$(b "$c" 2>&1)
    rc=$?
    js=$(b --json "$c" 2>/dev/null | "$PY" -c 'import json, sys; print(type(json.load(sys.stdin)).__name__)' 2>&1)
    if [[ ($rc == 0 || ($c == health && $rc -le 2)) && $out == *"row"* && $js == list ]]; then
        ok "baton $c: a table and --json"
    else
        not_ok "baton $c (exit $rc, json $js): $(head -c 300 <<<"$out")"
    fi
done
id=$(b --json enqueue "$T" cli c1 --payload '{"x": 1}' | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')
check "baton enqueue prints the id" "pending" "$(q -c "SELECT status FROM baton.deliveries WHERE id = $id")"
check "baton cancel" "cancelled" "$(b --json cancel "$T" "$id" --reason 'from the cli' | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["status"])')"
check "baton redrive --ids" "1 pending" "$(b --json redrive "$T" cli --ids "$id" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["redriven"])') $(q -c "SELECT status FROM baton.deliveries WHERE id = $id")"
gen=$(q -c "SELECT generation FROM baton.claim('$T', 'cli', '1 hour')")
check "baton retry gives a held lease back" "pending" \
    "$(b --json retry "$T" "$id" "$gen" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["status"])')"
q -c "SELECT baton.bind_target('$T', 'cli', 'baton_python_nobody')" >/dev/null
check "baton pause, then resume" "True False" \
    "$(b --json pause "$T" cli | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["paused"])') $(b --json resume "$T" cli | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["paused"])')"
b enqueue "$T" cli c1 --payload '{"x": 2}' >"$WORK/out" 2>"$WORK/err"
rc=$?
check "a refusal: exit 4, the SQLSTATE, message, detail and hint, no traceback" "4 1 1 1 0" \
    "$rc $(grep -c '^baton: ERROR DU009: dedup key "c1"' "$WORK/err") $(grep -c '^DETAIL: ' "$WORK/err") $(grep -c '^HINT: ' "$WORK/err") $(grep -c Traceback "$WORK/err")"
PGUSER=baton_python_nobody b stats >/dev/null 2>"$WORK/err"
check "a role without the grants: exit 4, 42501" "4 1" "$? $(grep -c '^baton: ERROR 42501: ' "$WORK/err")"
PGOPTIONS="-c baton.health_pending_warn=0" b health >/dev/null 2>&1
check "baton health exits 1 when a check warns (a pending delivery past a threshold of 0)" "1" "$?"
b --dsn "host=$WORK/nowhere port=1" stats >/dev/null 2>"$WORK/err"
check "a server that cannot be reached: one line, exit 3" "3 1 0" "$? $(wc -l <"$WORK/err") $(grep -c Traceback "$WORK/err")"
b cancel not-a-uuid 1 >/dev/null 2>&1
check "a wrong command line exits 64" "64" "$?"

echo "$pass passed, $fail failed"
((fail == 0))
