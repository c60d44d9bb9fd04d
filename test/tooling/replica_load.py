#!/usr/bin/python3
"""Client load for test/tooling/replica.sh: workers that enqueue, claim, renew, finish,
retry and abandon deliveries (some with TOASTed payloads and results) and walk runs
through their stages (failing a stage once, markers on each), until STOP_FILE exists.

    replica_load.py DSN TENANT STOP_FILE WORKERS

Connects through libpq's environment (PGHOST, PGPORT, PGUSER) to database DSN. Prints one
line at the end: "op=count ..." over all workers, and "errors=N" for unexpected errors
(an SQLSTATE other than DU001, which a worker racing the reaper may get)."""
import os
import random
import sys
import threading
import time

import psycopg

db, tenant, stop_file, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
counts = {}
errors = []
lock = threading.Lock()


def count(op, n=1):
    with lock:
        counts[op] = counts.get(op, 0) + n


def big(seed):
    # About 64 kB of hardly compressible text: TOASTed, out of line.
    rnd = random.Random(seed)
    return "".join("%032x" % rnd.getrandbits(128) for _ in range(2000))


def deliveries(cur, wid, i):
    key = "w%d-%d" % (wid, i)
    payload = {"i": i}
    if i % 7 == 0:
        payload["blob"] = big(key)
    cur.execute("SELECT baton.enqueue(%s, 'load', %s, %s::jsonb)", (tenant, key, psycopg.types.json.Jsonb(payload)))
    count("enqueue")
    if i % 5 == 0:
        items = [{"target": "load", "dedup_key": "%s-b%d" % (key, j)} for j in range(3)]
        cur.execute("SELECT count(*) FROM baton.enqueue_batch(%s, %s::jsonb)", (tenant, psycopg.types.json.Jsonb(items)))
        count("enqueue_batch")
    cur.execute("SELECT id, generation FROM baton.claim(%s, 'load', '30 seconds', 4)", (tenant,))
    claimed = cur.fetchall()
    count("claim")
    batch_ids, batch_gens = [], []
    for n, (did, gen) in enumerate(claimed):
        r = (i + n) % 10
        if r == 0:
            # Abandoned with a short lease: the reaper returns it.
            cur.execute("SELECT baton.renew(%s, %s, %s, '1 second')", (tenant, did, gen))
            count("renew")
            count("abandon")
        elif r in (1, 2):
            cur.execute("SELECT baton.retry(%s, %s, %s, 'transient', '0 seconds')", (tenant, did, gen))
            count("retry")
        elif r == 3:
            cur.execute("SELECT baton.finish(%s, %s, %s, 'failed', '{\"why\": \"no\"}')", (tenant, did, gen))
            count("finish")
        elif r == 4:
            cur.execute("SELECT baton.finish(%s, %s, %s, 'finished', %s::jsonb)",
                        (tenant, did, gen, psycopg.types.json.Jsonb({"out": big(did)})))
            count("finish")
        elif r in (5, 6):
            batch_ids.append(did)
            batch_gens.append(gen)
        else:
            cur.execute("SELECT baton.finish(%s, %s, %s)", (tenant, did, gen))
            count("finish")
    if batch_ids:
        cur.execute("SELECT count(*) FROM baton.finish_batch(%s, %s, %s)", (tenant, batch_ids, batch_gens))
        count("finish_batch")


def workflow(cur, wid, i):
    cur.execute("SELECT baton.submit(%s, 'load_wf', %s::jsonb, %s)",
                (tenant, psycopg.types.json.Jsonb({"w": wid, "i": i}), "run-%d-%d" % (wid, i)))
    run_id = cur.fetchone()[0]
    count("submit")
    cur.execute("SELECT baton.acquire_run(%s, %s, %s, '30 seconds')", (tenant, run_id, "owner-%d" % wid))
    gen = cur.fetchone()[0]
    count("acquire_run")
    if i % 3 == 0:
        # Renewed, released and taken again: the old generation is fenced.
        cur.execute("SELECT baton.renew_run(%s, %s, %s, '30 seconds')", (tenant, run_id, gen))
        count("renew_run")
        cur.execute("SELECT baton.release_run(%s, %s, %s)", (tenant, run_id, gen))
        count("release_run")
        cur.execute("SELECT baton.acquire_run(%s, %s, %s, '30 seconds')", (tenant, run_id, "owner-%d" % wid))
        gen = cur.fetchone()[0]
        count("acquire_run")
    failed_once = False
    for _ in range(8):
        cur.execute("SELECT kind, stage_id, stage, run_status FROM baton.transition_stage(%s, %s, %s)",
                    (tenant, run_id, gen))
        kind, stage_id, stage, status = cur.fetchone()
        count("transition_stage")
        if kind == "finished":
            break
        if kind == "wait":
            continue
        cur.execute("SELECT baton.start_stage(%s, %s, %s, %s)", (tenant, run_id, gen, stage_id))
        count("start_stage")
        cur.execute("SELECT baton.claim_marker(%s, %s, \"position\" => 0, kind => 'act')", (tenant, stage_id))
        if cur.fetchone()[0]:
            cur.execute("SELECT baton.complete_marker(%s, %s, \"position\" => 0, state => 'done')", (tenant, stage_id))
            count("marker")
        if stage == "a" and not failed_once:
            cur.execute("SELECT baton.fail_stage(%s, %s, %s, %s, 'boom', '0 seconds')", (tenant, run_id, gen, stage_id))
            count("fail_stage")
            failed_once = True
            continue
        cur.execute("SELECT baton.complete_stage(%s, %s, %s, %s, %s::jsonb)",
                    (tenant, run_id, gen, stage_id, psycopg.types.json.Jsonb({"stage": stage, "i": i})))
        count("complete_stage")


def worker(wid):
    i = 0
    try:
        conn = psycopg.connect(dbname=db, autocommit=True, application_name="replica-load")
    except Exception as e:  # noqa: BLE001
        errors.append("connect: %s" % e)
        return
    with conn:
        cur = conn.cursor()
        while not os.path.exists(stop_file):
            i += 1
            try:
                deliveries(cur, wid, i)
                if i % 2 == 0:
                    workflow(cur, wid, i)
            except psycopg.Error as e:
                state = e.sqlstate or "?"
                if state == "DU001":
                    count("lease_lost")
                else:
                    errors.append("%s %s" % (state, str(e).splitlines()[0]))
                    time.sleep(0.05)


threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(" ".join("%s=%d" % kv for kv in sorted(counts.items())), "errors=%d" % len(errors))
for e in errors[:5]:
    print("error:", e)
