"""Moving and losing nodes loses nothing: the load of the fault suite (test/fault) through
the coordinator of a three-node Citus cluster, while a shard group is moved from worker S
to worker D (citus_move_shard_placement, the first mode given), another from D to S (the
second mode, if any), and then D's postmaster is killed with SIGKILL and started again.
Afterwards the fault suite's invariants are checked against the clients' acknowledgement
logs, through the coordinator, and the figures are printed. Run by test/citus/fault.sh,
which starts the cluster, creates and distributes pg_baton, exports PGHOST/PGPORT (the
coordinator), CITUS_BASE, CITUS_PORTS and PG_BINDIR, and reads BASE/fault.json (the
moved tenants, the killed worker) for its own checks.

usage: fault.py [--modes block_writes,force_logical] [--load-seconds S]
"""

import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fault"))

import psycopg  # noqa: E402

import clients  # noqa: E402
import driver  # noqa: E402
from check import Checker  # noqa: E402
from common import TARGETS, WORKFLOW, AckLog, Session, now  # noqa: E402

# The load: role -> processes (fewer than the single-node suite's: three servers share
# the machine).
LOAD = {"producer": 2, "dworker": 2, "rworker": 2, "reaper": 1, "operator": 1}

# A straight workflow (no decide function: each stage has one successor), so the
# transitions run on the workers without a function of the suite's own there.
DEFINITION = """{"start": "a",
 "stages": {"a": {"next": ["b"]},
            "b": {"next": ["c"], "max_attempts": 6, "retry_delay": "100 milliseconds"},
            "c": {"next": ["@finish"], "max_attempts": 6}}}"""

TENANTS_PER_GROUP = 2

# Seconds a move may take before it counts as hung (a logical move waits for its
# subscription to catch up, without a limit of its own).
MOVE_TIMEOUT = 90

# What a client may be told while a worker is down or a shard group is being moved,
# besides a lost connection: Citus' "connection to the remote node ... failed" and its
# other errors about a node it cannot reach (class 08 is a lost connection already),
# 57P01-57P03 from the worker going away, XX000 ("could not receive query results",
# raised by Citus' executor when the worker's connection breaks mid-statement).
FAULT_STATES = {"XX000", "57P01", "57P02", "57P03", "55000", "40001", "40P01"}


def client_main(role, name, logdir, stop, seed):
    """A client of the fault suite whose every failed call is logged ("err" record, with
    its SQLSTATE and time) for the figures of each window."""
    c = clients.Client(name, logdir, stop, seed)
    c.db.on_error = lambda state: c.log.write("err", s=state, ts=now())
    try:
        clients.ROLES[role](c)
    finally:
        c.finish_up()


class Windows:
    """The fault windows (name, start, end): errors and unexpected answers are counted by
    the window their call was sent in."""

    def __init__(self):
        self.spans = []

    def add(self, name, start, end):
        self.spans.append((name, start, end))

    def of(self, ts):
        for name, start, end in self.spans:
            if start <= ts <= end:
                return name
        return "outside"


class CitusChecker(Checker):
    """The fault suite's checker; an unexpected SQLSTATE is tolerated (and counted) only
    inside a fault window and only if it is one a node's absence explains."""

    def __init__(self, logdir, windows, server_log):
        stub = type("Stub", (), {"fenced": {}, "server_log": server_log})()
        super().__init__(logdir, stub)
        self.windows = windows
        self.tolerated = {}

    def i8_unexpected(self, s, cut):
        problems = []
        self.tolerated = {}
        for a in self.acks.by_kind.get("unexpected", []):
            w = self.windows.of(a["ts"])
            if w != "outside" and a["sqlstate"] in FAULT_STATES:
                key = "%s %s" % (w, a["sqlstate"])
                self.tolerated[key] = self.tolerated.get(key, 0) + 1
            else:
                problems.append("%s (%s window): %s %s (%s)" % (a["c"], w, a["op"], a["sqlstate"], a["msg"]))
        from inject import server_crashes
        self.log_offset, lines = server_crashes(self.inj.server_log, self.log_offset)
        self.crash_lines += lines
        problems += self.crash_lines
        problems += ["client process %s died" % name for name in self.dead_clients()]
        return problems


def one(conn, sql, params=()):
    return conn.execute(sql, params).fetchone()[0]


def check_items(checker, tally, window):
    """The SQLSTATEs tolerated in a WINDOW of faults, and the items lost and duplicated
    (none of either), printed and counted."""
    print("unexpected SQLSTATEs tolerated in %s: %s" % (window, ", ".join(
        "%s %d" % kv for kv in sorted(checker.tolerated.items())) or "none"))
    print("items lost: %d, duplicates: %d" % (checker.lost, checker.dups))
    tally.test("items lost is 0", checker.lost == 0, str(checker.lost))
    tally.test("duplicates is 0", checker.dups == 0, str(checker.dups))


