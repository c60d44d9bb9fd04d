#!/usr/bin/env bash
# pg_baton with the client a network's round trip away.        bash bench/network.sh [--quick]
#
# On a Unix socket a round trip costs almost nothing; a real client sits across a network,
# where each statement it sends waits a round trip. This benchmark puts the client 0.2 ms
# and 1 ms of round trip away from the server and compares, at 0 (the Unix socket),
# 0.2 ms and 1 ms:
#
#   workflow  8 clients (as run.sh's workflow workload), then 1, each owning its own run
#             of the workflow of run.sh's workflow workload (one stage "step" that loops):
#             8 clients load the 2 cores, one client shows a step's latency alone. One stage step is transition_stage +
#             start_stage + complete_stage in one transaction: for pg_baton in ONE
#             statement, so one round trip (bench/sql/baton_wf_step1.sql: a SELECT that
#             calls the three functions in turn), and as run.sh sends it, BEGIN, three
#             calls, COMMIT: five round trips (baton_wf_step.sql); against the same
#             protocol kept client-side in plain SQL (plain_wf_step.sql), as a client runs
#             it: each statement a round trip, eight in all. Steps = completed stages
#             counted in the tables, over pgbench's measured interval; fresh tables for
#             every measurement (the setups of run.sh).
#   cycle     at 1 ms only: the unbatched delivery cycle (claim, commit; finish, commit:
#             two round trips for every system) by 16 workers draining a backlog:
#             pg_baton (baton_cycle.sql), plain SQL (plain_cycle.sql), graphile-worker and
#             pg-boss (bench/node/peer.mjs, unbatched mode, its settings documented
#             there), measured by bench/node/drain.mjs as in run.sh's peers workload
#             (items worked between 10% and 90% of the backlog, or a few seconds after 10%).
#
# The round trip. The server of the throwaway cluster (scripts/cluster.sh, fsync = on,
# synchronous_commit = on) also listens on 127.0.0.1. Clients at 0.2 ms and 1 ms connect
# through bench/delay_proxy.c (built with cc into the cache directory on first use): a
# TCP proxy on 127.0.0.1 that writes each chunk it reads to the other side half the round
# trip later, in order, in each direction. It runs with the lowest real-time priority
# (chrt -f 1) when that is allowed, so that the machine's other load does not make its
# wake-ups late. tc netem, the kernel's own delay, is used by nothing here: it needs the
# sch_netem module, which containers often lack. First the delay is measured:
# `SELECT 1` latency of one client over the socket, over TCP directly, and through each
# proxy; the difference between a proxy and TCP directly is the round trip it really adds
# (on a loaded machine more than the nominal one: a process that sleeps while a reply
# travels waits for a CPU again when it wakes, as it would behind a real network); and
# through each proxy again after the workflow rounds, which shows a proxy that delays
# less than at the start (one that did made the one-client figures impossible). Then
# the round trips of each workflow script are counted: the proxy counts, per connection,
# the times the client spoke after the server had (its turns), whatever the load; one
# client's turns in 220 steps less its turns in 20 (connection, first statements'
# preparation), over 200 (pgbench -M prepared sends each statement and waits for its
# result before the next).
#
# Every comparison alternates within a round (pg_baton one statement, pg_baton five,
# plain SQL at 0, then at 0.2 ms, then at 1 ms, with 8 clients, then with 1; then the
# delivery cycle), because the
# machine is shared and noisy; each ratio is the median of the per-round ratios. The load
# average is printed at the start and the end.
#
# Options:
#   --quick          one round of 3 s, a backlog of 10,000 for the cycle (about 3 minutes;
#                    the full run: 3 rounds of 5 s, a backlog of 15,000, about 11)
#   --rounds N       rounds (default 3)        --secs S     seconds per workflow round (5)
# Environment: BATON_BENCH_PORT (first port to try, default 55570; the proxies take the
# next free ports), BATON_BENCH_CACHE (default bench/.cache; Node.js 22 and the peers
# are installed there from the npm registry on first use, see bench/tools.sh).
# Exit status: 0 when it ran (whatever the figures say), 2 on an error.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/bench"
SQL="$BENCH/sql"
# shellcheck source-path=SCRIPTDIR/.. source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source=bench/tools.sh
source "$BENCH/tools.sh"

die() {
    echo "network.sh: $*" >&2
    exit 2
}
say() { printf '%s\n' "$*" >&2; }

