"""pg_baton's worker loop: claims deliveries of one or more targets, runs each target's
handler on them, up to N at once, under renewed leases, finishes or retries each, waits
for the wake-up, releases what it holds on shutdown.

    from pg_baton.worker import Item, Worker, main

    def send_email(item: Item, lease_lost: threading.Event): ...  # return a result, or raise to retry
    def send_sms(item: Item, lease_lost: threading.Event): ...

    Worker(tenant, {"email": send_email, "sms": send_sms}, concurrency=4).run()
    sys.exit(main(send_email))                        # configured from the environment (below)
    sys.exit(main({"email": send_email, "sms": send_sms}))

Needs psycopg 3 (Debian: apt-get install python3-psycopg).

Threads and connections. A psycopg connection is not thread-safe, so all SQL runs on
one thread, the one that calls run() (the main thread: it installs the SIGINT and
SIGTERM handlers), over one connection: claims, renewals, finish, retry, release, reap,
LISTEN and the wait for notifications. The handlers run in a pool of `concurrency`
threads and only compute: each gets an Item and an Event (set when the lease is known to
be lost, or abandoned at shutdown) and returns a result or raises; the main thread then
settles the item. A handler that needs the database opens a connection of its own. A
lost connection is therefore reopened in one place, while the handlers go on running.

What the main thread does, in a loop:

  1. on connect: LISTEN on the wake-up channel of each (tenant, target) served, named by
     baton.wakeup_channel() (before the first claim, so no wake-up falls in between);
     every target counts as woken (anything enqueued while disconnected notified nobody);
  2. while a handler slot is free and no claimed item waits for one: claim up to
     BATON_BATCH deliveries of a woken target, the targets in turn, with a lease of
     BATON_LEASE_SECONDS; a target whose claim returns nothing is not claimed from again
     until its notification or the next fallback poll. Claimed items wait in order for a
     free slot; each one is logged as claimed when its handler starts;
  3. every lease/3: renew every held lease (running and waiting items alike). DU001
     (lease lost: reaped or claimed by someone else) drops the item and sets its Event;
     its new holder owns it now and nothing is written for it;
  4. when a handler ends: finish (it returned: the result is stored) or retry (it raised,
     or returned what is not JSON, e.g. a set or a datetime: the row is pending again
     after the backoff, or failed once its attempts are spent);
  5. with nothing to claim: sleep until a notification for a served target, a handler's
     end, a renewal, a signal, or the fallback poll: every BATON_POLL_SECONDS every
     target counts as woken (this catches retries and run_after items, which send no
     notification) and baton.reap() is called (a refusal is logged as reap_failed, and
     the worker goes on);
  6. on SIGINT or SIGTERM (or stop()): stop claiming, release the items waiting for a
     slot at once, give the running handlers up to BATON_SHUTDOWN_GRACE_SECONDS (a
     second signal cuts it short) and settle those that end (a handler that ends before
     the worker gives up on it is finished or retried, never released), then release
     every lease still held with retry(..., delay => 0): each item is pending again at
     once instead of waiting for its lease to expire. The interrupted attempt counts
     (the contract has no release that gives it back; see docs/guide/wakeups.md), so an
     item on its last attempt is failed. The handler threads still running are
     abandoned (daemon threads);
  7. a lost connection is reopened (with backoff) and the interrupted call repeated:
     renew, finish and retry are fenced by generation, not by session, so held leases
     survive a reconnect.

With fair=True (BATON_FAIR=1) the worker serves its targets for every tenant instead of
one: it claims with baton.claim_fair(target, lease, BATON_BATCH), which leases
deliveries of each tenant that binds the target (baton.bind_target) to a role the
worker's user is a member of, is active and has not paused it, tenant after tenant in
turns of each binding's weight (docs/guide/fairness.md). Each item carries its tenant,
and every renew, finish, retry and release names the item's tenant. A fair pool has no
wake-up channel: it does not LISTEN and relies on the fallback poll. BATON_TENANT must
not be set then (the worker refuses to start: it would not be the tenant served).

Configuration (environment, read by Config.from_env and main):
  connection      libpq's PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD..., or
                  BATON_DSN (a conninfo string or postgresql:// URL)
  BATON_TENANT    tenant uuid (required, unless BATON_FAIR=1; refused with it)
  BATON_TARGET    the target, or several separated by commas (required with one
                  handler for all; with a handler per target, the targets default to
                  the handlers' and each one named needs a handler)
  BATON_FAIR                     1: claim_fair over every tenant served, poll only; 0 (default): one tenant
  BATON_CONCURRENCY              how many handlers run at once (default 1)
  BATON_LEASE_SECONDS            lease of a claim (default 30)
  BATON_BATCH                    max_items of a claim (default 10)
  BATON_POLL_SECONDS             fallback poll when no notification comes (default 10)
  BATON_LISTEN                   1 (default): LISTEN; 0: poll only (BATON_FAIR=1: always poll only)
  BATON_SHUTDOWN_GRACE_SECONDS   how long a shutdown waits for the running handlers (default 10)
  BATON_REAP                     1 (default): call baton.reap() on each fallback poll

Every event is logged as one line on stdout: the time (UTC, ISO 8601, milliseconds),
then "worker[python] EVENT key=value ...". An item's lines name its tenant (tenant=<uuid>)
in fair mode and its target (target=<name>) when the worker serves several targets,
both before id=.
"""