def check_stored(conn, acks, tally):
    """The cluster-wide invariants the load's acknowledgements leave to check, load
    stopped: each transition applied once (one stage row per run, stage and entry
    sequence), every acknowledged stage stored, delivery ids unique across the nodes."""
    dup_seq = one(conn, "SELECT count(*) FROM (SELECT 1 FROM baton.stages GROUP BY tenant, run_id, stage, "
                        "entry_seq HAVING count(*) > 1) d")
    tally.test("no transition applied twice (stages unique per run, stage and sequence)", dup_seq == 0,
               "%d duplicated" % dup_seq)
    sids = {(a["t"], a["sid"]) for a in acks.by_kind.get("tr", []) if a["kind"] != "finished"}
    stored = {(r[0], r[1]) for r in conn.execute("SELECT tenant::text, id FROM baton.stages").fetchall()}
    tally.test("every acknowledged transition's stage is stored (%d)" % len(sids), sids <= stored,
               "%d missing" % len(sids - stored))
    dup_id = one(conn, "SELECT count(*) - count(DISTINCT id) FROM baton.deliveries")
    tally.test("delivery ids unique across the cluster", dup_id == 0, str(dup_id))


def node_of(conn, tenant):
    """The port of the worker holding the tenant's shard group."""
    return one(conn, "SELECT nodeport FROM pg_catalog.pg_dist_shard_placement WHERE shardid = "
                     "pg_catalog.get_shard_id_for_distribution_column('baton.tenants', %s::uuid)", (tenant,))


def group_nodes(conn, tenant):
    """The ports holding the shards of the tenant's group, of every baton table."""
    return sorted(r[0] for r in conn.execute(
        "SELECT DISTINCT p.nodeport FROM pg_catalog.pg_dist_partition d "
        "JOIN pg_catalog.pg_dist_shard_placement p ON p.shardid = "
        "pg_catalog.get_shard_id_for_distribution_column(d.logicalrelid, %s::uuid) "
        "WHERE d.logicalrelid::text LIKE 'baton.%%' AND d.partmethod = 'h'", (tenant,)).fetchall())


def shard_of(conn, tenant):
    """The shard of baton.tenants holding the tenant: names its shard group."""
    return one(conn, "SELECT pg_catalog.get_shard_id_for_distribution_column('baton.tenants', %s::uuid)", (tenant,))


def setup():
    """TENANTS_PER_GROUP tenants in every shard group, a target binding each, the
    workflow and the side effects' table (a plain table on the coordinator). Returns
    {shard: [tenants]}."""
    groups = {}
    with psycopg.connect("", autocommit=True) as conn:
        conn.execute("CREATE TABLE public.fault_actions (tenant uuid NOT NULL, entry_id bigint NOT NULL, "
                     "pos int NOT NULL, worker text NOT NULL, generation bigint NOT NULL, "
                     "done_at timestamptz NOT NULL DEFAULT clock_timestamp())")
        conn.execute("SELECT baton.define_workflow(%s, %s::jsonb)", (WORKFLOW, DEFINITION))
        shards = [r[0] for r in conn.execute(
            "SELECT shardid FROM pg_catalog.pg_dist_shard WHERE logicalrelid = 'baton.tenants'::regclass")]
        for shard in shards:
            groups[shard] = []
        while min(len(g) for g in groups.values()) < TENANTS_PER_GROUP:
            t = str(uuid.uuid4())
            g = groups[shard_of(conn, t)]
            if len(g) < TENANTS_PER_GROUP:
                conn.execute("SELECT baton.create_tenant(%s)", (t,))
                # The binding check reads target_bindings on the tenant's node, moved or not.
                conn.execute("SELECT baton.bind_target(%s, %s, 'postgres')", (t, TARGETS[1]))
                g.append(t)
        # Crash recovery after the kill replays the load's WAL, not the cluster's setup.
        conn.execute("SELECT pg_catalog.run_command_on_all_nodes('CHECKPOINT')")
    return groups


def pg_ctl(bindir, data, *args):
    cmd = [os.path.join(bindir, "pg_ctl"), "-D", data] + list(args)
    if os.getuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    return subprocess.run(cmd, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=120)


def children_of(pid):
    """Pids of the live processes whose parent is pid."""
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/status" % d) as f:
                for line in f:
                    if line.startswith("PPid:"):
                        if int(line.split()[1]) == pid:
                            kids.append(int(d))
                        break
        except OSError:
            pass
    return kids