ROUNDS=3 WF_SECS=5 CYCLE_BACKLOG=15000 CYCLE_MAX_SECS=5
while (($# > 0)); do
    case $1 in
        --quick) ROUNDS=1 WF_SECS=3 CYCLE_BACKLOG=10000 CYCLE_MAX_SECS=3 ;;
        --rounds) ROUNDS=${2:?--rounds N}; shift ;;
        --secs) WF_SECS=${2:?--secs S}; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown option '$1' (try --help)" ;;
    esac
    shift
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $WF_SECS =~ ^[1-9][0-9]*$ ]] || die "--rounds and --secs take positive integers"

TENANT=b0000000-0000-4000-8000-00000000bec4
WF_CLIENTS=(8 1)
WORKERS=16
RTTS=(0 200 1000)     # microseconds; 0 is the Unix socket
WF_KINDS=(baton1 baton5 plain)
declare -A WF_SCRIPT=([baton1]=baton_wf_step1.sql [baton5]=baton_wf_step.sql [plain]=plain_wf_step.sql)

# ---------------------------------------------------------------------------
# Tools: PostgreSQL, pgbench, a C compiler for the proxy, Node.js 22 and the peers
# ---------------------------------------------------------------------------
BINDIR=$(_cluster_bindir) || die "no PostgreSQL server binaries"
PGBENCH=$BINDIR/pgbench
[[ -x $PGBENCH ]] || PGBENCH=$(command -v pgbench) || die "pgbench not found"
SHAREDIR=$("${PG_CONFIG:-pg_config}" --sharedir 2>/dev/null || echo /usr/share/postgresql/15)
[[ -f $SHAREDIR/extension/pg_baton.control ]] \
    || die "pg_baton is not installed ($SHAREDIR/extension/pg_baton.control is missing); run 'make install' first"
CACHE=${BATON_BENCH_CACHE:-$BENCH/.cache}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
bench_node_tools "$CACHE"
PROXY=$CACHE/delay_proxy
if [[ ! -x $PROXY || $BENCH/delay_proxy.c -nt $PROXY ]]; then
    command -v cc >/dev/null || die "a C compiler (cc) is needed to build bench/delay_proxy.c"
    cc -O2 -Wall -Wextra -o "$PROXY" "$BENCH/delay_proxy.c" || die "could not build bench/delay_proxy.c"
fi
RT=()
chrt -f 1 true 2>/dev/null && RT=(chrt -f 1)

# ---------------------------------------------------------------------------
# Cluster (socket and 127.0.0.1) and one proxy per round trip
# ---------------------------------------------------------------------------
CLUSTER=$(mktemp -d /tmp/pg_baton-bench-net.XXXXXX)
WORK=$(mktemp -d /tmp/pg_baton-bench-network.XXXXXX)
RESULTS=$WORK/results.tsv
: >"$RESULTS"
PROXY_PIDS=()
# shellcheck disable=SC2317  # (called from the EXIT trap)
cleanup() {
    local rc=$? pid
    trap - EXIT
    set +e
    for pid in "${PROXY_PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    if ((rc != 0)) && [[ -f $CLUSTER/log ]]; then
        say "network.sh: failed (exit status $rc); the server log ends with:"
        tail -n 15 "$CLUSTER/log" >&2
    fi
    cluster_stop "$CLUSTER" 2>/dev/null || say "network.sh: could not stop the cluster in $CLUSTER"
    rm -rf -- "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT=$(cluster_free_port "${BATON_BENCH_PORT:-55570}") || die "no free port"
# No background reaper: nothing here needs it, and its transactions would meet the
# DROP EXTENSION of every fresh setup.
cluster_start "$CLUSTER" "$PORT" "listen_addresses = '127.0.0.1'" "shared_buffers = 512MB" \
    "max_connections = 200" "shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''" \
    "fsync = on" "synchronous_commit = on" 2>/dev/null || die "could not start a cluster"
SOCK=$PGHOST

# start_proxy RTT_USEC: a proxy adding that round trip, on the next free port; sets
# PROXY_PORT[RTT_USEC].
declare -A PROXY_PORT=()
start_proxy() {
    local rtt=$1 port line
    port=$(cluster_free_port $((PORT + 1 + ${#PROXY_PIDS[@]}))) || die "no free port for a proxy"
    exec 8< <("${RT[@]}" "$PROXY" "$port" "$PORT" $((rtt / 2)) 2>>"$WORK/proxy-$rtt.log")
    PROXY_PIDS+=($!)
    read -r -t 10 line <&8 || true
    exec 8<&-
    [[ $line == listening ]] || { cat "$WORK/proxy-$rtt.log" >&2; die "the proxy for $rtt us did not start"; }
    PROXY_PORT[$rtt]=$port
}
for rtt in "${RTTS[@]}"; do ((rtt > 0)) && start_proxy "$rtt"; done
start_proxy 0  # the proxy's own cost, for the measurement of the delay
PROXY_PORT[${PROXY_PORT[0]}]=${PROXY_PORT[0]}  # (select1 addresses it by its port)

# conn PATH: the libpq environment of a client on that path: 0 the Unix socket, tcp
# 127.0.0.1 without a proxy, else the proxy adding that round trip (microseconds).
conn() {
    case $1 in
        0) echo "PGHOST=$SOCK PGPORT=$PORT" ;;
        tcp) echo "PGHOST=127.0.0.1 PGPORT=$PORT" ;;
        *) echo "PGHOST=127.0.0.1 PGPORT=${PROXY_PORT[$1]}" ;;
    esac
}

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
# median: the median of the numbers on stdin, one a line ("nan" for none).
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) print "nan"; else if (n % 2) print v[(n + 1) / 2]; else print (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
# rtt_name RTT_USEC: "Unix socket", "0.2 ms RTT", ...
rtt_name() { if (($1 == 0)); then echo "Unix socket"; else awk -v u="$1" 'BEGIN { printf "%g ms RTT\n", u / 1000 }'; fi; }
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }

echo "== pg_baton network benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds)"
echo
echo "-- cluster (throwaway, port $PORT, Unix socket and 127.0.0.1)"
q -F ' = ' -c "SELECT name, current_setting(name) FROM pg_settings
                WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'shared_buffers', 'max_connections')
                ORDER BY name" | sed 's/^/   /'
