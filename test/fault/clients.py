"""The load of the fault suite: producers, delivery workers, run workers, a reaper, an
operator, a redriver, schedule firers, and the keyed producers and workers of the
keyed target (common.KEYED, its keys limited), each a separate OS process that runs
until the stop event is set.

Each client logs to its AckLog:
  - a "try" record (with the time it was sent) before a write whose effect may commit
    without the client hearing of it (a crash between commit and answer), and
  - an acknowledgement record once the server answered,
so the checker can tell an acknowledged operation (must be in the tables) from an
attempted one (may be). Every record of a write carries "ts", the time the call was sent.
"""

import json
import random
import time

from common import (COVERED_KEYS, KEYED, LIMITED_KEYS, ORDERED_KEY, PACED_KEY, TARGETS, WORKFLOW, AckLog,
                    Session, now)

# SQLSTATEs a client may legitimately get under faults; anything else is logged as
# "unexpected" and fails the suite.
EXPECTED = {
    "DU001",  # lease lost: reaped or taken over while the client was slow or the server down
    "DU002",  # the tenant was fenced
    "DU007",  # e.g. start_stage of a stage whose attempts are spent
    "40P01",  # a deadlock between a fence change and writers (documented in architecture.md)
}


class Client:
    """What every client has: a session, its log, the list of active tenants, counters."""

    def __init__(self, name, logdir, stop, seed):
        self.name = name
        self.stop = stop
        self.db = Session(name, stop)
        self.log = AckLog(logdir, name)
        self.rand = random.Random(seed)
        self.tenants = []
        self.tenants_at = 0.0
        self.errors = {}
        # A keyed client uses only the active tenants whose keyed target's limits are set.
        self.keyed = False

    def tenant(self):
        """A random active tenant (the list is refreshed every second and after DU002)."""
        if not self.tenants or now() - self.tenants_at > 1.0:
            self.refresh_tenants()
        return self.rand.choice(self.tenants) if self.tenants else None

    def active_tenants(self):
        """A random active tenant (tenant()) each time round, until the suite stops; naps
        while there is none."""
        while not self.stop.is_set():
            t = self.tenant()
            if t is None:
                self.nap(0.2)
                continue
            yield t

    def refresh_tenants(self):
        if self.keyed:
            r = self.db.call("SELECT t.tenant::text FROM baton.tenants t WHERE t.state = 'active' AND EXISTS "
                             "(SELECT 1 FROM baton.key_limits l WHERE l.tenant = t.tenant AND l.target = %s)",
                             (KEYED,))
        else:
            r = self.db.call("SELECT tenant::text FROM baton.tenants WHERE state = 'active'")
        if r[0] == "ok":
            self.tenants = [row[0] for row in r[1]]
            self.tenants_at = now()

    def refused(self, op, result):
        """Records an error answer; unexpected SQLSTATEs go to the log for the checker."""
        state = result[1]
        self.errors[state] = self.errors.get(state, 0) + 1
        if state == "DU002":
            self.tenants_at = 0.0
        if state not in EXPECTED:
            self.log.write("unexpected", op=op, sqlstate=state, msg=result[2], ts=now())

    def nap(self, seconds):
        self.stop.wait(seconds)

    def finish_up(self):
        self.log.write("stats", errors=self.errors, reconnects=self.db.reconnects)
        self.log.close()
        self.db.close()


def payload_of(key):
    """The payload of a dedup key is a function of the key, so a retried enqueue always
    sends the same one (a different one would be DU009)."""
    return json.dumps({"key": key, "size": len(key)})


