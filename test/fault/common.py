"""Shared pieces of the fault suite: the connection that survives server restarts, the
acknowledgement log every client keeps, the suite's fixed names, and the keyed target
with the limits of its keys.

Every client process writes what the server acknowledged to its own JSON-lines file
(one object per line, line-buffered, so a line is on disk before the client's next
call). The checker reads these files after each fault and compares them with the tables.
"""

import json
import os
import time

import psycopg

WORKFLOW = "fault_flow"
TARGETS = ("alpha", "beta")
# The target of the keyed load (baton.enqueue_keyed), bound in every tenant the keyed
# clients use, with the limits below set on it before its first delivery.
KEYED = "keyed"
LIMITED_KEYS = ("k1", "k2", "k3")  # at most 2 admitted each
ORDERED_KEY = "ord"  # one at a time, in id order
PACED_KEY = "pace"  # at most PACE_RATE claims per PACE_PER seconds, PACE_BURST at once
COVERED_KEYS = ("c0", "c1", "c2", "c3", "c4")  # no limit of their own: the target's, 3 each
PACE_RATE, PACE_PER, PACE_BURST = 10, 1.0, 5
# (key, max_leased, ordered, rate, per in seconds, burst) as baton.key_limits holds them;
# key '' is the limit of every key without one of its own. Never changed once set.
KEY_LIMITS = tuple([(k, 2, False, None, None, None) for k in LIMITED_KEYS] + [
    (ORDERED_KEY, 1, True, None, None, None),
    (PACED_KEY, None, False, PACE_RATE, PACE_PER, PACE_BURST),
    ("", 3, False, None, None, None),
])
DECIDE_LOCK = 424242  # advisory lock key the decide function takes (shared) mid-transition
APP_PREFIX = "fault-"  # application_name prefix of every suite connection

# SQLSTATE classes of a lost connection or a server going down: the call may or may not
# have committed, the client does not know.
CONNECTION_STATES = ("08", "57P01", "57P02", "57P03")


def setup_keys(conn, tenant):
    """Binds the keyed target in tenant and sets its limits (KEY_LIMITS), in one
    transaction: the keyed clients use only tenants whose limits are set, so every
    keyed delivery is enqueued under them. conn is in autocommit mode."""
    with conn.transaction():
        conn.execute("SELECT baton.bind_target(%s, %s, current_user::regrole)", (tenant, KEYED))
        for key, max_leased, ordered, rate, per, burst in KEY_LIMITS:
            if max_leased is not None:
                conn.execute("SELECT baton.limit_key(%s, %s, %s, NULLIF(%s, ''), %s)",
                             (tenant, KEYED, max_leased, key, ordered))
            if rate is not None:
                conn.execute("SELECT baton.rate_limit_key(%s, %s, %s, make_interval(secs => %s), %s, NULLIF(%s, ''))",
                             (tenant, KEYED, rate, per, burst, key))


def now():
    """Wall-clock time in seconds; the server runs on this machine, so its commit
    timestamps and these are on one clock."""
    return time.time()


class AckLog:
    """The append-only file of one client's acknowledged (and attempted) operations."""

    def __init__(self, directory, name):
        self.name = name
        self.path = os.path.join(directory, name + ".jsonl")
        self.file = open(self.path, "a", buffering=1, encoding="utf-8")

    def write(self, record_kind, /, **fields):
        fields["k"] = record_kind
        fields["c"] = self.name
        self.file.write(json.dumps(fields, separators=(",", ":")) + "\n")

    def close(self):
        self.file.close()


class Session:
    """One libpq connection in autocommit mode that reconnects after a crash.

    call() returns ("ok", rows), ("err", sqlstate, message), ("lost",) when the
    connection broke during the call (outcome unknown), or ("stopped",) when the
    suite is stopping and no connection could be made.
    """

    def __init__(self, name, stop=None):
        self.name = name
        self.stop = stop
        self.conn = None
        # Server settings of every connection, as libpq's options ("-c name=value").
        self.options = None
        self.reconnects = 0
        # Called with the SQLSTATE (or "lost") of every failed call, when set: the Citus
        # fault suite (test/citus/fault.py) counts the errors of each fault's window.
        self.on_error = None

    def failed(self, e):
        """Sorts a failed call: ("lost",) after closing a broken connection, else
        ("err", sqlstate, message); tells on_error either way."""
        state = getattr(e, "sqlstate", None) or ""
        lost = self.conn.closed or self.conn.broken or state.startswith(CONNECTION_STATES)
        if self.on_error is not None:
            self.on_error(state or "lost")
        if lost:
            self.close()
            self.reconnects += 1
            return ("lost",)
        return ("err", state, str(e).splitlines()[0] if str(e) else "")

    def stopping(self):
        return self.stop is not None and self.stop.is_set()

    def connect(self, give_up_after=120.0):
        """Connects, waiting for the server to come back; False if stopping or timed out."""
        deadline = time.monotonic() + give_up_after
        while not self.stopping() and time.monotonic() < deadline:
            try:
                extra = {"options": self.options} if self.options else {}
                self.conn = psycopg.connect(
                    "", autocommit=True, connect_timeout=3,
                    application_name=APP_PREFIX + self.name, **extra)
                return True
            except psycopg.Error:
                self.conn = None
                time.sleep(0.2)
        return False

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:
                pass
        self.conn = None

    def call(self, sql, params=(), retry=False):
        """Runs one statement; with retry, repeats it after a lost connection until it
        gets an answer (for calls that are idempotent under the contract)."""
        while True:
            if self.conn is None or self.conn.closed:
                if not self.connect():
                    return ("stopped",)
            try:
                cur = self.conn.execute(sql, params)
                rows = cur.fetchall() if cur.description is not None else []
                return ("ok", rows)
            except psycopg.Error as e:
                res = self.failed(e)
                if res[0] == "lost" and retry and not self.stopping():
                    time.sleep(0.1)
                    continue
                return res

    def transaction(self, statements, every=False):
        """Runs (sql, params) pairs in one transaction; returns like call(), with the
        rows of the last statement (with every, the list of every statement's rows).
        Never retried: a lost COMMIT is an unknown outcome."""
        if self.conn is None or self.conn.closed:
            if not self.connect():
                return ("stopped",)
        try:
            results = []
            with self.conn.transaction():
                for sql, params in statements:
                    cur = self.conn.execute(sql, params)
                    results.append(cur.fetchall() if cur.description is not None else [])
            return ("ok", results if every else results[-1])
        except psycopg.Error as e:
            return self.failed(e)
