"""pg_baton's worker loop: claims deliveries of a target, runs a handler on each under a
renewed lease, finishes or retries it, waits for the wake-up, releases what it holds on
shutdown.

    from pg_baton.worker import Item, main
    def handle(item: Item, lease_lost: threading.Event): ...   # return a result, or raise to retry
    sys.exit(main(handle))          # configured from the environment (below)

Needs psycopg 3 (Debian: apt-get install python3-psycopg). What it does, in a loop:

  1. LISTEN on the wake-up channel of (tenant, target), named by
     baton.wakeup_channel() (before the first claim, so no wake-up falls in between);
  2. claim up to BATON_BATCH deliveries of (tenant, target) with a lease of
     BATON_LEASE_SECONDS; while any come back, work them one by one (step 3), then claim
     again;
  3. run handle(item) in a thread while the main thread renews every held lease every
     lease/3; then finish (handler returned) or retry (handler raised: the row is pending
     again after the backoff, or failed once its attempts are spent). DU001 (lease lost:
     reaped or claimed by someone else) drops the item: its new holder owns it now;
  4. when the queue is empty, sleep until a notification for (tenant, target) arrives or
     BATON_POLL_SECONDS pass (the fallback, which also catches retries and run_after
     items, which send no notification), calling baton.reap() on each fallback wake-up;
  5. on SIGINT or SIGTERM: stop claiming, give the running handler up to
     BATON_SHUTDOWN_GRACE_SECONDS, then release every lease still held with
     retry(..., delay => 0): the item is pending again at once instead of waiting for its
     lease to expire. The interrupted attempt counts (the contract has no release that
     gives it back; see docs/guide/wakeups.md), so an item on its last attempt is failed;
  6. a lost connection is reopened (with backoff) and the interrupted call repeated:
     renew, finish and retry are fenced by generation, not by session, so held leases
     survive a reconnect.

With BATON_FAIR=1 the worker serves the target for every tenant instead of one: it
claims with baton.claim_fair(target, lease, BATON_BATCH), which leases deliveries of
each tenant that binds the target (baton.bind_target) to a role the worker's user is a
member of, is active and has not paused it, tenant after tenant in turns of each
binding's weight (docs/guide/fairness.md). Each item carries its tenant, and every renew,
finish, retry and release names the item's tenant. A fair pool has no wake-up channel:
step 1 is skipped and step 4 waits BATON_POLL_SECONDS (poll only). BATON_TENANT must
not be set then (the worker refuses to start: it would not be the tenant served).

Configuration (environment):
  connection      libpq's PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD..., or
                  BATON_DSN (a conninfo string or postgresql:// URL)
  BATON_TENANT    tenant uuid (required, unless BATON_FAIR=1; refused with it)
  BATON_TARGET    target (required)
  BATON_FAIR                     1: claim_fair over every tenant served, poll only; 0 (default): one tenant
  BATON_LEASE_SECONDS            lease of a claim (default 30)
  BATON_BATCH                    max_items of a claim (default 10)
  BATON_POLL_SECONDS             fallback poll when no notification comes (default 10)
  BATON_LISTEN                   1 (default): LISTEN; 0: poll only (BATON_FAIR=1: always poll only)
  BATON_SHUTDOWN_GRACE_SECONDS   how long a shutdown waits for the running handler (default 10)
  BATON_REAP                     1 (default): call baton.reap() on each fallback wake-up

Every event is logged as one line on stdout: "worker[python] EVENT key=value ..."; with
BATON_FAIR=1 an item's lines name its tenant (tenant=<uuid> before id=).
"""

import datetime
import json
import os
import select
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

import psycopg
import psycopg.sql
from psycopg.types.json import Jsonb

from pg_baton.errors import BatonError, LeaseLost, from_psycopg

@dataclass
class Item:
    """One claimed delivery, as baton.claim_fair returns it (baton.claim: the same columns
    but the tenant, which is then the worker's own)."""

    tenant: str
    id: int
    generation: int
    lease_until: Any
    dedup_key: str
    payload: Dict[str, Any]
    binding: Dict[str, Any]
    attempt: int
    run_id: Optional[str]


def log(event: str, **fields: Any) -> None:
    """One line per event on stdout, flushed, so that a supervisor or a test can read it:
    the time (UTC, milliseconds), then "worker[python] EVENT key=value ..."."""
    parts = " ".join(f"{k}={v}" for k, v in fields.items())
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    print(f"{now} worker[python] {event} {parts}".rstrip(), flush=True)


