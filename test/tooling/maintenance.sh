#!/usr/bin/env bash
# Maintenance under load: VACUUM FULL, CLUSTER, REINDEX INDEX CONCURRENTLY, REINDEX TABLE
# CONCURRENTLY and pg_repack, each run on every baton table while producers enqueue,
# workers claim, finish, retry and fail, and the background reaper takes back the leases
# some workers let expire (maintenance_load.py). Checks that nothing is lost or settled
# twice, no (id, generation) is claimed twice, new enqueues are claimable at once after
# every command, the fence refuses a fenced tenant throughout, each command really
# rewrote its table or rebuilt its indexes, and amcheck is clean after. Prints, per
# command, the longest stall of a probe client's enqueue / claim / finish.
#
# Own cluster under /tmp (scripts/cluster.sh), preloaded, removed on exit. PG_CONFIG
# chooses the server. Last line: "N passed, N failed".
set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
# shellcheck source=lib.sh
source "$HERE/lib.sh"
# shellcheck source=../../scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

DB=maint
ROLE=maint_tool
LOAD_TENANT=00000000-0000-0000-0014-000000000001
PRELOADED=${BATON_MAINT_PENDING:-5000}      # pending deliveries before the load starts
SETTLED=${BATON_MAINT_SETTLED:-200000}      # settled deliveries (the history a queue keeps)
TABLES=(tenants target_bindings workflows runs stages step_entries markers deliveries leases ready schedule_rows in_use wakeup_key
    paused_targets key_limits key_slots key_waiting event_counts)

dir=$(mktemp -d /tmp/pg_baton-maint.XXXXXX)
logdir=$dir/load
driver_pid=""
held_pid=""
cleanup() {
    [[ -n $held_pid ]] && kill "$held_pid" 2>/dev/null
    if [[ -n $driver_pid ]] && kill -0 "$driver_pid" 2>/dev/null; then
        touch "$logdir/stop-produce" "$logdir/stop"
        sleep 2
        kill "$driver_pid" 2>/dev/null
        wait "$driver_pid" 2>/dev/null
    fi
    [[ -n ${BATON_MAINT_KEEP_LOG:-} && -f $dir/cluster/log ]] && cp "$dir/cluster/log" "$BATON_MAINT_KEEP_LOG"
    cluster_stop "$dir/cluster" >/dev/null 2>&1 || true
    rm -rf -- "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
trap '' PIPE  # a held session whose psql died: the write fails, the check reports it

finish_up() {
    echo "$PASS passed, $FAIL failed"
    ((FAIL == 0))
    exit
}

now() { date +%s.%N; }

chmod 0755 "$dir"  # the server's user reaches its data directory inside
port=$(cluster_free_port 56300)
if ! CLUSTER_CORES=1 cluster_start "$dir/cluster" "$port" "shared_preload_libraries = 'pg_baton'" \
    "baton.reaper_databases = '$DB'" "baton.reaper_interval = '200ms'" \
    "maintenance_work_mem = '256MB'" "max_wal_size = '4GB'" "log_min_messages = warning"; then
    not_ok "cluster starts with pg_baton preloaded"
    finish_up
fi
mkdir -p "$logdir"

# --- pg_repack: the client next to the server's binaries, the extension in its pkglibdir --
repack_bin=""
for b in "$TOOLING_BINDIR/pg_repack" /usr/lib/postgresql/15/bin/pg_repack; do
    [[ -x $b ]] && { repack_bin=$b; break; }
done
pkglibdir=$("${PG_CONFIG:-pg_config}" --pkglibdir)
if [[ -n $repack_bin && -f $pkglibdir/pg_repack.so ]]; then
    ok "pg_repack is installed ($repack_bin, $pkglibdir/pg_repack.so)"
else
    not_ok "pg_repack is installed (client '${repack_bin:-none}', $pkglibdir/pg_repack.so; scripts/install-deps.sh installs postgresql-15-repack, scripts/build-postgres.sh builds it for another major)"
fi

# --- a database with every kind of row, TOAST included, then a realistic queue ---------
q -c "CREATE DATABASE $DB" -c "CREATE ROLE $ROLE" >/dev/null
q -d "$DB" -c "CREATE EXTENSION pg_baton" -c "CREATE EXTENSION amcheck" >/dev/null
if [[ -n $repack_bin ]] && ! q -d "$DB" -c "CREATE EXTENSION pg_repack" >/dev/null; then
    not_ok "CREATE EXTENSION pg_repack"
fi
tooling_fill "$DB" "$ROLE"
t0=$(now)
q -d "$DB" >/dev/null <<SQL
SELECT baton.create_tenant('$LOAD_TENANT');
-- The history a queue keeps: settled rows (written directly: the fence trigger checks
-- them like any write), a third of them purged, which leaves the table bloated.
INSERT INTO baton.deliveries (tenant, target, dedup_key, status, generation, attempts, payload,
                              result, created_at, settled_at)
SELECT '$LOAD_TENANT', 'history', 'h-' || i, CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'finished' END, 1, 1,
       jsonb_build_object('i', i, 'to', 'user' || i || '@example.com'), '{"ok": true}',
       now() - interval '1 day', now() - interval '1 day' + i * interval '1 ms'
  FROM generate_series(1, $SETTLED) i;
DELETE FROM baton.deliveries WHERE tenant = '$LOAD_TENANT' AND target = 'history' AND id % 3 = 0;
-- A backlog the workers start on.
SELECT count(baton.enqueue('$LOAD_TENANT', 'load', 'pre-' || i, jsonb_build_object('i', i),
                           priority => (i % 7 = 0)::int * 5, max_attempts => 1000))
  FROM generate_series(1, $PRELOADED) i;
VACUUM ANALYZE baton.deliveries;
SQL
rows=$(q -d "$DB" -c "SELECT count(*) FROM baton.deliveries")
size=$(q -d "$DB" -c "SELECT pg_size_pretty(pg_total_relation_size('baton.deliveries'))")
echo "# deliveries: $rows rows, $size with indexes and TOAST (filled in $(awk "BEGIN {printf \"%.1f\", $(now) - $t0}") s)"