def producer(c):
    """Enqueues deliveries with fresh dedup keys (retrying through crashes: enqueue is
    idempotent), submits workflow runs, and now and then enqueues an acknowledged key
    again, which must return the id it returned the first time; enqueues batches of
    four (enqueue_batch) and cancels some of its runs. Some keys are shared by
    all producers (one per half second), so that one key is enqueued (submitted)
    concurrently by several sessions."""
    n = 0
    acked = []
    runs = []
    for t in c.active_tenants():
        r = c.rand.random()
        if r < 0.05 and acked:
            t0, tg, key, first = c.rand.choice(acked)
            ts = now()
            res = c.db.call("SELECT baton.enqueue(%s, %s, %s, %s::jsonb)",
                            (t0, tg, key, payload_of(key)), retry=True)
            if res[0] == "ok":
                c.log.write("enq_again", t=t0, tg=tg, key=key, id=res[1][0][0], first=first, ts=ts)
            elif res[0] == "err":
                c.refused("enqueue again", res)
        elif r < 0.10:
            # A key every producer enqueues in the same half second, to the same tenant:
            # concurrent enqueues of one key must all return one id.
            t = min(c.tenants) if c.tenants else t
            tg = TARGETS[0]
            key = "shared-%d" % int(now() * 2)
            ts = now()
            c.log.write("enq_try", t=t, tg=tg, key=key, ts=ts)
            res = c.db.call("SELECT baton.enqueue(%s, %s, %s, %s::jsonb)",
                            (t, tg, key, payload_of(key)), retry=True)
            if res[0] == "ok":
                c.log.write("enq", t=t, tg=tg, key=key, id=res[1][0][0], ts=ts)
            elif res[0] == "err":
                c.refused("enqueue shared", res)
        elif r < 0.16:
            # A batch of four fresh keys: all or nothing, even when a crash cuts it off.
            n += 1
            tg = c.rand.choice(TARGETS)
            keys = ["%s-b%d-%d" % (c.name, n, i) for i in range(4)]
            items = json.dumps([{"target": tg, "dedup_key": k, "payload": json.loads(payload_of(k))}
                                for k in keys])
            ts = now()
            c.log.write("batch_try", t=t, tg=tg, keys=keys, ts=ts)
            res = c.db.call("SELECT id FROM baton.enqueue_batch(%s, %s::jsonb)", (t, items), retry=True)
            if res[0] == "ok":
                for k, row in zip(keys, res[1]):
                    c.log.write("enq", t=t, tg=tg, key=k, id=row[0], ts=ts)
            elif res[0] == "err":
                c.refused("enqueue_batch", res)
        elif r < 0.17 and runs:
            # Cancel one of the last runs this producer submitted (DU007 once it ended).
            t0, run = c.rand.choice(runs[-5:])
            ts = now()
            res = c.db.call("SELECT baton.cancel(%s, %s, 'fault suite')", (t0, run))
            if res[0] == "ok":
                c.log.write("cancel", t=t0, run=run, ts=ts)
            elif res[0] == "err":
                c.refused("cancel", res)
        elif r < 0.30:
            n += 1
            if c.rand.random() < 0.3:
                # Likewise for submit and its idempotency key.
                t = min(c.tenants) if c.tenants else t
                key = "shared-run-%d" % int(now() * 2)
            else:
                key = "%s-run-%d" % (c.name, n)
            inputs = json.dumps({"key": key})
            ts = now()
            c.log.write("sub_try", t=t, key=key, ts=ts)
            res = c.db.call("SELECT baton.submit(%s, %s, %s::jsonb, %s)::text",
                            (t, WORKFLOW, inputs, key), retry=True)
            if res[0] == "ok":
                c.log.write("sub", t=t, key=key, run=res[1][0][0], ts=ts)
                runs.append((t, res[1][0][0]))
            elif res[0] == "err":
                c.refused("submit", res)
        else:
            n += 1
            tg = c.rand.choice(TARGETS)
            key = "%s-%d" % (c.name, n)
            ts = now()
            c.log.write("enq_try", t=t, tg=tg, key=key, ts=ts)
            res = c.db.call("SELECT baton.enqueue(%s, %s, %s, %s::jsonb)",
                            (t, tg, key, payload_of(key)), retry=True)
            if res[0] == "ok":
                c.log.write("enq", t=t, tg=tg, key=key, id=res[1][0][0], ts=ts)
                acked.append((t, tg, key, res[1][0][0]))
            elif res[0] == "err":
                c.refused("enqueue", res)
        c.nap(0.012)


def settle(c, t, did, gen):
    """Finishes, fails or gives back one claimed delivery. finish is terminal-once, so it
    is repeated through a lost connection; retry is not (a second call is DU001)."""
    r = c.rand.random()
    if r < 0.85:
        outcome = "finished" if r < 0.78 else "failed"
        ts = now()
        c.log.write("fin_try", t=t, id=did, g=gen, o=outcome, ts=ts)
        res = c.db.call("SELECT baton.finish(%s, %s, %s, %s, %s::jsonb)",
                        (t, did, gen, outcome, json.dumps({"by": c.name, "g": gen})), retry=True)
        if res[0] == "ok":
            c.log.write("fin", t=t, id=did, g=gen, o=outcome, r=res[1][0][0], ts=ts)
        elif res[0] == "err":
            c.refused("finish", res)
    else:
        ts = now()
        c.log.write("retry_try", t=t, id=did, g=gen, ts=ts)
        res = c.db.call("SELECT baton.retry(%s, %s, %s, 'transient', '50 milliseconds')",
                        (t, did, gen))
        if res[0] == "ok":
            c.log.write("retry", t=t, id=did, g=gen, r=res[1][0][0], ts=ts)
        elif res[0] == "err":
            c.refused("retry", res)


def delivery_worker(c):
    """Claims up to three deliveries of a random tenant and target with a 2-second lease
    and settles each."""
    for t in c.active_tenants():
        tg = c.rand.choice(TARGETS)
        ts = now()
        res = c.db.call("SELECT id, generation FROM baton.claim(%s, %s, '2 seconds', 3)", (t, tg))
        if res[0] == "err":
            c.refused("claim", res)
            continue
        if res[0] != "ok":
            continue
        at = now()
        for did, gen in res[1]:
            c.log.write("claim", t=t, id=did, g=gen, ts=ts, at=at)
        for did, gen in res[1]:
            c.nap(c.rand.random() * 0.02)
            settle(c, t, did, gen)
        if not res[1]:
            c.nap(0.05)


