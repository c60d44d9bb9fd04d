"""The faults: each function injects one and returns (landed, note), landed being False
when the fault could not be placed as described (that fails the suite).

  restart          pg_ctl stop -m immediate, then start (no shutdown checkpoint: crash
                   recovery replays the WAL)
  kill_claim       kill -9 of a backend inside baton.claim, blocked on the tenant's fence
                   lock (held by an uncommitted state change of another session): "lock"
                   mode; or waiting for the WAL flush of its commit: "commit" mode
  kill_finish      kill -9 of a backend inside baton.finish, blocked on the row lock of
                   the delivery (another session's SELECT ... FOR UPDATE), or in its commit
  kill_transition  kill -9 of a backend inside baton.transition_stage, blocked in the
                   workflow's decide function (on an advisory lock another session holds,
                   after the run was locked and before the successor stage is written),
                   or in its commit
  The kill modes alternate by round: odd rounds "lock", even rounds "commit".
  frozen           a worker holding a delivery lease and a run lease is stopped (SIGSTOP)
                   past both leases; the reaper / another owner takes over; it is resumed
                   (SIGCONT) and its late finish and complete_stage must fail with DU001
  kill_fire        a schedule '@every 1 second' of a fresh tenant, due: baton.fire_schedules
                   blocked inside its enqueue (the schedule row locked, the delivery's
                   INSERT waiting on a SHARE lock of baton.deliveries another session
                   holds), then kill -9 of that backend (odd rounds) or an immediate
                   stop and start of the server (even rounds). Checks: nothing of the
                   killed call survives, the schedule is still due, the next call fires
                   one delivery, for the latest slot, and a second call none
  fence            a busy tenant is fenced (set_tenant_state 'fenced') while its workers
                   hold leases; the fence's commit time and a snapshot of the tenant's rows
                   (key -> xmin) are kept for the checker
"""

import multiprocessing
import os
import signal
import subprocess
import threading
import time
import uuid

import psycopg

from clients import frozen_main
from common import APP_PREFIX, DECIDE_LOCK, setup_keys

SNAPSHOT_SQL = """
SELECT 'deliveries:' || id, xmin::text FROM baton.deliveries WHERE tenant = %(t)s
UNION ALL SELECT 'runs:' || id, xmin::text FROM baton.runs WHERE tenant = %(t)s
UNION ALL SELECT 'stages:' || id, xmin::text FROM baton.stages WHERE tenant = %(t)s
UNION ALL SELECT 'markers:' || entry_id || ':' || "position", xmin::text FROM baton.markers WHERE tenant = %(t)s
UNION ALL SELECT 'step_entries:' || id, xmin::text FROM baton.step_entries WHERE tenant = %(t)s
UNION ALL SELECT 'target_bindings:' || target, xmin::text FROM baton.target_bindings WHERE tenant = %(t)s
UNION ALL SELECT 'key_limits:' || target || ':' || key, xmin::text FROM baton.key_limits WHERE tenant = %(t)s
UNION ALL SELECT 'key_slots:' || target || ':' || key, xmin::text FROM baton.key_slots WHERE tenant = %(t)s
UNION ALL SELECT 'key_waiting:' || id, xmin::text FROM baton.key_waiting WHERE tenant = %(t)s
"""


