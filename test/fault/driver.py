"""The crash and kill suite of pg_baton: starts the load (client processes), injects the
faults one after another, checks the invariants after each, prints the figures and
"N passed, N failed". Run by test/fault/run.sh, which starts the throwaway cluster and
exports PGHOST/PGPORT/PGUSER/PGDATABASE, CLUSTER_DIR and PG_BINDIR.

usage: driver.py --rounds N [--claims C [--minutes M]] [--load-seconds S] [--load role=n,...]
                 [--kinds k,...] [--no-self-test] [--verbose]
Each round injects each fault kind once (see inject.py), in this order. With --claims,
rounds go on after the N-th until C claims of keyed deliveries were acknowledged (or,
with --minutes, until M minutes have passed).
"""

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import uuid

import psycopg

import selftest
from check import Checker
import clients
from clients import client_main
from common import DECIDE_LOCK, TARGETS, WORKFLOW, setup_keys
from inject import Injector

KINDS = ("restart", "kill_claim", "frozen", "kill_finish", "fence", "kill_transition", "kill_fire")

# The load: role -> number of processes.
LOAD = {"producer": 2, "dworker": 3, "fworker": 1, "rworker": 2, "reaper": 1, "operator": 1, "redriver": 1,
        "firer": 2, "kproducer": 2, "kworker": 2, "kbulk": 0}

# The schedules of each initial tenant, fired by the firer clients: (name, target, spec).
SCHEDULES = (("tick", "alpha", "@every 1 second"), ("tock", "beta", "@every 2 seconds"))

SETUP_SQL = [
    "CREATE TABLE public.fault_actions (tenant uuid NOT NULL, entry_id bigint NOT NULL, "
    "pos int NOT NULL, worker text NOT NULL, generation bigint NOT NULL, "
    "done_at timestamptz NOT NULL DEFAULT clock_timestamp())",
    # Routes a -> b -> b -> b -> c -> finish. It first takes a shared advisory lock, so
    # the injector can hold transitions inside the decision (kill_transition).
    """CREATE FUNCTION public.fault_decide(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    s text := ctx->'stage'->>'name';
    seq int := (ctx->'stage'->>'entry_seq')::int;
    n int := coalesce((ctx->'run'->'state'->>'n')::int, 0) + 1;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(%d);
    IF s = 'a' THEN
        RETURN jsonb_build_object('next', 'b', 'inputs', jsonb_build_object('n', n), 'state', jsonb_build_object('n', n));
    ELSIF s = 'b' AND seq < 3 THEN
        RETURN jsonb_build_object('next', 'b', 'inputs', jsonb_build_object('n', n), 'state', jsonb_build_object('n', n));
    ELSIF s = 'b' THEN
        RETURN jsonb_build_object('next', 'c', 'inputs', jsonb_build_object('n', n), 'state', jsonb_build_object('n', n));
    END IF;
    RETURN jsonb_build_object('finish', 'completed', 'reason', 'all stages done');
END $$""" % DECIDE_LOCK,
]

DEFINITION = """{"start": "a", "decide": "public.fault_decide",
 "stages": {"a": {"next": ["b"]},
            "b": {"next": ["b", "c"], "max_attempts": 6, "retry_delay": "100 milliseconds"},
            "c": {"next": ["@finish"], "max_attempts": 6}}}"""

