#!/usr/bin/env bash
# pg_baton under sustained load: throughput per 5 s window, dead rows and size of every
# table of schema baton over time, vacuums, a held snapshot, a reap burst.
#
#   bash bench/sustained.sh [--mode depth|rate|hold|burst] [--minutes M] [options]
#
# Every mode runs on a fresh throwaway cluster (scripts/cluster.sh) with pg_baton
# preloaded (its background reaper on, as in production), fsync and synchronous_commit
# on, shared_buffers 256MB, and the autovacuum settings of the public job-queue harness
# (autovacuum_naptime 60s, autovacuum_vacuum_cost_delay 2ms, cost_limit 200,
# scale_factor 0.2, threshold 50; pg_baton's own tables carry their own thresholds).
# 16 clients (--clients), batches of 10 (--batch):
#
#   depth   the harness' depth-target method: the queue filled to --depth (4,000), then
#           each client loops on bench/sql/sustained_loop.sql (enqueue a batch, claim a
#           batch, finish it): it enqueues what it finishes, so the depth holds.
#   rate    a fixed rate: one producer paced by pgbench -R enqueues --rate deliveries a
#           second (batches of 100, bench/sql/sustained_producer.sql), the clients claim
#           and finish (bench/sql/sustained_worker.sql, a 5 ms rest on an empty queue).
#   hold    depth (or, with --load rate, rate), with one transaction holding an xid
#           (BEGIN; SELECT txid_current()) from --clean minutes in for --hold minutes,
#           then --after minutes more.
#   burst   the clients of rate on a backlog of 400,000 with no producer; 5 s in, one
#           session claims --leases deliveries (50,000) with 15-second leases and never
#           finishes them: the reaper returns them all at once when they expire.
#
# A retention loop runs beside the clients, as an operator's cron would: every 5 s
# baton.purge('--retention' seconds, 10000) until it returns less (default 60; 0: none),
# so that baton.deliveries keeps the deliveries of the last minute or so, settled or not.
#
# Printed: jobs a second in each 5 s window (finished deliveries: half the updates of
# baton.deliveries pg_stat counts, a claim's and a finish's), their minimum, median and
# maximum, and the lowest window over the median; for hold, each phase's median and the
# p99 of a client's round (pgbench's log: enqueue, claim and finish, three commits); for
# burst, the p99 of a worker's round (claim and finish) in the 10 s before the leases
# expire and while the reaper returns them, and how long that took. The samples (every
# 5 s: each table's live and dead rows, size with indexes, vacuums by the reaper and by
# autovacuum) go to OUT/tables.csv, the windows to OUT/windows.csv (OUT: --out, default
# a new directory under /tmp, printed).
#
# Options: --minutes M (depth, rate; default 5, the long run 30), --depth N, --rate N
# (default 5000), --clients N, --batch N, --clean/--hold/--after M (hold; default 2, 10,
# 5), --load depth|rate (hold), --keys ordered|random (dedup keys in order of time, as the
# harness' adapter makes them, or random uuids: an enqueue then writes a random page of
# deliveries_dedup), --leases N (burst), --retention S, --setup SQL (run once pg_baton is
# installed, before the load: a storage parameter of one of its tables, say), --waldump
# (after the load, the records of the write-ahead log still in pg_wal by kind,
# pg_waldump --stats=record, in OUT/waldump.txt). Printed too, but for burst: the
# write-ahead log over the load, bytes and full-page images a delivery finished.
# Environment: PG_CONFIG, BATON_BENCH_PORT (default 55540).
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

die() {
    echo "sustained.sh: $*" >&2
    exit 2
}

MODE=depth LOAD=depth KEYS=ordered MINUTES=5 DEPTH=4000 RATE=5000 CLIENTS=16 BATCH=10 CLEAN=2 HOLD=10 AFTER=5 LEASES=50000 RETENTION=60 WALDUMP=0 SETUP= OUT=
while (($# > 0)); do
    case $1 in
        --mode) MODE=${2:?}; shift ;;
        --minutes) MINUTES=${2:?}; shift ;;
        --depth) DEPTH=${2:?}; shift ;;
        --rate) RATE=${2:?}; shift ;;
        --clients) CLIENTS=${2:?}; shift ;;
        --batch) BATCH=${2:?}; shift ;;
        --clean) CLEAN=${2:?}; shift ;;
        --hold) HOLD=${2:?}; shift ;;
        --after) AFTER=${2:?}; shift ;;
        --load) LOAD=${2:?}; shift ;;
        --keys) KEYS=${2:?}; shift ;;
        --leases) LEASES=${2:?}; shift ;;
        --retention) RETENTION=${2:?}; shift ;;
        --out) OUT=${2:?}; shift ;;
        --waldump) WALDUMP=1 ;;
        --setup) SETUP=${2:?}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1'" ;;
    esac
    shift
