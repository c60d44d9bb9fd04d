"""Wake-ups wherever a worker listens, on a distributed install (test/citus/wakeups.sh).

    wakeups.py SOCK PORT0 PORT1 PORT2 TENANT

One listener per node (the coordinator on PORT0, the workers after it), each on the
channel baton.wakeup_channel() names on its own node for (TENANT, 'w'), and one more on
the coordinator for another target. Then enqueues of (TENANT, 'w') sent in every way a
producer may send one, each followed by a wait of at most DEADLINE seconds for every
listener's notification; then the tenant's shard group moves to the other worker and the
enqueues run again. Prints "ok" / "FAIL" lines, "# " figures (the latency from the
enqueue's return to each notification), and last "N passed, N failed".
"""
import select
import statistics
import sys
import time

import psycopg

DEADLINE = 5.0  # far below a worker's fallback poll; a relayed wake-up takes milliseconds

sock, ports, tenant = sys.argv[1], [int(p) for p in sys.argv[2:5]], sys.argv[5]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   - %s" % name)
    else:
        failed += 1
        print("FAIL - %s%s" % (name, (": " + detail) if detail else ""))
    sys.stdout.flush()


def connect(port):
    return psycopg.connect(host=sock, port=port, user="postgres", dbname="postgres", autocommit=True)


def tenant_port(conn):
    return conn.execute(
        "SELECT p.nodeport FROM pg_dist_shard_placement p "
        "WHERE p.shardid = get_shard_id_for_distribution_column('baton.tenants', %s::uuid)", (tenant,)).fetchone()[0]


class Listener:
    def __init__(self, port, target):
        self.port = port
        self.conn = connect(port)
        self.channel = self.conn.execute("SELECT baton.wakeup_channel(%s, %s)", (tenant, target)).fetchone()[0]
        self.conn.execute('LISTEN "%s"' % self.channel)
        self.conn.commit()

    def drain(self):
        """Notifications received so far, as (time, channel)."""
        got = []
        self.conn.pgconn.consume_input()
        while (n := self.conn.pgconn.notifies()) is not None:
            got.append((time.monotonic(), n.relname.decode()))
        return got

    def wait(self, until):
        """The time of the first notification on its channel before `until`, or None."""
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return None
            select.select([self.conn.fileno()], [], [], left)
            for t, channel in self.drain():
                if channel == self.channel:
                    return t


coordinator = connect(ports[0])
listeners = [Listener(p, "w") for p in ports]
other = Listener(ports[0], "other-target")
names = {"coordinator": ports[0], "worker %d" % ports[1]: ports[1], "worker %d" % ports[2]: ports[2]}
check("every node names the same channel for (tenant, 'w')", len({l.channel for l in listeners}) == 1,
      " ".join(l.channel for l in listeners))

# Every node's relay has connected to the other two before the enqueues begin.
t0 = time.monotonic()
while time.monotonic() - t0 < 30:
    counts = [connect(p).execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_baton relay'")
              .fetchone()[0] for p in ports]
    if counts == [2, 2, 2]:
        break
    time.sleep(0.2)
check("each node has the other two nodes' relays listening (after %.1f s)" % (time.monotonic() - t0),
      counts == [2, 2, 2], "connections per node: %s" % counts)

latencies = []
key = [0]


def enqueue_by(how, home):
    """Enqueues one item of (tenant, 'w') the way `how` says; returns when the call returned."""
    key[0] += 1
    dedup = "k%d" % key[0]
    if how == "delegated from the coordinator":
        coordinator.execute("SELECT baton.enqueue(%s, 'w', %s)", (tenant, dedup))
    elif how == "in a transaction on the coordinator":
        with coordinator.transaction():
            coordinator.execute("SELECT baton.enqueue(%s, 'w', %s)", (tenant, dedup))
    elif how == "delegated from the other worker":
        port = ports[1] if home == ports[2] else ports[2]
        with connect(port) as c:
            c.execute("SELECT baton.enqueue(%s, 'w', %s)", (tenant, dedup))
    elif how == "on the tenant's worker":
        with connect(home) as c:
            c.execute("SELECT baton.enqueue(%s, 'w', %s)", (tenant, dedup))
    return time.monotonic()


def round_of(label):
    home = tenant_port(coordinator)
    for how in ("delegated from the coordinator", "in a transaction on the coordinator",
                "delegated from the other worker", "on the tenant's worker"):
        for l in listeners + [other]:
            l.drain()
        sent = enqueue_by(how, home)
        until = sent + DEADLINE
        heard = {}
        for l in listeners:
            t = l.wait(until)
            heard[l.port] = None if t is None else max(0.0, t - sent)
        missing = [name for name, p in names.items() if heard[p] is None]
        check("%s: an enqueue %s wakes the listeners on every node" % (label, how), not missing,
              "not heard within %.0f s on: %s" % (DEADLINE, ", ".join(missing)))
        got = [h for h in heard.values() if h is not None]
        latencies.extend(got)
        print("#   %s, %s: heard after %s ms" % (label, how, " / ".join(
            "%s %.1f" % (name, heard[p] * 1000) if heard[p] is not None else "%s -" % name
            for name, p in names.items())))
        check("%s: the listener of another target hears nothing of it" % label,
              all(c != other.channel for _, c in other.drain()))
    return home


home = round_of("before the move")
dest = ports[1] if home == ports[2] else ports[2]
shard = coordinator.execute("SELECT get_shard_id_for_distribution_column('baton.tenants', %s::uuid)",
                            (tenant,)).fetchone()[0]
coordinator.execute("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, "
                    "shard_transfer_mode => 'block_writes')", (shard, sock, home, sock, dest))
check("the tenant's shard group moved to the other worker", tenant_port(coordinator) == dest)
round_of("after the move")

if latencies:
    print("# enqueue to notification over every listener: median %.1f ms, max %.1f ms (%d notifications)"
          % (statistics.median(latencies) * 1000, max(latencies) * 1000, len(latencies)))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
