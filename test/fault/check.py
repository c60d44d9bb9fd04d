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
  I9 an acknowledged cancel_delivery is final: the delivery stays cancelled, never finished
"""

import glob
import json
import os
from collections import defaultdict

import psycopg

from inject import SNAPSHOT_SQL

WRITE_KINDS = {"enq", "sub", "claim", "fin", "retry", "acq", "tr", "start", "cpl", "mk", "mkdone", "resolve", "cancel",
               "fail_stage", "rel", "dcancel"}


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

    def read(self):
        """Reads the complete lines written since the last read; returns how many."""
        n = 0
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
                elif rec["k"] == "stats":
                    self.stats[rec["c"]] = rec
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
        return sum(len(v) for k, v in self.by_kind.items() if k in WRITE_KINDS or k in ("enq_again", "reap"))


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

    def snapshot(self):
        """All rows the invariants need, in one REPEATABLE READ READ ONLY transaction."""
        with psycopg.connect("", autocommit=True) as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            s = {}
            s["deliveries"] = conn.execute(
                "SELECT tenant::text, id, target, dedup_key, status, generation, attempts "
                "FROM baton.deliveries").fetchall()
            s["runs"] = conn.execute(
                "SELECT tenant::text, id::text, status, generation, idempotency_key FROM baton.runs").fetchall()
            s["stages"] = conn.execute(
                "SELECT tenant::text, id, run_id::text, stage, entry_seq, predecessor_id, is_current, status, result "
                "FROM baton.stages").fetchall()
            s["markers"] = conn.execute(
                "SELECT tenant::text, entry_id, \"position\", state FROM baton.markers").fetchall()
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
            conn.execute("COMMIT")
            return s

    def run(self):
        """Checks every invariant once; returns [(name, passed, detail)]."""
        self.acks.read()
        cut = self.acks.mark()
        s = self.snapshot()
        self.acks.read()
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
            ("I9 a cancelled delivery stays cancelled, never finished", self.i9_cancelled),
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
            if row is None or row[4] != a["r"] or row[5] != a["g"]:
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
        n = 0
        fin_gens = defaultdict(set)
        for a in self.acks.by_kind.get("fin", []):
            fin_gens[(a["t"], a["id"])].add(a["g"])
        n += sum(1 for g in fin_gens.values() if len(g) > 1)
        n += sum(1 for r in s["actions"] if r[3] > 1)
        return n

    # --- I2 --------------------------------------------------------------------------
    def i2_finished_once(self, s, cut):
        problems = []
        d = {(r[0], r[1]): r for r in s["deliveries"]}
        gens = defaultdict(set)
        for a in self.acks.upto("fin", cut):
            gens[(a["t"], a["id"])].add(a["g"])
            row = d.get((a["t"], a["id"]))
            if row is None:
                problems.append("finished delivery %d is missing" % a["id"])
            elif row[4] not in ("finished", "failed"):
                problems.append("delivery %d acknowledged %s at generation %d is now %s"
                                % (a["id"], a["r"], a["g"], row[4]))
            elif row[5] != a["g"]:
                problems.append("delivery %d settled at generation %d but acknowledged to generation %d"
                                % (a["id"], row[5], a["g"]))
            elif row[4] != a["r"]:
                problems.append("delivery %d is %s, acknowledged %s" % (a["id"], row[4], a["r"]))
        for key, g in gens.items():
            if len(g) > 1:
                problems.append("delivery %d finished by generations %s" % (key[1], sorted(g)))
        for a in self.acks.upto("retry", cut):
            row = d.get((a["t"], a["id"]))
            if row is None:
                problems.append("retried delivery %d is missing" % a["id"])
            elif a["r"] == "pending" and row[5] <= a["g"]:
                problems.append("delivery %d given back at generation %d still has generation %d"
                                % (a["id"], a["g"], row[5]))
            elif a["r"] == "failed" and (row[4] != "failed" or row[5] != a["g"]):
                problems.append("delivery %d failed by retry at generation %d is %s at %d"
                                % (a["id"], a["g"], row[4], row[5]))
        return problems

    # --- I3 --------------------------------------------------------------------------
    def i3_generations(self, s, cut):
        problems = []
        acked_d = defaultdict(int)
        for kind in ("claim", "fin", "retry"):
            for a in self.acks.upto(kind, cut):
                key = (a["t"], a["id"])
                acked_d[key] = max(acked_d[key], a["g"])
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
        fins = {(a["t"], a["id"]): a for a in self.acks.by_kind.get("fin", [])}
        for r in s["deliveries"]:
            key3 = (r[0], r[1], r[5])
            if r[4] == "finished" or (r[4] == "failed" and (r[0], r[1]) in fins):
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
    def i9_cancelled(self, s, cut):
        """The load has no redrive: an acknowledged cancel is final. No finish or failure
        of it is acknowledged (before the cancel it would have been DU007, after it DU001)."""
        problems = []
        d = {(r[0], r[1]): r for r in s["deliveries"]}
        fins = {(a["t"], a["id"]): a for a in self.acks.by_kind.get("fin", [])}
        for a in self.acks.upto("dcancel", cut):
            key = (a["t"], a["id"])
            row = d.get(key)
            if row is None:
                problems.append("cancelled delivery %d is missing" % a["id"])
            elif row[4] != "cancelled":
                problems.append("delivery %d acknowledged cancelled is %s" % (a["id"], row[4]))
            if key in fins:
                problems.append("delivery %d acknowledged cancelled and %s at generation %d"
                                % (a["id"], fins[key]["r"], fins[key]["g"]))
        return problems

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