done
[[ $MODE =~ ^(depth|rate|hold|burst)$ ]] || die "unknown mode '$MODE'"
[[ $LOAD =~ ^(depth|rate)$ ]] || die "unknown load '$LOAD'"
[[ $KEYS =~ ^(ordered|random)$ ]] || die "unknown keys '$KEYS'"
TENANT=b0000000-0000-4000-8000-000000000505
# secs M: M minutes (fractions allowed) in whole seconds.
secs() { awk -v m="$1" 'BEGIN { printf "%d", m * 60 }'; }
[[ -n $OUT ]] || OUT=$(mktemp -d /tmp/pg_baton-sustained.XXXXXX)
mkdir -p "$OUT"
BIN=$("${PG_CONFIG:-pg_config}" --bindir)

CLUSTER=$(mktemp -d /tmp/pg_baton-bench-sustained.XXXXXX)
SAMPLER=
PURGER=
# shellcheck disable=SC2317
cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    [[ -n $SAMPLER ]] && kill "$SAMPLER" 2>/dev/null
    [[ -n $PURGER ]] && kill "$PURGER" 2>/dev/null
    cp "$CLUSTER/log" "$OUT/server.log" 2>/dev/null
    cluster_stop "$CLUSTER" 2>/dev/null
    exit "$rc"
}
trap cleanup EXIT

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55540}") || die "no free port"
cluster_start "$CLUSTER" "$PORT" "shared_preload_libraries = 'pg_baton'" "work_mem = 8MB" \
    "maintenance_work_mem = 128MB" "autovacuum_naptime = 60s" "autovacuum_vacuum_cost_delay = 2ms" \
    "autovacuum_vacuum_cost_limit = 200" "autovacuum_vacuum_scale_factor = 0.2" \
    "autovacuum_vacuum_threshold = 50" "log_autovacuum_min_duration = 0" 2>/dev/null || die "could not start a cluster"
q() { "$BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

q -c "CREATE DATABASE bench"
q -d bench -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$TENANT')" >/dev/null
[[ -z $SETUP ]] || q -d bench -c "$SETUP" >/dev/null
# fill N: N pending deliveries, 10,000 a call.
fill() {
    q -d bench -c "SET baton.notify = off" \
        -c "SELECT count(*) FROM generate_series(1, $1, 10000) lo, LATERAL baton.enqueue_batch('$TENANT',
              (SELECT jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', 'f' || g))
                 FROM generate_series(lo, least(lo + 9999, $1)) g))" -c "VACUUM ANALYZE" >/dev/null
}

# Every 5 s, each table of schema baton: epoch, table, live, dead, bytes with indexes,
# vacuums (manual: the reaper's), autovacuums, updates (all, HOT or not), HOT updates,
# heap and index blocks read from outside shared buffers.
sample() {
    while sleep 5; do
        q -d bench -F, -c "SELECT extract(epoch FROM now())::bigint, relname, n_live_tup, n_dead_tup,
                             pg_total_relation_size(relid), vacuum_count, autovacuum_count, n_tup_upd, n_tup_hot_upd,
                             heap_blks_read, coalesce(idx_blks_read, 0)
                             FROM pg_stat_user_tables JOIN pg_statio_user_tables USING (relid, schemaname, relname)
                             WHERE schemaname = 'baton' ORDER BY relname" 2>/dev/null || true
    done
}