def fair_worker(c):
    """Claims up to three deliveries of a target from every tenant at once (the fair claim,
    each row with its tenant) with a 2-second lease and settles each."""
    while not c.stop.is_set():
        tg = c.rand.choice(TARGETS)
        ts = now()
        res = c.db.call("SELECT tenant::text, id, generation FROM baton.claim_fair(%s, '2 seconds', 3)", (tg,))
        if res[0] == "err":
            c.refused("claim_fair", res)
            continue
        if res[0] != "ok":
            continue
        at = now()
        for t, did, gen in res[1]:
            c.log.write("claim", t=t, id=did, g=gen, ts=ts, at=at)
        for t, did, gen in res[1]:
            c.nap(c.rand.random() * 0.02)
            settle(c, t, did, gen)
        if not res[1]:
            c.nap(0.05)


def resolve_in_doubt(c, t, run, gen):
    """After taking a run over: every marker left in progress by an earlier owner is
    resolved by looking at the outside world (the action's row in public.fault_actions):
    done if the action happened, else retry (a later claim_marker takes it again)."""
    res = c.db.call('SELECT entry_id, "position", generation FROM baton.markers_in_doubt(%s, %s)', (t, run))
    if res[0] != "ok":
        if res[0] == "err":
            c.refused("markers_in_doubt", res)
        return
    for eid, pos, claimed_gen in res[1]:
        ts = now()
        r = c.db.call("SELECT EXISTS (SELECT 1 FROM public.fault_actions WHERE tenant = %s "
                      "AND entry_id = %s AND pos = %s)", (t, eid, pos))
        if r[0] != "ok":
            return
        outcome = "done" if r[1][0][0] else "retry"
        r = c.db.call('SELECT baton.resolve_marker(%s, %s, %s, %s, %s)', (t, eid, pos, gen, outcome))
        if r[0] == "ok":
            c.log.write("resolve", t=t, run=run, g=gen, eid=eid, pos=pos, claimed=claimed_gen,
                        outcome=outcome, ts=ts)
        elif r[0] == "err":
            c.refused("resolve_marker", r)


def side_effect(c, t, run, gen, sid):
    """The stage's one side effect, at most once: claim_marker in a transaction that
    first proves the run is still held (renew_run: DU001 otherwise, and the run stays
    locked until the claim commits); then, again under renew_run, the action's row is
    written only if complete_marker moves the marker to done, in the same transaction."""
    ts = now()
    res = c.db.transaction([
        ("SELECT baton.renew_run(%s, %s, %s, '3 seconds')", (t, run, gen)),
        ('SELECT baton.claim_marker(%s, %s, "position" => 0, kind => %s, operation_id => %s)',
         (t, sid, "side_effect", "%s:%d" % (run, sid))),
    ])
    if res[0] == "err":
        c.refused("claim_marker", res)
        return res[1] != "DU001"
    if res[0] != "ok" or not res[1][0][0]:
        return True
    c.log.write("mk", t=t, eid=sid, pos=0, ts=ts)
    ts = now()
    c.log.write("mkdone_try", t=t, eid=sid, pos=0, ts=ts)
    res = c.db.transaction([
        ("SELECT baton.renew_run(%s, %s, %s, '3 seconds')", (t, run, gen)),
        ("INSERT INTO public.fault_actions (tenant, entry_id, pos, worker, generation) "
         "SELECT %s, %s, 0, %s, %s WHERE baton.complete_marker(%s, %s, 0, 'done') RETURNING true",
         (t, sid, c.name, gen, t, sid)),
    ])
    if res[0] == "ok":
        c.log.write("mkdone", t=t, eid=sid, pos=0, r=bool(res[1]), ts=ts)
    elif res[0] == "err":
        c.refused("complete_marker", res)
        return res[1] != "DU001"
    return True


def run_stage(c, t, run, gen, sid):
    """Starts a stage, runs its side effect at most once, then completes or fails the
    stage. Returns False when the run is lost to this worker."""
    resolve_in_doubt(c, t, run, gen)
    ts = now()
    res = c.db.call("SELECT baton.start_stage(%s, %s, %s, %s)", (t, run, gen, sid), retry=True)
    if res[0] != "ok":
        if res[0] == "err":
            c.refused("start_stage", res)
        return False
    c.log.write("start", t=t, run=run, g=gen, sid=sid, ts=ts)
    if not side_effect(c, t, run, gen, sid):
        return False

    c.nap(c.rand.random() * 0.02)
    if c.rand.random() < 0.1:
        ts = now()
        res = c.db.call("SELECT baton.fail_stage(%s, %s, %s, %s, 'flaky', '100 milliseconds')",
                        (t, run, gen, sid))
        if res[0] == "ok":
            c.log.write("fail_stage", t=t, run=run, g=gen, sid=sid, ts=ts)
            return True
        if res[0] == "err":
            c.refused("fail_stage", res)
        return False
    result = json.dumps({"sid": sid, "g": gen})
    ts = now()
    c.log.write("cpl_try", t=t, run=run, g=gen, sid=sid, ts=ts)
    res = c.db.call("SELECT baton.complete_stage(%s, %s, %s, %s, %s::jsonb)",
                    (t, run, gen, sid, result), retry=True)
    if res[0] == "ok":
        c.log.write("cpl", t=t, run=run, g=gen, sid=sid, res=json.loads(result), ts=ts)
        return True
    if res[0] == "err":
        c.refused("complete_stage", res)
    return False