import collections
import datetime
import json
import os
import queue
import select
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Tuple, Union

import psycopg
import psycopg.sql

from pg_baton.errors import BatonError, LeaseLost, from_psycopg


@dataclass
class Item:
    """One claimed delivery, as baton.claim_fair returns it (baton.claim: the same columns
    but the tenant, which is then the worker's own), and the target it was claimed for."""

    tenant: str
    id: int
    generation: int
    lease_until: Any
    dedup_key: str
    payload: Dict[str, Any]
    binding: Dict[str, Any]
    attempt: int
    run_id: Optional[str]
    target: str = ""


Handler = Callable[[Item, threading.Event], Any]
Handlers = Union[Handler, Mapping[str, Handler]]


def log(event: str, **fields: Any) -> None:
    """One line per event on stdout, flushed, so that a supervisor or a test can read it:
    the time (UTC, milliseconds), then "worker[python] EVENT key=value ..."."""
    parts = " ".join(f"{k}={v}" for k, v in fields.items())
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    print(f"{now} worker[python] {event} {parts}".rstrip(), flush=True)


def env_number(name: str, default: float) -> float:
    """A number from the environment that is not negative, or the default."""
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    value = float(raw)
    if value < 0:
        raise ValueError(f"{name} must not be negative")
    return value


@dataclass
class Config:
    """The worker's settings; from_env reads them from the environment."""

    dsn: str
    tenant: str  # "" when fair
    targets: List[str]
    fair: bool = False
    lease: float = 30.0
    batch: int = 10
    concurrency: int = 1
    poll: float = 10.0
    listen: bool = True
    grace: float = 10.0
    reap: bool = True

    def __post_init__(self) -> None:
        if self.fair and self.tenant:
            raise ValueError("a fair worker serves every tenant that binds its targets to its role: no tenant")
        if not self.fair and not self.tenant:
            raise ValueError("a tenant is required (or fair=True)")
        if self.tenant:
            self.tenant = str(uuid.UUID(str(self.tenant)))  # the canonical form
        if not self.targets or len(set(self.targets)) != len(self.targets) or not all(self.targets):
            raise ValueError("one or more distinct, non-empty targets are required")
        if self.lease < 1 or self.batch < 1 or self.concurrency < 1 or self.poll <= 0 or self.grace < 0:
            raise ValueError("lease >= 1, batch >= 1, concurrency >= 1, poll > 0 and grace >= 0 are required")
        if self.fair:
            self.listen = False  # a fair pool has no channel

    @staticmethod
    def from_env(default_targets: Optional[List[str]] = None) -> "Config":
        """The settings of the environment (see the top of the file); BATON_TARGET
        unset or empty means default_targets. Exits with a message when they are wrong."""
        tenant = os.environ.get("BATON_TENANT", "")
        targets = [t.strip() for t in os.environ.get("BATON_TARGET", "").split(",") if t.strip()]
        targets = targets or list(default_targets or [])
        fair = os.environ.get("BATON_FAIR", "0") not in ("", "0")
        if fair and tenant:
            sys.exit("worker: BATON_TENANT must not be set with BATON_FAIR=1"
                     " (a fair worker serves every tenant that binds the target to its role)")
        if fair and not targets:
            sys.exit("worker: BATON_TARGET is required")
        if not fair and (not tenant or not targets):
            sys.exit("worker: BATON_TENANT and BATON_TARGET are required")
        try:
            return Config(
                dsn=os.environ.get("BATON_DSN", ""),
                tenant=tenant,
                targets=targets,
                fair=fair,
                lease=max(1.0, env_number("BATON_LEASE_SECONDS", 30)),
                batch=max(1, int(env_number("BATON_BATCH", 10))),
                concurrency=max(1, int(env_number("BATON_CONCURRENCY", 1))),
                poll=max(0.1, env_number("BATON_POLL_SECONDS", 10)),
                listen=os.environ.get("BATON_LISTEN", "1") != "0",
                grace=env_number("BATON_SHUTDOWN_GRACE_SECONDS", 10),
                reap=os.environ.get("BATON_REAP", "1") != "0",
            )
        except ValueError as e:
            sys.exit(f"worker: {e}")