# The retention loop (see the header).
# Each call is logged to OUT/purge.csv: epoch at its start, rows purged, milliseconds.
purge() {
    local line
    while sleep 5; do
        while line=$(q -d bench -F, -c "SELECT extract(epoch FROM now())::numeric(16,3), n,
                       (1000 * extract(epoch FROM clock_timestamp() - now()))::int
                       FROM baton.purge('$RETENTION seconds', 10000) n" 2>/dev/null); do
            echo "$line" >>"$OUT/purge.csv"
            [[ ${line#*,} == 10000,* ]] || break
        done
    done
}
PURGER=
if ((RETENTION > 0)); then
    purge &
    PURGER=$!
fi

PGBENCH=("$BIN/pgbench" -n -d bench -j 2 -P 5 -D "tenant='$TENANT'" -D "batch=$BATCH" -D "ordered=$([[ $KEYS == ordered ]] && echo 1 || echo 0)")
echo "== bench/sustained.sh --mode $MODE$([[ $MODE != hold ]] || echo " --load $LOAD") --keys $KEYS ($(date -u '+%Y-%m-%d %H:%M UTC'); $CLIENTS clients, batches of $BATCH; out $OUT)"
echo "   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   PostgreSQL $("$BIN/postgres" --version | awk '{print $3}')"
secs=$(secs "$MINUTES")
[[ $MODE != hold ]] || secs=$(($(secs "$CLEAN") + $(secs "$HOLD") + $(secs "$AFTER")))
# hold: the transaction that holds an xid, from --clean minutes after the clients start
# for --hold minutes.
holder() {
    [[ $MODE == hold ]] || return 0
    (sleep "$(secs "$CLEAN")" && q -d bench -c "BEGIN" -c "SELECT txid_current()" \
        -c "SELECT pg_sleep($(secs "$HOLD"))" -c "COMMIT" >/dev/null) &
}
# The write-ahead log written so far and the updates of baton.deliveries (two a
# delivery finished), at the load's start and end: OUT/wal.csv.
wal() {
    q -d bench -F, -c "SELECT w.wal_bytes, w.wal_fpi, s.n_tup_upd FROM pg_catalog.pg_stat_wal w,
                         pg_catalog.pg_stat_user_tables s WHERE s.relid = 'baton.deliveries'::pg_catalog.regclass" >>"$OUT/wal.csv"
}
[[ $MODE == burst ]] || wal
case $MODE/$LOAD in
    depth/* | hold/depth)
        fill "$DEPTH"
        sample >"$OUT/tables.csv" &
        SAMPLER=$!
        holder
        (cd "$OUT" && "${PGBENCH[@]}" -c "$CLIENTS" -T "$secs" -l --log-prefix=round \
            -f "$ROOT/bench/sql/sustained_loop.sql") >"$OUT/pgbench.txt" 2>&1
        ;;
    rate/* | hold/rate)
        sample >"$OUT/tables.csv" &
        SAMPLER=$!
        holder
        "${PGBENCH[@]}" -c 1 -T "$secs" -R $((RATE / 100)) -D batch=100 \
            -f "$ROOT/bench/sql/sustained_producer.sql" >"$OUT/producer.txt" 2>&1 &
        PRODUCER=$!
        (cd "$OUT" && "${PGBENCH[@]}" -c "$CLIENTS" -T "$secs" -l --log-prefix=round \
            -f "$ROOT/bench/sql/sustained_worker.sql") >"$OUT/pgbench.txt" 2>&1
        wait "$PRODUCER" || true
        ;;
    burst/*)
        fill 400000
        sample >"$OUT/tables.csv" &
        SAMPLER=$!
        (while sleep 0.25; do q -d bench -F, -c "SELECT extract(epoch FROM clock_timestamp()), count(*)
                                                  FROM baton.leases WHERE lease_until < now()" 2>/dev/null || true; done) \
            >"$OUT/expired.csv" &
        EXPIRED=$!
        (sleep 5 && q -d bench -c "BEGIN" -c "SELECT count(*) FROM generate_series(1, $LEASES / 1000) g,
                 LATERAL baton.claim('$TENANT', 'bench', '15 seconds', 1000 + 0 * g)" \
            -c "SELECT extract(epoch FROM now() + interval '15 seconds')" -c "COMMIT" >"$OUT/expiry.txt") &
        (cd "$OUT" && "${PGBENCH[@]}" -c "$CLIENTS" -T 60 -l --log-prefix=round \
            -f "$ROOT/bench/sql/sustained_worker.sql") >"$OUT/pgbench.txt" 2>&1
        kill "$EXPIRED" 2>/dev/null || true
        ;;
esac
kill "$SAMPLER" ${PURGER:+"$PURGER"} 2>/dev/null || true
SAMPLER= PURGER=
if [[ $MODE != burst ]]; then
    sleep 1  # the backends' counts reach the statistics within a second of their last commit
    wal
fi
if ((WALDUMP)); then
    first=$(find "$CLUSTER/data/pg_wal" -maxdepth 1 -name '[0-9A-F]*' -printf '%f\n' | grep -E '^[0-9A-F]{24}$' | sort | head -1)
    "$BIN/pg_waldump" --stats=record -p "$CLUSTER/data/pg_wal" "$first" \
        "$(q -d bench -c "SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn())")" >"$OUT/waldump.txt" 2>&1 || true
fi

python3 - "$OUT" "$MODE" "$CLEAN" "$HOLD" <<'PY'
import csv, glob, os, statistics, sys
out, mode, clean, hold = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = [r[:8] for r in csv.reader(open(os.path.join(out, "tables.csv"))) if len(r) >= 8]
by_t = {}
for t, rel, live, dead, size, vac, avac, upd in rows:
    by_t.setdefault(int(t), {})[rel] = (int(live), int(dead), int(size), int(vac), int(avac), int(upd))
times = sorted(by_t)
start = times[0] if times else 0
windows = []
for a, b in zip(times, times[1:]):
    if "deliveries" in by_t[a] and "deliveries" in by_t[b]:
        windows.append((b - start, (by_t[b]["deliveries"][5] - by_t[a]["deliveries"][5]) / 2 / (b - a)))
with open(os.path.join(out, "windows.csv"), "w") as f:
    f.write("seconds,jobs_per_second\n")
    for s, r in windows:
        f.write("%d,%.0f\n" % (s, r))
rates = [r for _, r in windows[1:]]  # the first window starts with the clients
if rates:
    med = statistics.median(rates)
    print("   jobs/s per 5 s window: min %.0f  median %.0f  max %.0f  (%d windows; lowest / median %.2f)"
          % (min(rates), med, max(rates), len(rates), min(rates) / med if med else 0))
    print("   windows: " + " ".join("%.0f" % r for r in rates))
last = by_t[times[-1]] if times else {}
peak = {}
for t in times:
    for rel, v in by_t[t].items():
        p = peak.setdefault(rel, [0, 0])
        p[0] = max(p[0], v[1]); p[1] = max(p[1], v[2])
print("   %-16s %12s %12s %10s %10s %9s %9s" % ("table", "peak dead", "dead at end", "peak size", "end size", "vacuums", "autovac"))
for rel in sorted(peak):
    v = last.get(rel, (0, 0, 0, 0, 0, 0))
    first = by_t[times[0]].get(rel, (0, 0, 0, 0, 0, 0))
    print("   %-16s %12d %12d %9.1fM %9.1fM %9d %9d" % (rel, peak[rel][0], v[1], peak[rel][1] / 1048576.0,
          v[2] / 1048576.0, v[3] - first[3], v[4] - first[4]))
print("   total dead rows, peak over the run: %d" % max(sum(v[1] for v in by_t[t].values()) for t in times))
walf = os.path.join(out, "wal.csv")
wal = list(csv.reader(open(walf))) if os.path.exists(walf) else []
if len(wal) == 2:
    wbytes, wfpi, wupd = (int(wal[1][i]) - int(wal[0][i]) for i in range(3))
    if wupd > 0:
        print("   write-ahead log over the load: %.2f GB, %.0f bytes and %.2f full-page images a delivery finished"
              % (wbytes / 1e9, wbytes / (wupd / 2), wfpi / (wupd / 2)))

rounds = []  # (end epoch, latency ms)
for f in glob.glob(os.path.join(out, "round*")):
    for line in open(f):
        p = line.split()
        if len(p) >= 6:
            rounds.append((int(p[4]) + int(p[5]) / 1e6, int(p[2]) / 1000.0))
def p99(a, b):
    v = sorted(x for t, x in rounds if a <= t < b)
    return (v[int(len(v) * 0.99)] if v else 0.0, len(v))
if mode == "hold" and rates:
    t0 = min(t for t, _ in rounds)
    phases = [("clean", 0, clean * 60), ("held", clean * 60, (clean + hold) * 60), ("after", (clean + hold) * 60, 10 ** 9)]
    base = None
    for name, a, b in phases:
        r = [x for s, x in windows[1:] if a + 5 <= s - 5 and s <= b]
        m = statistics.median(r) if r else 0
        lat, n = p99(t0 + a, t0 + b)
        base = base or (m, lat)
        print("   %-6s median %.0f jobs/s (x%.2f of clean), round p99 %.1f ms (x%.2f), %d rounds"
              % (name, m, m / base[0] if base[0] else 0, lat, lat / base[1] if base[1] else 0, n))
if mode == "burst":
    expiry = float(open(os.path.join(out, "expiry.txt")).read().split()[-1])
    seen = [(float(t), int(c)) for t, c in csv.reader(open(os.path.join(out, "expired.csv")))]
    end = max([t for t, c in seen if t > expiry and c > 0] or [expiry])
    quiet, nq = p99(expiry - 12, expiry - 2)
    burst, nb = p99(expiry, end + 0.5)
    print("   the reaper returned the expired leases in %.1f s" % (end - expiry))
    print("   round p99: %.1f ms before (%d rounds), %.1f ms during the reap (%d rounds): x%.2f"
          % (quiet, nq, burst, nb, burst / quiet if quiet else 0))
PY

# The plots (bench/plot_sustained.py), with the first python3 that has matplotlib
# (Debian's python3-matplotlib is for /usr/bin/python3).
PHASES=
[[ $MODE != hold ]] || PHASES=$CLEAN,$HOLD
PLOTPY=
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import matplotlib' 2>/dev/null; then PLOTPY=$py && break; fi
done
if [[ -n $PLOTPY ]]; then
    "$PLOTPY" "$ROOT/bench/plot_sustained.py" "$OUT" --title "sustained.sh --mode $MODE" ${PHASES:+--phases "$PHASES"} |
        sed 's/^/   plot: /' || true
else
    echo "   plots skipped: no python3 with matplotlib (apt-get install python3-matplotlib), then:" \
        "/usr/bin/python3 bench/plot_sustained.py $OUT${PHASES:+ --phases $PHASES}"
fi