def run_worker(c):
    """Acquires the next runnable run of a random tenant and drives it: transition_stage,
    start_stage, the side effect under a marker, complete_stage; repeated until the run
    finishes or waits, then releases it."""
    for t in c.active_tenants():
        ts = now()
        res = c.db.call("SELECT run_id::text, generation FROM baton.acquire_next_run(%s, %s, %s, '3 seconds')",
                        (t, WORKFLOW, c.name))
        if res[0] == "err":
            c.refused("acquire_next_run", res)
            continue
        if res[0] != "ok" or not res[1]:
            c.nap(0.05)
            continue
        run, gen = res[1][0]
        c.log.write("acq", t=t, run=run, g=gen, ts=ts)
        held = True
        for _ in range(8):
            ts = now()
            res = c.db.call("SELECT kind, stage_id, stage, entry_seq, run_status "
                            "FROM baton.transition_stage(%s, %s, %s)", (t, run, gen), retry=True)
            if res[0] != "ok":
                if res[0] == "err":
                    c.refused("transition_stage", res)
                held = False
                break
            kind, sid, stage, seq, status = res[1][0]
            c.log.write("tr", t=t, run=run, g=gen, kind=kind, sid=sid, stage=stage, seq=seq,
                        status=status, ts=ts)
            if kind != "stage" or c.stop.is_set():
                break
            if not run_stage(c, t, run, gen, sid):
                held = False
                break
        if held:
            ts = now()
            res = c.db.call("SELECT baton.release_run(%s, %s, %s)", (t, run, gen))
            if res[0] == "ok":
                c.log.write("rel", t=t, run=run, g=gen, ts=ts)
            elif res[0] == "err":
                c.refused("release_run", res)


def reaper(c):
    """Returns expired leases fleet-wide every 300 ms."""
    while not c.stop.is_set():
        ts = now()
        res = c.db.call("SELECT baton.reap(1000)")
        if res[0] == "ok":
            if res[1][0][0]:
                c.log.write("reap", n=res[1][0][0], ts=ts)
        elif res[0] == "err":
            c.refused("reap", res)
        c.nap(0.3)


def cancel_logged(c, t, did):
    """cancel_delivery of one delivery, and in the same transaction the generation and
    status it left (the row stays locked by the cancel until the commit, so this is what
    committed). A repeated cancel answers the same and changes nothing, so a call cut off
    by a crash is sent again."""
    ts = now()
    c.log.write("dcancel_try", t=t, id=did, ts=ts)
    while not c.stop.is_set():
        r = c.db.transaction([
            ("SELECT baton.cancel_delivery(%s, %s, 'operator')", (t, did)),
            ("SELECT generation, status FROM baton.deliveries WHERE tenant = %s AND id = %s", (t, did)),
        ])
        if r[0] == "ok":
            g, st = r[1][0]
            c.log.write("dcancel", t=t, id=did, g=g, st=st, ts=ts, at=now())
            if st != "cancelled":
                c.log.write("unexpected", op="cancel_delivery", sqlstate="-", ts=ts,
                            msg="delivery %d is %s right after its cancel" % (did, st))
        elif r[0] == "err":
            c.refused("cancel_delivery", r)
        if r[0] != "lost":
            return
        c.nap(0.1)


def operator(c):
    """Cancels a pending or claimed delivery (half the time a claimed one: its holder is
    fenced) of a random tenant every 150 ms, racing the workers' claims and finishes, the
    reaper and the redriver. Not one of a run: its run waits for it."""
    for t in c.active_tenants():
        statuses = ["claimed"] if c.rand.random() < 0.5 else ["pending", "claimed"]
        res = c.db.call("SELECT id FROM baton.deliveries WHERE tenant = %s AND run_id IS NULL "
                        "AND status = ANY (%s) ORDER BY random() LIMIT 1", (t, statuses))
        if res[0] == "ok" and res[1]:
            cancel_logged(c, t, res[1][0][0])
        c.nap(0.15)


# The rows a redrive moved: those its own transaction wrote (xmin is its transaction id),
# read in that transaction, before the commit, with what redrive made of them.
MOVED_SQL = ("SELECT id, generation, status, attempts, settled_at IS NULL FROM baton.deliveries "
             "WHERE tenant = %s AND target = %s AND xmin = pg_current_xact_id_if_assigned()::text::xid "
             "ORDER BY id")