class Injector:
    """Knows the cluster (data directory, pg_ctl) and injects faults into it."""

    def __init__(self, cluster_dir, bindir, logdir, verbose=False):
        self.cluster_dir = cluster_dir
        self.data = os.path.join(cluster_dir, "data")
        self.server_log = os.path.join(cluster_dir, "log")
        self.bindir = bindir
        self.logdir = logdir
        self.verbose = verbose
        self.frozen_seq = 0
        self.fenced = {}  # tenant -> {"ts": epoch seconds, "snapshot": {key: xmin}, "busy": n}
        self.windows = []  # (start, end) of each fault, epoch seconds: pauses for the schedules
        self.fire_pause = None  # an Event: set, the firer clients make no call

    def say(self, msg):
        if self.verbose:
            print("  [inject] " + msg, flush=True)

    def pg_ctl(self, *args):
        cmd = [os.path.join(self.bindir, "pg_ctl"), "-D", self.data] + list(args)
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, cwd=self.cluster_dir, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=120)

    def wait_ready(self, timeout=90.0):
        """Waits until the server accepts connections and answers; True if it did."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with psycopg.connect("", autocommit=True, connect_timeout=3) as conn:
                    conn.execute("SELECT 1")
                    return True
            except psycopg.Error:
                time.sleep(0.25)
        return False

    # --- restart ---------------------------------------------------------------------
    def restart(self):
        stop = self.pg_ctl("-m", "immediate", "-w", "-t", "60", "stop")
        start = self.pg_ctl("-l", self.server_log, "-w", "-t", "120", "start")
        ok = stop.returncode == 0 and start.returncode == 0
        return ok, "immediate stop rc=%d, start rc=%d %s" % (
            stop.returncode, start.returncode, (stop.stderr + start.stderr).strip()[:200])

    # --- kill -9 of a backend inside a call ---------------------------------------------
    # Where the victim must be waiting: on a lock another session holds (the "lock" mode),
    # or on the WAL flush of its own commit (the "commit" mode: the commit record may or
    # may not be on disk, and the client never hears the answer).
    WAITS = {
        "lock": "wait_event_type = 'Lock'",
        "commit": "((wait_event_type = 'IO' AND wait_event IN ('WALSync', 'WALWrite')) "
                  "OR (wait_event_type = 'LWLock' AND wait_event = 'WALWrite'))",
    }

    def kill_inside(self, function, mode, timeout=20.0, hold=None, app=None):
        """Waits for a suite backend whose statement calls baton.<function> and that waits
        as `mode` says, and kills it with SIGKILL; the postmaster then restarts every
        backend (crash recovery). Returns (landed, note); landed needs the victim found
        and a witness connection, opened before the kill, broken after it. With app, the
        victim is the backend of that application_name only."""
        deadline = time.monotonic() + timeout
        watch = psycopg.connect("", autocommit=True)
        witness = psycopg.connect("", autocommit=True)
        try:
            while time.monotonic() < deadline:
                rows = watch.execute(
                    "SELECT pid, wait_event_type, wait_event, "
                    "extract(epoch FROM clock_timestamp() - query_start)::float8 "
                    "FROM pg_stat_activity WHERE application_name LIKE %s "
                    "AND state = 'active' AND query LIKE %s AND " + self.WAITS[mode],
                    (app or APP_PREFIX + "%", "%baton." + function + "(%")).fetchall()
                if rows:
                    pid, wtype, wevent, waited = rows[0]
                    os.kill(pid, signal.SIGKILL)
                    note = "killed pid %d waiting on %s/%s inside baton.%s (%.3f s into the call)" % (
                        pid, wtype, wevent, function, waited)
                    self.say(note)
                    break
                time.sleep(0.005 if mode == "commit" else 0.02)
            else:
                witness.close()
                return False, "no backend waiting (%s) in baton.%s within %.0f s" % (mode, function, timeout)
        finally:
            try:
                watch.close()
            except psycopg.Error:
                pass
        restarted = False
        for _ in range(100):
            try:
                witness.execute("SELECT 1")
                time.sleep(0.05)
            except psycopg.Error:
                restarted = True
                break
        for conn in (witness, hold):
            try:
                if conn is not None:
                    conn.close()
            except psycopg.Error:
                pass
        if not restarted:
            return False, note + "; but the server did not restart its backends"
        return True, note + "; server restarted all backends"

    def busiest_tenant(self, conn):
        """The active tenant with the most leases held right now (claimed deliveries plus
        owned runs), and that count."""
        row = conn.execute(
            "SELECT t.tenant::text, "
            "(SELECT count(*) FROM baton.deliveries d WHERE d.tenant = t.tenant AND d.status = 'claimed') "
            "+ (SELECT count(*) FROM baton.runs r WHERE r.tenant = t.tenant AND r.owner IS NOT NULL "
            "   AND r.status IN ('approved', 'running')) AS busy "
            "FROM baton.tenants t WHERE t.state = 'active' ORDER BY busy DESC, t.created_at LIMIT 1").fetchone()
        return row[0], row[1]

    def kill_claim(self, mode="lock"):
        if mode == "commit":
            return self.kill_inside("claim", "commit")
        hold = psycopg.connect("", autocommit=False)
        tenant, _ = self.busiest_tenant(hold)
        hold.commit()
        # Uncommitted state change: the fence lock of the tenant is held exclusively, and
        # every claim of that tenant waits for it inside baton.claim.
        hold.execute("UPDATE baton.tenants SET state = 'quiescing' WHERE tenant = %s", (tenant,))
        # The tenant's workers may all be blocked in finish or renew by now, with no claim
        # to come: one more claimer of the tenant makes sure a claim waits to be killed.
        claimer = threading.Thread(target=self.blocked_claim, args=(tenant,), daemon=True)
        claimer.start()
        landed, note = self.kill_inside("claim", "lock", hold=hold)
        claimer.join(timeout=30)
        if landed and self.wait_ready():
            # The state change died uncommitted with the crash: the tenant is active.
            with psycopg.connect("", autocommit=True) as conn:
                state = conn.execute("SELECT state FROM baton.tenants WHERE tenant = %s",
                                     (tenant,)).fetchone()[0]
            if state != "active":
                return False, note + "; but the uncommitted fence of %s survived (%s)" % (tenant, state)
        return landed, note

    @staticmethod
    def blocked_claim(tenant):
        """A suite connection that calls baton.claim for tenant (on a target it has), and
        waits there behind the fence until the kill ends it."""
        try:
            with psycopg.connect("", autocommit=True, application_name=APP_PREFIX + "claimer") as conn:
                conn.execute("SELECT baton.claim(%s, coalesce((SELECT target FROM baton.deliveries "
                             "WHERE tenant = %s LIMIT 1), 'w'), '1 minute')", (tenant, tenant))
        except psycopg.Error:
            pass  # killed, as meant

    def kill_finish(self, mode="lock"):
        if mode == "commit":
            return self.kill_inside("finish", "commit")
        hold = psycopg.connect("", autocommit=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            # Every claimed delivery's row lock: their finishers wait inside baton.finish's
            # UPDATE. Leases are short, so at a given instant none may be claimed: try again.
            locked = hold.execute("SELECT id FROM baton.deliveries WHERE status = 'claimed' "
                                  "FOR UPDATE SKIP LOCKED").fetchall()
            if locked:
                landed, note = self.kill_inside("finish", "lock", timeout=1.0, hold=hold)
                if landed or "did not restart" in note:
                    return landed, note
            hold.rollback()
            time.sleep(0.05)
        hold.close()
        return False, "no backend blocked in baton.finish within 30 s"

    def kill_transition(self, mode="lock"):
        if mode == "commit":
            return self.kill_inside("transition_stage", "commit")
        hold = psycopg.connect("", autocommit=True)
        # The decide function takes this lock (shared): transitions that decide now wait
        # inside baton.transition_stage, with the run locked and the successor not written.
        hold.execute("SELECT pg_advisory_lock(%s)", (DECIDE_LOCK,))
        return self.kill_inside("transition_stage", "lock", hold=hold)

    # --- a schedule fired across a crash -----------------------------------------------
    @staticmethod
    def blocked_fire():
        """A suite connection that calls baton.fire_schedules and waits inside it (on the
        SHARE lock of baton.deliveries) until the fault ends it."""
        try:
            with psycopg.connect("", autocommit=True, application_name=APP_PREFIX + "firer") as conn:
                conn.execute("SELECT baton.fire_schedules()")
        except psycopg.Error:
            pass  # killed, as meant

    def kill_fire(self, checks, mode="kill"):
        """kill -9 (mode "kill") or an immediate restart (mode "restart") while
        fire_schedules is blocked in its enqueue; appends (name, passed, detail) checks.
        The firer clients are paused meanwhile (their calls begun before the new schedule
        was due cannot fire it), so that its checks see the injector's calls alone."""
        if self.fire_pause is not None:
            self.fire_pause.set()
        try:
            return self.kill_fire_paused(checks, mode)
        finally:
            if self.fire_pause is not None:
                self.fire_pause.clear()

    def kill_fire_paused(self, checks, mode):
        """kill_fire, the firer clients paused."""
        # The load's schedules locked (fire_schedules skips them: the blocked call holds
        # the new schedule's row), then the enqueues made to wait; then a fresh tenant
        # (the load's clients write to it too, on targets of their own) and its
        # schedule, not due before these locks.
        hold = psycopg.connect("", autocommit=False)
        hold.execute("SELECT 1 FROM baton.schedule_rows FOR UPDATE")
        hold.execute("LOCK TABLE baton.deliveries IN SHARE MODE")
        tenant = str(uuid.uuid4())
        with psycopg.connect("", autocommit=True) as conn:
            conn.execute("SELECT baton.create_tenant(%s)", (tenant,))
            conn.execute("SELECT baton.schedule(%s, 'fault_tick', 'fault_ticks', '@every 1 second')", (tenant,))
        time.sleep(1.2)  # its first slot has passed: due
        firer = threading.Thread(target=self.blocked_fire, daemon=True)
        firer.start()
        if mode == "kill":
            landed, note = self.kill_inside("fire_schedules", "lock", hold=hold, app=APP_PREFIX + "firer")
        else:
            waiting = False
            with psycopg.connect("", autocommit=True) as watch:
                for _ in range(400):
                    waiting = watch.execute(
                        "SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = %s "
                        "AND wait_event_type = 'Lock' AND query LIKE '%%baton.fire_schedules(%%'",
                        (APP_PREFIX + "firer",)).fetchone()[0]
                    if waiting:
                        break
                    time.sleep(0.05)
            if waiting:
                landed, note = self.restart()
                note = "immediate restart while fire_schedules waited in its enqueue: " + note
            else:
                landed, note = False, "no fire_schedules waiting within 20 s"
            try:
                hold.close()
            except psycopg.Error:
                pass
        firer.join(timeout=30)
        if not (landed and self.wait_ready()):
            return landed, note
        with psycopg.connect("", autocommit=True) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM baton.deliveries WHERE tenant = %s AND target = 'fault_ticks'), "
                "last_fired_at IS NULL, "
                "next_fire_at <= now() FROM baton.schedules WHERE tenant = %s AND name = 'fault_tick'",
                (tenant, tenant)).fetchone()
            checks.append(("kill_fire: nothing of the killed call survives (no delivery, the row not advanced)",
                           row[0] == 0 and row[1], "deliveries %s, last_fired_at unset %s" % (row[0], row[1])))
            checks.append(("kill_fire: the schedule is still due after recovery", row[2], ""))
            conn.execute("BEGIN")
            conn.execute("SELECT baton.fire_schedules()")
            conn.execute("SELECT baton.fire_schedules()")
            row = conn.execute(
                "SELECT count(d.id), count(DISTINCT d.dedup_key), bool_and(d.id = s.last_delivery_id), "
                "bool_and(s.last_fired_at = date_trunc('second', now())), "
                "bool_and(d.dedup_key = 'schedule:fault_tick:' || to_char(s.last_fired_at AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) "
                "FROM baton.schedules s JOIN baton.deliveries d ON d.tenant = s.tenant AND d.target = 'fault_ticks' "
                "WHERE s.tenant = %s AND s.name = 'fault_tick'", (tenant,)).fetchone()
            conn.execute("COMMIT")
            checks.append(("kill_fire: the latest missed slot fires once, keyed by its slot, a second call none",
                           row[0] == 1 and row[1] == 1 and row[2] and row[3] and row[4],
                           "deliveries %s (distinct keys %s), recorded %s, latest slot %s, keyed %s" % row))
            conn.execute("SELECT baton.unschedule(%s, 'fault_tick')", (tenant,))
        return landed, note

    # --- a frozen worker ---------------------------------------------------------------
    def frozen(self, checks):
        """Runs one frozen worker; appends (name, passed, detail) for each late call to
        checks."""
        conn = psycopg.connect("", autocommit=True)
        try:
            tenant, _ = self.busiest_tenant(conn)
            self.frozen_seq += 1
            name = "frozen-%d" % self.frozen_seq
            ctx = multiprocessing.get_context("fork")
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=frozen_main, args=(name, self.logdir, tenant, child, self.frozen_seq))
            proc.start()
            if not parent.poll(40):
                proc.kill()
                return False, "the frozen worker never reported its leases"
            held = parent.recv()
            if len(held) < 2:
                proc.join(10)
                return False, "the frozen worker could not take a delivery and a run: %r" % (held,)
            os.kill(proc.pid, signal.SIGSTOP)
            did, dgen = held["delivery"]
            run, rgen, sid = held["run"]
            self.say("%s stopped holding delivery %d (generation %d) and run %s (generation %d)"
                     % (name, did, dgen, run, rgen))
            # Past both leases: the reaper returns the delivery, another worker (or, after
            # 3 s, this injector acting as one) acquires the run.
            deadline = time.monotonic() + 30
            forced = False
            taken = (False, False)
            start = time.monotonic()
            while time.monotonic() < deadline:
                dg = conn.execute("SELECT generation FROM baton.deliveries WHERE tenant = %s AND id = %s",
                                  (tenant, did)).fetchone()[0]
                rg = conn.execute("SELECT generation FROM baton.runs WHERE tenant = %s AND id = %s",
                                  (tenant, run)).fetchone()[0]
                taken = (dg > dgen, rg > rgen)
                if all(taken):
                    break
                if not taken[1] and not forced and time.monotonic() - start > 3:
                    g = conn.execute("SELECT baton.acquire_run(%s, %s, 'fault-takeover', '1 second')",
                                     (tenant, run)).fetchone()[0]
                    if g is not None:
                        conn.execute("SELECT baton.release_run(%s, %s, %s)", (tenant, run, g))
                    forced = True
                time.sleep(0.2)
            os.kill(proc.pid, signal.SIGCONT)
            parent.send("go")
            answers = parent.recv() if parent.poll(30) else {}
            proc.join(10)
            if proc.is_alive():
                proc.kill()
            if not all(taken):
                return False, "%s was not taken over while %s was stopped" % (
                    " and ".join(w for w, t in zip(("the delivery", "the run"), taken) if not t), name)
            for call in ("finish", "complete_stage"):
                got = answers.get(call, "no answer")
                checks.append(("late %s of %s after its lease was taken over is DU001" % (call, name),
                               got == "DU001", "got %s" % (got,)))
            others = answers.get("others", {})
            wrong = {k: v for k, v in others.items() if v != "DU001"}
            checks.append(("late renew, retry, transition_stage, start_stage, fail_stage, renew_run, "
                           "release_run and the marker action of %s are DU001" % name, bool(others) and not wrong,
                           "got %s" % (wrong or "no answer",)))
            return True, "%s frozen %.1f s past its leases (run taken over by %s)" % (
                name, time.monotonic() - start, "the injector" if forced else "a worker")
        finally:
            conn.close()

    # --- a fenced tenant ---------------------------------------------------------------
    def fence(self):
        conn = psycopg.connect("", autocommit=True)
        try:
            # A fresh tenant first, so the load keeps as many active tenants (keyed ones
            # too: its keyed target and limits set up).
            fresh = str(uuid.uuid4())
            conn.execute("SELECT baton.create_tenant(%s)", (fresh,))
            setup_keys(conn, fresh)
            tenant, busy = self.busiest_tenant(conn)
            conn.execute("SELECT baton.set_tenant_state(%s, 'fenced')", (tenant,))
            ts = conn.execute("SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin))::float8 "
                              "FROM baton.tenants WHERE tenant = %s", (tenant,)).fetchone()[0]
            snapshot = dict(conn.execute(SNAPSHOT_SQL, {"t": tenant}).fetchall())
            self.fenced[tenant] = {"ts": ts, "snapshot": snapshot, "busy": busy}
            # Keep the load on: its writers of that tenant now get DU002.
            time.sleep(1.5)
            if ts is None:
                return False, "no commit timestamp for the fence of %s" % tenant
            return True, "fenced %s while it held %d leases (%d rows)" % (tenant, busy, len(snapshot))
        finally:
            conn.close()


def server_crashes(server_log, offset):
    """Lines of the server log (from offset) where a backend died by a signal other than
    our SIGKILL, and PANICs; returns (new offset, lines)."""
    bad = []
    try:
        with open(server_log, "r", errors="replace") as f:
            f.seek(offset)
            data = f.read()
            offset = f.tell()
    except OSError:
        return offset, bad
    for line in data.splitlines():
        if ("terminated by signal" in line and "signal 9" not in line) or "PANIC:" in line:
            bad.append(line.strip())
    return offset, bad