# --- the load ----------------------------------------------------------------------------
export PGDATABASE=$DB  # the driver's connections
/usr/bin/python3 "$HERE/maintenance_load.py" run "$logdir" "$LOAD_TENANT" "$TOOLING_T_FENCED" \
    >"$dir/driver.log" 2>&1 &
driver_pid=$!
sleep 3

# relfilenodes "rel:node ..." of a table, its indexes, its TOAST table and its index.
physical() {
    q -d "$DB" -c "SELECT string_agg(c.oid || ':' || c.relfilenode, ' ' ORDER BY c.oid) FROM pg_class c
                   WHERE c.oid = 'baton.$1'::regclass
                      OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'baton.$1'::regclass)
                      OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'baton.$1'::regclass)"
}
# The index oids of a table, one line.
index_oids() {
    q -d "$DB" -c "SELECT string_agg(indexrelid::text, ' ' ORDER BY indexrelid) FROM pg_index
                   WHERE indrelid = 'baton.$1'::regclass"
}
# A new delivery is claimable at once: enqueue, then claim in a new call; prints the rows.
claimable_now() {
    local key=$1
    q -d "$DB" -c "SELECT baton.enqueue('$LOAD_TENANT', 'after', '$key')" \
        -c "SELECT count(baton.finish('$LOAD_TENANT', c.id, c.generation))
              FROM baton.claim('$LOAD_TENANT', 'after', '1 minute', 10) c" 2>&1 | tail -n 1
}

# A session whose transaction began before the command and writes after it: its catalog
# cache still maps index names to the oids they had when the transaction began.
held_begin() {
    rm -f "$dir/held.in" "$dir/held.out"
    mkfifo "$dir/held.in"
    "$TOOLING_BINDIR/psql" -X -At -d "$DB" <"$dir/held.in" >"$dir/held.out" 2>&1 &
    held_pid=$!
    exec 8>"$dir/held.in"
    echo "SELECT baton.enqueue('$LOAD_TENANT', 'held', 'warm-$1') > 0;" >&8
    echo "BEGIN; SELECT 'began';" >&8
    for _ in $(seq 1 100); do
        grep -q '^began$' "$dir/held.out" && break
        sleep 0.05
    done
}
# ...then enqueues in that transaction and commits; held_error: what went wrong, if anything.
held_end() {
    echo "SELECT baton.enqueue('$LOAD_TENANT', 'held', 'held-$1') > 0;" >&8
    echo "COMMIT;" >&8
    exec 8>&-
    wait "$held_pid"
    held_pid=""
    held_error=$(grep -E 'ERROR|FATAL' "$dir/held.out" | head -n 1)
    [[ $(grep -c '^t$' "$dir/held.out") == 2 ]] || held_error+=" (enqueued $(grep -c '^t$' "$dir/held.out") of 2)"
    q -d "$DB" -c "SELECT count(baton.finish('$LOAD_TENANT', c.id, c.generation))
                   FROM baton.claim('$LOAD_TENANT', 'held', '1 minute', 10) c" >/dev/null
}