def redriver(c):
    """Every 250 ms, redrives failed and cancelled deliveries of a random tenant and
    target: half the time by ids (up to four of them, and one id of any status, which is
    skipped unless it is failed or cancelled), else the oldest by max_rows (1 to 4); on
    the keyed target always by ids, and never of the ordered key. The
    rows moved are read in the redrive's transaction (MOVED_SQL) and logged with it. Not
    repeated through a lost connection: its outcome is then unknown (the try record
    says what it might have moved, the end record by when)."""
    n = 0
    for t in c.active_tenants():
        tg = c.rand.choice(TARGETS + (KEYED,))
        ids, max_rows = None, c.rand.randint(1, 4)
        if tg == KEYED or c.rand.random() < 0.5:
            # The keyed target by ids only, none of the ordered key: a redriven delivery
            # of an ordered key would be claimed after later ones (K3).
            res = c.db.call("(SELECT id FROM baton.deliveries WHERE tenant = %s AND target = %s "
                            "AND status IN ('failed', 'cancelled') AND key IS DISTINCT FROM %s "
                            "ORDER BY random() LIMIT 4) UNION "
                            "(SELECT id FROM baton.deliveries WHERE tenant = %s AND target = %s "
                            "AND key IS DISTINCT FROM %s ORDER BY random() LIMIT 1)",
                            (t, tg, ORDERED_KEY, t, tg, ORDERED_KEY))
            if res[0] == "ok" and res[1]:
                ids = sorted(row[0] for row in res[1])
            elif tg == KEYED:
                c.nap(0.25)
                continue
        n += 1
        ts = now()
        c.log.write("redrive_try", t=t, tg=tg, ids=ids, max=max_rows, n=n, ts=ts)
        res = c.db.transaction([
            ("SELECT baton.redrive(%s, %s, %s::bigint[], %s)", (t, tg, ids, max_rows)),
            (MOVED_SQL, (t, tg)),
        ], every=True)
        if res[0] == "ok":
            count, moved = res[1][0][0][0], res[1][1]
            c.log.write("redrive", t=t, tg=tg, ids=ids, max=max_rows, n=n, ts=ts, at=now(),
                        moved=[list(row) for row in moved], count=count)
        else:
            # Refused (rolled back), or cut off: it committed by now, if at all.
            c.log.write("redrive_end", n=n, lost=res[0] != "err", at=now())
            if res[0] == "err":
                c.refused("redrive", res)
        c.nap(0.25)


# Set by the injector while a fault needs the schedules left alone (kill_fire).
FIRE_PAUSE = None


def firer(c):
    """Calls baton.fire_schedules() every 50 to 250 ms, as several schedulers (or the
    background worker and pg_cron) would at once; each call is logged with the time it
    was sent (before its transaction began) and the time it was answered (after its
    commit; or when it ended otherwise), the checker's evidence of when a slot could not
    be missed."""
    n = 0
    while not c.stop.is_set():
        if FIRE_PAUSE is not None and FIRE_PAUSE.is_set():
            c.nap(0.1)
            continue
        n += 1
        ts = now()
        c.log.write("fire_try", n=n, ts=ts)
        res = c.db.call("SELECT baton.fire_schedules()")
        if res[0] == "ok":
            c.log.write("fire", n=n, fired=res[1][0][0], ts=ts, at=now())
        else:
            # Refused, or cut off (a crash): it ended by now without a commit.
            c.log.write("fire_end", n=n, ts=ts, at=now())
            if res[0] == "err":
                c.refused("fire_schedules", res)
        c.nap(0.05 + c.rand.random() * 0.2)


# --- the keyed load ----------------------------------------------------------------------

KEYED_LEASE = 2.0  # seconds: the keyed workers' lease


def keyed_payload(dedup_key, key):
    """The payload of a keyed delivery names its key (claims return the payload, so the
    worker logs the key it claimed); a function of the dedup key's call, so that a call
    sent again sends the same."""
    return json.dumps({"key": dedup_key, "lk": key})


def keyed_enqueue(c, t, key, priority):
    """One delivery of key (None: no key) on the keyed target, by enqueue_keyed (enqueue
    without a key); sent again through a lost connection (idempotent). Logged like the
    other producers' enqueues (I1), with the key (lk)."""
    c.n += 1
    dedup = "%s-%d" % (c.name, c.n)
    ts = now()
    c.log.write("enq_try", t=t, tg=KEYED, key=dedup, lk=key, ts=ts)
    if key is None:
        res = c.db.call("SELECT baton.enqueue(%s, %s, %s, %s::jsonb, priority => %s)",
                        (t, KEYED, dedup, keyed_payload(dedup, key), priority), retry=True)
    else:
        res = c.db.call("SELECT baton.enqueue_keyed(%s, %s, %s, %s, %s::jsonb, priority => %s)",
                        (t, KEYED, dedup, key, keyed_payload(dedup, key), priority), retry=True)
    if res[0] == "ok":
        c.log.write("enq", t=t, tg=KEYED, key=dedup, lk=key, id=res[1][0][0], ts=ts)
    elif res[0] == "err":
        c.refused("enqueue_keyed", res)


def keyed_batch(c, t, keys, priorities):
    """One enqueue_batch on the keyed target, an item per key (None: an item without
    "key"), all or nothing; sent again through a lost connection."""
    c.n += 1
    dedups = ["%s-b%d-%d" % (c.name, c.n, i) for i in range(len(keys))]
    items = []
    for dedup, key, priority in zip(dedups, keys, priorities):
        item = {"target": KEYED, "dedup_key": dedup, "payload": json.loads(keyed_payload(dedup, key)),
                "priority": priority}
        if key is not None:
            item["key"] = key
        items.append(item)
    ts = now()
    c.log.write("batch_try", t=t, tg=KEYED, keys=dedups, ts=ts)
    res = c.db.call("SELECT id FROM baton.enqueue_batch(%s, %s::jsonb)", (t, json.dumps(items)), retry=True)
    if res[0] == "ok":
        for dedup, key, row in zip(dedups, keys, res[1]):
            c.log.write("enq", t=t, tg=KEYED, key=dedup, lk=key, id=row[0], ts=ts)
    elif res[0] == "err":
        c.refused("enqueue_batch keyed", res)