echo "   cpus = $(nproc 2>/dev/null || echo '?'), load average at start = $(cut -d' ' -f1-3 /proc/loadavg)"
for db in wf peers; do q -c "CREATE DATABASE $db"; done
q -d peers -c "CREATE EXTENSION pg_baton"
echo "   pg_baton $(q -d peers -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'"), $("$PGBENCH" --version)," \
    "graphile-worker $("$NODE" -p "require('$NODEDIR/node_modules/graphile-worker/package.json').version")," \
    "pg-boss $("$NODE" -p "require('$NODEDIR/node_modules/pg-boss/package.json').version")"
echo "   proxy: bench/delay_proxy.c, ${RT[*]:-normal priority (chrt -f 1 not allowed)}"

# pgbench_lat RTT_USEC CLIENTS SECS SCRIPT: pgbench through that connection; prints
# "transactions latency_ms interval_s" (interval = transactions / tps, without connection
# set-up). Fails on any error.
pgbench_lat() {
    local rtt=$1 clients=$2 secs=$3 script=$4 log=$WORK/pgbench.log jobs=2 ntx tps lat far
    ((clients == 1)) && jobs=1
    read -ra far <<<"$(conn "$rtt")"
    if ! env "${far[@]}" PGUSER=postgres "$PGBENCH" -n -M prepared -c "$clients" -j "$jobs" -T "$secs" \
        -D tenant="$TENANT" -D loaded=0 -f "$script" wf >"$log" 2>&1 \
        || grep -Eq 'aborted|number of failed transactions: [1-9]' "$log"; then
        cat "$log" >&2
        die "pgbench failed ($script at $rtt us)"
    fi
    ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log")
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$log")
    lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$log")
    [[ -n $ntx && -n $tps && -n $lat ]] || { cat "$log" >&2; die "could not read pgbench's output"; }
    echo "$ntx $lat $(calc "$ntx / $tps")"
}

# ---------------------------------------------------------------------------
# The delay, measured: SELECT 1 by one client
# ---------------------------------------------------------------------------
echo "SELECT 1;" >"$WORK/select1.sql"
declare -A SELECT1=()
# select1 PATH KEY: the mean latency in ms of SELECT 1 over that path (1 s), appended to
# SELECT1[KEY] (one line per round).
select1() {
    local lat
    read -r _ lat _ <<<"$(pgbench_lat "$1" 1 1 "$WORK/select1.sql")"
    SELECT1[$2]+="$lat"$'\n'
}
echo
echo "-- the round trip, measured: SELECT 1, one client, 1 s each, 5 rounds alternating paths"
echo "   (median of the rounds' mean latencies)"
for ((i = 0; i < 5; i++)); do
    select1 0 socket
    select1 tcp tcp
    select1 "${PROXY_PORT[0]}" proxy0
    for rtt in "${RTTS[@]:1}"; do select1 "$rtt" "$rtt"; done
