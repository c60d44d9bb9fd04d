"""The invariants, checked after every fault: the clients' acknowledgement logs against
the tables, read in one REPEATABLE READ snapshot.

The logs are read twice, before and after the snapshot. An acknowledgement read before
the snapshot was committed before it, so the snapshot must show it ("must be there"
checks use the first read); a row the snapshot shows was written by a call the client
had logged as attempted before sending it, so the second read explains it ("must be
explained" checks). Invariants (each one test per check):

  I1 acknowledged deliveries and runs exist exactly once
  I2 no delivery is finished twice or by a superseded generation
  I3 generations never go back
  I4 every finished delivery was claimed
  I5 every running run has exactly one current stage and an unbroken chain
  I6 no marker is done twice
  I7 nothing was written to a fenced tenant after its fence committed
  I8 no client got an unexpected error and no backend crashed by itself
  I9 an acknowledged cancel_delivery stands until a later redrive brings the delivery
     back, and nothing finishes it with the generation it had before; an acknowledged
     redrive made exactly what it moved pending, and that stands
  I10 every schedule slot is enqueued at most once, each fired slot is the latest at or
     before its firing, and no slot is skipped while a firing call ran within it
  K1 a key limited by max_leased never has more deliveries leased (an ordered key: one),
     in the snapshot and over time
  K2 each limited key's bookkeeping (baton.key_slots, baton.key_waiting, baton.ready)
     agrees with its deliveries
  K3 an ordered key's deliveries are claimed one at a time, in id order
  K4 a paced key's claims in any span of `per` are at most rate + burst

The keyed checks over time (K1, K3, K4) use the clients' times only: a claim is logged
with the time it was sent (before the server read its clock) and the time it was
answered (after its commit), an operation that may end a lease with the time it was
sent. Each takes as certain only what these bounds prove, so none can report a
violation that did not happen; each would report one that lasted longer than a call's
round trip (docs/internals/faults.md shows them failing on real claims with the limits removed).
"""

import bisect
import calendar
import glob
import json
import os
import re
import time
from collections import defaultdict

import psycopg

from common import KEY_LIMITS, KEYED, ORDERED_KEY, PACED_KEY as PACED
from inject import SNAPSHOT_SQL

WRITE_KINDS = {"enq", "sub", "claim", "fin", "retry", "acq", "tr", "start", "cpl", "mk", "mkdone", "resolve", "cancel",
               "fail_stage", "rel", "dcancel", "redrive"}

# A schedule's spec the checker knows the slots of: @every N second(s) (multiples of N
# seconds since 1970-01-01 UTC).
EVERY_SECONDS = re.compile(r"^@every (\d+) seconds?$")


