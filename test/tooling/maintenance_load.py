"""The load of test/tooling/maintenance.sh, and its checker.

    maintenance_load.py run LOGDIR TENANT FENCED_TENANT
        producers, workers, a probe and a fence prober, each an OS process writing a
        JSON-lines log in LOGDIR; producers stop when LOGDIR/stop-produce exists, the
        others when LOGDIR/stop exists.
    maintenance_load.py check LOGDIR TENANT WINDOWS PRELOADED
        reads the logs, the maintenance windows (lines "command table start end", epoch
        seconds) and the table, and prints one line per check: "CHECK name|expected|actual",
        then "STALL command table ms op" (the longest probe call that overlapped each
        window) and "FIGURE name value".

The server (started by the shell script with the background reaper) reaps the leases
the workers let expire. Connections come from the environment (PGHOST, PGPORT, PGUSER,
PGDATABASE), as in test/fault.
"""

import json
import multiprocessing
import os
import random
import sys
import time

import psycopg

PRODUCERS = 2
WORKERS = 3
LEASE = "1 second"  # short: the workers that dawdle lose their lease to the reaper
EXPECTED = {"DU001"}  # the only refusal a worker may get: its lease was reaped


def connect(name):
    while True:
        try:
            return psycopg.connect("", autocommit=True, application_name="maint-" + name)
        except psycopg.OperationalError:
            time.sleep(0.2)


def call(conn, sql, params=()):
    """("ok", rows) or ("err", sqlstate, message)."""
    try:
        cur = conn.execute(sql, params)
        return ("ok", cur.fetchall() if cur.description is not None else [])
    except psycopg.Error as e:
        return ("err", getattr(e, "sqlstate", None) or "?", str(e).splitlines()[0] if str(e) else "")


class Log:
    def __init__(self, logdir, name):
        self.file = open(os.path.join(logdir, name + ".jsonl"), "a", buffering=1, encoding="utf-8")
        self.name = name

    def write(self, kind, **fields):
        fields["k"] = kind
        fields["c"] = self.name
        self.file.write(json.dumps(fields, separators=(",", ":")) + "\n")


def stopping(logdir, what="stop"):
    return os.path.exists(os.path.join(logdir, what))


def producer(logdir, tenant, n):
    name = "producer%d" % n
    conn, log, rand = connect(name), Log(logdir, name), random.Random(n)
    i = 0
    while not stopping(logdir, "stop-produce"):
        i += 1
        key = "%s-%d" % (name, i)
        # One in 40 is TOASTed (about 40 kB of hex digits); priorities 0 and 5.
        payload = {"i": i, "blob": os.urandom(20000).hex()} if i % 40 == 0 else {"i": i}
        prio = 5 if rand.random() < 0.2 else 0
        t0 = time.time()
        r = call(conn, "SELECT baton.enqueue(%s, 'load', %s, %s, priority => %s, max_attempts => 1000)",
                 (tenant, key, json.dumps(payload), prio))
        if r[0] == "ok":
            log.write("enq", key=key, id=r[1][0][0], ts=t0)
        else:
            log.write("unexpected", op="enqueue", sqlstate=r[1], msg=r[2], ts=t0)
        time.sleep(0.01)


def worker(logdir, tenant, n):
    name = "worker%d" % n
    conn, log, rand = connect(name), Log(logdir, name), random.Random(100 + n)
    while not stopping(logdir):
        t0 = time.time()
        r = call(conn, "SELECT id, generation FROM baton.claim(%s, 'load', %s, 10)", (tenant, LEASE))
        if r[0] != "ok":
            log.write("unexpected", op="claim", sqlstate=r[1], msg=r[2], ts=t0)
            time.sleep(0.05)
            continue
        if not r[1]:
            time.sleep(0.02)
            continue
        for rid, gen in r[1]:
            log.write("claim", id=rid, g=gen, ts=t0)
        if rand.random() < 0.03:
            time.sleep(1.3)  # past the lease: the reaper takes the batch back (or not yet)
        for rid, gen in r[1]:
            x = rand.random()
            if x < 0.06:
                op, sql, params = "retry", "SELECT baton.retry(%s, %s, %s, 'again', '0 seconds')", (tenant, rid, gen)
            elif x < 0.09:
                op, sql, params = "failed", "SELECT baton.finish(%s, %s, %s, 'failed')", (tenant, rid, gen)
            else:
                op, sql, params = "finished", "SELECT baton.finish(%s, %s, %s)", (tenant, rid, gen)
            t1 = time.time()
            s = call(conn, sql, params)
            if s[0] == "ok":
                log.write(op, id=rid, g=gen, status=s[1][0][0], ts=t1)
            elif s[1] in EXPECTED:
                log.write("lost", op=op, id=rid, g=gen, ts=t1)
            else:
                log.write("unexpected", op=op, sqlstate=s[1], msg=s[2], ts=t1)


