#!/usr/bin/env python3
"""pg_baton as a system of the job-queue benchmark harness (hardbyte/postgresql-job-queue-benchmarking).

One long-running process written to the harness' adapter contract: JSONL on stdout (one
descriptor record at start, then one record per metric every SAMPLE_EVERY_S, aligned to
the wall clock), logs on stderr. SIGTERM stops the producer; the workers work off what
is queued until a claim comes back empty (at most DRAIN_S, 3 s), then the last sample is
written, so that a job enqueued and sampled is also counted when finished.

The queue is one pg_baton target of one tenant, bound to a role that both produces and
works (the setup below). Everything on the hot path is a public pg_baton call:

  producer  baton.enqueue_batch(tenant, items): up to PRODUCER_BATCH_MAX items a call, each
            with a dedup key of its own, so that a batch whose answer was lost to a killed
            connection is sent again without doubling a job;
  workers   WORKER_COUNT tasks, each on its own connection: baton.claim(tenant, target,
            lease, n), JOB_WORK_MS of work per job, then baton.finish_batch(tenant, ids,
            generations) for the batch (FINISH_MODE=single: one baton.finish per job).
            An idle worker sleeps until a notification on baton.wakeup_channel(tenant,
            target) arrives (one LISTEN connection for the process; each notification
            wakes one idle worker, and a worker whose claim came back full wakes another)
            or POLL_INTERVAL_MS passes;
  leases    LEASE_S long; leases of a killed process expire and the reaper of pg_baton
            (the background worker started by shared_preload_libraries) gives the jobs
            back, which are then claimed again. A finish whose generation was superseded
            answers lease_lost and is not counted: the job is counted when it is finished
            by the claim that holds it.

Metrics: claim_p50/p95/p99_ms is pickup latency (the producer's clock when the job was
built, to the worker's clock when its claim returned) over a rolling 30 s window;
enqueue_rate and completion_rate count jobs this process enqueued and finished in the
sample window; queue_depth is the number of due pending deliveries (rows of baton.ready).
"""
from __future__ import annotations

import asyncio
import collections
import datetime as dt
import json
import math
import os
import signal
import sys
import threading
import time
import uuid

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

SYSTEM = "pgbaton"
TENANT = "00000000-0000-4000-8000-00000000b470"
TARGET = "long_horizon_bench"
APP_ROLE = "pgbaton_bench_app"
EVENT_TABLES = ["baton.deliveries", "baton.ready", "baton.leases"]
EVENT_INDEXES = ["baton.deliveries_pkey", "baton.deliveries_dedup", "baton.ready_pkey", "baton.leases_pkey"]
OBSERVER_METRICS = {"queue_depth", "producer_target_rate"}


def env_int(key: str, default: int) -> int:
    value = os.environ.get(key, "")
    return int(float(value)) if value != "" else default


def env_str(key: str, default: str) -> str:
    value = os.environ.get(key, "")
    return value if value != "" else default


INSTANCE = env_int("BENCH_INSTANCE_ID", 0)


def log(message: str) -> None:
    print(f"[pgbaton {INSTANCE}] {message}", file=sys.stderr, flush=True)


def emit(record: dict) -> None:
    record.setdefault("instance_id", INSTANCE)
    print(json.dumps(record), flush=True)


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Window:
    """(time, value) pairs of the last few seconds, at most maxlen of them."""

    def __init__(self, maxlen: int = 65536) -> None:
        self.items: collections.deque = collections.deque(maxlen=maxlen)

    def add(self, value: float) -> None:
        self.items.append((time.monotonic(), value))

    def percentiles(self, window_s: float) -> tuple[float, float, float]:
        cutoff = time.monotonic() - window_s
        values = sorted(v for t, v in self.items if t >= cutoff)
        if not values:
            return 0.0, 0.0, 0.0
        last = len(values) - 1
        return tuple(float(values[min(last, round(q * last))]) for q in (0.50, 0.95, 0.99))


