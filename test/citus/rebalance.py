"""Rebalancing under load loses nothing: the load of the fault suite (test/fault, as
test/citus/fault.py runs it) through the coordinator of a three-node Citus cluster whose
every node runs pg_baton's background reaper, with two schedules per tenant firing,
while the cluster grows and shrinks: a fourth node is added (citus_add_node, then
baton.distribute() again) and the shards rebalanced onto it (citus_rebalance_start,
citus_rebalance_wait); the first worker is drained (citus_drain_node); it takes shards
again and rebalance_table_shards() spreads them back. Afterwards the fault suite's
invariants are checked against the clients' acknowledgement logs, each schedule slot is
stored once and none is skipped outside the operations' windows, and the throughput
(deliveries finished per second) before, during and after the operations is printed.
Run by test/citus/rebalance.sh, which starts the cluster and the fourth node, creates
and distributes pg_baton, and exports PGHOST/PGPORT (the coordinator), CITUS_PORTS,
CITUS_NEW_PORT and CITUS_BASE.

usage: rebalance.py [--load-seconds S]
"""

import argparse
import calendar
import multiprocessing
import os
import sys
import tempfile
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import psycopg  # noqa: E402

import fault  # noqa: E402  (puts test/fault on the path)
import driver  # noqa: E402
from common import now  # noqa: E402
from fault import one  # noqa: E402

# The schedules of every tenant, fired by the nodes' background reapers: (name, target,
# seconds between slots). Their deliveries go to the load's targets, so the workers
# claim and finish them too.
SCHEDULES = (("tick", "alpha", 1), ("tock", "beta", 2))

# Seconds an operation (a rebalance, a drain) may take before it counts as hung.
OP_TIMEOUT = 600

# A fired slot may be late by this much at a window's edges: the reapers' interval, a
# firing call's own time, and the clients' clock read before the call was sent.
EDGE = 1.5


def placements(conn):
    """{port: number of shard groups of baton.tenants placed there}."""
    return dict(conn.execute(
        "SELECT p.nodeport, count(*) FROM pg_catalog.pg_dist_shard_placement p JOIN pg_catalog.pg_dist_shard s "
        "USING (shardid) WHERE s.logicalrelid = 'baton.tenants'::regclass GROUP BY 1").fetchall())


def operation(sql, params=()):
    """Runs the statements of one operation in one session (autocommit, OP_TIMEOUT);
    returns (start, end, error or None)."""
    t0 = now()
    try:
        with psycopg.connect("", autocommit=True, options="-c statement_timeout=%ds" % OP_TIMEOUT) as conn:
            for s in sql:
                conn.execute(s, params)
    except psycopg.Error as e:
        return t0, now(), "%s: %s" % (e.sqlstate, str(e).strip()[:300])
    return t0, now(), None


