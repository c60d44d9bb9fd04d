"""The checker's self-test: after the load has stopped and the final check has passed,
each sabotage below breaks the data the way its invariant forbids, writing directly as
superuser with session_replication_role = replica (no fence trigger, no foreign-key
trigger fires), and the checker must then report that invariant as failed. A self-test
passes when the checker catches its sabotage; so every invariant is shown able to fail.
"""

import json
import os
import signal
import time

import psycopg

from common import KEYED, ORDERED_KEY, PACE_BURST, PACE_RATE, PACED_KEY


def sabotages(acks, inj, checker):
    """(invariant, what, text the invariant's report must then contain, the sabotage:
    [(sql, params)], a callable, or None for a SIGSEGV) for each sabotage."""
    out = []
    enq = acks.by_kind.get("enq", [])
    fin = acks.by_kind.get("fin", [])
    claims = acks.by_kind.get("claim", [])
    fin_ids = {(a["t"], a["id"]) for a in fin}
    if enq:
        a = enq[len(enq) // 2]
        out.append(("I1", "an acknowledged delivery deleted", "is missing",
                    [("DELETE FROM baton.deliveries WHERE tenant = %s AND id = %s", (a["t"], a["id"]))]))
    if fin:
        a = fin[len(fin) // 3]
        out.append(("I2", "a finished delivery moved to the next generation", "settled at generation",
                    [("UPDATE baton.deliveries SET generation = generation + 1 "
                      "WHERE tenant = %s AND id = %s", (a["t"], a["id"]))]))
    pick = [a for a in claims if a["g"] >= 1 and (a["t"], a["id"]) not in fin_ids]
    if pick:
        a = pick[0]
        out.append(("I3", "a claimed delivery's generation set back to 0", "had reached",
                    [("UPDATE baton.deliveries SET generation = 0 WHERE tenant = %s AND id = %s",
                      (a["t"], a["id"]))]))
    if enq:
        t = enq[0]["t"]
        out.append(("I4", "a finished delivery nobody claimed", "was never claimed",
                    [("INSERT INTO baton.deliveries (tenant, target, dedup_key, status, generation, attempts) "
                      "VALUES (%s, 'alpha', 'sabotage-finished', 'finished', 7, 1)", (t,))]))
    out.append(("I5", "a run's chain broken (a later stage loses its predecessor)", "first stages",
                [("UPDATE baton.stages SET predecessor_id = NULL WHERE (tenant, id) IN "
                  "(SELECT tenant, id FROM baton.stages WHERE predecessor_id IS NOT NULL LIMIT 1)", ())]))
    out.append(("I6", "a marker's action done twice", "ran 2 times",
                [("INSERT INTO public.fault_actions (tenant, entry_id, pos, worker, generation) "
                  "SELECT tenant, entry_id, pos, 'sabotage', generation FROM public.fault_actions LIMIT 1", ())]))
    if inj.fenced:
        t = next(iter(inj.fenced))
        out.append(("I7", "a row of a fenced tenant written after its fence", "rows written after its fence",
                    [("UPDATE baton.deliveries SET priority = priority WHERE (tenant, id) IN "
                      "(SELECT tenant, id FROM baton.deliveries WHERE tenant = %s LIMIT 1)", (t,))]))
        out.append(("I7", "a write acknowledged to a client that sent it after the fence", "after the fence committed, acknowledged",
                    lambda: forge_ack(acks.logdir, t, inj.fenced[t]["ts"] + 0.5)))
    out += fleet_sabotages(acks, checker)
    out += key_sabotages(acks)
    out.append(("I8", "a backend crashed by SIGSEGV", "signal 11", None))
    return out


def fleet_sabotages(acks, checker):
    """The sabotages of cancel, redrive and the schedules (I2, I9, I10)."""
    out = []
    claims = [a for a in acks.by_kind.get("claim", []) if a["g"] >= 2 and "at" in a]
    if claims:
        a = claims[len(claims) // 2]
        stale = {"k": "fin", "t": a["t"], "id": a["id"], "g": a["g"] - 1, "o": "finished", "r": "finished",
                 "ts": a["at"] + 0.001}
        out.append(("I2", "a finish by the generation before the last claim's, sent after that claim",
                    "sent after generation", lambda: forge(acks.logdir, stale)))
    # A cancel that no redrive, acknowledged or cut off, may have undone.
    cancels = [a for a in acks.by_kind.get("dcancel", []) if not checker.redriven_after(a["t"], a["id"], a["ts"])]
    if cancels:
        a = cancels[len(cancels) // 2]
        out.append(("I9", "a cancelled delivery pending again with no redrive", "no redrive came after",
                    [("UPDATE baton.deliveries SET status = 'pending', settled_at = NULL "
                      "WHERE tenant = %s AND id = %s AND status = 'cancelled'", (a["t"], a["id"]))]))
    out.append(("I10", "a schedule slot's key stored twice (on another target)", "stored 2 times",
                [("INSERT INTO baton.deliveries (tenant, target, dedup_key) SELECT tenant, 'sabotage', dedup_key "
                  "FROM baton.deliveries WHERE dedup_key LIKE 'schedule:tick:%%' ORDER BY id DESC LIMIT 1", ())]))
    out.append(("I10", "a schedule slot skipped while a call ran within it", "skipped, though",
                lambda: skip_slot(checker)))
    return out


def key_sabotages(acks):
    """The sabotages of keys and their limits (K1-K4): rows written past a limit, a
    count that disagrees with the rows, and (in a client log, of deliveries that do not
    exist, of a tenant that does not exist, so that nothing else explains or mixes with
    them) claims that break a limit over time."""
    out = []
    claims = [a for a in acks.by_kind.get("claim", []) if a.get("tg") == KEYED]
    if not claims:
        return out
    t = claims[-1]["t"]
    base = time.time() - 60
    fake = 10 ** 12

    def claim(did, ts, key):
        return {"k": "claim", "t": "00000000-0000-0000-0000-00000000f0f0", "id": did, "g": 1, "tg": KEYED,
                "lk": key, "lu": ts + 2.0, "ts": ts, "at": ts + 0.001}

    out.append(("K1", "three deliveries of a key limited to 2 leased at once (rows)", "deliveries leased, max_leased",
                [("UPDATE baton.deliveries SET status = 'claimed', lease_until = now() + interval '1 hour' "
                  "WHERE (tenant, id) IN (SELECT tenant, id FROM baton.deliveries WHERE target = %s AND key = 'k1' "
                  "AND tenant = (SELECT tenant FROM baton.deliveries WHERE target = %s AND key = 'k1' "
                  "GROUP BY tenant HAVING count(*) >= 3 LIMIT 1) LIMIT 3)", (KEYED, KEYED))]))
    out.append(("K1", "three leases of a key limited to 2 held at once (claims logged)", "certainly held at once",
                lambda: sum(forge(acks.logdir, claim(fake + i, base + i * 0.01, "k2")) for i in range(3))))
    out.append(("K2", "a key's count of admitted deliveries raised", "key_slots.admitted",
                [("INSERT INTO baton.key_slots (tenant, target, key, admitted, ready, tokens, at) "
                  "VALUES (%s, %s, 'k3', 1, 0, 0, now()) ON CONFLICT (tenant, target, key) "
                  "DO UPDATE SET admitted = baton.key_slots.admitted + 1", (t, KEYED))]))
    out.append(("K3", "an ordered key's delivery claimed after a later one (claims logged)", "claim was answered",
                lambda: forge(acks.logdir, claim(fake + 20, base + 10, ORDERED_KEY))
                + forge(acks.logdir, claim(fake + 10, base + 13, ORDERED_KEY))))
    out.append(("K4", "a paced key claimed %d times within a second (claims logged)" % (PACE_RATE + PACE_BURST + 1),
                "claims within",
                lambda: sum(forge(acks.logdir, claim(fake + 100 + i, base + 20 + i * 0.03, PACED_KEY))
                            for i in range(PACE_RATE + PACE_BURST + 1))))
    return out


def forge(logdir, record):
    """A client log line the checker must reject."""
    record["c"] = "selftest"
    with open(os.path.join(logdir, "selftest.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    return 1


def skip_slot(checker):
    """Deletes the delivery of a slot of schedule "tick" that a logged call proves was
    due and free (not the first or last slot of its schedule); returns rows deleted."""
    calls = sorted(checker.acks.fire_calls.values(), key=lambda c: c[0])
    with psycopg.connect("", autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tenant::text, id, extract(epoch FROM created_at)::float8 FROM baton.deliveries "
            "WHERE dedup_key LIKE 'schedule:tick:%' ORDER BY tenant, created_at").fetchall()
        for prev, row, after in zip(rows, rows[1:], rows[2:]):
            if prev[0] == row[0] == after[0] and checker.fire_proof(calls, int(row[2]), 1) is not None:
                conn.execute("SET session_replication_role = replica")
                return conn.execute("DELETE FROM baton.deliveries WHERE tenant = %s AND id = %s",
                                    (row[0], row[1])).rowcount
    return 0


def forge_ack(logdir, tenant, ts):
    """A client log line as if an enqueue sent after the fence had been acknowledged."""
    return forge(logdir, {"k": "enq", "t": tenant, "tg": "alpha", "key": "selftest-after-fence", "id": 0, "ts": ts})


def run(checker, inj, tally):
    """Applies each sabotage in turn and checks that its invariant now fails."""
    print("checker self-test (sabotages after the final check)", flush=True)
    for inv, what, expect, statements in sabotages(checker.acks, inj, checker):
        with psycopg.connect("", autocommit=True) as conn:
            if statements is None:
                pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
                os.kill(pid, signal.SIGSEGV)
                time.sleep(0.5)
            elif callable(statements):
                if not statements():
                    tally.test("self-test: %s catches %s" % (inv, what), False, "the sabotage changed nothing")
                    continue
            else:
                conn.execute("SET session_replication_role = replica")
                changed = 0
                for sql, params in statements:
                    changed += conn.execute(sql, params).rowcount
                if changed == 0:
                    tally.test("self-test: %s catches %s" % (inv, what), False, "the sabotage changed no row")
                    continue
        inj.wait_ready()
        results = {name.split()[0]: (ok, detail) for name, ok, detail in checker.run()}
        ok, _ = results[inv]
        # The invariant may already fail from an earlier sabotage: this one must show in
        # the report by a problem of its own kind.
        mine = [p for p in checker.problems[inv] if expect in p]
        tally.test("self-test: %s catches %s" % (inv, what), not ok and bool(mine),
                   "the checker did not notice" if not mine else "")
        if mine:
            print("      (reported: %s)" % mine[0][:160], flush=True)