class Adapter:
    def __init__(self) -> None:
        self.url = os.environ["DATABASE_URL"]
        self.sample_every_s = max(1, env_int("SAMPLE_EVERY_S", 5))
        self.producer_mode = env_str("PRODUCER_MODE", "fixed")
        self.pacing = env_str("PRODUCER_PACING", "adapter")
        self.rate = env_int("PRODUCER_RATE", 800)
        self.batch_max = max(1, env_int("PRODUCER_BATCH_MAX", 128))
        self.batch_ms = max(1, env_int("PRODUCER_BATCH_MS", 10))
        self.target_depth = env_int("TARGET_DEPTH", 1000)
        self.workers = max(1, env_int("WORKER_COUNT", 32))
        self.work_ms = env_int("JOB_WORK_MS", 1)
        self.padding = "x" * max(0, env_int("JOB_PAYLOAD_BYTES", 256) - 96)
        self.poll_s = max(1, env_int("POLL_INTERVAL_MS", 1000)) / 1000.0
        self.lease_s = max(1, env_int("LEASE_S", 5))
        self.max_attempts = max(1, env_int("JOB_MAX_ATTEMPTS", 25))
        self.finish_mode = env_str("FINISH_MODE", "batch")
        # As the pgmq adapter sizes its reads: 25 % above the offered rate spread over
        # the workers' polls, at least 8 and at most 64 a claim.
        self.claim_n = env_int(
            "CONSUMER_BATCH_SIZE",
            max(8, min(64, round(self.rate * 1.25 / max(self.workers * 20, 1)))),
        )
        self.control_file = os.environ.get("PRODUCER_RATE_CONTROL_FILE", "")
        self.nonce = uuid.uuid4().hex[:12]  # dedup keys unique to this process
        self.stop = asyncio.Event()
        self.idle: collections.deque = collections.deque()  # futures of the workers waiting
        self.enqueued = 0
        self.completed = 0
        self.sampled_enqueued = 0
        self.sampled_completed = 0
        self.sampled_at = 0.0
        self.producer_done = asyncio.Event()
        self.drain_s = max(0, env_int("DRAIN_S", 3))
        self.lease_lost = 0
        self.depth = 0
        self.target_rate = float(self.rate)
        self.tokens = 0  # ENQUEUE tokens of the harness pacer not yet sent
        self.pickup = Window()
        self.end_to_end = Window()
        self.producer_latency = Window()

    # --- connections ------------------------------------------------------------------
    async def connect(self, name: str, as_app: bool = True) -> psycopg.AsyncConnection:
        """A connection, retried until it opens or the process stops. The queue's calls
        run as the role bound to the target; the observer's count runs as the harness user."""
        delay = 0.1
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, application_name=f"pgbaton-bench-{name}"
                )
                if as_app:
                    await conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(APP_ROLE)))
                return conn
            except psycopg.OperationalError as e:
                if self.stop.is_set():
                    raise
                log(f"{name}: connect failed ({str(e).strip()[:120]}), retry in {delay:.1f}s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    @staticmethod
    async def close(conn: psycopg.AsyncConnection | None) -> None:
        if conn is not None:
            try:
                await conn.close()
            except Exception:
                pass

    # --- setup ------------------------------------------------------------------------
    async def setup(self) -> str:
        conn = await self.connect("setup", as_app=False)
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_baton")
            await conn.execute(
                sql.SQL(
                    "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {r}) "
                    "THEN CREATE ROLE {i} NOLOGIN; END IF; END $$"
                ).format(r=sql.Literal(APP_ROLE), i=sql.Identifier(APP_ROLE))
            )
            await conn.execute("SELECT baton.grant_producer(%s), baton.grant_worker(%s)", (APP_ROLE, APP_ROLE))
            await conn.execute("SELECT baton.create_tenant(%s)", (TENANT,))
            await conn.execute("SELECT baton.bind_target(%s, %s, %s)", (TENANT, TARGET, APP_ROLE))
            row = await (await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")).fetchone()
            return row[0]
        finally:
            await self.close(conn)

    # --- producer ---------------------------------------------------------------------
    def read_rate(self) -> float:
        if not self.control_file:
            return float(self.rate)
        try:
            with open(self.control_file) as fh:
                return float(fh.read().strip())
        except (OSError, ValueError):
            return float(self.rate)

    def read_tokens(self, loop: asyncio.AbstractEventLoop) -> None:
        """Harness pacing: `ENQUEUE <n>` lines on stdin, read on a thread of their own."""
        for line in sys.stdin:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "ENQUEUE" and parts[1].isdigit():
                loop.call_soon_threadsafe(self.add_tokens, int(parts[1]))

    def add_tokens(self, n: int) -> None:
        self.tokens += n

    async def count_depth(self, conn: psycopg.AsyncConnection) -> int:
        cur = await conn.execute(
            "SELECT count(*) FROM baton.ready WHERE tenant = %s AND target = %s AND run_after <= now()",
            (TENANT, TARGET),
        )
        return int((await cur.fetchone())[0])

    async def producer(self) -> None:
        conn = await self.connect("producer")
        observer = await self.connect("producer-depth", as_app=False) if self.producer_mode == "depth-target" else None
        seq = 0
        credit = 0.0
        last = time.monotonic()
        next_rate_read = 0.0
        harness_paced = self.producer_mode == "fixed" and self.pacing == "harness"
        pending: list | None = None  # a batch whose answer was lost: sent again as it is
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                if pending is None:
                    if self.producer_mode == "depth-target":
                        try:
                            self.depth = await self.count_depth(observer)
                        except psycopg.OperationalError:
                            await self.close(observer)
                            observer = await self.connect("producer-depth", as_app=False)
                            continue
                        n = min(self.batch_max, self.target_depth - self.depth)
                    elif harness_paced:
                        n = min(self.batch_max, self.tokens)
                        self.tokens -= n
                    else:
                        if now >= next_rate_read:
                            self.target_rate = self.read_rate()
                            next_rate_read = now + 0.25
                        # Credit on wall-clock time elapsed (at most a second of it
                        # carried over while the database is away).
                        credit = min(credit + self.target_rate * (now - last), max(self.target_rate, 1.0))
                        n = min(self.batch_max, int(credit))
                        credit -= n
                    last = now
                    if n <= 0:
                        await asyncio.sleep(self.batch_ms / 1000.0)
                        continue
                    at_ms = int(time.time() * 1000)
                    pending = []
                    for _ in range(n):
                        seq += 1
                        pending.append({
                            "target": TARGET,
                            "dedup_key": f"{self.nonce}-{seq}",
                            "max_attempts": self.max_attempts,
                            "payload": {"seq": seq, "enqueued_at_ms": at_ms, "pad": self.padding},
                        })
                started = time.monotonic()
                try:
                    cur = await conn.execute(
                        "SELECT count(*) FROM baton.enqueue_batch(%s, %s)", (TENANT, Jsonb(pending))
                    )
                    await cur.fetchone()
                except psycopg.OperationalError as e:
                    log(f"producer: {str(e).strip()[:120]}; reconnecting, the batch is sent again")
                    await self.close(conn)
                    conn = await self.connect("producer")
                    continue
                per_job = (time.monotonic() - started) * 1000 / len(pending)
                for _ in pending:
                    self.producer_latency.add(per_job)
                self.enqueued += len(pending)
                pending = None
                if self.producer_mode == "fixed" and not harness_paced and credit < 1:
                    await asyncio.sleep(self.batch_ms / 1000.0)
        finally:
            self.producer_done.set()
            await self.close(conn)
            await self.close(observer)

    # --- workers ----------------------------------------------------------------------
    def wake_one(self) -> None:
        """Wakes the idle worker that has waited longest (one claim per notification: a
        worker whose claim comes back full wakes the next one, so a backlog still gets
        every worker, while a trickle does not send every idle worker to claim)."""
        while self.idle:
            fut = self.idle.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def wake_all(self) -> None:
        while self.idle:
            fut = self.idle.popleft()
            if not fut.done():
                fut.set_result(None)

    async def wait_for_wake(self) -> None:
        fut = asyncio.get_running_loop().create_future()
        self.idle.append(fut)
        try:
            await asyncio.wait_for(fut, self.poll_s)
        except asyncio.TimeoutError:
            pass

    async def listener(self) -> None:
        """LISTENs on the target's wake-up channel; a notification wakes an idle worker."""
        while not self.stop.is_set():
            conn = None
            try:
                conn = await self.connect("listen")
                channel = (await (await conn.execute(
                    "SELECT baton.wakeup_channel(%s, %s)", (TENANT, TARGET))).fetchone())[0]
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                self.wake_all()  # whatever was enqueued while nobody listened
                async for _ in conn.notifies():
                    self.wake_one()
            except psycopg.OperationalError as e:
                if not self.stop.is_set():
                    log(f"listen: {str(e).strip()[:120]}; reconnecting")
                    await asyncio.sleep(0.1)
            finally:
                await self.close(conn)

    async def settle(self, conn: psycopg.AsyncConnection, rows: list) -> int:
        """Finishes a claimed batch; returns how many of its jobs this call finished."""
        ids = [r[0] for r in rows]
        gens = [r[1] for r in rows]
        if self.finish_mode == "single":
            done = 0
            for i, g in zip(ids, gens):
                try:
                    await conn.execute("SELECT baton.finish(%s, %s, %s)", (TENANT, i, g))
                    done += 1
                except psycopg.Error as e:
                    if e.sqlstate != "DU001":
                        raise
                    self.lease_lost += 1
            return done
        cur = await conn.execute(
            "SELECT status FROM baton.finish_batch(%s, %s::bigint[], %s::bigint[])", (TENANT, ids, gens)
        )
        statuses = [r[0] for r in await cur.fetchall()]
        done = sum(1 for s in statuses if s == "finished")
        self.lease_lost += len(statuses) - done
        return done

    async def worker(self, index: int) -> None:
        name = f"worker-{index}"
        conn = await self.connect(name)
        try:
            while True:
                try:
                    cur = await conn.execute(
                        "SELECT id, generation, payload FROM baton.claim(%s, %s, %s * interval '1 second', %s)",
                        (TENANT, TARGET, self.lease_s, self.claim_n),
                    )
                    rows = await cur.fetchall()
                except psycopg.OperationalError as e:
                    log(f"{name}: claim: {str(e).strip()[:120]}; reconnecting")
                    await self.close(conn)
                    conn = await self.connect(name)
                    continue
                except psycopg.Error as e:  # a refusal: logged, and the claim tried again
                    log(f"{name}: claim refused: {e.sqlstate} {str(e).strip()[:120]}")
                    await asyncio.sleep(0.2)
                    continue
                if not rows:
                    if self.producer_done.is_set():
                        return  # stopping, and nothing is left to claim
                    await self.wait_for_wake()
                    continue
                if len(rows) == self.claim_n:
                    self.wake_one()  # there may be more: another worker claims beside this one
                started_ms = time.time() * 1000
                for r in rows:
                    self.pickup.add(started_ms - r[2]["enqueued_at_ms"])
                if self.work_ms > 0:
                    await asyncio.sleep(self.work_ms * len(rows) / 1000.0)
                while True:
                    try:
                        done = await self.settle(conn, rows)
                        break
                    except psycopg.OperationalError as e:
                        # Fenced by generation: a repeated finish answers the stored status.
                        log(f"{name}: finish: {str(e).strip()[:120]}; reconnecting, finishing again")
                        await self.close(conn)
                        conn = await self.connect(name)
                    except psycopg.Error as e:
                        # A refusal: the leases run out, the reaper gives the jobs back and
                        # they are counted when a later claim finishes them.
                        log(f"{name}: finish refused: {e.sqlstate} {str(e).strip()[:120]}")
                        done = 0
                        break
                ended_ms = time.time() * 1000
                for r in rows:
                    self.end_to_end.add(ended_ms - r[2]["enqueued_at_ms"])
                self.completed += done
        finally:
            await self.close(conn)

    # --- observer and samples ---------------------------------------------------------
    async def observer(self) -> None:
        if INSTANCE != 0:
            return
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = await self.connect("depth", as_app=False)
                self.depth = await self.count_depth(conn)
            except psycopg.OperationalError:
                await self.close(conn)
                conn = None
            await asyncio.sleep(0.25)
        await self.close(conn)

    def emit_sample(self, last: bool = False) -> None:
        """One record per metric; the rates count what happened since the previous sample,
        over SAMPLE_EVERY_S (the last sample, at exit, over the time since the one before)."""
        enqueued, completed = self.enqueued, self.completed
        now = time.monotonic()
        every = max(0.001, now - self.sampled_at) if last and self.sampled_at else self.sample_every_s
        self.sampled_at = now
        p = self.pickup.percentiles(30)
        e = self.end_to_end.percentiles(30)
        q = self.producer_latency.percentiles(30)
        metrics = [
            ("claim_p50_ms", p[0], 30), ("claim_p95_ms", p[1], 30), ("claim_p99_ms", p[2], 30),
            ("subscriber_p50_ms", p[0], 30), ("subscriber_p95_ms", p[1], 30), ("subscriber_p99_ms", p[2], 30),
            ("end_to_end_p50_ms", e[0], 30), ("end_to_end_p95_ms", e[1], 30), ("end_to_end_p99_ms", e[2], 30),
            ("producer_p50_ms", q[0], 30), ("producer_p95_ms", q[1], 30), ("producer_p99_ms", q[2], 30),
            ("enqueue_rate", (enqueued - self.sampled_enqueued) / every, every),
            ("completion_rate", (completed - self.sampled_completed) / every, every),
            ("queue_depth", self.depth, 0),
            ("producer_target_rate", self.target_rate, 0),
            ("lease_lost_total", self.lease_lost, 0),
        ]
        self.sampled_enqueued, self.sampled_completed = enqueued, completed
        t = now_iso()
        for metric, value, window in metrics:
            if metric in OBSERVER_METRICS and INSTANCE != 0:
                continue
            emit({"t": t, "system": SYSTEM, "kind": "adapter", "subject_kind": "adapter",
                  "subject": "", "metric": metric, "value": value, "window_s": window})

    async def sampler(self) -> None:
        every = self.sample_every_s
        try:
            await asyncio.wait_for(self.stop.wait(), every - time.time() % every)
            return
        except asyncio.TimeoutError:
            pass
        while not self.stop.is_set():
            self.emit_sample()
            try:
                await asyncio.wait_for(self.stop.wait(), every - time.time() % every)
            except asyncio.TimeoutError:
                pass

    # --- main -------------------------------------------------------------------------
    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for s in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(s, self.stop.set)
        version = await self.setup()
        emit({
            "kind": "descriptor", "system": SYSTEM, "event_tables": EVENT_TABLES, "event_indexes": EVENT_INDEXES,
            "extensions": ["pg_baton"], "version": f"pg_baton {version}", "schema_version": version,
            "db_name": self.url.rsplit("/", 1)[-1].split("?")[0], "started_at": now_iso(),
        })
        log(f"mode={self.producer_mode} pacing={self.pacing} rate={self.rate} depth={self.target_depth} "
            f"workers={self.workers} claim_n={self.claim_n} lease={self.lease_s}s finish={self.finish_mode}")
        if self.producer_mode == "fixed" and self.pacing == "harness":
            threading.Thread(target=self.read_tokens, args=(loop,), daemon=True).start()
        tasks = [asyncio.create_task(self.producer()), asyncio.create_task(self.listener()),
                 asyncio.create_task(self.observer())]
        tasks += [asyncio.create_task(self.worker(i)) for i in range(self.workers)]
        sampler = asyncio.create_task(self.sampler())
        await self.stop.wait()
        # Stopping: the producer stops; the workers work off what is queued until a
        # claim comes back empty, for at most DRAIN_S; then the last sample.
        self.wake_all()
        await asyncio.wait(tasks[:1], timeout=2.0)
        self.producer_done.set()
        self.wake_all()
        await asyncio.wait(tasks[3:], timeout=self.drain_s)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(sampler, return_exceptions=True)
        self.emit_sample(last=True)
        log(f"stopped: enqueued={self.enqueued} completed={self.completed} lease_lost={self.lease_lost}")


def main() -> int:
    scenario = env_str("SCENARIO", "long_horizon")
    if scenario != "long_horizon":
        log(f"unsupported SCENARIO {scenario!r}")
        return 2
    asyncio.run(Adapter().run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