windows=$dir/windows
: >"$windows"
declare -A rewrote_bad claim_bad cmd_errors held_bad
run_on_table() {
    local cmd=$1 table=$2 before after s e out rc=0 idx
    before=$(physical "$table")
    local oids_before
    oids_before=$(index_oids "$table")
    # (Not across pg_repack: it waits for every transaction older than its trigger to end,
    # idle ones included, so it would wait for this one forever.)
    [[ $cmd == pg_repack ]] || held_begin "$cmd-$table"
    s=$(now)
    case $cmd in
        vacuum_full) out=$(q -d "$DB" -c "VACUUM FULL baton.$table" 2>&1) || rc=$? ;;
        cluster)
            idx=$(q -d "$DB" -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'baton.$table'::regclass AND indisprimary")
            out=$(q -d "$DB" -c "CLUSTER baton.$table USING ${idx#baton.}" 2>&1) || rc=$?
            ;;
        reindex_index)
            for idx in $(q -d "$DB" -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'baton.$table'::regclass ORDER BY 1"); do
                out=$(q -d "$DB" -c "REINDEX INDEX CONCURRENTLY $idx" 2>&1) || rc=$?
            done
            ;;
        reindex_table) out=$(q -d "$DB" -c "REINDEX TABLE CONCURRENTLY baton.$table" 2>&1) || rc=$? ;;
        pg_repack)
            if [[ -z $repack_bin ]]; then
                rc=1 out="no pg_repack"
            else
                out=$("$repack_bin" -h "$PGHOST" -p "$PGPORT" -U postgres -d "$DB" -t "baton.$table" 2>&1) || rc=$?
            fi
            ;;
    esac
    e=$(now)
    echo "$cmd $table $s $e" >>"$windows"
    if [[ $cmd != pg_repack ]]; then
        held_end "$cmd-$table"
        [[ -z $held_error ]] || held_bad[$cmd]+=" $table: $held_error"
    fi
    if ((rc != 0)); then
        cmd_errors[$cmd]+=" $table: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
    fi
    after=$(physical "$table")
    case $cmd in
        reindex_*)
            # Every index rebuilt: none of the old index oids is left.
            local o
            for o in $oids_before; do
                [[ " $(index_oids "$table") " == *" $o "* ]] && rewrote_bad[$cmd]+=" $table(index $o kept)"
            done
            ;;
        *)
            # The table and each of its indexes got a new relfilenode (the oids kept).
            local pair
            for pair in $before; do
                [[ " $after " == *" $pair "* ]] && rewrote_bad[$cmd]+=" $table(${pair%%:*} not rewritten)"
            done
            ;;
    esac
    [[ $(claimable_now "after-$cmd-$table") == 1 ]] || claim_bad[$cmd]+=" $table"
    server_up_or_stop "$cmd" "$table"
}

# A server process that died (the postmaster then restarts every session) ends the check
# at once, with what the server log says of it: the signal, and the statement the process
# was running.
server_up_or_stop() {
    grep -q "terminated by signal\|was terminated by exception" "$CLUSTER_LOG" || return 0
    not_ok "no server process crashes during $1 (last table: baton.$2)"
    local crashed core
    grep -A 1 "terminated by signal\|was terminated by exception" "$CLUSTER_LOG" | head -n 4 | sed 's/^/#   /'
    crashed=$(grep "terminated by signal\|was terminated by exception" "$CLUSTER_LOG" | grep -o "(PID [0-9]*)" | head -n 1 | tr -dc '0-9')
    echo "#   the last lines process $crashed logged:"
    grep "\[$crashed\]" "$CLUSTER_LOG" | tail -n 8 | sed 's/^/#   /'
    # The core file, where the kernel wrote one (CLUSTER_CORES, kernel.core_pattern "core").
    core=$(find "$CLUSTER_DIR/data" -maxdepth 1 -name 'core*' -type f 2>/dev/null | head -n 1)
    if [[ -n $core ]] && command -v gdb >/dev/null; then
        gdb -batch -ex bt "$TOOLING_BINDIR/postgres" "$core" 2>/dev/null | grep '^#' | head -n 40 | sed 's/^/#   /'
    fi
    finish_up
}

