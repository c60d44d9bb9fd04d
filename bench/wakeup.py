#!/usr/bin/python3
"""The parts of bench/wakeup.sh: a producer, a timing worker, the report.

    wakeup.py produce TENANT COUNT MEAN_SECONDS SEED
        enqueues COUNT items, each to both targets "listen" and "poll" in one transaction,
        waiting an exponentially distributed time (mean MEAN_SECONDS) before each; the
        payload carries the producer's clock just before the statement ("enqueued_at").
    wakeup.py worker
        the pg_baton package's worker (clients/python), configured from the environment, with
        a handler that prints "latency id=N seconds=S": the time from enqueued_at to the
        handler's start, right after the claim returned.
    wakeup.py report LISTEN_LOG POLL_LOG POLL_SECONDS FALLBACK_SECONDS
        median, p90, p99 and max of both logs, and the ratios.
"""

import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients", "python", "src"))


def produce(tenant: str, count: int, mean: float, seed: int) -> None:
    import psycopg
    from psycopg.types.json import Jsonb

    rng = random.Random(seed)
    with psycopg.connect(autocommit=True, application_name="wakeup-producer") as conn:
        for i in range(count):
            time.sleep(rng.expovariate(1.0 / mean))
            payload = Jsonb({"enqueued_at": time.time()})
            conn.execute(
                "SELECT baton.enqueue(%s, 'listen', %s, %s), baton.enqueue(%s, 'poll', %s, %s)",
                (tenant, f"k{i}", payload, tenant, f"k{i}", payload),
            )


def worker() -> int:
    from pg_baton.worker import main

    def timing_handler(item, _lost):
        seconds = time.time() - float(item.payload["enqueued_at"])
        print(f"latency id={item.id} seconds={seconds:.6f}", flush=True)
        return {}

    return main(timing_handler)


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list."""
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def latencies(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("latency "):
                out.append(float(line.rsplit("seconds=", 1)[1]))
    return sorted(out)


def report(listen_log: str, poll_log: str, poll: str, fallback: str) -> None:
    a, b = latencies(listen_log), latencies(poll_log)
    rows = [
        (f"A: LISTEN + claim (fallback poll {fallback} s)", a),
        (f"B: poll every {poll} s", b),
    ]
    print(f"{'worker':<40} {'items':>5} {'median ms':>10} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, v in rows:
        if not v:
            print(f"{name:<40} {0:>5}  (no items)")
            continue
        print(f"{name:<40} {len(v):>5} {statistics.median(v) * 1000:>10.1f} "
              f"{percentile(v, 90) * 1000:>8.1f} {percentile(v, 99) * 1000:>8.1f} {v[-1] * 1000:>8.1f}")
    if a and b:
        print(f"{'ratio B / A':<40} {'':>5} {statistics.median(b) / statistics.median(a):>10.0f} "
              f"{percentile(b, 90) / percentile(a, 90):>8.0f} {percentile(b, 99) / percentile(a, 99):>8.0f} "
              f"{b[-1] / a[-1]:>8.0f}")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "produce":
        produce(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "worker":
        sys.exit(worker())
    elif cmd == "report":
        report(*sys.argv[2:6])
    else:
        sys.exit(__doc__)
