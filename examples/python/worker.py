#!/usr/bin/python3
"""A pg_baton worker in Python: the pg_baton package's worker (clients/python) with a
handler. Replace handle() with your work and run it:

    BATON_TENANT=<uuid> BATON_TARGET=email PGHOST=... PGDATABASE=... python3 worker.py
    BATON_TENANT=<uuid> BATON_TARGET=email,sms BATON_CONCURRENCY=4 ... python3 worker.py
    BATON_FAIR=1 BATON_TARGET=email PGHOST=... PGDATABASE=... python3 worker.py

This one handler serves every target of BATON_TARGET (item.target says which); a
handler per target is main({"email": send_email, "sms": send_sms}). The settings
(concurrency, lease, batch, poll, grace, fair mode) and what the loop does:
pg_baton/worker.py and docs/guide/workers.md. The package comes from its wheel (pip
install pg_baton-*.whl, made by clients/python/build.sh) or, run from the repository,
from clients/python/src.
"""

import os
import sys
import threading
import time
from typing import Any

try:
    from pg_baton.worker import Item, main
except ImportError:  # run from the repository, the package not installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python", "src"))
    from pg_baton.worker import Item, main


def handle(item: Item, lease_lost: threading.Event) -> Any:
    """YOUR WORK GOES HERE. Return a JSON-able result (stored by finish; None stores
    none), or raise to retry.

    item.tenant is the delivery's tenant (always BATON_TENANT, unless BATON_FAIR=1),
    item.target its target. With BATON_CONCURRENCY above 1 several calls run at once, each
    in a thread of its own: share nothing unguarded between them.
    lease_lost is set when the worker learns that the lease is gone (DU001), or gives
    the item back at shutdown: stop early if you can, the result will not be stored. This demo handler does what the payload
    says: sleeps payload["sleep"] seconds, and raises while the attempt is at most
    payload["fail_attempts"].
    """
    deadline = time.monotonic() + float(item.payload.get("sleep", 0))
    while not lease_lost.is_set() and time.monotonic() < deadline:
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    if item.attempt <= int(item.payload.get("fail_attempts", 0)):
        raise RuntimeError(f"demo failure on attempt {item.attempt}")
    return {"handled_by": "python", "attempt": item.attempt}


if __name__ == "__main__":
    sys.exit(main(handle))