# More deliveries waiting on limits than this (in active tenants): the keyed producers
# pause, so that the backlog stays bounded however long the suite runs.
KEYED_BACKLOG = 300
PACE_BURST_ITEMS = 20  # a burst of the paced key: more than its rate + burst


def keyed_producer(c):
    """Enqueues deliveries on the keyed target of the tenants whose limits are set:
    enqueue_keyed of a key limited to 2 or of a key under the target's limit (45%); an
    enqueue_batch of four items of random keys, the paced key among them, some without a
    key (15%); enqueue_keyed of the paced key (5%); an enqueue without a key (5%); at
    random priorities. The first producer alone enqueues the ordered key (20%: one, or a
    batch of three): its id order is its enqueue order only while its enqueues do not
    overlap. The second adds a burst of 20 deliveries of the paced key to a random
    tenant every 1.5 to 2.5 s, more than the key's rate + burst, so that a pace not kept
    shows in K4. While more than KEYED_BACKLOG deliveries wait on limits, it naps."""
    c.keyed = True
    c.n = 0
    first = c.name.endswith("-1")
    burster = c.name.endswith("-2")
    backlog, backlog_at, next_burst = 0, 0.0, now() + 1.0
    any_key = LIMITED_KEYS + COVERED_KEYS
    for t in c.active_tenants():
        if now() - backlog_at > 1.0:
            res = c.db.call("SELECT count(*) FROM baton.key_waiting w JOIN baton.tenants t USING (tenant) "
                            "WHERE t.state = 'active'")
            if res[0] == "ok":
                backlog, backlog_at = res[1][0][0], now()
        if burster and now() >= next_burst:
            next_burst = now() + 1.5 + c.rand.random()
            keyed_batch(c, t, [PACED_KEY] * PACE_BURST_ITEMS, [0] * PACE_BURST_ITEMS)
            continue
        if backlog > KEYED_BACKLOG:
            c.nap(0.2)
            continue
        r = c.rand.random()
        if first and r < 0.2:
            if c.rand.random() < 0.7:
                keyed_enqueue(c, t, ORDERED_KEY, c.rand.randint(0, 5))
            else:
                keyed_batch(c, t, [ORDERED_KEY] * 3, [c.rand.randint(0, 5) for _ in range(3)])
        elif r < 0.65:
            keyed_enqueue(c, t, c.rand.choice(any_key), c.rand.randint(0, 3))
        elif r < 0.80:
            keys = [c.rand.choice(any_key + (PACED_KEY, None)) for _ in range(4)]
            keyed_batch(c, t, keys, [c.rand.randint(0, 3) for _ in keys])
        elif r < 0.85:
            keyed_enqueue(c, t, PACED_KEY, 0)
        elif r < 0.90:
            keyed_enqueue(c, t, None, c.rand.randint(0, 3))
        c.nap(0.01 + c.rand.random() * 0.01)


def keyed_bulk_producer(c):
    """Enqueues batches of 16 deliveries on the keyed target (a key limited to 2, a key
    under the target's limit or none; not the ordered or the paced key), for the long
    runs that count claims (run.sh --claims); it naps while more than KEYED_BACKLOG
    deliveries wait on limits, as keyed_producer does."""
    c.keyed = True
    c.n = 0
    backlog, backlog_at = 0, 0.0
    keys = LIMITED_KEYS + COVERED_KEYS + (None,)
    for t in c.active_tenants():
        if now() - backlog_at > 1.0:
            res = c.db.call("SELECT count(*) FROM baton.key_waiting w JOIN baton.tenants t USING (tenant) "
                            "WHERE t.state = 'active'")
            if res[0] == "ok":
                backlog, backlog_at = res[1][0][0], now()
        if backlog > KEYED_BACKLOG:
            c.nap(0.2)
            continue
        batch = [c.rand.choice(keys) for _ in range(16)]
        keyed_batch(c, t, batch, [c.rand.randint(0, 3) for _ in batch])
        c.nap(0.01)


def keyed_finish(c, t, did, gen, outcome):
    """finish of one claimed keyed delivery; repeated through a lost connection
    (terminal-once)."""
    ts = now()
    c.log.write("fin_try", t=t, id=did, g=gen, o=outcome, ts=ts)
    res = c.db.call("SELECT baton.finish(%s, %s, %s, %s)", (t, did, gen, outcome), retry=True)
    if res[0] == "ok":
        c.log.write("fin", t=t, id=did, g=gen, o=outcome, r=res[1][0][0], ts=ts, at=now())
    elif res[0] == "err":
        c.refused("finish", res)