def probe(logdir, tenant):
    """enqueue, claim, finish of its own target in a tight loop, each call timed: a
    claim right after its enqueue committed must return that row."""
    name = "probe"
    conn, log = connect(name), Log(logdir, name)
    i = 0
    while not stopping(logdir):
        i += 1
        key = "probe-%d" % i
        t0 = time.time()
        r = call(conn, "SELECT baton.enqueue(%s, 'probe', %s)", (tenant, key))
        t1 = time.time()
        log.write("call", op="enqueue", s=t0, e=t1, ok=r[0] == "ok")
        if r[0] != "ok":
            log.write("unexpected", op="probe-enqueue", sqlstate=r[1], msg=r[2], ts=t0)
            continue
        r = call(conn, "SELECT id, generation FROM baton.claim(%s, 'probe', '1 hour', 1)", (tenant,))
        t2 = time.time()
        log.write("call", op="claim", s=t1, e=t2, ok=r[0] == "ok")
        if r[0] != "ok":
            log.write("unexpected", op="probe-claim", sqlstate=r[1], msg=r[2], ts=t1)
            continue
        if not r[1]:
            log.write("miss", key=key, ts=t1)
            continue
        rid, gen = r[1][0]
        r = call(conn, "SELECT baton.finish(%s, %s, %s)", (tenant, rid, gen))
        t3 = time.time()
        log.write("call", op="finish", s=t2, e=t3, ok=r[0] == "ok")
        if r[0] != "ok":
            log.write("unexpected", op="probe-finish", sqlstate=r[1], msg=r[2], ts=t2)
        time.sleep(0.003)


def fence(logdir, fenced):
    """enqueue for a fenced tenant, over and over: DU002 every time."""
    name = "fence"
    conn, log = connect(name), Log(logdir, name)
    i = 0
    while not stopping(logdir):
        i += 1
        t0 = time.time()
        r = call(conn, "SELECT baton.enqueue(%s, 'w', %s)", (fenced, "fenced-%d" % i))
        log.write("fence", s=t0, e=time.time(), state="ok" if r[0] == "ok" else r[1])
        time.sleep(0.03)


def run(logdir, tenant, fenced):
    procs = [multiprocessing.Process(target=producer, args=(logdir, tenant, n)) for n in range(PRODUCERS)]
    procs += [multiprocessing.Process(target=worker, args=(logdir, tenant, n)) for n in range(WORKERS)]
    procs.append(multiprocessing.Process(target=probe, args=(logdir, tenant)))
    procs.append(multiprocessing.Process(target=fence, args=(logdir, fenced)))
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return 0 if all(p.exitcode == 0 for p in procs) else 1