TENANTS = 3


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def test(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append("%s: %s" % (name, detail))
        print("  %s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok or not detail else "  -- " + detail),
              flush=True)


def setup():
    with psycopg.connect("", autocommit=True) as conn:
        for sql in SETUP_SQL:
            conn.execute(sql)
        conn.execute("SELECT baton.define_workflow(%s, %s::jsonb)", (WORKFLOW, DEFINITION))
        for _ in range(TENANTS):
            tenant = str(uuid.uuid4())
            conn.execute("SELECT baton.create_tenant(%s)", (tenant,))
            # Bound, so that the fair claim serves them (the suite's role is a superuser:
            # a member of every role).
            for target in TARGETS:
                conn.execute("SELECT baton.bind_target(%s, %s, current_user::regrole)", (tenant, target))
            for name, target, spec in SCHEDULES:
                conn.execute("SELECT baton.schedule(%s, %s, %s, %s)", (tenant, name, target, spec))
            setup_keys(conn, tenant)


def start_load(logdir, stop, load=None, entry=client_main):
    """Starts the client processes: load maps a role to its number of processes (LOAD by
    default), entry is each process's function (role, name, logdir, stop, seed)."""
    ctx = multiprocessing.get_context("fork")
    procs = []
    seed = 1
    for role, count in (load or LOAD).items():
        for i in range(count):
            name = "%s-%d" % (role, i + 1)
            p = ctx.Process(target=entry, args=(role, name, logdir, stop, seed), name=name)
            p.start()
            procs.append(p)
            seed += 1
    return procs


def stop_load(procs, stop):
    """Stops the clients: they end their current call and write their statistics."""
    stop.set()
    for p in procs:
        p.join(30)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--claims", type=int, default=0,
                    help="after --rounds, more rounds until this many keyed claims were acknowledged")
    ap.add_argument("--minutes", type=float, default=0,
                    help="with --claims: no fault begins after this many minutes, claims reached or not")
    ap.add_argument("--load-seconds", type=float, default=3.0)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--no-self-test", action="store_true", help="skip the checker's self-test")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated fault kinds, in order")
    ap.add_argument("--load", default="", help="role=count,... : the number of processes of these roles")
    args = ap.parse_args()
    load = dict(LOAD)
    for part in filter(None, args.load.split(",")):
        role, _, count = part.partition("=")
        if role not in LOAD or not count.isdigit():
            ap.error("--load: role=count with a role of " + ",".join(LOAD))
        load[role] = int(count)

    logdir = tempfile.mkdtemp(prefix="pg_baton-fault-acks.")
    inj = Injector(os.environ["CLUSTER_DIR"], os.environ["PG_BINDIR"], logdir, args.verbose)
    checker = Checker(logdir, inj)
    tally = Tally()
    kinds = [k for k in args.kinds.split(",") if k]
    if any(k not in KINDS for k in kinds):
        ap.error("--kinds: choose from " + ",".join(KINDS))
    faults = {k: 0 for k in kinds}
    modes = {}
    started = time.monotonic()

    setup()
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    # The firers stop calling while kill_fire needs the schedules to itself.
    clients.FIRE_PAUSE = inj.fire_pause = ctx.Event()
    procs = start_load(logdir, stop, load)
    # A client that exited with an error (or had to be killed at the end) fails I8.
    checker.dead_clients = lambda: [p.name for p in procs if p.exitcode not in (None, 0)]
    try:
        time.sleep(args.load_seconds)
        rnd = 0

        def out_of_time():
            return args.minutes > 0 and time.monotonic() - started > args.minutes * 60

        while (rnd < args.rounds or checker.acks.keyed_claims < args.claims) and not (rnd and out_of_time()):
            rnd += 1
            for kind in kinds:
                if rnd > args.rounds and (checker.acks.keyed_claims >= args.claims or out_of_time()):
                    break
                print("round %d/%s: %s (t+%.0fs, %d operations acknowledged so far, %d keyed claims)" % (
                    rnd, args.rounds if not args.claims else "(until %d keyed claims)" % args.claims, kind,
                    time.monotonic() - started, checker.acks.acknowledged(), checker.acks.keyed_claims),
                    flush=True)
                extra = []
                fault_start = time.time()
                try:
                    if kind == "frozen":
                        landed, note = inj.frozen(extra)
                    elif kind == "kill_fire":
                        landed, note = inj.kill_fire(extra, "kill" if rnd % 2 == 1 else "restart")
                    elif kind.startswith("kill_"):
                        mode = "lock" if rnd % 2 == 1 else "commit"
                        landed, note = getattr(inj, kind)(mode)
                        if not landed and mode == "commit" and "within" in note:
                            # No commit was caught in time (a fast disk): the lock mode.
                            print("  " + note + "; injecting with a held lock instead", flush=True)
                            landed, note = getattr(inj, kind)("lock")
                            mode = "lock"
                        modes[kind + "/" + mode] = modes.get(kind + "/" + mode, 0) + 1
                    else:
                        landed, note = getattr(inj, kind)()
                except (psycopg.Error, OSError) as e:
                    landed, note = False, "%s: %s" % (type(e).__name__, e)
                faults[kind] += 1
                print("  " + note, flush=True)
                recovered = inj.wait_ready()
                # From its start to the server's answer: a pause for the schedules.
                inj.windows.append((fault_start, time.time()))
                tally.test("%s landed and the server answers again" % kind, landed and recovered,
                           note if not landed else "server not back after 90 s")
                for name, ok, detail in extra:
                    tally.test(name, ok, detail)
                for name, ok, detail in checker.run():
                    tally.test(name, ok, detail)
                time.sleep(args.load_seconds)
        # The load must have made progress after the last fault.
        before = checker.acks.acknowledged()
        time.sleep(2)
        checker.acks.read()
        tally.test("the load makes progress after the last fault", checker.acks.acknowledged() > before,
                   "no operation acknowledged in 2 s")
    finally:
        stop_load(procs, stop)
    print("final check (load stopped)", flush=True)
    for name, ok, detail in checker.run():
        tally.test(name, ok, detail)

    acks = checker.acks
    kinds = {}
    for k, v in acks.by_kind.items():
        kinds[k] = len(v)
    errors = {}
    reconnects = 0
    for st in acks.stats.values():
        reconnects += st.get("reconnects", 0)
        for code, n in st.get("errors", {}).items():
            errors[code] = errors.get(code, 0) + n
    print()
    print("===== fault suite figures (%.0f s) =====" % (time.monotonic() - started))
    print("faults injected:         %d (%s)" % (sum(faults.values()),
                                                 ", ".join("%s %d" % kv for kv in faults.items())))
    print("operations acknowledged: %d (enqueue %d (batches sent %d), submit %d, cancel %d, claim %d, finish %d, retry %d, "
          "acquire %d, transition %d, start %d, complete %d, fail_stage %d, marker claim %d, marker done %d, "
          "marker resolved %d, release %d, reaps %d, repeated enqueue %d, delivery cancel %d, "
          "redrive %d (deliveries moved %d), fire_schedules %d (deliveries fired %d))" % (
              acks.acknowledged(), kinds.get("enq", 0), kinds.get("batch_try", 0), kinds.get("sub", 0),
              kinds.get("cancel", 0), kinds.get("claim", 0),
              kinds.get("fin", 0), kinds.get("retry", 0), kinds.get("acq", 0), kinds.get("tr", 0),
              kinds.get("start", 0), kinds.get("cpl", 0), kinds.get("fail_stage", 0), kinds.get("mk", 0),
              kinds.get("mkdone", 0), kinds.get("resolve", 0), kinds.get("rel", 0), kinds.get("reap", 0), kinds.get("enq_again", 0),
              kinds.get("dcancel", 0), kinds.get("redrive", 0),
              sum(len(a["moved"]) for a in acks.by_kind.get("redrive", [])), kinds.get("fire", 0),
              sum(a["fired"] for a in acks.by_kind.get("fire", []))))
    print("refusals seen by clients: %s; reconnects: %d" % (
        ", ".join("%s %d" % kv for kv in sorted(errors.items())) or "none", reconnects))
    print("kill modes:              %s" % (", ".join("%s %d" % kv for kv in sorted(modes.items())) or "none"))
    print("tenants fenced:          %d" % len(inj.fenced))
    print("keyed claims checked:    %s" % checker.keyed_figures())
    print("items lost:              %d" % checker.lost)
    print("duplicates:              %d" % checker.dups)
    tally.test("items lost is 0", checker.lost == 0, str(checker.lost))
    tally.test("duplicates is 0", checker.dups == 0, str(checker.dups))
    if not args.no_self_test:
        selftest.run(checker, inj, tally)
    if tally.failures:
        print("failures:")
        for f in tally.failures:
            print("  " + f)
    return close_run(tally, logdir)


def close_run(tally, logdir):
    """Keeps the acknowledgement logs (BATON_KEEP_LOGS=1) or removes them, prints the
    closing count line; returns the exit status."""
    if os.environ.get("BATON_KEEP_LOGS") == "1":
        print("acknowledgement logs kept in " + logdir)
    else:
        shutil.rmtree(logdir, ignore_errors=True)
    print("%d passed, %d failed" % (tally.passed, tally.failed))
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