@dataclass
class Running:
    """An item whose handler runs in the pool, and the Event that tells it the lease is gone."""

    item: Item
    lost: threading.Event = field(default_factory=threading.Event)


class Worker:
    """The loop described at the top of the file.

    Worker(tenant, handlers, **settings): handlers is a dict of target -> handler, or one
    handler with targets=[...]; settings are Config's fields (dsn, fair, lease, batch,
    concurrency, poll, listen, grace, reap). Worker.from_config(config, handlers) takes a
    Config (e.g. Config.from_env()). run() must be called on the main thread."""

    def __init__(self, tenant: Optional[str], handlers: Handlers, *, targets: Optional[List[str]] = None,
                 dsn: str = "", **settings: Any):
        config = Config(dsn=dsn, tenant=tenant or "", targets=self._targets(handlers, targets), **settings)
        self._setup(config, handlers)

    @classmethod
    def from_config(cls, config: Config, handlers: Handlers) -> "Worker":
        worker = cls.__new__(cls)
        worker._setup(config, handlers)
        return worker

    @staticmethod
    def _targets(handlers: Handlers, targets: Optional[List[str]]) -> List[str]:
        if targets is not None:
            return list(targets)
        if callable(handlers):
            raise ValueError("one handler for all needs targets=[...]")
        return list(handlers)

    def _setup(self, config: Config, handlers: Handlers) -> None:
        if callable(handlers):
            self.handlers: Dict[str, Handler] = {t: handlers for t in config.targets}
        else:
            missing = [t for t in config.targets if t not in handlers]
            if missing:
                raise ValueError(f"no handler for target(s) {', '.join(missing)}")
            self.handlers = {t: handlers[t] for t in config.targets}
        self.config = config
        self.conn: Optional[psycopg.Connection] = None
        self.stopping = False
        self.signals = 0
        self.channels: Dict[str, str] = {}  # wake-up channel -> target
        self.woken: Dict[str, bool] = {t: True for t in config.targets}
        self.turn = 0  # where the next claim starts among the targets
        self.held: Dict[Tuple[str, int], int] = {}  # (tenant, id) -> generation of every lease held
        self.waiting: Deque[Item] = collections.deque()  # claimed, waiting for a slot
        self.running: Dict[Tuple[str, int], Running] = {}
        self.jobs: "queue.Queue[Tuple[Item, threading.Event]]" = queue.Queue()
        self.done: "queue.Queue[Tuple[Tuple[str, int], Optional[BaseException], Any]]" = queue.Queue()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.pool: List[threading.Thread] = []

    # --- waking the main thread ----------------------------------------------------------
    def wake(self) -> None:
        try:
            os.write(self.wake_w, b"x")
        except BlockingIOError:  # the pipe is full: the main thread wakes anyway
            pass

    def stop(self, now: bool = False) -> None:
        """Asks the loop to shut down (step 6); now=True skips the grace period. Safe from
        a signal handler or another thread."""
        self.signals += 2 if now else 1
        self.stopping = True
        self.wake()

    def on_signal(self, signum: int, _frame: Any) -> None:
        """First signal: stop after the grace period. Second: stop now (no grace)."""
        self.stop()

    # --- the handler pool ----------------------------------------------------------------
    def pool_thread(self) -> None:
        """Runs handlers, one at a time; each outcome goes back to the main thread."""
        while True:
            item, lost = self.jobs.get()
            error: Optional[BaseException] = None
            result: Any = None
            try:
                result = self.handlers[item.target](item, lost)
            except BaseException as e:  # the handler's failure is the retry's error
                error = e
            self.done.put(((item.tenant, item.id), error, result))
            self.wake()

    def start_pool(self) -> None:
        for n in range(self.config.concurrency):
            thread = threading.Thread(target=self.pool_thread, name=f"handler-{n + 1}", daemon=True)
            thread.start()
            self.pool.append(thread)

    # --- connection ----------------------------------------------------------------------
    def on_notify(self, n: psycopg.Notify) -> None:
        """Marks a target woken: only enqueues for a served (tenant, target) notify its channel."""
        target = self.channels.get(n.channel)
        if target is not None:
            self.woken[target] = True

    def connect(self) -> None:
        """Opens the connection (autocommit: every call is its own transaction), LISTENs."""
        delay, tries = 0.2, 0
        while True:
            conn: Optional[psycopg.Connection] = None
            try:
                conn = psycopg.connect(self.config.dsn, autocommit=True, application_name="baton-worker-python")
                conn.add_notify_handler(self.on_notify)
                channels = {}
                if self.config.listen:
                    # A channel's name is private to roles that may claim there; it is asked
                    # for on every connect (a changed secret renames it).
                    for target in self.config.targets:
                        row = conn.execute("SELECT baton.wakeup_channel(%s, %s)",
                                           (self.config.tenant, target)).fetchone()
                        channels[row[0]] = target
                        conn.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(row[0])))
                self.channels = channels
                self.conn = conn
                log("connected", pid=conn.info.backend_pid, listen=int(self.config.listen))
                # Anything enqueued while we were away sent its notification to nobody.
                for target in self.woken:
                    self.woken[target] = True
                return
            except psycopg.Error as e:
                if conn is not None:  # e.g. LISTEN failed: this connection is not used
                    conn.close()
                if not isinstance(e, psycopg.OperationalError):  # a refusal, e.g. DU005
                    raise from_psycopg(e) from None
                log("connect_failed", error=json.dumps(str(e).strip()), retry_in=delay)
                tries += 1
                if self.stopping and (self.signals > 1 or tries > 3):
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def drop_connection(self, why: BaseException) -> None:
        log("connection_lost", error=json.dumps(str(why).strip()))
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None

    def call(self, sql: str, params: tuple) -> list:
        """Runs one statement; on a lost connection reconnects and runs it again.

        Repeating is safe for renew, finish and retry: they are fenced by generation. A
        repeated finish, or a repeated retry that spent the last attempt, answers the
        stored status; a repeated retry that made the row pending again gets DU001 (the
        row is pending all the same). A claim whose answer was lost leaves its rows
        claimed until their leases expire and someone reaps them.
        """
        while True:
            if self.conn is None:
                self.connect()
            assert self.conn is not None
            try:
                return self.conn.execute(sql, params).fetchall()
            except psycopg.OperationalError as e:
                if not self.conn.broken:
                    raise from_psycopg(e) from None
                self.drop_connection(e)
            except psycopg.Error as e:
                raise from_psycopg(e) from None

    # --- the lease calls -------------------------------------------------------------------
    def who(self, tenant: str, target: str) -> Dict[str, str]:
        """The fields before id= of an item's log lines: its tenant in fair mode, its
        target when the worker serves several."""
        fields = {"tenant": tenant} if self.config.fair else {}
        if len(self.config.targets) > 1:
            fields["target"] = target
        return fields

    def claim(self, target: str) -> List[Item]:
        c = self.config
        if c.fair:
            rows = self.call(
                "SELECT tenant, id, generation, lease_until, dedup_key, payload, binding, attempt, run_id"
                "  FROM baton.claim_fair(%s, pg_catalog.make_interval(secs => %s), %s)",
                (target, c.lease, c.batch),
            )
            return [Item(str(r[0]), *r[1:], target=target) for r in rows]
        rows = self.call(
            "SELECT id, generation, lease_until, dedup_key, payload, binding, attempt, run_id"
            "  FROM baton.claim(%s, %s, pg_catalog.make_interval(secs => %s), %s)",
            (c.tenant, target, c.lease, c.batch),
        )
        return [Item(c.tenant, *r, target=target) for r in rows]

    def target_of(self, key: Tuple[str, int]) -> str:
        if key in self.running:
            return self.running[key].item.target
        return next((it.target for it in self.waiting if (it.tenant, it.id) == key), "")

    def renew_all(self) -> None:
        """Renews every held lease; a DU001 drops that item and tells its handler."""
        for key, gen in list(self.held.items()):
            tenant, did = key
            who = self.who(tenant, self.target_of(key))
            try:
                self.call("SELECT baton.renew(%s, %s, %s, pg_catalog.make_interval(secs => %s))",
                          (tenant, did, gen, self.config.lease))
                log("renewed", **who, id=did, generation=gen)
            except LeaseLost:
                log("lease_lost", **who, id=did, generation=gen, during="renew")
                del self.held[key]
                if key in self.running:
                    self.running[key].lost.set()
            except BatonError as e:  # e.g. DU002 (tenant fenced): tried again next time
                log("renew_failed", **who, id=did, generation=gen, sqlstate=e.sqlstate,
                    error=json.dumps(str(e).strip()))

    def settle(self, item: Item, error: Optional[BaseException], result: Any) -> None:
        """finish after success, retry after an exception or a result that is not JSON;
        DU001 drops the item."""
        who = self.who(item.tenant, item.target)
        gen = self.held.pop((item.tenant, item.id), None)
        if gen is None:
            log("dropped", **who, id=item.id, generation=item.generation, reason="lease_lost")
            return
        document = None
        if error is None and result is not None:
            try:
                document = json.dumps(result, allow_nan=False)
            except Exception as e:  # a set, a datetime, NaN, a cycle...: the handler failed
                error = TypeError(f"the handler's result is not JSON ({e})")
        try:
            if error is None:
                status = self.call(
                    "SELECT baton.finish(%s, %s, %s, 'finished', %s::pg_catalog.jsonb)",
                    (item.tenant, item.id, gen, document),
                )[0][0]
                log("finished", **who, id=item.id, generation=gen, attempt=item.attempt, status=status)
            else:
                status = self.call(
                    "SELECT baton.retry(%s, %s, %s, %s)",
                    (item.tenant, item.id, gen, f"{type(error).__name__}: {error}"),
                )[0][0]
                log("retried", **who, id=item.id, generation=gen, attempt=item.attempt, status=status,
                    error=json.dumps(str(error)))
        except LeaseLost:
            log("lease_lost", **who, id=item.id, generation=gen, during="finish" if error is None else "retry")
        except (BatonError, psycopg.OperationalError) as e:  # e.g. DU002: left to expire and be reaped
            log("settle_failed", **who, id=item.id, generation=gen, sqlstate=e.sqlstate,
                error=json.dumps(str(e).strip()))

    def release(self, item: Item) -> None:
        """Gives one held lease back at once (retry with a zero delay), with its own tenant."""
        key, who = (item.tenant, item.id), self.who(item.tenant, item.target)
        gen = self.held.pop(key, None)
        if gen is None:
            return
        try:
            status = self.call(
                "SELECT baton.retry(%s, %s, %s, 'released: worker shutting down', interval '0')",
                (item.tenant, item.id, gen),
            )[0][0]
            log("released", **who, id=item.id, generation=gen, status=status)
        except LeaseLost:
            log("lease_lost", **who, id=item.id, generation=gen, during="release")
        except (BatonError, psycopg.OperationalError) as e:
            log("release_failed", **who, id=item.id, generation=gen, error=json.dumps(str(e).strip()))

    # --- working ----------------------------------------------------------------------------
    def start_waiting(self) -> None:
        """Hands waiting items to free handler slots, in claim order."""
        while self.waiting and len(self.running) < self.config.concurrency and not self.stopping:
            item = self.waiting.popleft()
            key, who = (item.tenant, item.id), self.who(item.tenant, item.target)
            if key not in self.held:  # lost while it waited its turn
                log("dropped", **who, id=item.id, generation=item.generation, reason="lease_lost")
                continue
            log("claimed", **who, id=item.id, generation=item.generation, attempt=item.attempt)
            running = Running(item)
            self.running[key] = running
            self.jobs.put((item, running.lost))

    def fill(self) -> None:
        """Claims while a slot is free and no claimed item waits: the woken targets in turn."""
        targets = self.config.targets
        self.start_waiting()
        while not self.stopping and not self.waiting and len(self.running) < self.config.concurrency:
            woken = [targets[(self.turn + i) % len(targets)] for i in range(len(targets))]
            woken = [t for t in woken if self.woken[t]]
            if not woken:
                return
            target = woken[0]
            self.turn = (targets.index(target) + 1) % len(targets)
            self.woken[target] = False  # a notification from now on wakes it again
            try:
                items = self.claim(target)
            except BatonError as e:
                # A refusal (e.g. DU002: the tenant is fenced): tried again at the next poll.
                log("error", sqlstate=e.sqlstate, error=json.dumps(str(e).strip()))
                continue
            if items:
                self.woken[target] = True  # it may have more
            for it in items:
                self.held[(it.tenant, it.id)] = it.generation
                self.waiting.append(it)
            self.start_waiting()

    def collect(self) -> None:
        """Settles every handler that has ended."""
        while True:
            try:
                key, error, result = self.done.get_nowait()
            except queue.Empty:
                return
            running = self.running.pop(key, None)
            if running is not None:
                self.settle(running.item, error, result)

    def poll(self) -> None:
        """The fallback: every target counts as woken, and expired leases are reaped."""
        for target in self.woken:
            self.woken[target] = True
        if self.config.reap:
            try:
                reaped = self.call("SELECT baton.reap()", ())[0][0]
            except BatonError as e:  # e.g. 42501, 57014: the targets stay woken all the same
                log("reap_failed", sqlstate=e.sqlstate, error=json.dumps(str(e).strip()))
                return
            if reaped:
                log("reaped", rows=reaped)

    def wait(self, timeout: float) -> None:
        """Sleeps until a notification, a handler's end, a signal, or the timeout."""
        if self.conn is None:
            self.connect()
        assert self.conn is not None
        fd = self.conn.fileno()
        readable, _, _ = select.select([fd, self.wake_r], [], [], max(0.0, timeout))
        if self.wake_r in readable:
            os.read(self.wake_r, 4096)
        if fd in readable:
            try:
                self.conn.pgconn.consume_input()
            except psycopg.OperationalError as e:
                self.drop_connection(e)
                return
            while True:
                n = self.conn.pgconn.notifies()
                if n is None:
                    break
                self.on_notify(psycopg.Notify(n.relname.decode(), n.extra.decode(), n.be_pid))
            if self.conn.pgconn.status != psycopg.pq.ConnStatus.OK:
                self.drop_connection(RuntimeError("server closed the connection"))

    def run(self) -> int:
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        c = self.config
        first = {"fair": 1} if c.fair else {"tenant": c.tenant}
        log("starting", **first, target=",".join(c.targets), lease=c.lease, batch=c.batch,
            concurrency=c.concurrency, poll=c.poll)
        self.start_pool()
        renew_every = c.lease / 3
        next_renew = time.monotonic() + renew_every
        next_poll = time.monotonic() + c.poll
        grace_until: Optional[float] = None
        idle = False
        try:
            self.connect()
            while True:
                self.collect()
                now = time.monotonic()
                if self.stopping:
                    if grace_until is None:
                        grace_until = now + c.grace
                        log("stopping", running=len(self.running), waiting=len(self.waiting), grace=c.grace)
                        while self.waiting:  # never started: back at once
                            self.release(self.waiting.popleft())
                    if self.signals > 1:
                        grace_until = now
                    self.collect()  # the handlers that ended meanwhile: settled, not released
                    if not self.running or time.monotonic() >= grace_until:
                        break
                else:
                    if now >= next_poll:
                        next_poll = now + c.poll
                        self.poll()
                    self.fill()
                    if not self.running and not self.waiting and not any(self.woken.values()):
                        if not idle:
                            log("idle")
                        idle = True
                    else:
                        idle = False
                if now >= next_renew:
                    next_renew = now + renew_every
                    if self.held:
                        self.renew_all()
                deadline = min(next_renew, grace_until if grace_until is not None else next_poll)
                self.wait(deadline - time.monotonic())
        finally:
            self.collect()  # a handler that has ended is settled, not released
            for running in self.running.values():
                it = running.item
                log("abandoned", **self.who(it.tenant, it.target), id=it.id, generation=it.generation)
                running.lost.set()
            for running in list(self.running.values()):
                self.release(running.item)
            while self.waiting:
                self.release(self.waiting.popleft())
            if self.conn is not None:
                self.conn.close()
            log("stopped")
        return 0


def main(handlers: Handlers) -> int:
    """Runs a worker configured from the environment: `handlers` is one handler for every
    target of BATON_TARGET, or a dict of target -> handler (BATON_TARGET unset: all of
    them). Its exit status."""
    config = Config.from_env(None if callable(handlers) else list(handlers))
    try:
        worker = Worker.from_config(config, handlers)
    except ValueError as e:
        sys.exit(f"worker: {e}")
    return worker.run()
