"""Enqueue-to-claim latency of a worker woken by LISTEN (bench/citus_wakeup.sh).

    citus_wakeup.py SOCK PORT TENANT COUNT LABEL [PRODUCER_PORT]

A worker connected to PORT listens on the wake-up channel of (TENANT, 'lat') its node
names; a producer connected to PRODUCER_PORT (default PORT) enqueues COUNT items one at a
time, after an exponentially distributed pause (mean 50 ms, fixed seed). On each
notification the worker claims and finishes on its own connection. Latency: from just
before the enqueue statement to the claim's return with the item. Prints one line:
"LABEL median p90 p99 max" in milliseconds.
"""
import random
import select
import statistics
import sys
import time

import psycopg

sock, port, tenant, count, label = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
producer_port = int(sys.argv[6]) if len(sys.argv) > 6 else port


def connect(p):
    return psycopg.connect(host=sock, port=p, user="postgres", dbname="postgres", autocommit=True)


worker, producer = connect(port), connect(producer_port)
channel = worker.execute("SELECT baton.wakeup_channel(%s, 'lat')", (tenant,)).fetchone()[0]
worker.execute('LISTEN "%s"' % channel)
rng = random.Random(7)
lat = []
for i in range(count):
    time.sleep(rng.expovariate(1 / 0.05))
    t0 = time.monotonic()
    producer.execute("SELECT baton.enqueue(%s, 'lat', %s)", (tenant, "%s-%d" % (label, i)))
    got = None
    deadline = t0 + 5
    while got is None and time.monotonic() < deadline:
        select.select([worker.fileno()], [], [], max(0.0, deadline - time.monotonic()))
        worker.pgconn.consume_input()
        heard = False
        while (n := worker.pgconn.notifies()) is not None:
            heard = heard or n.relname.decode() == channel
        if heard:
            got = worker.execute("SELECT id, generation FROM baton.claim(%s, 'lat', '1 minute')", (tenant,)).fetchone()
    if got is None:
        print("%s: item %d not claimed within 5 s" % (label, i), file=sys.stderr)
        sys.exit(1)
    lat.append(time.monotonic() - t0)
    worker.execute("SELECT baton.finish(%s, %s, %s)", (tenant, got[0], got[1]))
lat.sort()
ms = lambda v: "%.2f" % (v * 1000)
print(label, ms(statistics.median(lat)), ms(lat[int(0.9 * (len(lat) - 1))]), ms(lat[int(0.99 * (len(lat) - 1))]),
      ms(lat[-1]))