def kill_and_restart(base, bindir, node, ports):
    """SIGKILL to the postmaster of node (0..2), then, once its orphaned backends have
    left, pg_ctl start (crash recovery). Returns (kill time, orphans' exit seconds,
    the server log's size before the start, start done time, started, note)."""
    data = os.path.join(base, "n%d" % node, "data")
    with open(os.path.join(data, "postmaster.pid")) as f:
        pm = int(f.readline())
    kids = children_of(pm)
    killed_at = now()
    os.kill(pm, signal.SIGKILL)
    # The backends notice their postmaster's death and exit; a restart must wait for
    # them (they still hold the shared memory).
    deadline = time.monotonic() + 30
    while any(os.path.exists("/proc/%d" % k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [k for k in kids if os.path.exists("/proc/%d" % k)]
    orphans_gone = now() - killed_at
    for k in left:
        os.kill(k, signal.SIGKILL)
    log_at_start = os.path.getsize(os.path.join(base, "n%d" % node, "log"))
    start = pg_ctl(bindir, data, "-l", os.path.join(base, "n%d" % node, "log"), "-w", "-t", "120", "start")
    note = "postmaster %d of port %d killed; %d backends, gone after %.2f s%s; start rc=%d %s" % (
        pm, ports[node], len(kids), orphans_gone, (", %d killed" % len(left)) if left else "",
        start.returncode, start.stderr.strip()[:200])
    return killed_at, orphans_gone, log_at_start, now(), start.returncode == 0, note


def probe_write(session, log, tenant, n):
    """One enqueue to tenant with a fresh key, logged as the clients log theirs; True if
    acknowledged."""
    key = "probe-%d" % n
    ts = now()
    log.write("enq_try", t=tenant, tg=TARGETS[0], key=key, ts=ts)
    res = session.call("SELECT baton.enqueue(%s, %s, %s, %s::jsonb)",
                       (tenant, TARGETS[0], key, clients.payload_of(key)))
    if res[0] == "ok":
        log.write("enq", t=tenant, tg=TARGETS[0], key=key, id=res[1][0][0], ts=ts)
        return True
    return False


def move(sock, shard, source, dest, mode):
    """citus_move_shard_placement of the shard's group, given MOVE_TIMEOUT; returns
    (start, end, error or None)."""
    t0 = now()
    try:
        with psycopg.connect("", autocommit=True, options="-c statement_timeout=%ds" % MOVE_TIMEOUT) as conn:
            conn.execute("SELECT pg_catalog.citus_move_shard_placement(%s, %s, %s, %s, %s, "
                         "shard_transfer_mode => %s::citus.shard_transfer_mode)",
                         (shard, sock, source, sock, dest, mode))
    except psycopg.Error as e:
        return t0, now(), "%s: %s" % (e.sqlstate, str(e).strip()[:300])
    return t0, now(), None


def progress(checker, seconds):
    """Acknowledgements made during the next seconds of load."""
    checker.acks.read()
    before = checker.acks.acknowledged()
    time.sleep(seconds)
    checker.acks.read()
    return checker.acks.acknowledged() - before


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default="block_writes,force_logical",
                    help="one move per mode, in order (block_writes, force_logical)")
    ap.add_argument("--load-seconds", type=float, default=4.0)
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if not modes or any(m not in ("block_writes", "force_logical") for m in modes):
        ap.error("--modes: block_writes and/or force_logical")

    base = os.environ["CITUS_BASE"]
    bindir = os.environ["PG_BINDIR"]
    ports = [int(p) for p in os.environ["CITUS_PORTS"].split()]
    sock = os.environ["PGHOST"]
    logdir = tempfile.mkdtemp(prefix="pg_baton-citus-fault-acks.")
    windows = Windows()
    checker = CitusChecker(logdir, windows, os.path.join(base, "n0", "log"))
    tally = driver.Tally()
    started = time.monotonic()

    groups = setup()
    with psycopg.connect("", autocommit=True) as conn:
        node = {shard: node_of(conn, ts[0]) for shard, ts in groups.items()}
    # The moves: first the group of the busiest tenant (the producers send their shared
    # keys to the smallest tenant id), from its worker S to the other, D; then (a second
    # mode) one of D's own groups to S. D is then killed: it holds the first moved group.
    first = min(min(ts) for ts in groups.values())
    g1 = next(shard for shard, ts in groups.items() if first in ts)
    src = node[g1]
    dst = ports[1] if src == ports[2] else ports[2]
    plan = [(g1, src, dst, modes[0])]
    if len(modes) > 1:
        g2 = min(shard for shard in groups if node[shard] == dst)
        plan.append((g2, dst, src, modes[1]))
    print("tenant groups: %s" % "; ".join("shard %d on %d: %s" % (shard, node[shard], ", ".join(
        t[:8] for t in ts)) for shard, ts in sorted(groups.items())), flush=True)

    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    procs = driver.start_load(logdir, stop, LOAD, client_main)
    checker.dead_clients = lambda: [p.name for p in procs if p.exitcode not in (None, 0)]
    probe = Session("probe")
    probe_log = AckLog(logdir, "probe")
    figures = {"moves": []}
    victim_log = None
    try:
        figures["before"] = progress(checker, args.load_seconds)
        # --- the moves -----------------------------------------------------------------
        for shard, source, dest, mode in plan:
            t0, t1, error = move(sock, shard, source, dest, mode)
            windows.add("move", t0, t1 + 1.0)
            tally.test("citus_move_shard_placement of shard group %d, %d -> %d (%s), under load"
                       % (shard, source, dest, mode), error is None, error or "")
            with psycopg.connect("", autocommit=True) as conn:
                where = [group_nodes(conn, t) for t in groups[shard]]
            tally.test("... every shard of the group is on %d only" % dest,
                       all(w == [dest] for w in where), str(where))
            node[shard] = dest
            acked = progress(checker, args.load_seconds)
            tally.test("... the load goes on after it (%d acknowledged in %.0f s)" % (acked, args.load_seconds),
                       acked > 0)
            figures["moves"].append((mode, t1 - t0, acked))

        # --- the kill ------------------------------------------------------------------
        victim = ports.index(dst)
        victim_log = os.path.join(base, "n%d" % victim, "log")
        log_at_kill = os.path.getsize(victim_log)
        killed_at, orphans, log_at_start, started_at, start_ok, note = kill_and_restart(
            base, bindir, victim, ports)
        print("  " + note, flush=True)
        tally.test("the killed worker starts again", start_ok, note)
        n = 0
        back_at = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            n += 1
            if probe_write(probe, probe_log, first, n):
                back_at = now()
                break
            time.sleep(0.05)
        tally.test("writes to the moved tenant succeed again after the kill", back_at is not None,
                   "none within 90 s")
        back_at = back_at or now()
        windows.add("kill", killed_at, back_at + 2.0)
        figures["after"] = progress(checker, args.load_seconds)
        tally.test("the load goes on after the kill (%d acknowledged in %.0f s)"
                   % (figures["after"], args.load_seconds), figures["after"] > 0)
    finally:
        driver.stop_load(procs, stop)
        probe_log.close()
        probe.close()

    # --- the invariants, load stopped --------------------------------------------------
    for name, ok, detail in checker.run():
        tally.test(name, ok, detail)
    acks = checker.acks
    survivors = {t for shard, ts in groups.items() if node[shard] != dst for t in ts}
    during = sum(1 for k, v in acks.by_kind.items() if k in ("enq", "fin", "tr", "claim", "sub")
                 for a in v if a.get("t") in survivors and killed_at <= a["ts"] <= back_at)

    with psycopg.connect("", autocommit=True) as conn:
        check_stored(conn, acks, tally)

    errors = {}
    for a in acks.by_kind.get("err", []):
        w = windows.of(a["ts"])
        errors.setdefault(w, {})
        errors[w][a["s"]] = errors[w].get(a["s"], 0) + 1
    kinds = {k: len(v) for k, v in acks.by_kind.items()}
    print()
    print("===== citus fault figures (%.0f s) =====" % (time.monotonic() - started))
    for mode, seconds, acked in figures["moves"]:
        print("move (%s): %.2f s; %d operations acknowledged in the %.0f s after it"
              % (mode, seconds, acked, args.load_seconds))
    print("kill -9 of the postmaster -> its backends gone %.2f s, worker restarted %.2f s, "
          "a write to the moved tenant acknowledged %.2f s"
          % (orphans, started_at - killed_at, back_at - killed_at))
    print("acknowledged to the other worker's tenants until then: %d" % during)
    print("acknowledged: enqueue %d, finish %d, transition %d, claim %d, submit %d; all %d "
          "(%d before the first move, %d in the %.0f s after the restart)"
          % (kinds.get("enq", 0), kinds.get("fin", 0), kinds.get("tr", 0), kinds.get("claim", 0),
             kinds.get("sub", 0), acks.acknowledged(), figures["before"], figures["after"], args.load_seconds))
    for w in ("move", "kill", "outside"):
        print("errors seen by clients, %s window%s: %s" % (w, "s" if w == "move" else "", ", ".join(
            "%s %d" % kv for kv in sorted(errors.get(w, {}).items())) or "none"))
    check_items(checker, tally, "a fault window")
    moved = [groups[p[0]][0] for p in plan]
    with open(os.path.join(base, "fault.json"), "w") as f:
        # "other": a tenant that writes on while each moved one is fenced: never one of
        # them (the second move's group is among the survivors of the kill).
        json.dump({"moved": moved, "dest": [p[2] for p in plan],
                   "other": min(survivors - set(moved)), "killed": dst, "log": victim_log,
                   "log_kill": log_at_kill, "log_start": log_at_start}, f)
    return driver.close_run(tally, logdir)


if __name__ == "__main__":
    sys.exit(main())