def keyed_finish_batch(c, t, pairs):
    """finish_batch of several claimed deliveries of one tenant; repeated through a lost
    connection (each pair answers its stored status again). A pair that answers
    lease_lost (the reaper or a cancel took it) is not acknowledged."""
    ts = now()
    for did, gen in pairs:
        c.log.write("fin_try", t=t, id=did, g=gen, o="finished", ts=ts)
    res = c.db.call("SELECT id, status FROM baton.finish_batch(%s, %s::bigint[], %s::bigint[])",
                    (t, [p[0] for p in pairs], [p[1] for p in pairs]), retry=True)
    if res[0] == "ok":
        at = now()
        gens = dict(pairs)
        for did, status in res[1]:
            if status in ("finished", "failed"):
                c.log.write("fin", t=t, id=did, g=gens[did], o="finished", r=status, ts=ts, at=at)
    elif res[0] == "err":
        c.refused("finish_batch", res)


def keyed_retry(c, t, did, gen):
    """retry of one claimed delivery with a 50 ms delay; not repeated (a second call is
    DU001)."""
    ts = now()
    c.log.write("retry_try", t=t, id=did, g=gen, ts=ts)
    res = c.db.call("SELECT baton.retry(%s, %s, %s, 'transient', '50 milliseconds')", (t, did, gen))
    if res[0] == "ok":
        c.log.write("retry", t=t, id=did, g=gen, r=res[1][0][0], ts=ts, at=now())
    elif res[0] == "err":
        c.refused("retry", res)


def keyed_worker(c):
    """Claims deliveries of the keyed target with a 2-second lease: baton.claim of one
    tenant, one row (30%), up to four (25%) or eight (25%), or baton.claim_fair of every
    tenant, up to eight (20%). Each claim is logged with the key of its delivery (from the payload),
    the time sent and answered and its lease_until. It holds them 0 to 30 ms (leases
    overlap, so a limit not kept shows in K1), then settles them: retry with a 50 ms
    delay (12%), finish 'failed' (3%), else finished: several of one tenant by one
    finish_batch, one by finish. The second worker runs with baton.direct_access off
    (the statements rather than the direct heap access: the other claim path)."""
    c.keyed = True
    if c.name.endswith("-2"):
        c.db.options = "-c baton.direct_access=off"
    lease = "%g seconds" % KEYED_LEASE
    for t in c.active_tenants():
        r = c.rand.random()
        ts = now()
        if r < 0.2:
            res = c.db.call("SELECT tenant::text, id, generation, payload->>'lk', "
                            "extract(epoch FROM lease_until)::float8 FROM baton.claim_fair(%s, %s, 8)", (KEYED, lease))
            what = "claim_fair"
        else:
            res = c.db.call("SELECT %s::text, id, generation, payload->>'lk', "
                            "extract(epoch FROM lease_until)::float8 FROM baton.claim(%s, %s, %s, %s)",
                            (t, t, KEYED, lease, 1 if r < 0.5 else 4 if r < 0.75 else 8))
            what = "claim"
        if res[0] == "err":
            c.refused(what, res)
            continue
        if res[0] != "ok":
            continue
        at = now()
        rows = res[1]
        for tt, did, gen, key, until in rows:
            c.log.write("claim", t=tt, id=did, g=gen, tg=KEYED, lk=key, lu=until, ts=ts, at=at)
        if not rows:
            c.nap(0.03)
            continue
        c.nap(c.rand.random() * 0.03)
        finished = {}
        for tt, did, gen, key, until in rows:
            x = c.rand.random()
            if x < 0.12:
                keyed_retry(c, tt, did, gen)
            elif x < 0.15:
                keyed_finish(c, tt, did, gen, "failed")
            else:
                finished.setdefault(tt, []).append((did, gen))
        for tt, pairs in finished.items():
            if len(pairs) == 1:
                keyed_finish(c, tt, pairs[0][0], pairs[0][1], "finished")
            else:
                keyed_finish_batch(c, tt, pairs)


ROLES = {"producer": producer, "dworker": delivery_worker, "fworker": fair_worker, "rworker": run_worker, "reaper": reaper,
         "operator": operator, "redriver": redriver, "firer": firer, "kproducer": keyed_producer,
         "kworker": keyed_worker, "kbulk": keyed_bulk_producer}


def client_main(role, name, logdir, stop, seed):
    """Entry point of a client process."""
    c = Client(name, logdir, stop, seed)
    try:
        ROLES[role](c)
    finally:
        c.finish_up()


