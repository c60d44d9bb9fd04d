"""Producing work: baton.enqueue, baton.enqueue_keyed and baton.enqueue_batch, with the
refusals as pg_baton.errors exceptions."""

import datetime
from typing import Any, Dict, List, Optional, Sequence, Tuple

import psycopg
from psycopg.types.json import Jsonb

from pg_baton.errors import from_psycopg


class Producer:
    """Enqueues deliveries through `conn` (a psycopg connection; each call runs in the
    connection's transaction, autocommit or not, as the caller chose)."""

    def __init__(self, conn: psycopg.Connection):
        self.conn = conn

    def _one(self, sql: str, params: Sequence[Any]) -> Any:
        try:
            return self.conn.execute(sql, params).fetchone()[0]
        except psycopg.Error as e:
            raise from_psycopg(e) from None

    def enqueue(self, tenant: str, target: str, dedup_key: str, payload: Optional[Dict[str, Any]] = None,
                binding: Optional[Dict[str, Any]] = None, run_after: Optional[datetime.datetime] = None,
                priority: int = 0, max_attempts: int = 3, key: Optional[str] = None) -> int:
        """The delivery's id: a new one, or the one that holds dedup_key already
        (DuplicateKey when that one carries another payload, binding or key)."""
        args = (tenant, target, dedup_key, Jsonb(payload or {}), Jsonb(binding or {}), run_after, priority,
                max_attempts)
        if key is None:
            return self._one("SELECT baton.enqueue(%s, %s, %s, %s, %s, %s, %s, %s)", args)
        return self._one("SELECT baton.enqueue_keyed(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                         args[:3] + (key,) + args[3:])

    def enqueue_batch(self, tenant: str, items: List[Dict[str, Any]]) -> List[Tuple[int, bool]]:
        """Enqueues the items (each a dict of target, dedup_key and the optional payload,
        binding, run_after, priority, max_attempts, key) in one call: (id, inserted) per
        item, in order."""
        try:
            rows = self.conn.execute("SELECT id, inserted FROM baton.enqueue_batch(%s, %s)",
                                     (tenant, Jsonb(items))).fetchall()
        except psycopg.Error as e:
            raise from_psycopg(e) from None
        return [(r[0], r[1]) for r in rows]
