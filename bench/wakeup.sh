#!/usr/bin/env bash
# Wake-up latency: LISTEN-and-claim against a 1-second poll.    bash bench/wakeup.sh [COUNT]
#
# Needs pg_baton installed (the README's test command, or `make install`) and Debian's
# python3-psycopg. In a throwaway cluster (scripts/cluster.sh, first free port from
# BATON_BENCH_PORT, default 55600):
#   worker A   examples/python/worker.py, LISTEN on its target's wake-up channel
#              (baton.wakeup_channel), claims on a notification ("listen"), fallback poll 30 s
#   worker B   the same worker with BATON_LISTEN=0, claims every 1 s (target "poll")
#   producer   COUNT items (default 200), each enqueued to both targets in one transaction,
#              after an exponentially distributed pause (mean 0.15 s, fixed seed)
# Latency = the worker's handler start (right after its claim returned) minus the
# producer's clock just before the enqueue statement (the payload's "enqueued_at"): it
# includes the enqueue's commit. Prints median, p90, p99 and max for each worker and the
# ratios. About COUNT x 0.15 s + a few seconds.
#
# Then the cost of the notification to producers: BATON_WAKEUP_CLIENTS (default 16)
# pgbench clients, each transaction one baton.enqueue (4 targets), with baton.notify on
# and off, 5 s each, alternating, BATON_WAKEUP_ROUNDS (default 3) rounds, while both
# workers stay connected (A listening); items counted from the table; the ratio off/on
# of each round and their median. BATON_WAKEUP_PRODUCERS=0 skips it.
set -euo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

COUNT=${1:-200}
MEAN=0.15
POLL=1
FALLBACK=30
PY=/usr/bin/python3
T=77777777-7777-4777-8777-777777777777
DIR=$(mktemp -d /tmp/pg_baton-wakeup.XXXXXX)      # the workers' logs
CLUSTER=$(mktemp -d /tmp/pg_baton-wakeup-db.XXXXXX) # the throwaway cluster
PIDS=()

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    cluster_stop "$CLUSTER" || true
    rm -rf -- "$DIR"
}
trap cleanup EXIT

cluster_start "$CLUSTER" "$(cluster_free_port "${BATON_BENCH_PORT:-55600}")"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION pg_baton" -c "SELECT baton.create_tenant('$T')" >/dev/null
echo "wakeup: $(psql -X -At -c 'SHOW server_version'), $COUNT items, mean gap ${MEAN} s, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

export BATON_TENANT=$T BATON_BATCH=10 BATON_REAP=0
BATON_TARGET=listen BATON_LISTEN=1 BATON_POLL_SECONDS=$FALLBACK \
    "$PY" bench/wakeup.py worker >"$DIR/listen.log" 2>&1 &
PIDS+=($!)
BATON_TARGET=poll BATON_LISTEN=0 BATON_POLL_SECONDS=$POLL \
    "$PY" bench/wakeup.py worker >"$DIR/poll.log" 2>&1 &
PIDS+=($!)
sleep 1.5 # both connected and idle

"$PY" bench/wakeup.py produce "$T" "$COUNT" "$MEAN" 42
# the poll worker's last item comes within POLL seconds
for _ in $(seq 1 100); do
    done_rows=$(psql -X -At -c "SELECT count(*) FROM baton.deliveries WHERE status = 'finished'")
    ((done_rows >= 2 * COUNT)) && break
    sleep 0.1
done
echo "wakeup: $done_rows of $((2 * COUNT)) deliveries finished"
"$PY" bench/wakeup.py report "$DIR/listen.log" "$DIR/poll.log" "$POLL" "$FALLBACK"

if [[ ${BATON_WAKEUP_PRODUCERS:-1} == 1 ]]; then
    PGBENCH=$("${PG_CONFIG:-pg_config}" --bindir)/pgbench
    cat >"$DIR/enqueue.sql" <<SQL
\\set k random(1, 1000000000000)
SELECT baton.enqueue('$T', 'p' || (:client_id % 4), 'c' || :client_id || '-' || :k);
SQL
    rows() { psql -X -At -c "SELECT count(*) FROM baton.deliveries"; }
    echo
    CLIENTS=${BATON_WAKEUP_CLIENTS:-16}
    ROUNDS=${BATON_WAKEUP_ROUNDS:-3}
    echo "producers: $CLIENTS clients, one enqueue per transaction, 5 s a round (items/s from the table)"
    : >"$DIR/ratios"
    for round in $(seq 1 "$ROUNDS"); do
        for notify in on off; do
            before=$(rows)
            t0=$(date +%s.%N)
            PGOPTIONS="-c baton.notify=$notify" "$PGBENCH" -n -M prepared -c "$CLIENTS" -j 2 -T 5 \
                -f "$DIR/enqueue.sql" >/dev/null 2>"$DIR/pgbench.err" \
                || { cat "$DIR/pgbench.err"; exit 1; }
            t1=$(date +%s.%N)
            after=$(rows)
            rate=$(awk -v c=$((after - before)) -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", c / (b - a) }')
            printf '  round %d  baton.notify = %-3s  %7d items/s\n' "$round" "$notify" "$rate"
            [[ $notify == on ]] && rate_on=$rate
        done
        ratio=$(awk -v on="$rate_on" -v off="$rate" 'BEGIN { printf "%.2f", off / on }')
        echo "  round $round  off / on = $ratio"
        echo "$ratio" >>"$DIR/ratios"
    done
    sort -n "$DIR/ratios" | awk '{ v[NR] = $1 } END { printf "  median off / on = %.2f over %d rounds\n", v[int((NR + 1) / 2)], NR }'

fi