def env_number(name: str, default: float) -> float:
    """A positive number from the environment, or the default."""
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
    target: str
    fair: bool = False
    lease: float = 30.0
    batch: int = 10
    poll: float = 10.0
    listen: bool = True
    grace: float = 10.0
    reap: bool = True

    @staticmethod
    def from_env() -> "Config":
        tenant = os.environ.get("BATON_TENANT", "")
        target = os.environ.get("BATON_TARGET", "")
        fair = os.environ.get("BATON_FAIR", "0") not in ("", "0")
        if fair and tenant:
            sys.exit("worker: BATON_TENANT must not be set with BATON_FAIR=1"
                     " (a fair worker serves every tenant that binds the target to its role)")
        if fair and not target:
            sys.exit("worker: BATON_TARGET is required")
        if not fair and (not tenant or not target):
            sys.exit("worker: BATON_TENANT and BATON_TARGET are required")
        return Config(
            dsn=os.environ.get("BATON_DSN", ""),
            tenant=str(uuid.UUID(tenant)) if tenant else "",  # the canonical form
            target=target,
            fair=fair,
            lease=max(1.0, env_number("BATON_LEASE_SECONDS", 30)),
            batch=max(1, int(env_number("BATON_BATCH", 10))),
            poll=max(0.1, env_number("BATON_POLL_SECONDS", 10)),
            listen=os.environ.get("BATON_LISTEN", "1") != "0" and not fair,  # a fair pool has no channel
            grace=env_number("BATON_SHUTDOWN_GRACE_SECONDS", 10),
            reap=os.environ.get("BATON_REAP", "1") != "0",
        )