def fired_slots(conn):
    """{(tenant, name): {slot epoch: count}} of the deliveries the schedules fired."""
    out = defaultdict(lambda: defaultdict(int))
    for t, key in conn.execute("SELECT tenant::text, dedup_key FROM baton.deliveries "
                               "WHERE dedup_key LIKE 'schedule:%'").fetchall():
        _, name, text = key.split(":", 2)
        out[(t, name)][calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))] += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--load-seconds", type=float, default=6.0)
    args = ap.parse_args()

    ports = [int(p) for p in os.environ["CITUS_PORTS"].split()]
    new = int(os.environ["CITUS_NEW_PORT"])
    base = os.environ["CITUS_BASE"]
    sock = os.environ["PGHOST"]
    old = ports[1]
    logdir = tempfile.mkdtemp(prefix="pg_baton-citus-rebalance-acks.")
    windows = fault.Windows()
    checker = fault.CitusChecker(logdir, windows, os.path.join(base, "n0", "log"))
    tally = driver.Tally()
    started = time.monotonic()

    groups = fault.setup()
    tenants = sorted(t for ts in groups.values() for t in ts)
    with psycopg.connect("", autocommit=True) as conn:
        for t in tenants:
            for name, target, every in SCHEDULES:
                conn.execute("SELECT baton.schedule(%s, %s, %s, %s)",
                             (t, name, target, "@every %d second%s" % (every, "s" if every > 1 else "")))
        before_place = placements(conn)
    print("%d tenants in %d shard groups, placed %s" % (
        len(tenants), len(groups), ", ".join("%d: %d" % kv for kv in sorted(before_place.items()))), flush=True)

    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    load_from = now()
    procs = driver.start_load(logdir, stop, fault.LOAD, fault.client_main)
    checker.dead_clients = lambda: [p.name for p in procs if p.exitcode not in (None, 0)]
    ops = []  # (name, start, end)
    new_group = None
    try:
        time.sleep(args.load_seconds)

        # --- 1. a fourth node, the shards rebalanced onto it (a background job) ---------
        t0, t1, error = operation([
            "SELECT pg_catalog.citus_add_node(%(sock)s, %(new)s)",
            "SELECT baton.distribute()",
            "SELECT pg_catalog.citus_rebalance_start()",
            "SELECT pg_catalog.citus_rebalance_wait()",
        ], {"sock": sock, "new": new})
        ops.append(("add a node, citus_rebalance_start, citus_rebalance_wait", t0, t1))
        tally.test("citus_add_node, distribute() again, citus_rebalance_start and citus_rebalance_wait, under load "
                   "(%.1f s)" % (t1 - t0), error is None, error or "")
        with psycopg.connect("", autocommit=True) as conn:
            p1 = placements(conn)
            new_group = one(conn, "SELECT groupid FROM pg_catalog.pg_dist_node WHERE nodeport = %s", (new,))
            job = conn.execute("SELECT state::text FROM pg_catalog.pg_dist_background_job "
                               "ORDER BY job_id DESC LIMIT 1").fetchone()
        tally.test("... the rebalance job finished and the new node holds shard groups (%s)"
                   % ", ".join("%d: %d" % kv for kv in sorted(p1.items())),
                   job is not None and job[0] == "finished" and p1.get(new, 0) > 0, "job %s" % (job,))
        time.sleep(args.load_seconds)

        # --- 2. the first worker drained --------------------------------------------------
        t0, t1, error = operation([
            "SELECT pg_catalog.citus_drain_node(%(sock)s, %(old)s, shard_transfer_mode => 'block_writes')",
        ], {"sock": sock, "old": old})
        ops.append(("citus_drain_node", t0, t1))
        with psycopg.connect("", autocommit=True) as conn:
            p2 = placements(conn)
        tally.test("citus_drain_node of worker %d (block_writes), under load (%.1f s)" % (old, t1 - t0),
                   error is None, error or "")
        tally.test("... it holds no shard group (%s)" % ", ".join("%d: %d" % kv for kv in sorted(p2.items())),
                   p2.get(old, 0) == 0 and sum(p2.values()) == len(groups))
        time.sleep(args.load_seconds)

        # --- 3. it takes shards again: rebalance_table_shards ------------------------------
        t0, t1, error = operation([
            "SELECT pg_catalog.citus_set_node_property(%(sock)s, %(old)s, 'shouldhaveshards', true)",
            "SELECT pg_catalog.rebalance_table_shards()",
        ], {"sock": sock, "old": old})
        ops.append(("rebalance_table_shards", t0, t1))
        with psycopg.connect("", autocommit=True) as conn:
            p3 = placements(conn)
        tally.test("rebalance_table_shards after the drain, under load (%.1f s)" % (t1 - t0), error is None,
                   error or "")
        tally.test("... worker %d holds shard groups again, every worker some (%s)"
                   % (old, ", ".join("%d: %d" % kv for kv in sorted(p3.items()))),
                   all(p3.get(p, 0) > 0 for p in ports[1:] + [new]) and sum(p3.values()) == len(groups))
        after_from = now()
        time.sleep(args.load_seconds)
        load_to = now()
    finally:
        driver.stop_load(procs, stop)
    for name, t0, t1 in ops:
        windows.add(name, t0, t1 + 1.0)

    # --- the invariants, load stopped --------------------------------------------------
    for name, ok, detail in checker.run():
        tally.test(name, ok, detail)
    acks = checker.acks
    with psycopg.connect("", autocommit=True) as conn:
        fault.check_stored(conn, acks, tally)
        where = {t: fault.group_nodes(conn, t) for t in tenants}
        spread = [t for t, w in where.items() if len(w) != 1]
        tally.test("every tenant's shards of every baton table on one node (groups moved whole)", not spread,
                   "split: %s" % ", ".join("%s %s" % (t[:8], where[t]) for t in spread))
        on_new = {t for t, w in where.items() if w == [new]}
        fired = fired_slots(conn)
        by_new = one(conn, "SELECT count(*) FROM baton.deliveries WHERE dedup_key LIKE 'schedule:%%' "
                           "AND id >> 48 = %s", (new_group,)) if new_group is not None else 0
        reapers = one(conn, "SELECT pg_catalog.string_agg(result, ' ' ORDER BY nodeport) FROM "
                            "pg_catalog.run_command_on_all_nodes($$SELECT count(*) FROM pg_catalog.pg_stat_activity "
                            "WHERE backend_type = 'pg_baton reaper' AND datname = pg_catalog.current_database()$$) "
                            "JOIN pg_catalog.pg_dist_node USING (nodeid)")
    tally.test("a background reaper on each of the four nodes (%s)" % reapers, reapers == "1 1 1 1", reapers)
    tally.test("the schedules of the tenants on the new node fire there (%d deliveries of its id range)" % by_new,
               by_new > 0)
    served = sum(1 for a in acks.by_kind.get("fin", []) if a["t"] in on_new and a["ts"] > ops[0][2])
    tally.test("tenants now on the new node were served there (%d finishes after the first rebalance)" % served,
               served > 0 and bool(on_new), "%d tenants there" % len(on_new))

    # --- each schedule slot once ------------------------------------------------------------
    every = {name: seconds for name, _, seconds in SCHEDULES}
    twice, skipped, excused, slots = [], [], 0, 0
    spans = [(t0 - EDGE, t1 + EDGE) for _, t0, t1 in ops]
    for (t, name), got in fired.items():
        slots += len(got)
        twice += ["%s %s %s x%d" % (t[:8], name, clock(s), n) for s, n in got.items() if n > 1]
        e = every[name]
        order = sorted(got)
        for slot in range(order[0] + e, order[-1], e):
            if slot in got:
                continue
            # Skipped: allowed only when its span meets an operation's window (writes to
            # the tenant may wait there; the firing after it fires the latest slot only).
            if any(w0 <= slot + e and slot <= w1 for w0, w1 in spans):
                excused += 1
            else:
                skipped.append("%s %s %s" % (t[:8], name, clock(slot)))
    tally.test("schedules fired for every tenant (%d of %d schedules, %d slots)"
               % (len(fired), len(tenants) * len(SCHEDULES), slots),
               len(fired) == len(tenants) * len(SCHEDULES))
    tally.test("each schedule slot stored once", not twice, "; ".join(twice[:5]))
    tally.test("no slot skipped outside the operations' windows (%d skipped within them)" % excused,
               not skipped, "%d: %s" % (len(skipped), "; ".join(skipped[:5])))

    # --- figures ---------------------------------------------------------------------------
    fins = sorted(a["ts"] for a in acks.by_kind.get("fin", []))

    def rate(*spans):
        n = sum(1 for ts in fins for t0, t1 in spans if t0 <= ts < t1)
        seconds = sum(t1 - t0 for t0, t1 in spans)
        return "%d finished in %.1f s: %.1f/s" % (n, seconds, n / seconds if seconds > 0 else 0.0)

    errors = {}
    for a in acks.by_kind.get("err", []):
        w = windows.of(a["ts"])
        errors.setdefault(w, {})
        errors[w][a["s"]] = errors[w].get(a["s"], 0) + 1
    print()
    print("===== citus rebalance figures (%.0f s) =====" % (time.monotonic() - started))
    print("throughput before the operations: %s" % rate((load_from + 1.0, ops[0][1])))
    for name, t0, t1 in ops:
        print("throughput during %s: %s" % (name, rate((t0, t1))))
    print("throughput during the operations, together: %s" % rate(*[(t0, t1) for _, t0, t1 in ops]))
    print("throughput after the operations: %s" % rate((after_from, load_to)))
    print("placements (port: shard groups): start %s; grown %s; drained %s; rebalanced %s" % tuple(
        ", ".join("%d: %d" % kv for kv in sorted(p.items())) for p in (before_place, p1, p2, p3)))
    print("acknowledged: %d operations; schedule slots fired %d (%d by the new node's id range)"
          % (acks.acknowledged(), slots, by_new))
    for w in [name for name, _, _ in ops] + ["outside"]:
        print("errors seen by clients, %s: %s" % (w, ", ".join(
            "%s %d" % kv for kv in sorted(errors.get(w, {}).items())) or "none"))
    fault.check_items(checker, tally, "an operation's window")
    return driver.close_run(tally, logdir)


def clock(epoch):
    return time.strftime("%H:%M:%SZ", time.gmtime(epoch))


if __name__ == "__main__":
    sys.exit(main())