def records(logdir):
    for f in sorted(os.listdir(logdir)):
        if f.endswith(".jsonl"):
            with open(os.path.join(logdir, f), encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        yield json.loads(line)


def check(logdir, tenant, windows_path, preloaded):
    out = []

    def chk(name, expected, actual):
        out.append("CHECK %s|%s|%s" % (name, expected, actual))

    recs = list(records(logdir))
    enq = {r["key"] for r in recs if r["k"] == "enq"}
    claims = [(r["id"], r["g"]) for r in recs if r["k"] == "claim"]
    settles = [r for r in recs if r["k"] in ("finished", "failed")]
    unexpected = [r for r in recs if r["k"] == "unexpected"]
    misses = [r for r in recs if r["k"] == "miss"]
    calls = [r for r in recs if r["k"] == "call"]
    fences = [r for r in recs if r["k"] == "fence"]
    for r in unexpected[:5]:
        print("# unexpected: %s" % json.dumps(r), file=sys.stderr)

    with psycopg.connect("", autocommit=True) as conn:
        rows = conn.execute(
            "SELECT dedup_key, id, status, generation FROM baton.deliveries WHERE tenant = %s AND target = 'load'",
            (tenant,)).fetchall()
        pending = conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'claimed')"
            " FROM baton.deliveries WHERE tenant = %s AND target IN ('load', 'probe')", (tenant,)).fetchone()
    by_key = {k: (i, s, g) for k, i, s, g in rows}
    expected_keys = enq | {"pre-%d" % i for i in range(1, preloaded + 1)}
    chk("every enqueued item is in the table (%d enqueued under load, %d before)" % (len(enq), preloaded),
        0, len(expected_keys - by_key.keys()))
    chk("no row beyond the enqueued items", 0, len(by_key.keys() - expected_keys))
    chk("every item settled (finished or failed) after the drain", 0,
        sum(1 for k in expected_keys if k in by_key and by_key[k][1] not in ("finished", "failed")))
    chk("nothing pending or claimed after the drain", "0 0", "%d %d" % pending)
    dup_claims = len(claims) - len(set(claims))
    chk("no (id, generation) claimed twice (%d claims)" % len(claims), 0, dup_claims)
    per_id = {}
    for s in settles:
        per_id.setdefault(s["id"], []).append(s)
    chk("no delivery settled twice (%d settles)" % len(settles), 0, sum(1 for v in per_id.values() if len(v) > 1))
    settled_ids = {by_key[k][0]: by_key[k] for k in by_key}
    mismatched = 0
    for rid, (i, status, gen) in settled_ids.items():
        got = per_id.get(rid)
        if got is None:
            continue  # settled by the shell's own checks (none on 'load') or by the reaper as failed
        if got[0]["g"] != gen or got[0]["status"] != status:
            mismatched += 1
    chk("each settled row holds the generation and outcome its one settling worker got", 0, mismatched)
    unsettled_by_worker = sum(1 for rid, (i, status, gen) in settled_ids.items()
                              if rid not in per_id and status == "finished")
    chk("every finished row was finished by a worker's acknowledged call", 0, unsettled_by_worker)
    chk("no unexpected error in the load", 0, len(unexpected))
    chk("every probe claim found the row enqueued just before it", 0, len(misses))
    chk("fence: every enqueue for the fenced tenant refused with DU002 (%d calls)" % len(fences), 0,
        sum(1 for f in fences if f["state"] != "DU002"))
    lost = sum(1 for r in recs if r["k"] == "lost")
    print("FIGURE claims %d" % len(claims))
    print("FIGURE settles %d" % len(settles))
    print("FIGURE retries %d" % sum(1 for r in recs if r["k"] == "retry"))
    print("FIGURE leases_lost %d" % lost)
    print("FIGURE probe_loops %d" % sum(1 for c in calls if c["op"] == "finish"))

    windows = []
    with open(windows_path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 4:
                windows.append((parts[0], parts[1], float(parts[2]), float(parts[3])))
    inside = [False] * len(calls)
    for cmd, table, s, e in windows:
        worst, op = 0.0, "-"
        for n, c in enumerate(calls):
            if c["s"] < e and c["e"] > s:
                inside[n] = True
                d = c["e"] - c["s"]
                if d > worst:
                    worst, op = d, c["op"]
        nf = sum(1 for f in fences if f["s"] < e and f["e"] > s)
        bad = sum(1 for f in fences if f["s"] < e and f["e"] > s and f["state"] != "DU002")
        print("STALL %s %s %.0f %s %.0f %d %d" % (cmd, table, worst * 1000, op, (e - s) * 1000, nf, bad))
    outside = [c["e"] - c["s"] for n, c in enumerate(calls) if not inside[n]]
    print("FIGURE probe_calls %d" % len(calls))
    print("FIGURE worst_call_outside_maintenance_ms %.0f" % (max(outside) * 1000 if outside else 0))
    for line in out:
        print(line)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        sys.exit(run(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