class Worker:
    """The loop described at the top of the file. Only the main thread uses the connection."""

    def __init__(self, config: Config, handler: Callable[[Item, threading.Event], Any]):
        self.config = config
        self.handler = handler
        self.conn: Optional[psycopg.Connection] = None
        self.stopping = False
        self.signals = 0
        self.woken = False  # a notification for our (tenant, target) arrived
        self.channel = ""  # our wake-up channel, from baton.wakeup_channel()
        self.held: Dict[Tuple[str, int], int] = {}  # (tenant, id) -> generation of every lease we hold
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)

    # --- signals --------------------------------------------------------------------------
    def on_signal(self, signum: int, _frame: Any) -> None:
        """First signal: stop after the grace period. Second: stop now (no grace)."""
        self.signals += 1
        self.stopping = True
        try:
            os.write(self.wake_w, b"x")
        except BlockingIOError:
            pass

    # --- connection -----------------------------------------------------------------------
    def on_notify(self, n: psycopg.Notify) -> None:
        """Marks a wake-up: only enqueues for our (tenant, target) notify our channel."""
        if n.channel == self.channel:
            self.woken = True

    def connect(self) -> None:
        """Opens the connection (autocommit: every call is its own transaction), LISTENs."""
        delay, tries = 0.2, 0
        while True:
            try:
                conn = psycopg.connect(self.config.dsn, autocommit=True, application_name="baton-worker-python")
                conn.add_notify_handler(self.on_notify)
                if self.config.listen:
                    # The channel's name is private to roles that may claim here; it is
                    # asked for on every connect (a changed secret renames it).
                    row = conn.execute(
                        "SELECT baton.wakeup_channel(%s, %s)", (self.config.tenant, self.config.target)
                    ).fetchone()
                    self.channel = row[0]
                    conn.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(self.channel)))
                self.conn = conn
                log("connected", pid=conn.info.backend_pid, listen=int(self.config.listen))
                # Anything enqueued while we were away sent its notification to nobody.
                self.woken = True
                return
            except psycopg.OperationalError as e:
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

        Repeating is safe for renew, finish and retry (fenced by generation; a repeated
        finish or retry answers the stored status). A claim whose answer was lost leaves
        its rows claimed until their leases expire and someone reaps them.
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
    def who(self, tenant: str) -> Dict[str, str]:
        """The tenant= field of an item's log lines: fair mode only (one tenant otherwise)."""
        return {"tenant": tenant} if self.config.fair else {}

    def claim(self) -> list:
        c = self.config
        if c.fair:
            rows = self.call(
                "SELECT tenant, id, generation, lease_until, dedup_key, payload, binding, attempt, run_id"
                "  FROM baton.claim_fair(%s, %s * interval '1 second', %s)",
                (c.target, c.lease, c.batch),
            )
            return [Item(str(r[0]), *r[1:]) for r in rows]
        rows = self.call(
            "SELECT id, generation, lease_until, dedup_key, payload, binding, attempt, run_id"
            "  FROM baton.claim(%s, %s, %s * interval '1 second', %s)",
            (c.tenant, c.target, c.lease, c.batch),
        )
        return [Item(c.tenant, *r) for r in rows]

    def renew_all(self, lost: Dict[Tuple[str, int], threading.Event]) -> None:
        """Renews every held lease; a DU001 drops that item and tells its handler."""
        for (tenant, did), gen in list(self.held.items()):
            try:
                self.call(
                    "SELECT baton.renew(%s, %s, %s, %s * interval '1 second')",
                    (tenant, did, gen, self.config.lease),
                )
                log("renewed", **self.who(tenant), id=did, generation=gen)
            except LeaseLost:
                log("lease_lost", **self.who(tenant), id=did, generation=gen, during="renew")
                del self.held[(tenant, did)]
                if (tenant, did) in lost:
                    lost[(tenant, did)].set()
            except BatonError as e:  # e.g. DU002 (tenant fenced): tried again next time
                log("renew_failed", **self.who(tenant), id=did, generation=gen, sqlstate=e.sqlstate,
                    error=json.dumps(str(e).strip()))

    def settle(self, item: Item, error: Optional[BaseException], result: Any) -> None:
        """finish after success, retry after an exception; DU001 drops the item."""
        who = self.who(item.tenant)
        gen = self.held.pop((item.tenant, item.id), None)
        if gen is None:
            log("dropped", **who, id=item.id, generation=item.generation, reason="lease_lost")
            return
        try:
            if error is None:
                status = self.call(
                    "SELECT baton.finish(%s, %s, %s, 'finished', %s)",
                    (item.tenant, item.id, gen, None if result is None else Jsonb(result)),
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

    def release_held(self) -> None:
        """Shutdown: gives every held lease back at once (retry with a zero delay), each
        with its own tenant."""
        for (tenant, did), gen in list(self.held.items()):
            try:
                status = self.call(
                    "SELECT baton.retry(%s, %s, %s, 'released: worker shutting down', interval '0')",
                    (tenant, did, gen),
                )[0][0]
                log("released", **self.who(tenant), id=did, generation=gen, status=status)
            except LeaseLost:
                log("lease_lost", **self.who(tenant), id=did, generation=gen, during="release")
            except BatonError as e:
                log("release_failed", **self.who(tenant), id=did, generation=gen,
                    error=json.dumps(str(e).strip()))
            del self.held[(tenant, did)]

    # --- working ----------------------------------------------------------------------------
    def work(self, items: list) -> None:
        """Works a claimed batch one item at a time, renewing all held leases every lease/3."""
        for it in items:
            self.held[(it.tenant, it.id)] = it.generation
        lost: Dict[Tuple[str, int], threading.Event] = {}
        interval = self.config.lease / 3
        next_renew = time.monotonic() + interval
        for item in items:
            if self.stopping:
                break
            key, who = (item.tenant, item.id), self.who(item.tenant)
            if key not in self.held:  # lost while it waited its turn
                log("dropped", **who, id=item.id, generation=item.generation, reason="lease_lost")
                continue
            log("claimed", **who, id=item.id, generation=item.generation, attempt=item.attempt)
            lost[key] = threading.Event()
            box: Dict[str, Any] = {}

            def run(item: Item = item, box: Dict[str, Any] = box, key: Tuple[str, int] = key) -> None:
                try:
                    box["result"] = self.handler(item, lost[key])
                except BaseException as e:  # the handler's failure is the retry's error
                    box["error"] = e

            thread = threading.Thread(target=run, name=f"handler-{item.id}", daemon=True)
            thread.start()
            grace_until: Optional[float] = None
            while thread.is_alive():
                now = time.monotonic()
                if self.stopping and grace_until is None:
                    grace_until = now + (0 if self.signals > 1 else self.config.grace)
                    log("stopping", **who, id=item.id, grace=self.config.grace)
                if grace_until is not None and (now >= grace_until or self.signals > 1):
                    log("abandoned", **who, id=item.id, generation=item.generation)
                    return  # release_held gives the lease back; the thread is a daemon
                if now >= next_renew:
                    self.renew_all(lost)
                    next_renew = now + interval
                wait = next_renew - now
                if grace_until is not None:
                    wait = min(wait, grace_until - now)
                thread.join(max(0.01, min(wait, 0.25)))
            self.settle(item, box.get("error"), box.get("result"))

    def wait_for_wakeup(self) -> str:
        """Sleeps until a notification for us, the poll timeout, or a signal."""
        deadline = time.monotonic() + self.config.poll
        while True:
            if self.stopping:
                return "stop"
            if self.woken:
                self.woken = False
                return "notify"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "poll"
            if self.conn is None:
                self.connect()
                continue
            fd = self.conn.fileno()
            readable, _, _ = select.select([fd, self.wake_r], [], [], remaining)
            if self.wake_r in readable:
                os.read(self.wake_r, 64)
            if fd in readable:
                try:
                    self.conn.pgconn.consume_input()
                except psycopg.OperationalError as e:
                    self.drop_connection(e)
                    continue
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
        if c.fair:
            log("starting", fair=1, target=c.target, lease=c.lease, batch=c.batch, poll=c.poll)
        else:
            log("starting", tenant=c.tenant, target=c.target, lease=c.lease, batch=c.batch, poll=c.poll)
        try:
            self.connect()
            while not self.stopping:
                try:
                    items = self.claim()
                    if items:
                        self.work(items)
                        continue
                    log("idle")
                    why = self.wait_for_wakeup()
                    if why == "poll" and c.reap:
                        reaped = self.call("SELECT baton.reap()", ())[0][0]
                        if reaped:
                            log("reaped", rows=reaped)
                except BatonError as e:
                    # A refusal (e.g. DU002: the tenant is fenced): wait, then try again.
                    log("error", sqlstate=e.sqlstate, error=json.dumps(str(e).strip()))
                    self.woken = False
                    self.wait_for_wakeup()
        finally:
            self.release_held()
            if self.conn is not None:
                self.conn.close()
            log("stopped")
        return 0


def main(handler: Callable[[Item, threading.Event], Any]) -> int:
    """Runs a worker configured from the environment with `handler`; its exit status."""
    return Worker(Config.from_env(), handler).run()