def frozen_main(name, logdir, tenant, pipe, seed):
    """A worker that will be frozen (SIGSTOP) while it holds a delivery lease and a run
    lease of one second each. It reports what it holds through the pipe, waits for "go",
    then makes its late calls and reports their SQLSTATEs (the contract says DU001)."""
    import threading
    stop = threading.Event()
    c = Client(name, logdir, stop, seed)
    held = {}
    try:
        deadline = time.monotonic() + 20
        while "delivery" not in held and time.monotonic() < deadline:
            tg = c.rand.choice(TARGETS)
            ts = now()
            res = c.db.call("SELECT id, generation FROM baton.claim(%s, %s, '1 second', 1)", (tenant, tg))
            if res[0] == "ok" and res[1]:
                did, gen = res[1][0]
                c.log.write("claim", t=tenant, id=did, g=gen, ts=ts)
                held["delivery"] = (did, gen)
            else:
                time.sleep(0.05)
        attempt = 0
        while "run" not in held and time.monotonic() < deadline:
            # A run of its own (no producer cancels it), acquired by id; a fresh one when
            # a run worker took it first.
            attempt += 1
            key = "%s-%d" % (name, attempt)
            ts = now()
            res = c.db.call("SELECT baton.submit(%s, %s, '{}'::jsonb, %s)::text", (tenant, WORKFLOW, key))
            if res[0] != "ok":
                time.sleep(0.05)
                continue
            run = res[1][0][0]
            c.log.write("sub", t=tenant, key=key, run=run, ts=ts)
            ts = now()
            res = c.db.call("SELECT baton.acquire_run(%s, %s, %s, '1 second')", (tenant, run, name))
            if res[0] != "ok" or res[1][0][0] is None:
                time.sleep(0.05)
                continue
            gen = res[1][0][0]
            c.log.write("acq", t=tenant, run=run, g=gen, ts=ts)
            ts = now()
            res = c.db.call("SELECT kind, stage_id, stage, entry_seq, run_status "
                            "FROM baton.transition_stage(%s, %s, %s)", (tenant, run, gen))
            if res[0] != "ok":
                continue
            kind, sid, stage, seq, status = res[1][0]
            c.log.write("tr", t=tenant, run=run, g=gen, kind=kind, sid=sid, stage=stage, seq=seq,
                        status=status, ts=ts)
            if kind != "stage":
                continue
            ts = now()
            res = c.db.call("SELECT baton.start_stage(%s, %s, %s, %s)", (tenant, run, gen, sid))
            if res[0] != "ok":
                continue
            c.log.write("start", t=tenant, run=run, g=gen, sid=sid, ts=ts)
            # Its side effect's marker, claimed and left in progress: in doubt after the
            # takeover, for the new owner to resolve.
            ts = now()
            res = c.db.call('SELECT baton.claim_marker(%s, %s, "position" => 0, kind => %s)',
                            (tenant, sid, "side_effect"))
            if res[0] == "ok" and res[1][0][0]:
                c.log.write("mk", t=tenant, eid=sid, pos=0, ts=ts)
            held["run"] = (run, gen, sid)
        pipe.send(held)
        if len(held) < 2:
            return
        pipe.recv()  # "go": sent after the parent has resumed this process
        answers = {}
        did, gen = held["delivery"]
        ts = now()
        c.log.write("fin_try", t=tenant, id=did, g=gen, o="finished", ts=ts)
        res = c.db.call("SELECT baton.finish(%s, %s, %s)", (tenant, did, gen))
        answers["finish"] = res[1] if res[0] == "err" else res[0] + ":" + repr(res[1:])
        if res[0] == "ok":
            c.log.write("fin", t=tenant, id=did, g=gen, o="finished", r=res[1][0][0], ts=ts)
        run, rgen, sid = held["run"]
        # The other calls that carry the superseded generations: DU001 each.
        late = [
            ("renew", "SELECT baton.renew(%s, %s, %s, '1 second')", (tenant, did, gen)),
            ("retry", "SELECT baton.retry(%s, %s, %s, 'late')", (tenant, did, gen)),
            ("transition_stage", "SELECT kind FROM baton.transition_stage(%s, %s, %s)", (tenant, run, rgen)),
            ("start_stage", "SELECT baton.start_stage(%s, %s, %s, %s)", (tenant, run, rgen, sid)),
            ("fail_stage", "SELECT baton.fail_stage(%s, %s, %s, %s, 'late')", (tenant, run, rgen, sid)),
            ("renew_run", "SELECT baton.renew_run(%s, %s, %s, '1 second')", (tenant, run, rgen)),
            ("release_run", "SELECT baton.release_run(%s, %s, %s)", (tenant, run, rgen)),
        ]
        others = {}
        for call, sql, params in late:
            res = c.db.call(sql, params)
            others[call] = res[1] if res[0] == "err" else res[0]
        # The late side effect, done as run workers do it (under renew_run): DU001, and
        # no action row.
        res = c.db.transaction([
            ("SELECT baton.renew_run(%s, %s, %s, '3 seconds')", (tenant, run, rgen)),
            ("INSERT INTO public.fault_actions (tenant, entry_id, pos, worker, generation) "
             "SELECT %s, %s, 0, %s, %s WHERE baton.complete_marker(%s, %s, 0, 'done') RETURNING true",
             (tenant, sid, name, rgen, tenant, sid)),
        ])
        others["marker action"] = res[1] if res[0] == "err" else res[0]
        answers["others"] = others
        ts = now()
        c.log.write("cpl_try", t=tenant, run=run, g=rgen, sid=sid, ts=ts)
        res = c.db.call("SELECT baton.complete_stage(%s, %s, %s, %s, '{\"late\": true}'::jsonb)",
                        (tenant, run, rgen, sid))
        answers["complete_stage"] = res[1] if res[0] == "err" else res[0] + ":" + repr(res[1:])
        if res[0] == "ok":
            c.log.write("cpl", t=tenant, run=run, g=rgen, sid=sid, res={"late": True}, ts=ts)
        pipe.send(answers)
    finally:
        c.finish_up()