# BATON_MAINT_COMMANDS: a subset, in this order, when debugging.
for cmd in ${BATON_MAINT_COMMANDS:-vacuum_full cluster reindex_index reindex_table pg_repack}; do
    t0=$(now)
    for table in "${TABLES[@]}"; do
        run_on_table "$cmd" "$table"
    done
    check "$cmd on every baton table succeeds" "" "${cmd_errors[$cmd]:-}"
    check "$cmd rewrote every table and index (new relfilenodes / new index oids)" "" "${rewrote_bad[$cmd]:-}"
    check "after $cmd of each table a new enqueue is claimable at once" "" "${claim_bad[$cmd]:-}"
    [[ $cmd == pg_repack ]] || check "$cmd: a transaction begun before it enqueues after it" "" "${held_bad[$cmd]:-}"
    echo "# $cmd of the ${#TABLES[@]} tables took $(awk "BEGIN {printf \"%.1f\", $(now) - $t0}") s"
    sleep 1
done

echo "# deliveries after the commands: $(q -d "$DB" -c "SELECT count(*) || ' rows, ' || pg_size_pretty(pg_total_relation_size('baton.deliveries')) FROM baton.deliveries")"

# --- drain -------------------------------------------------------------------------------
touch "$logdir/stop-produce"
t0=$(now)
drained=no
for _ in $(seq 1 240); do
    left=$(q -d "$DB" -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$LOAD_TENANT'
                          AND target IN ('load', 'probe', 'after', 'held') AND status IN ('pending', 'claimed')")
    if [[ $left == 0 ]]; then
        echo "# drained in $(awk "BEGIN {printf \"%.1f\", $(now) - $t0}") s"
        drained=yes
        break
    fi
    sleep 0.5
done
touch "$logdir/stop"
wait "$driver_pid"
driver_rc=$?
driver_pid=""
check "the queue drains once the producers stop" yes "$drained"
check "the load driver exits cleanly" 0 "$driver_rc"
[[ $driver_rc == 0 ]] || tail -n 20 "$dir/driver.log"

# --- what the load saw ---------------------------------------------------------------------
report=$(/usr/bin/python3 "$HERE/maintenance_load.py" check "$logdir" "$LOAD_TENANT" "$windows" "$PRELOADED")
check "the load's checker runs" 0 "$?"
check "the checker timed the probe in every maintenance window" "$(wc -l <"$windows")" "$(grep -c '^STALL ' <<<"$report")"
while IFS='|' read -r name expected actual; do
    check "${name#CHECK }" "$expected" "$actual"
done < <(grep '^CHECK ' <<<"$report")
grep '^FIGURE ' <<<"$report" | sed 's/^FIGURE /# /'

# Per command: the longest probe call during it, over all tables, and on deliveries.
echo "# longest enqueue/claim/finish stall of the probe during each command (ms), the"
echo "# command's own duration (ms), and fence calls refused during it:"
printf '#   %-14s %-16s %8s %-8s %8s %6s\n' command table stall_ms call took_ms fenced
grep '^STALL ' <<<"$report" | while read -r _ cmd table ms op took nf _; do
    printf '#   %-14s %-16s %8s %-8s %8s %6s\n' "$cmd" "$table" "$ms" "$op" "$took" "$nf"
done
# Each command's window saw the fence probed, every answer DU002.
fence_gaps=$(grep '^STALL ' <<<"$report" | awk '{n[$2] += $7; bad[$2] += $8} END {for (c in n) if (n[c] == 0 || bad[c] > 0) printf "%s(%d calls, %d not DU002) ", c, n[c], bad[c]}')
check "the fenced tenant was probed during every command and refused with DU002 each time" "" "$fence_gaps"

# --- the server log ----------------------------------------------------------------------
bad_log=$(grep -E "could not open relation|could not find|pg_baton cannot|PANIC|TRAP|terminated by signal|was terminated" "$CLUSTER_LOG" | head -n 5)
check "no relation-lookup error or crash in the server log" "" "$bad_log"

# --- amcheck -------------------------------------------------------------------------------
am=$(tooling_amcheck "$DB" 2>&1 | grep -v '^NOTICE')
read -r am_tables am_indexes am_problems <<<"$(head -n 1 <<<"$am")"
echo "# amcheck: $am_tables tables (with TOAST), $am_indexes btree indexes"
check "amcheck: verify_heapam and bt_index_parent_check clean after all maintenance" 0 "$am_problems"
((am_problems == 0)) || tail -n +2 <<<"$am" | head -n 10
check "amcheck covered every baton table" "${#TABLES[@]}" "$am_tables"

finish_up