done
for key in "${!SELECT1[@]}"; do SELECT1[$key]=$(median <<<"${SELECT1[$key]}"); done
printf '   %-34s %8.3f ms\n' "Unix socket" "${SELECT1[socket]}" "TCP 127.0.0.1, no proxy" "${SELECT1[tcp]}" \
    "through the proxy, no delay" "${SELECT1[proxy0]}"
for rtt in "${RTTS[@]:1}"; do
    printf '   %-34s %8.3f ms: it adds %.3f ms to TCP (nominal %.3f ms)\n' \
        "through the proxy, $(rtt_name "$rtt")" "${SELECT1[$rtt]}" \
        "$(calc "${SELECT1[$rtt]} - ${SELECT1[tcp]}")" "$(calc "$rtt / 1000")"
done

# ---------------------------------------------------------------------------
# workflow: stage steps at each round trip
# ---------------------------------------------------------------------------
count_wf() {
    if [[ $1 == plain ]]; then
        q -d wf -c "SELECT count(*) FROM wf_stages WHERE status = 'completed'"
    else
        q -d wf -c "SELECT count(*) FROM baton.stages WHERE status = 'completed'"
    fi
}
# setup_wf KIND: fresh tables for KIND (plain, or a pg_baton kind), or none.
setup_wf() {
    q -d wf -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_baton CASCADE" \
        -c "DROP TABLE IF EXISTS bench_wf_clients, wf_stages, wf_runs, wf_clients" || die "could not drop the workflow tables"
    if [[ $1 == none ]]; then
        return 0
    elif [[ $1 == plain ]]; then
        q -d wf -v clients=8 -f "$SQL/plain_wf_setup.sql" >/dev/null 2>&1 || die "plain_wf_setup.sql failed"
    else
        q -d wf -v tenant="$TENANT" -v clients=8 -f "$SQL/baton_wf_setup.sql" >/dev/null 2>&1 \
            || die "baton_wf_setup.sql failed"
    fi
    q -d wf -c CHECKPOINT
}

echo
# turns KIND N: the round trips one client waited for in N steps of KIND, counted by the
# proxy without delay (its "turns" line when the connection ends), fresh tables first.
turns() {
    local kind=$1 n=$2 log=$WORK/proxy-0.log lines i far
    setup_wf "$kind"
    lines=$(grep -c '^turns' "$log" || true)
    read -ra far <<<"$(conn "${PROXY_PORT[0]}")"
    env "${far[@]}" PGUSER=postgres "$PGBENCH" -n -M prepared -c 1 -t "$n" -D tenant="$TENANT" -D loaded=0 \
        -f "$SQL/${WF_SCRIPT[$kind]}" wf >"$WORK/pgbench.log" 2>&1 || { cat "$WORK/pgbench.log" >&2; die "pgbench failed ($kind)"; }
    # The lines of this run's connections (the proxy writes one when both sides of a
    # connection have closed): pgbench's own first connection, which only looks at the
    # server, and its client's, the one with the most turns. Never an older run's line.
    for ((i = 0; i < 400; i++)); do
        (($(grep -c '^turns' "$log" || true) > lines)) && break
        sleep 0.05
    done
    (($(grep -c '^turns' "$log" || true) > lines)) || die "the proxy did not report the turns of $kind"
    sleep 0.5
    grep '^turns' "$log" | tail -n "+$((lines + 1))" | cut -d' ' -f2 | sort -n | tail -n 1
}
echo "-- round trips per step, counted by the proxy: one client, (turns in 220 steps - in 20) / 200"
for kind in "${WF_KINDS[@]}"; do
    a=$(turns "$kind" 20)
    b=$(turns "$kind" 220)
    printf '   %-8s %-22s %5.2f round trips per step\n' "$kind" "${WF_SCRIPT[$kind]}" "$(calc "($b - $a) / 200")"
done