class Acks:
    """Everything the clients logged so far, read incrementally from their files."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.offsets = {}
        self.records = []  # in reading order
        self.by_kind = defaultdict(list)
        self.attempted_fin = set()  # (t, id, g)
        self.claims = set()  # (t, id, g)
        self.stats = {}
        self.last_write = {}  # tenant -> latest send time of an acknowledged write
        self.redriven = defaultdict(list)  # (t, id) -> acknowledged redrives that moved it
        self.redrive_tries = {}  # (client, n) -> redrive sent, not acknowledged ("end": cut off by then)
        self.fire_calls = {}  # (client, n) -> (sent, ended or None while running, committed)
        self.keyed_claims = 0  # claims acknowledged of the keyed target
        self.end_tries = {}  # (t, id, g) -> earliest send time of a finish or retry at g
        self.cancel_tries = defaultdict(dict)  # (t, id) -> {(client, sent): answered, None until then}
        self.read_at = 0.0  # when the latest read began: a record not read by then was written later

    def read(self):
        """Reads the complete lines written since the last read; returns how many."""
        n = 0
        self.read_at = time.time()
        for path in sorted(glob.glob(os.path.join(self.logdir, "*.jsonl"))):
            off = self.offsets.get(path, 0)
            with open(path, "rb") as f:
                f.seek(off)
                data = f.read()
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[path] = off + end + 1
            for line in data[:end].split(b"\n"):
                rec = json.loads(line)
                self.records.append(rec)
                self.by_kind[rec["k"]].append(rec)
                if rec["k"] == "fin_try":
                    self.attempted_fin.add((rec["t"], rec["id"], rec["g"]))
                elif rec["k"] == "claim":
                    self.claims.add((rec["t"], rec["id"], rec["g"]))
                elif rec["k"] == "redrive_try":
                    self.redrive_tries[(rec["c"], rec["n"])] = rec
                elif rec["k"] == "redrive_end":
                    tried = self.redrive_tries.get((rec["c"], rec["n"]))
                    if tried is not None and rec["lost"]:
                        tried["end"] = rec["at"]
                    elif tried is not None:
                        del self.redrive_tries[(rec["c"], rec["n"])]
                elif rec["k"] == "redrive":
                    self.redrive_tries.pop((rec["c"], rec["n"]), None)
                    for m in rec["moved"]:
                        self.redriven[(rec["t"], m[0])].append(rec)
                elif rec["k"] == "fire_try":
                    self.fire_calls[(rec["c"], rec["n"])] = (rec["ts"], None, False)
                elif rec["k"] in ("fire", "fire_end"):
                    self.fire_calls[(rec["c"], rec["n"])] = (rec["ts"], rec["at"], rec["k"] == "fire")
                elif rec["k"] == "stats":
                    self.stats[rec["c"]] = rec
                elif rec["k"] == "dcancel_try":
                    self.cancel_tries[(rec["t"], rec["id"])].setdefault((rec["c"], rec["ts"]), None)
                elif rec["k"] == "dcancel":
                    self.cancel_tries[(rec["t"], rec["id"])][(rec["c"], rec["ts"])] = rec["at"]
                if rec["k"] in ("fin_try", "retry_try"):
                    key3 = (rec["t"], rec["id"], rec["g"])
                    self.end_tries[key3] = min(self.end_tries.get(key3, rec["ts"]), rec["ts"])
                elif rec["k"] == "claim" and rec.get("tg") == KEYED:
                    self.keyed_claims += 1
                if rec["k"] in WRITE_KINDS and "t" in rec:
                    self.last_write[rec["t"]] = max(self.last_write.get(rec["t"], 0.0), rec["ts"])
                n += 1
        return n

    def mark(self):
        """How many records of each kind have been read: the "before the snapshot" cut."""
        return {k: len(v) for k, v in self.by_kind.items()}

    def upto(self, kind, cut):
        return self.by_kind.get(kind, [])[: cut.get(kind, 0)]

    def acknowledged(self):
        return sum(len(v) for k, v in self.by_kind.items()
                   if k in WRITE_KINDS or k in ("enq_again", "reap", "fire"))


class Checker:
    def __init__(self, logdir, injector):
        self.acks = Acks(logdir)
        self.inj = injector
        self.seen_gen_d = {}  # (t, id) -> highest generation seen in the table
        self.seen_gen_r = {}
        self.lost = 0
        self.dups = 0
        self.log_offset = 0
        self.crash_lines = []
        self.dead_clients = lambda: []
        self.problems = {}  # "I1".. -> every problem the last check found
        self.key_stats = {}  # figures of the keyed checks (K1, K3, K4), for the summary
        self.claims_by_key = {}  # keyed_claims() as the last check read them

    def snapshot(self):
        """All rows the invariants need, in one REPEATABLE READ READ ONLY transaction."""
        with psycopg.connect("", autocommit=True) as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            s = {}
            s["deliveries"] = conn.execute(
                "SELECT tenant::text, id, target, dedup_key, status, generation, attempts, key "
                "FROM baton.deliveries").fetchall()
            s["runs"] = conn.execute(
                "SELECT tenant::text, id::text, status, generation, idempotency_key FROM baton.runs").fetchall()
            s["stages"] = conn.execute(
                "SELECT tenant::text, id, run_id::text, stage, entry_seq, predecessor_id, is_current, status, result "
                "FROM baton.stages").fetchall()
            s["markers"] = conn.execute(
                "SELECT tenant::text, entry_id, \"position\", state FROM baton.markers").fetchall()
            s["schedules"] = conn.execute(
                "SELECT tenant::text, name, spec, extract(epoch FROM next_fire_at)::float8, "
                "extract(epoch FROM last_fired_at)::float8, last_delivery_id FROM baton.schedule_rows").fetchall()
            s["fired"] = conn.execute(
                "SELECT tenant::text, dedup_key, id, extract(epoch FROM created_at)::float8 "
                "FROM baton.deliveries WHERE dedup_key LIKE 'schedule:%'").fetchall()
            s["actions"] = conn.execute(
                "SELECT tenant::text, entry_id, pos, count(*) FROM public.fault_actions "
                "GROUP BY 1, 2, 3").fetchall()
            fenced = {}
            for t in self.inj.fenced:
                state = conn.execute("SELECT state FROM baton.tenants WHERE tenant = %s", (t,)).fetchone()[0]
                rows = dict(conn.execute(SNAPSHOT_SQL, {"t": t}).fetchall())
                latest = conn.execute(
                    "SELECT extract(epoch FROM max(pg_xact_commit_timestamp(x::text::xid)))::float8 "
                    "FROM (" + SNAPSHOT_SQL.replace("xmin::text", "xmin::text AS x") + ") s(k, x)",
                    {"t": t}).fetchone()[0]
                fenced[t] = (state, rows, latest)
            s["fenced"] = fenced
            # run_history (the API's own chain walk, DU004 on a broken chain) of a sample of
            # running runs.
            sample = conn.execute(
                "SELECT tenant::text, id::text FROM baton.runs WHERE status = 'running' "
                "ORDER BY random() LIMIT 25").fetchall()
            hist = {}
            conn.execute("SAVEPOINT h")
            for t, run in sample:
                try:
                    hist[(t, run)] = [r[0] for r in conn.execute(
                        "SELECT id FROM baton.run_history(%s, %s)", (t, run)).fetchall()]
                    conn.execute("RELEASE SAVEPOINT h; SAVEPOINT h")
                except psycopg.Error as e:
                    hist[(t, run)] = "error %s: %s" % (e.sqlstate, e)
                    conn.execute("ROLLBACK TO SAVEPOINT h")
            s["history"] = hist
            # The limits of keys and their bookkeeping (K1-K3).
            s["key_limits"] = conn.execute(
                "SELECT tenant::text, target, key, max_leased, ordered, rate, extract(epoch FROM per)::float8, burst "
                "FROM baton.key_limits").fetchall()
            s["key_slots"] = conn.execute(
                "SELECT tenant::text, target, key, admitted, ready, tokens FROM baton.key_slots").fetchall()
            s["key_waiting"] = conn.execute(
                "SELECT tenant::text, target, key, rank, id FROM baton.key_waiting").fetchall()
            s["ready_keyed"] = conn.execute(
                "SELECT r.tenant::text, r.id, count(*) FROM baton.ready r JOIN baton.deliveries d "
                "ON d.tenant = r.tenant AND d.id = r.id WHERE d.key IS NOT NULL GROUP BY 1, 2").fetchall()
            conn.execute("COMMIT")
            return s

    def run(self):
        """Checks every invariant once; returns [(name, passed, detail)]."""
        self.acks.read()
        cut = self.acks.mark()
        s = self.snapshot()
        self.acks.read()
        self.claims_by_key = self.keyed_claims()
        results = []
        for name, fn in (
            ("I1 acknowledged deliveries and runs exist exactly once", self.i1_exist_once),
            ("I2 no delivery finished twice or by a superseded generation", self.i2_finished_once),
            ("I3 generations never go back", self.i3_generations),
            ("I4 every finished delivery was claimed", self.i4_finished_claimed),
            ("I5 running runs: one current stage, unbroken chain", self.i5_chains),
            ("I6 no marker done twice", self.i6_markers),
            ("I7 nothing written to a fenced tenant after its fence", self.i7_fence),
            ("I8 no unexpected error, no backend crash", self.i8_unexpected),
            ("I9 a cancel stands until a later redrive; a redrive's rows are pending", self.i9_cancel_redrive),
            ("I10 each schedule slot enqueued at most once, the latest, none skipped", self.i10_schedules),
            ("K1 never more of a key leased than its max_leased, an ordered key's one at a time", self.k1_leased),
            ("K2 each limited key's count agrees with its deliveries; each pending one admitted or waiting",
             self.k2_bookkeeping),
            ("K3 an ordered key's deliveries claimed one at a time in id order", self.k3_ordered),
            ("K4 a paced key's claims in any span of per at most rate + burst", self.k4_paced),
        ):
            problems = fn(s, cut)
            self.problems[name.split()[0]] = problems
            results.append((name, not problems, "; ".join(problems[:5]) + (
                " (+%d more)" % (len(problems) - 5) if len(problems) > 5 else "")))
        return results

    # --- I1 --------------------------------------------------------------------------
    def i1_exist_once(self, s, cut):
        problems = []
        by_id = {(r[0], r[1]): r for r in s["deliveries"]}
        by_key = defaultdict(list)
        for r in s["deliveries"]:
            by_key[(r[0], r[2], r[3])].append(r[1])
        ids_of_key = defaultdict(set)
        for a in self.acks.upto("enq", cut) + self.acks.upto("enq_again", cut):
            ids_of_key[(a["t"], a["tg"], a["key"])].add(a["id"])
            if a["k"] == "enq_again":
                ids_of_key[(a["t"], a["tg"], a["key"])].add(a["first"])
        lost = dups = 0
        for a in self.acks.upto("enq", cut):
            row = by_id.get((a["t"], a["id"]))
            if "lk" in a and row is not None and row[7] != a["lk"]:
                problems.append("delivery %d acknowledged with key %s has key %s" % (a["id"], a["lk"], row[7]))
        for key, ids in ids_of_key.items():
            if len(ids) > 1:
                dups += 1
                problems.append("key %s acknowledged with ids %s" % (key[2], sorted(ids)))
            rows = by_key.get(key, [])
            if len(rows) > 1:
                dups += 1
                problems.append("key %s stored %d times" % (key[2], len(rows)))
            for i in ids:
                if (key[0], i) not in by_id:
                    lost += 1
                    problems.append("acknowledged delivery %d (key %s) is missing" % (i, key[2]))
        # enqueue_batch is all or nothing: of every batch sent (answered or not), all
        # keys are stored or none.
        for a in self.acks.by_kind.get("batch_try", []):
            present = sum(1 for k in a["keys"] if (a["t"], a["tg"], k) in by_key)
            if 0 < present < len(a["keys"]):
                problems.append("batch %s..: %d of its %d keys stored" % (a["keys"][0], present, len(a["keys"])))
        runs = {(r[0], r[1]): r for r in s["runs"]}
        runs_of_key = defaultdict(set)
        for a in self.acks.upto("sub", cut):
            runs_of_key[(a["t"], a["key"])].add(a["run"])
        stored_keys = defaultdict(int)
        for r in s["runs"]:
            if r[4] is not None:
                stored_keys[(r[0], r[4])] += 1
        for key, ids in runs_of_key.items():
            if len(ids) > 1 or stored_keys.get(key, 0) > 1:
                dups += 1
                problems.append("submit key %s gave runs %s" % (key[1], sorted(ids)))
            for run in ids:
                if (key[0], run) not in runs:
                    lost += 1
                    problems.append("acknowledged run %s is missing" % run)
        self.lost = max(self.lost, lost + self.lost_effects(s, cut))
        self.dups = max(self.dups, dups + self.dup_effects(s))
        return problems

    def lost_effects(self, s, cut):
        """Acknowledged finishes, transitions, stage completions and marker completions
        whose effect is missing (counted as lost items; each invariant names them)."""
        n = 0
        d = {(r[0], r[1]): r for r in s["deliveries"]}
        for a in self.acks.upto("fin", cut):
            row = d.get((a["t"], a["id"]))
            if row is None or self.settle_problem(a, row) is not None:
                n += 1
        st = {(r[0], r[1]): r for r in s["stages"]}
        for a in self.acks.upto("tr", cut):
            if a["kind"] != "finished" and (a["t"], a["sid"]) not in st:
                n += 1
        runs = {(r[0], r[1]): r[2] for r in s["runs"]}
        for a in self.acks.upto("cancel", cut):
            if runs.get((a["t"], a["run"])) != "cancelled":
                n += 1
        for a in self.acks.upto("cpl", cut):
            row = st.get((a["t"], a["sid"]))
            if row is None or row[7] != "completed" or row[8] != a["res"]:
                n += 1
        mk = {(r[0], r[1], r[2]): r[3] for r in s["markers"]}
        for a in self.acks.upto("mkdone", cut):
            if a["r"] and mk.get((a["t"], a["eid"], a["pos"])) != "done":
                n += 1
        return n

    def dup_effects(self, s):
        n = len(self.refinished(s))
        n += sum(1 for r in s["actions"] if r[3] > 1)
        return n

    def redriven_after(self, t, did, ts, tg=None):
        """Whether a redrive of delivery did that may have committed after time ts is
        logged (one answered after it that moved it, or one not answered that may have:
        still running, or cut off after ts): what can bring a settled delivery back. tg
        None: the delivery's target is unknown, any target's redrive without ids counts."""
        for a in self.acks.redriven.get((t, did), []):
            if a["at"] > ts:
                return True
        for a in self.acks.redrive_tries.values():
            if a["t"] == t and (tg is None or a["tg"] == tg) and (a["ids"] is None or did in a["ids"]) \
                    and a.get("end", ts + 1) > ts:
                return True
        return False

    def settle_problem(self, a, row):
        """What is wrong with the row of an acknowledged finish or failing retry a (at
        generation a["g"], stored status a["r"]), or None. A failed delivery may have been
        redriven since: then it has moved on from that generation, or waits, pending."""
        if row[4] == a["r"] and row[5] == a["g"]:
            return None
        if a["r"] == "failed" and self.redriven_after(a["t"], a["id"], a["ts"], row[2]):
            if row[5] > a["g"] or (row[5] == a["g"] and row[4] == "pending"):
                return None
            return "delivery %d failed at generation %d and redriven is %s at %d" % (a["id"], a["g"], row[4], row[5])
        if row[5] != a["g"]:
            return "delivery %d settled at generation %d but acknowledged to generation %d" % (a["id"], row[5], a["g"])
        return "delivery %d acknowledged %s at generation %d is now %s" % (a["id"], a["r"], a["g"], row[4])

    def refinished(self, s):
        """Deliveries with acknowledged finishes of two generations that no redrive
        explains: only a failed delivery comes back (by a redrive), a finished one never."""
        fins = defaultdict(list)
        for a in self.acks.by_kind.get("fin", []):
            fins[(a["t"], a["id"])].append(a)
        target = {(r[0], r[1]): r[2] for r in s["deliveries"]}
        out = []
        for key, acks in fins.items():
            acks.sort(key=lambda a: a["g"])
            for earlier, later in zip(acks, acks[1:]):
                if earlier["g"] == later["g"]:
                    continue
                if earlier["r"] != "failed" or not self.redriven_after(key[0], key[1], earlier["ts"],
                                                                      target.get(key)):
                    out.append("delivery %d finished by generations %d (%s) and %d (%s)" % (
                        key[1], earlier["g"], earlier["r"], later["g"], later["r"]))
        return out

    def superseded(self):
        """Acknowledged finishes and retries sent after a higher generation of their
        delivery was acknowledged (a claim, a cancel): a stale holder was let write."""
        gens = defaultdict(list)  # (t, id) -> [(answered, generation)]
        for kind in ("claim", "dcancel"):
            for a in self.acks.by_kind.get(kind, []):
                if "at" in a:
                    gens[(a["t"], a["id"])].append((a["at"], a["g"]))
        out = []
        for kind in ("fin", "retry"):
            for a in self.acks.by_kind.get(kind, []):
                later = [g for at, g in gens.get((a["t"], a["id"]), []) if at < a["ts"] and g > a["g"]]
                if later:
                    out.append("delivery %d: %s at generation %d acknowledged, sent after generation %d was"
                               % (a["id"], kind, a["g"], max(later)))
        return out

    # --- I2 --------------------------------------------------------------------------
    def i2_finished_once(self, s, cut):
        problems = []
        d = {(r[0], r[1]): r for r in s["deliveries"]}
        for a in self.acks.upto("fin", cut):
            row = d.get((a["t"], a["id"]))
            if row is None:
                problems.append("finished delivery %d is missing" % a["id"])
            elif self.settle_problem(a, row) is not None:
                problems.append(self.settle_problem(a, row))
        problems += self.refinished(s)
        problems += self.superseded()
        for a in self.acks.upto("retry", cut):
            row = d.get((a["t"], a["id"]))
            if row is None:
                problems.append("retried delivery %d is missing" % a["id"])
            elif a["r"] == "pending" and row[5] <= a["g"]:
                problems.append("delivery %d given back at generation %d still has generation %d"
                                % (a["id"], a["g"], row[5]))
            elif a["r"] == "failed" and self.settle_problem(a, row) is not None:
                problems.append("by retry: " + self.settle_problem(a, row))
        return problems

    # --- I3 --------------------------------------------------------------------------
    def i3_generations(self, s, cut):
        problems = []
        acked_d = defaultdict(int)
        for kind in ("claim", "fin", "retry", "dcancel"):
            for a in self.acks.upto(kind, cut):
                key = (a["t"], a["id"])
                acked_d[key] = max(acked_d[key], a["g"])
        for a in self.acks.upto("redrive", cut):
            for m in a["moved"]:
                key = (a["t"], m[0])
                acked_d[key] = max(acked_d[key], m[1])
        for r in s["deliveries"]:
            key = (r[0], r[1])
            floor = max(acked_d.get(key, 0), self.seen_gen_d.get(key, 0))
            if r[5] < floor:
                problems.append("delivery %d at generation %d, had reached %d" % (r[1], r[5], floor))
            self.seen_gen_d[key] = max(r[5], self.seen_gen_d.get(key, 0))
        for key in acked_d:
            if key not in self.seen_gen_d:
                problems.append("delivery %d with acknowledged generations is missing" % key[1])
        acked_r = defaultdict(int)
        for kind in ("acq", "tr", "start", "cpl"):
            for a in self.acks.upto(kind, cut):
                key = (a["t"], a["run"])
                acked_r[key] = max(acked_r[key], a["g"])
        for r in s["runs"]:
            key = (r[0], r[1])
            floor = max(acked_r.get(key, 0), self.seen_gen_r.get(key, 0))
            if r[3] < floor:
                problems.append("run %s at generation %d, had reached %d" % (r[1], r[3], floor))
            self.seen_gen_r[key] = max(r[3], self.seen_gen_r.get(key, 0))
        return problems

    # --- I4 --------------------------------------------------------------------------
    def i4_finished_claimed(self, s, cut):
        problems = []
        fins = {(a["t"], a["id"], a["g"]) for a in self.acks.by_kind.get("fin", [])}
        for r in s["deliveries"]:
            key3 = (r[0], r[1], r[5])
            if r[4] == "finished" or (r[4] == "failed" and key3 in fins):
                if key3 not in self.acks.claims:
                    problems.append("delivery %d %s at generation %d was never claimed at it"
                                    % (r[1], r[4], r[5]))
                elif key3 not in self.acks.attempted_fin:
                    problems.append("delivery %d %s at generation %d by no finish call" % (r[1], r[4], r[5]))
                if r[6] < 1:
                    problems.append("delivery %d %s with %d attempts" % (r[1], r[4], r[6]))
        return problems

    # --- I5 --------------------------------------------------------------------------
    def i5_chains(self, s, cut):
        problems = []
        status = {(r[0], r[1]): r[2] for r in s["runs"]}
        stages = defaultdict(list)
        for r in s["stages"]:
            stages[(r[0], r[2])].append(r)
        for key, st in status.items():
            rows = stages.get(key, [])
            if st in ("submitted", "approved"):
                if rows:
                    problems.append("run %s %s has %d stages" % (key[1], st, len(rows)))
                continue
            if st == "cancelled" and not rows:
                continue
            current = [r for r in rows if r[6]]
            if st == "running" and len(current) != 1:
                problems.append("running run %s has %d current stages" % (key[1], len(current)))
                continue
            if len(current) > 1:
                problems.append("%s run %s has %d current stages" % (st, key[1], len(current)))
                continue
            if not rows:
                problems.append("%s run %s has no stage" % (st, key[1]))
                continue
            by_id = {r[1]: r for r in rows}
            succ = defaultdict(list)
            roots = []
            for r in rows:
                if r[5] is None:
                    roots.append(r)
                elif r[5] not in by_id:
                    problems.append("run %s: stage %d's predecessor %d is not a stage of the run"
                                    % (key[1], r[1], r[5]))
                else:
                    succ[r[5]].append(r)
            if len(roots) != 1:
                problems.append("run %s has %d first stages" % (key[1], len(roots)))
                continue
            chain, node = [], roots[0]
            while node is not None and len(chain) <= len(rows):
                chain.append(node[1])
                nxt = succ.get(node[1], [])
                if len(nxt) > 1:
                    problems.append("run %s: stage %d has %d successors" % (key[1], node[1], len(nxt)))
                node = nxt[0] if nxt else None
            if len(chain) != len(rows):
                problems.append("run %s: chain of %d stages, %d stored" % (key[1], len(chain), len(rows)))
            elif current and chain[-1] != current[0][1]:
                problems.append("run %s: the current stage %d is not the last of the chain"
                                % (key[1], current[0][1]))
            hist = s["history"].get(key)
            if hist is not None and hist != chain:
                problems.append("run %s: run_history gave %s, the chain is %s" % (key[1], hist, chain))
        st = {(r[0], r[1]): r for r in s["stages"]}
        for a in self.acks.upto("tr", cut):
            if a["kind"] == "finished":
                if status.get((a["t"], a["run"])) != a["status"]:
                    problems.append("run %s acknowledged finished %s is %s"
                                    % (a["run"], a["status"], status.get((a["t"], a["run"]))))
                continue
            row = st.get((a["t"], a["sid"]))
            if row is None:
                problems.append("acknowledged stage %d of run %s is missing" % (a["sid"], a["run"]))
            elif (row[2], row[3], row[4]) != (a["run"], a["stage"], a["seq"]):
                problems.append("stage %d is %s, acknowledged as %s" % (
                    a["sid"], (row[2], row[3], row[4]), (a["run"], a["stage"], a["seq"])))
        for a in self.acks.upto("cancel", cut):
            if status.get((a["t"], a["run"])) != "cancelled":
                problems.append("run %s acknowledged cancelled is %s" % (a["run"], status.get((a["t"], a["run"]))))
        for a in self.acks.upto("cpl", cut):
            row = st.get((a["t"], a["sid"]))
            if row is None or row[7] != "completed" or row[8] != a["res"]:
                problems.append("stage %d acknowledged completed with %s is %s" % (
                    a["sid"], a["res"], None if row is None else (row[7], row[8])))
        return problems

    # --- I6 --------------------------------------------------------------------------
    def i6_markers(self, s, cut):
        problems = []
        for r in s["actions"]:
            if r[3] > 1:
                problems.append("marker %d/%d: its action ran %d times" % (r[1], r[2], r[3]))
        actions = {(r[0], r[1], r[2]) for r in s["actions"]}
        for r in s["markers"]:
            key = (r[0], r[1], r[2])
            if (r[3] == "done") != (key in actions):
                problems.append("marker %d/%d is %s with %s action" % (
                    r[1], r[2], r[3], "an" if key in actions else "no"))
        # A marker is claimed (true) once, plus once after each acknowledged resolution
        # to retry; it is completed (true) once.
        retries = defaultdict(int)
        for a in self.acks.by_kind.get("resolve", []):
            if a["outcome"] == "retry":
                retries[(a["t"], a["eid"], a["pos"])] += 1
        for kind in ("mk", "mkdone"):
            count = defaultdict(int)
            for a in self.acks.by_kind.get(kind, []):
                if kind == "mk" or a["r"]:
                    count[(a["t"], a["eid"], a["pos"])] += 1
            for key, n in count.items():
                allowed = 1 + (retries.get(key, 0) if kind == "mk" else 0)
                if n > allowed:
                    problems.append("marker %d/%d: %s acknowledged %d times (%d resolved to retry)"
                                    % (key[1], key[2], kind, n, retries.get(key, 0)))
        mk = {(r[0], r[1], r[2]): r[3] for r in s["markers"]}
        for a in self.acks.upto("mkdone", cut):
            if a["r"] and mk.get((a["t"], a["eid"], a["pos"])) != "done":
                problems.append("marker %d/%d acknowledged done is %s" % (
                    a["eid"], a["pos"], mk.get((a["t"], a["eid"], a["pos"]))))
        return problems

    # --- I7 --------------------------------------------------------------------------
    def i7_fence(self, s, cut):
        problems = []
        for t, (state, rows, latest) in s["fenced"].items():
            f = self.inj.fenced[t]
            if state != "fenced":
                problems.append("tenant %s is %s, not fenced" % (t, state))
            if rows != f["snapshot"]:
                changed = [k for k in set(rows) | set(f["snapshot"]) if rows.get(k) != f["snapshot"].get(k)]
                problems.append("tenant %s: %d rows written after its fence, e.g. %s"
                                % (t, len(changed), sorted(changed)[:3]))
            if latest is not None and latest > f["ts"]:
                problems.append("tenant %s: a row committed %.6f s after its fence" % (t, latest - f["ts"]))
            if self.acks.last_write.get(t, 0.0) > f["ts"]:
                for a in self.acks.records:
                    if a.get("t") == t and a["k"] in WRITE_KINDS and a["ts"] > f["ts"]:
                        problems.append("tenant %s: %s sent %.3f s after the fence committed, acknowledged"
                                        % (t, a["k"], a["ts"] - f["ts"]))
        return problems

    # --- I9 --------------------------------------------------------------------------
    def i9_cancel_redrive(self, s, cut):
        """An acknowledged cancel (at the generation its transaction read) stands: the
        delivery is cancelled at that generation unless a redrive that may have committed
        after it brought it back. A finish of a cancelled delivery is explained only by a
        redrive between the two (the superseded holder's finish itself is I2's). An
        acknowledged redrive made exactly what it moved pending and due, with no attempts
        (read in its own transaction), among the ids asked for or at most max_rows of
        them, and each row is still pending at that generation or has moved past it."""
        problems = []
        d = {(r[0], r[1]): r for r in s["deliveries"]}
        for a in self.acks.upto("dcancel", cut):
            row = d.get((a["t"], a["id"]))
            if row is None:
                problems.append("cancelled delivery %d is missing" % a["id"])
            elif row[5] < a["g"]:
                problems.append("delivery %d acknowledged cancelled at generation %d is at %d" % (a["id"], a["g"], row[5]))
            elif (row[4], row[5]) != ("cancelled", a["g"]) and not self.redriven_after(a["t"], a["id"], a["ts"], row[2]):
                problems.append("delivery %d acknowledged cancelled at generation %d is %s at %d, and no redrive came after"
                                % (a["id"], a["g"], row[4], row[5]))
        cancels = defaultdict(list)
        for a in self.acks.by_kind.get("dcancel", []):
            cancels[(a["t"], a["id"])].append(a)
        for f in self.acks.by_kind.get("fin", []):
            row = d.get((f["t"], f["id"]))
            tg = row[2] if row is not None else None
            for c in cancels.get((f["t"], f["id"]), []):
                if f["g"] == c["g"]:
                    problems.append("delivery %d acknowledged cancelled and %s at generation %d" % (f["id"], f["r"], f["g"]))
                elif f["g"] < c["g"] and (f["r"] != "failed" or not self.redriven_after(f["t"], f["id"], f["ts"], tg)):
                    problems.append("delivery %d %s at generation %d, then acknowledged cancelled at %d, with no redrive between"
                                    % (f["id"], f["r"], f["g"], c["g"]))
                elif f["g"] > c["g"] and not self.redriven_after(f["t"], f["id"], c["ts"], tg):
                    problems.append("delivery %d acknowledged cancelled at generation %d and %s at %d, with no redrive between"
                                    % (f["id"], c["g"], f["r"], f["g"]))
        finished = defaultdict(list)
        for f in self.acks.by_kind.get("fin", []):
            if f["r"] == "finished":
                finished[(f["t"], f["id"])].append(f["g"])
        for a in self.acks.upto("redrive", cut):
            if a["count"] != len(a["moved"]):
                problems.append("redrive of %s answered %d but moved %d" % (a["tg"], a["count"], len(a["moved"])))
            if a["ids"] is not None and any(m[0] not in a["ids"] for m in a["moved"]):
                problems.append("redrive of ids %s moved %s" % (a["ids"], [m[0] for m in a["moved"]]))
            if a["ids"] is None and len(a["moved"]) > a["max"]:
                problems.append("redrive of at most %d moved %d" % (a["max"], len(a["moved"])))
            for did, g, status, attempts, unsettled in a["moved"]:
                if (status, attempts, unsettled) != ("pending", 0, True):
                    problems.append("redrive left delivery %d %s with %d attempts%s"
                                    % (did, status, attempts, "" if unsettled else ", settled"))
                if any(fg <= g for fg in finished.get((a["t"], did), [])):
                    problems.append("redrive moved delivery %d, finished at generation %d before"
                                    % (did, min(finished[(a["t"], did)])))
                row = d.get((a["t"], did))
                if row is None:
                    problems.append("redriven delivery %d is missing" % did)
                elif row[5] < g or (row[5] == g and row[4] != "pending"):
                    problems.append("delivery %d redriven at generation %d is %s at %d" % (did, g, row[4], row[5]))
        return problems

    # --- I10 -------------------------------------------------------------------------
    def i10_schedules(self, s, cut):
        """Each slot's dedup key schedule:<name>:<slot> is stored at most once per tenant
        (over all targets). For the schedules whose slots the checker knows (@every N
        seconds): each delivery fired the latest slot at or before its firing's now()
        (created_at), so after a pause only the latest missed slot fires; the schedule's
        row names its latest slot and delivery and waits for the next; and a slot between
        two fired ones is skipped only when no firing call proves it was due and free
        (fire_proof)."""
        problems = []
        count = defaultdict(int)
        slots = defaultdict(dict)  # (t, name) -> {slot: (id, created)}
        for t, key, did, created in s["fired"]:
            count[(t, key)] += 1
            _, name, text = key.split(":", 2)
            try:
                slot = calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
            except ValueError:
                problems.append("delivery %d has the key %s, with no slot" % (did, key))
                continue
            slots[(t, name)][slot] = (did, created)
        for (t, key), n in count.items():
            if n > 1:
                problems.append("slot key %s of tenant %s stored %d times" % (key, t[:8], n))
        calls = sorted(self.acks.fire_calls.values(), key=lambda c: c[0])
        for t, name, spec, next_at, last_at, last_id in s["schedules"]:
            m = EVERY_SECONDS.match(spec)
            fired = slots.get((t, name), {})
            if m is None or not fired:
                continue
            every = int(m.group(1))
            order = sorted(fired)
            for slot in order:
                did, created = fired[slot]
                if slot % every != 0 or not 0 <= created - slot < every:
                    problems.append("schedule %s: delivery %d fired slot %s at %s, not the latest slot then"
                                    % (name, did, stamp(slot), stamp(created)))
            latest = order[-1]
            if (last_at, last_id, next_at) != (latest, fired[latest][0], latest + every):
                problems.append("schedule %s of tenant %s: last fired %s (delivery %s), next %s; its latest delivery "
                                "is %d for %s" % (name, t[:8], stamp(last_at), last_id, stamp(next_at),
                                                  fired[latest][0], stamp(latest)))
            for a, b in zip(order, order[1:]):
                for slot in range(a + every, b, every):
                    proof = self.fire_proof(calls, slot, every)
                    if proof is not None:
                        problems.append("schedule %s of tenant %s: slot %s skipped, though a call sent at %s "
                                        "and answered at %s ran within it, alone" % (
                                            name, t[:8], stamp(slot), stamp(proof[0]), stamp(proof[1])))
        return problems

    def fire_proof(self, calls, slot, every):
        """A logged fire_schedules call that had to fire slot of a schedule due then, if
        one: sent at or after the slot and committed before the next (its now() lies in
        between), outside every fault (no crash, restart, held lock or fence change
        during it), and every call that overlapped it committed and was sent at or after
        the slot too (a call begun before the slot could have held the schedule's row,
        SKIP LOCKED, while firing the slot before; one that did not commit could have
        held it and rolled back). calls: (sent, ended, committed), by time sent. Returns
        (sent, answered) or None."""
        starts = [c[0] for c in calls]
        windows = getattr(self.inj, "windows", [])
        for i in range(bisect.bisect_left(starts, slot), len(calls)):
            ts, at, ok = calls[i]
            if ts >= slot + every:
                break
            if not ok or at >= slot + every:
                continue
            if any(w0 <= at and ts <= w1 for w0, w1 in windows):
                continue
            overlapping = [o for o in calls[:bisect.bisect_left(starts, at)]
                           if o is not calls[i] and (o[1] is None or o[1] > ts)]
            if all(o[2] and o[0] >= slot for o in overlapping):
                return ts, at
        return None

    # --- K1-K4: keys and their limits ----------------------------------------------------
    def keyed_claims(self):
        """The acknowledged claims of the keyed target whose delivery has a key, by (tenant,
        key): [record], each with its key (lk, from the payload the claim returned)."""
        out = defaultdict(list)
        for a in self.acks.by_kind.get("claim", []):
            if a.get("tg") == KEYED and a.get("lk") is not None:
                out[(a["t"], a["lk"])].append(a)
        return out

    def held_until(self, a):
        """The end of the span over which the lease of claim a (answered at a["at"]) was
        certainly held: the first moment anything could have ended it. Its holder's finish
        or retry at its generation ends it no earlier than sent; an operator's cancel no
        earlier than sent (any cancel that may have committed after the claim's send); the
        reaper no earlier than its lease_until (reap takes only leases expired by its
        now()); and none of these not yet logged when the logs were last read was sent
        before that read began."""
        t, did = a["t"], a["id"]
        end = min(a.get("lu") or a["ts"] + 2.0, self.acks.read_at)
        end = min(end, self.acks.end_tries.get((t, did, a["g"]), end))
        for (_, sent), answered in self.acks.cancel_tries.get((t, did), {}).items():
            if answered is None or answered > a["ts"]:
                end = min(end, sent)
        return end

    def k1_leased(self, s, cut):
        """A key limited by max_leased (an ordered key: 1) never has more deliveries leased.
        In the snapshot: its 'claimed' rows counted. Over time, from the logs: a claim
        acknowledged at `at` certainly holds its lease from `at` to held_until() (the
        first moment a finish, retry, cancel or reap could have ended it); more such spans
        of one key overlapping at one moment than its limit were all leased then. A span
        may end too early (a finish sent is not yet committed), never too late, so this
        misses leases, never invents one: it cannot report a false violation, and a limit
        not kept shows as soon as the extra leases are held together a moment (workers
        hold theirs 0 to 30 ms before settling)."""
        problems = []
        limits = self.snapshot_limits(s)
        leased = defaultdict(list)
        for r in s["deliveries"]:
            if r[4] == "claimed" and r[7] is not None:
                leased[(r[0], r[2], r[7])].append(r[1])
        for (t, tg, key), ids in leased.items():
            lim = limits.get((t, tg), {}).get(key) or limits.get((t, tg), {}).get("")
            if lim is not None and lim[0] is not None and len(ids) > lim[0]:
                problems.append("key %s of tenant %s: %d deliveries leased, max_leased %d: %s"
                                % (key, t[:8], len(ids), lim[0], sorted(ids)[:6]))
        most = self.key_stats["most_leased"] = {}
        for (t, key), claims in self.claims_by_key.items():
            limit = spec_of(key)[0]
            if limit is None:
                continue
            events = []
            for a in claims:
                end = self.held_until(a)
                if a["at"] < end:
                    events.append((a["at"], 1, (a["id"], a["g"])))
                    events.append((end, 0, (a["id"], a["g"])))
            events.sort()
            held = set()
            for when, starts, lease in events:
                if not starts:
                    held.discard(lease)
                    continue
                held.add(lease)
                kind = "ordered" if key == ORDERED_KEY else "max_leased %d" % limit
                most[kind] = max(most.get(kind, 0), len(held))
                if len(held) > limit:
                    problems.append("key %s of tenant %s: %d leases certainly held at once at %s, max_leased %d: "
                                    "deliveries %s" % (key, t[:8], len(held), stamp(when), limit,
                                                       sorted("%d@%d" % h for h in held)))
        return problems

    def snapshot_limits(self, s):
        """(tenant, target) -> {key: (max_leased, ordered, rate, per, burst)} as
        baton.key_limits holds them (key '': every key without one of its own)."""
        out = defaultdict(dict)
        for t, tg, key, max_leased, ordered, rate, per, burst in s["key_limits"]:
            out[(t, tg)][key] = (max_leased, ordered, rate, per, burst)
        return out

    def k2_bookkeeping(self, s, cut):
        """The limits are as the suite set them (never lowered, so admitted <= max_leased
        must hold); for each key a limit covers (its own, else the target's for every key):
        key_slots.admitted = its 'claimed' deliveries + its 'pending' ones not in
        key_waiting; on a paced key, key_slots.ready = those pending ones and tokens +
        ready <= burst; admitted <= max_leased (an ordered key: 1); no key waits while it
        has room (has_room of core/key_limit: a slot freed was passed on); every pending
        delivery of a limited key is in exactly one of baton.ready and baton.key_waiting, a
        leased or settled one in neither; every key_waiting row is a pending delivery of
        that target and key; no key_slots row for a key without a limit."""
        problems = []
        limits = self.snapshot_limits(s)
        want = {key: spec for key, *spec in KEY_LIMITS}
        for (t, tg), rows in limits.items():
            have = {key: (m, o, r, p, b) for key, (m, o, r, p, b) in rows.items()}
            if tg != KEYED or have != {k: tuple(v) for k, v in want.items()}:
                problems.append("tenant %s, target %s: limits %s, set as %s" % (t[:8], tg, sorted(have.items()),
                                                                               sorted(want.items())))

        def limit_of(t, tg, key):
            own = limits.get((t, tg), {})
            return own.get(key) or own.get("")

        ready = {(r[0], r[1]): r[2] for r in s["ready_keyed"]}
        waiting = defaultdict(int)
        waits_of_key = defaultdict(int)
        d = {(r[0], r[1]): r for r in s["deliveries"]}
        for t, tg, key, rank, did in s["key_waiting"]:
            waiting[(t, did)] += 1
            waits_of_key[(t, tg, key)] += 1
            row = d.get((t, did))
            if row is None or row[4] != "pending" or (row[2], row[7]) != (tg, key):
                problems.append("key_waiting holds delivery %d (%s, %s), which is %s" % (
                    did, tg, key, "missing" if row is None else "%s (%s, %s)" % (row[4], row[2], row[7])))
        count = defaultdict(lambda: [0, 0])  # (t, tg, key) -> [claimed, pending admitted]
        for r in s["deliveries"]:
            if r[7] is None or limit_of(r[0], r[2], r[7]) is None:
                continue
            seats = ready.get((r[0], r[1]), 0) + waiting.get((r[0], r[1]), 0)
            if r[4] == "pending":
                if seats != 1:
                    problems.append("pending delivery %d of key %s: %d rows in baton.ready, %d in key_waiting"
                                    % (r[1], r[7], ready.get((r[0], r[1]), 0), waiting.get((r[0], r[1]), 0)))
                if not waiting.get((r[0], r[1])):
                    count[(r[0], r[2], r[7])][1] += 1
            elif seats:
                problems.append("%s delivery %d of key %s: %d rows in baton.ready, %d in key_waiting"
                                % (r[4], r[1], r[7], ready.get((r[0], r[1]), 0), waiting.get((r[0], r[1]), 0)))
            if r[4] == "claimed":
                count[(r[0], r[2], r[7])][0] += 1
        slots = {(r[0], r[1], r[2]): r for r in s["key_slots"]}
        for key3 in set(slots) | set(count) | set(waits_of_key):
            t, tg, key = key3
            lim = limit_of(t, tg, key)
            if lim is None:
                problems.append("key_slots or deliveries count key %s of tenant %s, which has no limit" % (key, t[:8]))
                continue
            max_leased, ordered, rate, per, burst = lim
            row = slots.get(key3)
            admitted, unclaimed, tokens = (row[3], row[4], row[5]) if row is not None else (0, 0, burst or 0)
            leased, pending = count.get(key3, (0, 0))
            if admitted != leased + pending:
                problems.append("key %s of tenant %s: key_slots.admitted %d, but %d leased + %d pending admitted"
                                % (key, t[:8], admitted, leased, pending))
            if rate is not None and (unclaimed != pending or tokens + unclaimed > burst + 1e-6):
                problems.append("paced key %s of tenant %s: key_slots.ready %d, tokens %.3f (burst %d), "
                                "but %d pending admitted" % (key, t[:8], unclaimed, tokens, burst, pending))
            most = 1 if ordered else max_leased
            if most is not None and admitted > most:
                problems.append("key %s of tenant %s: %d admitted, max_leased %d" % (key, t[:8], admitted, most))
            room = (most is None or admitted < most) and (rate is None or unclaimed < burst)
            if room and waits_of_key.get(key3):
                problems.append("key %s of tenant %s: %d deliveries wait though it has room (%d admitted, %d unclaimed)"
                                % (key, t[:8], waits_of_key[key3], admitted, unclaimed))
        return problems

    def k3_ordered(self, s, cut):
        """An ordered key's deliveries are claimed in id order, a retried or reaped one
        again before the next (the redriver leaves ordered keys alone, and one producer
        enqueues them, one call at a time, so id order is enqueue order). In the snapshot:
        its admitted delivery (leased, or pending outside key_waiting) is its lowest
        pending or leased id. From the logs: a claim sent after another claim of the key
        was answered has an id at least that one's. Claims are compared by the client's
        times, sent (before the server's clock was read) and answered (after its commit),
        not by lease_until - lease (the transaction's start, which may precede the
        claim's snapshot by any delay: a claim that began first can take a later
        delivery), so the order it uses is certain."""
        problems = []
        keyed = defaultdict(list)
        limits = self.snapshot_limits(s)
        waiting = {(r[0], r[4]) for r in s["key_waiting"]}
        for r in s["deliveries"]:
            if r[7] is not None and r[4] in ("pending", "claimed"):
                own = limits.get((r[0], r[2]), {})
                lim = own.get(r[7]) or own.get("")
                if lim is not None and lim[1]:
                    keyed[(r[0], r[2], r[7])].append((r[1], r[4] == "claimed" or (r[0], r[1]) not in waiting))
        for (t, tg, key), rows in keyed.items():
            first = min(did for did, _ in rows)
            for did, admitted in rows:
                if admitted and did != first:
                    problems.append("ordered key %s of tenant %s: delivery %d admitted while %d, earlier, is pending"
                                    % (key, t[:8], did, first))
        checked = 0
        for (t, key), claims in self.claims_by_key.items():
            if not spec_of(key)[1]:
                continue
            checked += len(claims)
            answered = sorted(claims, key=lambda a: a["at"])
            i, before = 0, None
            for b in sorted(claims, key=lambda a: a["ts"]):
                while i < len(answered) and answered[i]["at"] < b["ts"]:
                    if before is None or answered[i]["id"] > before["id"]:
                        before = answered[i]
                    i += 1
                if before is not None and b["id"] < before["id"]:
                    problems.append("ordered key %s of tenant %s: delivery %d claimed (sent %s) after delivery %d's "
                                    "claim was answered (%s)" % (key, t[:8], b["id"], stamp(b["ts"]), before["id"],
                                                                 stamp(before["at"])))
        self.key_stats["ordered_claims"] = checked
        return problems

    def k4_paced(self, s, cut):
        """A paced key's claims in any span of `per` are at most rate + burst. A claim
        reads the server's clock (compared with its ready row's run_after, its slot)
        after it was sent and before it was answered, so a claim whose sent..answered lies
        inside a span certainly claimed within it: the most such claims over the spans
        that begin at a claim's send time are counted (the span with the most contained
        claims can be moved to begin at its first one's send time). This undercounts
        (a claim answered slowly is in no tight span), never overcounts: no tolerance
        beyond that is needed. The load adds bursts of 20 deliveries to a paced key
        (more than its rate + burst of 15), so claims of a pace not kept would show."""
        problems = []
        most = 0
        for (t, key), claims in self.claims_by_key.items():
            _, _, rate, per, burst = spec_of(key)
            if rate is None:
                continue
            claims = sorted(claims, key=lambda a: a["ts"])
            for i, a in enumerate(claims):
                inside = [b for b in claims[i:i + 4 * (rate + burst) + 8]
                          if b["ts"] <= a["ts"] + per and b["at"] <= a["ts"] + per]
                most = max(most, len(inside))
                if len(inside) > rate + burst:
                    problems.append("paced key %s of tenant %s: %d claims within %g s from %s (rate %d + burst %d): "
                                    "deliveries %s" % (key, t[:8], len(inside), per, stamp(a["ts"]), rate, burst,
                                                       [b["id"] for b in inside]))
                    break
        self.key_stats["most_paced"] = most
        return problems

    def keyed_figures(self):
        """The figures of the keyed claims the last check covered."""
        claims = self.claims_by_key
        n = sum(len(v) for v in claims.values())
        by = defaultdict(int)
        for (t, key), v in claims.items():
            m, o, r, _, _ = spec_of(key)
            by["ordered" if o else "paced" if r is not None else "max_leased %d" % m] += len(v)
        most = self.key_stats.get("most_leased", {})
        _, _, rate, per, burst = spec_of(PACED)
        return ("%d (%s); most leases of a key certainly held at once: %s; most claims of a paced key "
                "within %g s: %d (rate + burst %d)" % (
                    n, ", ".join("%s %d" % kv for kv in sorted(by.items())),
                    ", ".join("%s: %d" % kv for kv in sorted(most.items())) or "none",
                    per, self.key_stats.get("most_paced", 0), rate + burst))

    # --- I8 --------------------------------------------------------------------------
    def i8_unexpected(self, s, cut):
        from inject import server_crashes
        problems = ["%s: %s %s (%s)" % (a["c"], a["op"], a["sqlstate"], a["msg"])
                    for a in self.acks.by_kind.get("unexpected", [])]
        self.log_offset, lines = server_crashes(self.inj.server_log, self.log_offset)
        self.crash_lines += lines
        problems += self.crash_lines
        problems += ["client process %s died" % name for name in self.dead_clients()]
        return problems


def spec_of(key):
    """The limit the suite set for key (its own, else the target's for every key):
    (max_leased, ordered, rate, per, burst)."""
    spec = {k: tuple(v) for k, *v in KEY_LIMITS}
    return spec.get(key) or spec[""]


def stamp(epoch):
    """An epoch time as UTC text, to the millisecond."""
    if epoch is None:
        return "none"
    return time.strftime("%H:%M:%S", time.gmtime(epoch)) + ("%.3f" % (epoch % 1))[1:]