say
say "-- workflow: ${WF_CLIENTS[*]} clients, each on its own run, $WF_SECS s per round, $ROUNDS rounds (progress)"
for ((r = 1; r <= ROUNDS; r++)); do
    for c in "${WF_CLIENTS[@]}"; do
        for rtt in "${RTTS[@]}"; do
            for kind in "${WF_KINDS[@]}"; do
                setup_wf "$kind"
                before=$(count_wf "$kind")
                read -r _ _ secs <<<"$(pgbench_lat "$rtt" "$c" "$WF_SECS" "$SQL/${WF_SCRIPT[$kind]}")"
                after=$(count_wf "$kind")
                record workflow "$rtt" "$kind@$c" "$r" "$((after - before))" "$secs"
                printf '   workflow %2d clients %-5s us %-7s round %d: %6d steps in %5.2f s = %8.1f /s\n' "$c" "$rtt" \
                    "$kind" "$r" "$((after - before))" "$secs" "$(calc "($after - $before) / $secs")" >&2
            done
        done
    done
done
setup_wf none
# The delay again, now that the rounds have loaded the machine: a proxy that delayed less
# than it did at the start would make every figure above a figure at a shorter trip.
echo
echo "-- the round trip after the workflow rounds: SELECT 1, one client, 1 s each"
for rtt in "${RTTS[@]:1}"; do
    select1 "$rtt" "after$rtt"
    printf '   %-34s %8.3f ms (at the start %.3f ms)\n' "through the proxy, $(rtt_name "$rtt")" \
        "${SELECT1[after$rtt]}" "${SELECT1[$rtt]}"
done

# ---------------------------------------------------------------------------
# cycle: the unbatched delivery cycle at 1 ms against the peers
# ---------------------------------------------------------------------------
# drain KEY ROUND SQL -- COMMAND...: one drain through the 1 ms proxy, measured by
# drain.mjs on its own connection over the socket. A drain that fails (a system that
# never worked 10% of the backlog) is said and left out of the table.
drain() {
    local key=$1 round=$2 sql=$3 out items secs FAR
    shift 4
    read -ra FAR <<<"$(conn 1000)"
    out=$(cd "$NODEDIR" && PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=peers "$NODE" drain.mjs \
        --sql "$sql" --backlog "$CYCLE_BACKLOG" --max-secs "$CYCLE_MAX_SECS" --every-ms 200 \
        -- env "${FAR[@]}" "$@") || { say "   cycle    1000  us $key round $round: FAILED (left out)"; return 0; }
    read -r items secs <<<"$out"
    record cycle 1000 "$key" "$round" "$items" "$secs"
    printf '   cycle    1000  us %-7s round %d: %6d items in %5.2f s = %8.1f /s\n' "$key" "$round" "$items" "$secs" \
        "$(calc "$items / $secs")" >&2
}
peer_setup() { (cd "$NODEDIR" && PGDATABASE=peers "$NODE" peer.mjs setup "$1" "$CYCLE_BACKLOG" >/dev/null); }
say
say "-- cycle: $WORKERS workers at 1 ms, backlog $CYCLE_BACKLOG, $ROUNDS rounds (progress)"
GW_SQL=$(cd "$NODEDIR" && "$NODE" peer.mjs count-sql graphile "$CYCLE_BACKLOG")
BOSS_SQL=$(cd "$NODEDIR" && "$NODE" peer.mjs count-sql pgboss "$CYCLE_BACKLOG")
PGB=("$PGBENCH" -n -M prepared -c "$WORKERS" -j 2 -T 600 -D tenant="$TENANT")
export PGUSER=postgres
for ((r = 1; r <= ROUNDS; r++)); do
    q -d peers -v tenant="$TENANT" -v rows="$CYCLE_BACKLOG" -f "$SQL/baton_setup.sql" >/dev/null 2>&1 \
        || die "baton_setup.sql failed"
    q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
    drain baton "$r" "SELECT count(*) AS n FROM baton.deliveries WHERE status = 'finished'" \
        -- "${PGB[@]}" -f "$SQL/baton_cycle.sql" peers
    q -d peers -c "DROP EXTENSION pg_baton CASCADE" 2>/dev/null
    q -d peers -v rows="$CYCLE_BACKLOG" -f "$SQL/plain_setup.sql" >/dev/null 2>&1 || die "plain_setup.sql failed"
    q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
    drain plain "$r" "SELECT count(*) AS n FROM q WHERE status = 'finished'" \
        -- "${PGB[@]}" -f "$SQL/plain_cycle.sql" peers
    q -d peers -c "DROP TABLE q" 2>/dev/null
    peer_setup graphile || die "graphile-worker setup failed"
    q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
    drain gw "$r" "$GW_SQL" -- PGDATABASE=peers "$NODE" peer.mjs work graphile unbatched "$WORKERS"
    q -d peers -c "DROP SCHEMA graphile_worker CASCADE" 2>/dev/null
    peer_setup pgboss || die "pg-boss setup failed"
    q -d peers -c "VACUUM ANALYZE" -c CHECKPOINT
    drain boss "$r" "$BOSS_SQL" -- PGDATABASE=peers "$NODE" peer.mjs work pgboss unbatched "$WORKERS"
    q -d peers -c "DROP SCHEMA pgboss CASCADE" 2>/dev/null
done

# ---------------------------------------------------------------------------
# The table: rates (median of the rounds) and ratios (median of per-round ratios)
# ---------------------------------------------------------------------------
echo "   load average at end = $(cut -d' ' -f1-3 /proc/loadavg)"
echo
# rate GROUP RTT KEY ROUND: items per second of that round; rates GROUP RTT KEY: of each.
rate() { awk -F'\t' -v g="$1" -v t="$2" -v k="$3" -v r="$4" '$1 == g && $2 == t && $3 == k && $4 == r { printf "%.6f\n", $5 / $6 }' "$RESULTS"; }
rates() { awk -F'\t' -v g="$1" -v t="$2" -v k="$3" '$1 == g && $2 == t && $3 == k { printf "%.6f\n", $5 / $6 }' "$RESULTS"; }
# per_round GROUP RTT A B: A/B of each round that has both (a failed drain has none).
per_round() {
    local r x y
    for ((r = 1; r <= ROUNDS; r++)); do
        x=$(rate "$1" "$2" "$3" "$r") y=$(rate "$1" "$2" "$4" "$r")
        [[ -n $x && -n $y ]] && calc "$x / $y" && echo
    done
    return 0
}
# ratio_line GROUP RTT A B LABEL: A/B per round, and their median.
ratio_line() {
    local per
    per=$(per_round "$1" "$2" "$3" "$4")
    printf '   %-44s %6.2fx   (rounds: %s)\n' "$5" "$(median <<<"$per")" "$(awk 'NF { printf "%.2f ", $1 }' <<<"$per")"
}

for c in "${WF_CLIENTS[@]}"; do
    echo "-- workflow: stage steps per second, $c client(s) (median of $ROUNDS rounds)"
    printf '   %-12s %14s %14s %14s\n' "" "pg_baton 1 rt" "pg_baton 5 rt" "plain SQL 8 rt"
    for rtt in "${RTTS[@]}"; do
        printf '   %-12s %14.0f %14.0f %14.0f\n' "$(rtt_name "$rtt")" "$(rates workflow "$rtt" "baton1@$c" | median)" \
            "$(rates workflow "$rtt" "baton5@$c" | median)" "$(rates workflow "$rtt" "plain@$c" | median)"
    done
    echo "-- workflow ratios, $c client(s) (median of per-round ratios)"
    for rtt in "${RTTS[@]}"; do
        ratio_line workflow "$rtt" "baton1@$c" "plain@$c" "pg_baton one statement / plain SQL, $(rtt_name "$rtt")"
        ratio_line workflow "$rtt" "baton5@$c" "plain@$c" "pg_baton BEGIN..COMMIT / plain SQL, $(rtt_name "$rtt")"
    done
    echo
done
echo "-- unbatched delivery cycle at 1 ms RTT, $WORKERS workers: items per second (median of $ROUNDS rounds)"
for kind in baton plain gw boss; do
    printf '   %-18s %10.0f\n' "$(case $kind in baton) echo pg_baton ;; plain) echo "plain SQL" ;;
        gw) echo graphile-worker ;; boss) echo pg-boss ;; esac)" "$(rates cycle 1000 "$kind" | median)"
done
ratio_line cycle 1000 baton plain "pg_baton / plain SQL"
ratio_line cycle 1000 baton gw "pg_baton / graphile-worker"
ratio_line cycle 1000 baton boss "pg_baton / pg-boss"
echo
echo "-- goals"
goal() { # goal LABEL GROUP RTT A B MIN
    local m
    m=$(per_round "$2" "$3" "$4" "$5" | median)
    printf '   %-66s %s (%.2fx)\n' "$1" "$(awk -v m="$m" -v g="$6" 'BEGIN { print (m >= g) ? "met" : "NOT met" }')" "$m"
}
for c in "${WF_CLIENTS[@]}"; do
    goal "pg_baton step >= 2x the client-side protocol, 1 ms RTT, $c client(s)" workflow 1000 "baton1@$c" "plain@$c" 2
    goal "pg_baton step >= 1.0x the client-side protocol, socket, $c client(s)" workflow 0 "baton1@$c" "plain@$c" 1
done
