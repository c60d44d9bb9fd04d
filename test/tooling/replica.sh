#!/usr/bin/env bash
# Streaming replicas: a standby built with pg_basebackup (-X stream -R) from a primary
# that preloads pg_baton, WHILE workers claim, finish, retry, abandon leases (reaped by
# the primary's reaper) and walk runs through their stages; then
#   - caught up, the standby holds the primary's rows, row by row, in every baton table;
#   - amcheck finds nothing on the standby nor on the primary (TOASTed rows included);
#   - the read functions and views answer on the standby, the same as on the primary;
#   - every write function refuses with 25006 on the standby ("during recovery") and on
#     the primary in a read-only transaction, naming the function, and writes nothing;
#   - no reaper runs on the standby and its log has no error;
#   - promoted, it claims and finishes, its reaper starts and reaps a lease that was
#     taken on the old primary;
#   - negative control: a row deleted on the promoted server is reported by the digest;
#   - with the default baton.reaper_databases = '*' (a second primary and standby): no
#     launcher or reaper on the standby; promoted, a reaper in the database with pg_baton
#     and in no other.
# Ends with "N passed, N failed". Needs the extension installed (PG_CONFIG's server).
set -uo pipefail
HERE=$(cd -- "$(dirname -- "$0")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
# shellcheck source=test/tooling/lib.sh
source "$HERE/lib.sh"
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"

DB=baton_replica
ROLE=tooling_replica_role
LOAD_TENANT=00000000-0000-0000-0013-0000000000aa
TA=$TOOLING_T_ACTIVE
LOAD_WORKERS=${BATON_REPLICA_WORKERS:-3}
BIN=$TOOLING_BINDIR

BASE=$(mktemp -d /tmp/pg_baton-replica.XXXXXX)
chmod 0755 "$BASE"
PDIR=$BASE/primary
SDIR=$BASE/standby
# The pair with the default baton.reaper_databases = '*', at the end.
P2DIR=$BASE/primary2
S2DIR=$BASE/standby2
LOAD_PID=
cleanup() {
    if [[ -n $LOAD_PID ]]; then
        : >"$BASE/stop"
        kill "$LOAD_PID" 2>/dev/null
        wait "$LOAD_PID" 2>/dev/null
    fi
    cluster_stop "$SDIR" 2>/dev/null
    cluster_stop "$PDIR" 2>/dev/null
    cluster_stop "$S2DIR" 2>/dev/null
    cluster_stop "$P2DIR" 2>/dev/null
    rm -rf -- "$BASE"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# P / S [psql args]: psql on the primary / the standby (the promoted server later).
P() { PGHOST=$PDIR/sock PGPORT=$PPORT q -d "$DB" "$@"; }
S() { PGHOST=$SDIR/sock PGPORT=$SPORT q -d "$DB" "$@"; }
# on_p / on_s CMD...: a lib.sh helper (sqlstate_of, tooling_digest...) against that server.
on_p() { PGHOST=$PDIR/sock PGPORT=$PPORT "$@"; }
on_s() { PGHOST=$SDIR/sock PGPORT=$SPORT "$@"; }
# reapers SERVER: how many pg_baton reapers run there.
reapers() { "$1" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper'"; }
# errors_in LOG FROM_BYTE: the ERROR/FATAL/PANIC lines of a server log from that offset.
errors_in() { tail -c +"$(($2 + 1))" "$1" | grep -E '(ERROR|FATAL|PANIC):' || true; }
# base_backup PDIR PPORT SDIR: SDIR/data, a base backup of that primary that starts as
# its standby (-X stream -R), owned by postgres, with an empty log; the tool's output in
# SDIR.log.
base_backup() {
    mkdir -p "$3/sock"
    : >"$3/$CLUSTER_MARKER"
    : >"$3/log"
    chmod 0755 "$3" "$3/sock"
    [[ $(id -u) -eq 0 ]] && chown -R postgres:postgres "$3"
    (cd "$3" && as_owner "$BIN/pg_basebackup" -h "$1/sock" -p "$2" -U postgres -D "$3/data" \
        -X stream -R -c fast) >"$3.log" 2>&1
}
# start_standby SDIR PORT: starts the standby of SDIR on its own port and socket.
start_standby() {
    {
        echo
        echo "# --- a standby of replica.sh ---"
        echo "port = $2"
        echo "unix_socket_directories = '$1/sock'"
    } >>"$1/data/postgresql.conf"
    (cd "$1" && as_owner "$BIN/pg_ctl" -D "$1/data" -l "$1/log" -w -t 60 start >/dev/null)
}
# workers SERVER: the pg_baton launchers and reapers running there, and where.
workers() {
    "$1" -c "SELECT count(*) FILTER (WHERE backend_type = 'pg_baton launcher') || ' launcher, reapers in '
                    || coalesce(string_agg(datname, ',' ORDER BY datname) FILTER (WHERE backend_type = 'pg_baton reaper'), 'none')
             FROM pg_stat_activity"
}
now_s() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }'; }
t0=$(now_s)

# ---------------------------------------------------------------- the primary
PPORT=$(cluster_free_port "${BATON_REPLICA_PORT:-56100}")
if ! cluster_start "$PDIR" "$PPORT" "shared_preload_libraries = 'pg_baton'" "wal_level = replica" \
    "max_wal_senders = 5" "wal_keep_size = '256MB'" "baton.reaper_interval = '200ms'" 2>"$BASE/start.err"; then
    cat "$BASE/start.err"
    not_ok "the primary starts"
    echo "$PASS passed, $FAIL failed"
    exit 1
fi
P -d postgres -c "CREATE DATABASE $DB" >/dev/null
# The reaper's database exists now: name it, and restart so the postmaster registers it.
echo "baton.reaper_databases = '$DB'" >>"$PDIR/data/postgresql.conf"
as_owner "$BIN/pg_ctl" -D "$PDIR/data" -l "$PDIR/log" -w -t 60 restart >/dev/null
P >/dev/null <<SQL
CREATE EXTENSION pg_baton;
CREATE EXTENSION amcheck;
CREATE ROLE $ROLE;
SQL
tooling_fill_rc=0
on_p tooling_fill "$DB" "$ROLE" || tooling_fill_rc=$?
check "tooling_fill on the primary" 0 "$tooling_fill_rc"
P >/dev/null <<SQL
SELECT baton.create_tenant('$LOAD_TENANT');
-- run2 of the active tenant acquired again (a new generation): its marker is in doubt.
SELECT baton.acquire_run('$TA', r.id, 'o', '1 hour') FROM baton.runs r WHERE r.tenant = '$TA' AND r.idempotency_key = 'run2';
SELECT baton.define_workflow('load_wf', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SQL
for _ in $(seq 50); do [[ $(reapers P) == 1 ]] && break; sleep 0.1; done
check "one reaper runs on the primary" 1 "$(reapers P)"

# ---------------------------------------------------------------- load, base backup
: >"$BASE/load.out"
PGHOST=$PDIR/sock PGPORT=$PPORT /usr/bin/python3 "$HERE/replica_load.py" "$DB" "$LOAD_TENANT" "$BASE/stop" \
    "$LOAD_WORKERS" >"$BASE/load.out" 2>&1 &
LOAD_PID=$!
sleep 3
load_rows() { P -c "SELECT count(*) || ' ' || coalesce(sum(generation), 0) FROM baton.deliveries WHERE tenant = '$LOAD_TENANT'"; }
runs_rows() { P -c "SELECT count(*) FROM baton.stages WHERE tenant = '$LOAD_TENANT'"; }
before_backup=$(load_rows)
stages_before=$(runs_rows)
reaped_before=$(P -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$LOAD_TENANT' AND generation > attempts")
SPORT=$(cluster_free_port $((PPORT + 1)))
tb=$(now_s)
backup_rc=0
base_backup "$PDIR" "$PPORT" "$SDIR" || backup_rc=$?
backup_s=$(elapsed "$tb")
after_backup=$(load_rows)
stages_after=$(runs_rows)
check "pg_basebackup -X stream -R (${backup_s} s)" 0 "$backup_rc"
if [[ $before_backup != "$after_backup" && $stages_before != "$stages_after" ]]; then
    ok "the load wrote during the base backup (deliveries rows/generations $before_backup -> $after_backup, stages $stages_before -> $stages_after)"
else
    not_ok "the load wrote during the base backup (deliveries $before_backup -> $after_backup, stages $stages_before -> $stages_after)"
fi
standby_rc=0
start_standby "$SDIR" "$SPORT" || standby_rc=$?
check "the standby starts" 0 "$standby_rc"
if ((standby_rc != 0)); then
    tail -n 20 "$SDIR/log"
    echo "$PASS passed, $FAIL failed"
    exit 1
fi
check "the standby is in recovery" t "$(S -c 'SELECT pg_is_in_recovery()')"
# The load goes on while the standby streams; sample its lag.
# The standby's position first, then the primary's: the difference is a lower bound.
max_lag=0
max_replay_ms=0
for _ in $(seq 16); do
    sleep 0.5
    slsn=$(S -c 'SELECT pg_last_wal_replay_lsn()')
    read -r lag replay_ms < <(P -F ' ' -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$slsn')::bigint,
        coalesce((extract(epoch FROM replay_lag) * 1000)::bigint, 0) FROM pg_stat_replication")
    ((lag > max_lag)) && max_lag=$lag
    ((replay_ms > max_replay_ms)) && max_replay_ms=$replay_ms
done
: >"$BASE/stop"
wait "$LOAD_PID"
load_rc=$?
LOAD_PID=
load_line=$(head -n 1 "$BASE/load.out")
echo "# load: $load_line"
if ((load_rc == 0)) && [[ $load_line == *" errors=0" ]]; then
    ok "the load ran without unexpected errors"
else
    not_ok "the load ran without unexpected errors (exit $load_rc): $(tr '\n' ' ' <"$BASE/load.out")"
fi
reaped_after=$(P -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$LOAD_TENANT' AND generation > attempts")
echo "# rows of the load tenant with a generation beyond their attempts (reaped or retried): $reaped_before -> $reaped_after"

# ---------------------------------------------------------------- catch-up
# The leases the load abandoned (1 s) are the reaper's: let it return them all first, so
# that the primary is quiet when the standby is compared with it.
for _ in $(seq 100); do
    [[ $(P -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$LOAD_TENANT' AND status = 'claimed'") == 0 ]] && break
    sleep 0.1
done
check "the primary's reaper returned every lease the load abandoned" 0 \
    "$(P -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$LOAD_TENANT' AND status = 'claimed'")"
slsn=$(S -c 'SELECT pg_last_wal_replay_lsn()')
plsn=$(P -c 'SELECT pg_current_wal_lsn()')
stop_lag=$(P -c "SELECT pg_wal_lsn_diff('$plsn', '$slsn')::bigint")
tc=$(now_s)
caught=no
for _ in $(seq 300); do
    if [[ $(S -c "SELECT pg_last_wal_replay_lsn() >= '$plsn'::pg_lsn") == t ]]; then
        caught=yes
        break
    fi
    sleep 0.1
done
catchup_s=$(elapsed "$tc")
replay_lag=$(P -c "SELECT coalesce(extract(epoch FROM replay_lag)::numeric(10,3)::text, '0') FROM pg_stat_replication")
check "the standby catches up to the primary's $plsn" yes "$caught"
echo "# standby lag: at most $max_lag bytes and ${max_replay_ms} ms (replay_lag) in 16 samples under load;" \
    "$stop_lag bytes at the check, replayed in ${catchup_s} s; replay_lag then ${replay_lag} s"

# ---------------------------------------------------------------- rows, row by row
on_p tooling_digest "$DB" "$BASE/dig-p"
on_s tooling_digest "$DB" "$BASE/dig-s"
# Sequences: a primary WAL-logs each sequence 32 values ahead of what it handed out, so a
# standby reads a last_value up to 32 beyond the primary's (never behind: after a
# promotion no value is handed out twice). Compared apart; the tables must be identical.
seq_ok=yes
seq_report=
SEQS=$(P -c "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'baton' AND c.relkind = 'S'")
for rel in $SEQS; do
    read -r pv _ <"$BASE/dig-p/$rel"
    read -r sv _ <"$BASE/dig-s/$rel"
    seq_report+=" $rel $pv/$sv"
    ((sv >= pv && sv <= pv + 32)) || seq_ok=no
    mkdir -p "$BASE/seq-p" "$BASE/seq-s"
    mv "$BASE/dig-p/$rel" "$BASE/seq-p/"
    mv "$BASE/dig-s/$rel" "$BASE/seq-s/"
done
check "sequences on the standby are at or up to 32 ahead of the primary's (primary/standby:$seq_report)" yes "$seq_ok"
rows_total=$(awk '{ n += $2 } END { print n + 0 }' "$BASE/dig-p/counts")
if diff_out=$(tooling_digest_diff "$BASE/dig-p" "$BASE/dig-s"); then
    ok "the standby's rows equal the primary's in all $(wc -l <"$BASE/dig-p/counts") tables ($rows_total rows)"
else
    not_ok "the standby's rows equal the primary's:"
    echo "$diff_out"
fi
echo "# rows compared: $(tr '\n' ',' <"$BASE/dig-p/counts" | sed 's/,$//; s/,/, /g')"
if [[ $(cat "$BASE/dig-p/counts") == "$(cat "$BASE/dig-s/counts")" ]]; then
    ok "row counts per table equal"
else
    not_ok "row counts per table equal"
fi
toasted=$(P -c "SELECT count(*) FROM baton.deliveries WHERE pg_column_size(payload) > 8000 OR pg_column_size(result) > 8000")
if ((toasted > 3)); then ok "TOASTed payloads and results among them ($toasted rows)"; else not_ok "TOASTed rows ($toasted)"; fi
# Negative control on copies: one row less, one row changed.
cp -r "$BASE/dig-s" "$BASE/dig-neg"
sed -i '1d' "$BASE/dig-neg/deliveries"
sed -i '1d' "$BASE/dig-neg/stages"
echo ffffffffffffffffffffffffffffffff >>"$BASE/dig-neg/stages"
neg_out=$(tooling_digest_diff "$BASE/dig-p" "$BASE/dig-neg")
neg_rc=$?
if ((neg_rc != 0)) && grep -q 'deliveries: 1 row(s) missing, 0 row(s) extra' <<<"$neg_out" \
    && grep -q 'stages: 1 row(s) missing, 1 row(s) extra' <<<"$neg_out"; then
    ok "negative control: the digest comparison reports a copy with a row removed and a row changed"
else
    not_ok "negative control on a modified copy (rc $neg_rc): $neg_out"
fi

# ---------------------------------------------------------------- amcheck
am=$(on_s tooling_amcheck "$DB" standby 2>&1)
read -r at ai ap <<<"$(head -n 1 <<<"$am")"
tail -n +2 <<<"$am" | head -n 5
check "amcheck on the standby: $at tables, $ai btree indexes (TOAST included): problems" 0 "${ap:-?}"
am=$(on_p tooling_amcheck "$DB" 2>&1 | grep -v '^NOTICE')
read -r bt bi bp <<<"$(head -n 1 <<<"$am")"
tail -n +2 <<<"$am" | head -n 5
check "amcheck on the primary: $bt tables, $bi btree indexes (TOAST included): problems" 0 "${bp:-?}"

# ---------------------------------------------------------------- reads on the standby
run2=$(P -c "SELECT id FROM baton.runs WHERE tenant = '$TA' AND idempotency_key = 'run2'")
run3=$(P -c "SELECT id FROM baton.runs WHERE tenant = '$TA' AND idempotency_key = 'run3'")
gate1=$(P -c "SELECT id FROM baton.runs WHERE tenant = '$TA' AND idempotency_key = 'gate1'")
rgen=$(P -c "SELECT generation FROM baton.runs WHERE tenant = '$TA' AND id = '$run2'")
stage2=$(P -c "SELECT id FROM baton.stages WHERE tenant = '$TA' AND run_id = '$run2' AND is_current")
read -r did dgen < <(P -F ' ' -c "SELECT id, generation FROM baton.deliveries WHERE tenant = '$TA' AND target = 'w'
                                 AND status = 'claimed' ORDER BY id LIMIT 1")
reads=(
    "delivery|SELECT (baton.delivery('$TA', $did)).*"
    "run|SELECT (baton.run('$TA', '$run2')).*"
    "run_history|SELECT * FROM baton.run_history('$TA', '$run2')"
    "inputs_digest|SELECT baton.inputs_digest('$TA', '$run2')"
    "marker|SELECT * FROM baton.marker('$TA', $stage2, 0)"
    "markers_in_doubt|SELECT * FROM baton.markers_in_doubt('$TA', '$run2')"
    "tenant_write_allowed|SELECT baton.tenant_write_allowed(t) FROM unnest(ARRAY['$TA', '$TOOLING_T_FENCED']::uuid[]) t"
    "delivery_stats|SELECT tenant, target, pending, claimed, finished, failed, expired_leases FROM baton.delivery_stats ORDER BY 1, 2"
    "run_stats|SELECT tenant, workflow, submitted, approved, running, completed, failed, cancelled FROM baton.run_stats ORDER BY 1, 2"
    "wakeup_channel|SELECT baton.wakeup_channel('$TA', 'w')"
    "new_wakeup_secret|SELECT length(baton.new_wakeup_secret())"
    "health_checks|SELECT name FROM baton.health_checks()"
    "health|SELECT name FROM baton.health"
    "schedules|SELECT count(*), max(next_fire_at) FROM baton.schedules"
    "targets|SELECT tenant, target, weight, paused, paused_everywhere_at FROM baton.targets ORDER BY 1, 2"
    "limited_keys|SELECT tenant, target, key, max_leased, admitted, unclaimed, waiting FROM baton.limited_keys ORDER BY 1, 2, 3"
    "delivery_counters|SELECT count(*) >= 0 FROM baton.delivery_counters"
)
for r in "${reads[@]}"; do
    name=${r%%|*}
    sql=${r#*|}
    if pout=$(P -c "$sql" 2>&1) && sout=$(S -c "$sql" 2>&1) && [[ -n $sout && $pout == "$sout" ]]; then
        ok "read on the standby: baton.$name answers as on the primary ($(wc -l <<<"$sout") row(s))"
    else
        not_ok "read on the standby: baton.$name: primary '$pout' standby '${sout:-}'"
    fi
done

# ---------------------------------------------------------------- refusals
# Every write function of the installed extension, with arguments that would write on a
# primary. The list is checked against pg_proc: a function that is neither here nor in
# the reads above fails the check until it is classified.
writes=(
    "enqueue|SELECT baton.enqueue('$TA', 'w', 'ro-1')"
    "enqueue_batch|SELECT * FROM baton.enqueue_batch('$TA', '[{\"target\": \"w\", \"dedup_key\": \"ro-2\"}]')"
    "claim|SELECT * FROM baton.claim('$TA', 'w', '1 minute', 5)"
    "renew|SELECT baton.renew('$TA', $did, $dgen, '1 minute')"
    "finish|SELECT baton.finish('$TA', $did, $dgen)"
    "finish_batch|SELECT * FROM baton.finish_batch('$TA', ARRAY[$did]::bigint[], ARRAY[$dgen]::bigint[])"
    "retry|SELECT baton.retry('$TA', $did, $dgen, 'again', '0 seconds')"
    "reap|SELECT baton.reap()"
    "age_pending|SELECT baton.age_pending()"
    "purge|SELECT baton.purge('0 seconds')"
    "flush_counts|SELECT baton.flush_counts()"
    "cancel_delivery|SELECT baton.cancel_delivery('$TA', $did, 'read-only')"
    "redrive|SELECT baton.redrive('$TA', 'w')"
    "schedule|SELECT baton.schedule('$TA', 'ro-tick', 'w', '@daily')"
    "unschedule|SELECT baton.unschedule('$TA', 'ro-tick')"
    "fire_schedules|SELECT baton.fire_schedules()"
    "create_tenant|SELECT baton.create_tenant('00000000-0000-0000-0013-0000000000ff')"
    "set_tenant_state|SELECT baton.set_tenant_state('$TA', 'quiescing')"
    "bind_target|SELECT baton.bind_target('$TA', 'bound2', '$ROLE')"
    "claim_fair|SELECT * FROM baton.claim_fair('bound', '1 minute', 5)"
    "set_weight|SELECT baton.set_weight('$TA', 'bound', 2)"
    "limit_key|SELECT baton.limit_key('$TA', 'keyed', 3, 'k')"
    "unlimit_key|SELECT baton.unlimit_key('$TA', 'keyed', 'k')"
    "rate_limit_key|SELECT baton.rate_limit_key('$TA', 'keyed', 5, '1 second', key => 'k')"
    "enqueue_keyed|SELECT baton.enqueue_keyed('$TA', 'keyed', 'ro-3', 'k')"
    "pause|SELECT baton.pause('$TA', 'bound')"
    "resume|SELECT baton.resume('$TA', 'paused')"
    "pause_everywhere|SELECT baton.pause_everywhere('w')"
    "resume_everywhere|SELECT baton.resume_everywhere('runw')"
    "grant_producer|SELECT baton.grant_producer('$ROLE')"
    "grant_worker|SELECT baton.grant_worker('$ROLE')"
    "grant_admin|SELECT baton.grant_admin('$ROLE')"
    "distribute|SELECT baton.distribute()"
    "define_workflow|SELECT baton.define_workflow('ro_wf', '{\"start\": \"a\", \"stages\": {\"a\": {\"next\": [\"@finish\"]}}}')"
    "submit|SELECT baton.submit('$TA', 'tool_wf', '{\"n\": 99}', 'ro-run')"
    "approve|SELECT baton.approve('$TA', '$gate1', 'bob', baton.inputs_digest('$TA', '$gate1'))"
    "cancel|SELECT baton.cancel('$TA', '$run3', 'read-only')"
    "acquire_run|SELECT baton.acquire_run('$TA', '$run3', 'o2', '1 minute')"
    "acquire_next_run|SELECT * FROM baton.acquire_next_run('$TA', 'tool_wf', 'o2', '1 minute')"
    "renew_run|SELECT baton.renew_run('$TA', '$run2', $rgen, '1 minute')"
    "release_run|SELECT baton.release_run('$TA', '$run2', $rgen)"
    "transition_stage|SELECT * FROM baton.transition_stage('$TA', '$run2', $rgen)"
    "start_stage|SELECT baton.start_stage('$TA', '$run2', $rgen, $stage2)"
    "complete_stage|SELECT baton.complete_stage('$TA', '$run2', $rgen, $stage2, '{}')"
    "fail_stage|SELECT baton.fail_stage('$TA', '$run2', $rgen, $stage2, 'boom')"
    "enter_step|SELECT * FROM baton.enter_step('$TA', 'user-2', 'purge', 'd2')"
    "claim_marker|SELECT baton.claim_marker('$TA', $stage2, \"position\" => 5, kind => 'k')"
    "complete_marker|SELECT baton.complete_marker('$TA', $stage2, \"position\" => 0, state => 'done')"
    "resolve_marker|SELECT baton.resolve_marker('$TA', $stage2, 0, $rgen, 'done')"
)
declare -A classified=()
for r in "${reads[@]}" "${writes[@]}"; do classified[${r%%|*}]=1; done
unclassified=$(P -c "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = 'baton' AND p.prorettype <> 'trigger'::regtype ORDER BY 1" |
    while read -r f; do [[ -n ${classified[$f]:-} ]] || echo "$f"; done | tr '\n' ' ')
check "every function of the extension is a tested read or write (${#reads[@]} reads incl. 6 views, ${#writes[@]} writes)" "" "$unclassified"

slog_mark=$(stat -c %s "$SDIR/log")
# The reaper: none on the standby (it waits for promotion) and nothing in its log.
sleep 1
check "no reaper runs on the standby" 0 "$(reapers S)"
check "the standby's log has no error before the refusals" "" "$(errors_in "$SDIR/log" 0)"
if grep -q 'pg_baton reaper' "$SDIR/log"; then not_ok "the standby's log does not mention the reaper"; else ok "the standby's log does not mention the reaper"; fi

# refusals SERVER PREFIX SUFFIX: runs each write in one psql session (each as PREFIX
# statement SUFFIX) and prints "name STATE message" per write, "name ok" if it succeeded.
refusals() {
    local w
    for w in "${writes[@]}"; do
        printf '\\echo @@ %s\n%s %s; %s\n' "${w%%|*}" "$2" "${w#*|}" "$3"
    done | "$1" -v ON_ERROR_STOP=0 -v VERBOSITY=verbose -f - 2>&1 | awk '
        /^@@ / { if (name != "") print name, (err == "" ? "ok" : err); name = $2; err = ""; next }
        err == "" && match($0, /ERROR: +[0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z][0-9A-Z]: /) { e = substr($0, RSTART); sub(/^ERROR: +/, "", e); sub(/: /, " ", e); err = e }
        END { if (name != "") print name, (err == "" ? "ok" : err) }'
}
# The standby, and the primary in read-only transactions: refused alike, nothing written.
on_p tooling_digest "$DB" "$BASE/ro-before"
declare -A got_s=() got_p=() got_b=()
while read -r name rest; do got_s[$name]=$rest; done < <(refusals S "" "")
while read -r name rest; do got_p[$name]=$rest; done < <(PGOPTIONS='-c default_transaction_read_only=on' refusals P "" "")
while read -r name rest; do got_b[$name]=$rest; done < <(refusals P "BEGIN READ ONLY;" "ROLLBACK;")
bad_b=
for w in "${writes[@]}"; do
    name=${w%%|*}
    check "standby refuses baton.$name" "25006 cannot execute baton.$name() during recovery" "${got_s[$name]:-}"
    check "primary, default_transaction_read_only: baton.$name refuses" \
        "25006 cannot execute baton.$name() in a read-only transaction" "${got_p[$name]:-}"
    [[ ${got_b[$name]:-} == "25006 cannot execute baton.$name() in a read-only transaction" ]] ||
        bad_b+=" $name: '${got_b[$name]:-}'"
done
check "primary, BEGIN READ ONLY: all ${#writes[@]} write functions refuse alike" "" "$bad_b"
for mode in on off; do
    got=$(PGOPTIONS="-c default_transaction_read_only=on -c baton.direct_access=$mode" \
        on_p sqlstate_of "$DB" "SELECT * FROM baton.claim('$TA', 'w', '1 minute', 5)")
    check "primary, read-only, direct_access=$mode: claim refuses" \
        "25006 cannot execute baton.claim() in a read-only transaction" "$got"
done
on_p tooling_digest "$DB" "$BASE/ro-after"
if ro_diff=$(tooling_digest_diff "$BASE/ro-before" "$BASE/ro-after"); then
    ok "the refused calls wrote nothing on the primary"
else
    not_ok "the refused calls wrote nothing on the primary: $ro_diff"
fi
hint=$(PGHOST=$SDIR/sock PGPORT=$SPORT "$BIN/psql" -X -q -d "$DB" -v VERBOSITY=verbose \
    -c "SELECT baton.reap()" 2>&1 | grep -E '^(DETAIL|HINT):' | tr '\n' ' ')
if [[ $hint == *DETAIL:*HINT:* ]]; then ok "the refusal has a detail and a hint: $hint"; else not_ok "detail and hint: '$hint'"; fi
others=$(errors_in "$SDIR/log" "$slog_mark" | grep -v -E 'ERROR:  cannot execute baton\.[a-z_]+\(\) during recovery' || true)
check "the standby's log has no error but the refusals" "" "$others"
check "still no reaper on the standby" 0 "$(reapers S)"

# ---------------------------------------------------------------- promotion
# A lease taken on the primary that expires after the failover: the promoted server's
# reaper must return it. 20 s: the primary's digest and stop must come before it
# expires (its own reaper would return it first), which took 10 s on a busy machine.
read -r lid lgen < <(P -F ' ' -c "SELECT baton.enqueue('$TA', 'failover', 'f1');
                                 SELECT id, generation FROM baton.claim('$TA', 'failover', '20 seconds')" | tail -n 1)
tl=$(now_s)
on_p tooling_digest "$DB" "$BASE/dig-final"
as_owner "$BIN/pg_ctl" -D "$PDIR/data" -m fast -w -t 60 stop >/dev/null
echo "# the primary stopped (fast) $(elapsed "$tl") s after the lease was taken"
check "the lease is still held on the standby before promotion" claimed \
    "$(S -c "SELECT status FROM baton.delivery('$TA', $lid)")"
promote_rc=0
S -c "SELECT pg_promote(true, 30)" >/dev/null || promote_rc=$?
check "pg_promote()" 0 "$promote_rc"
plog_mark=$(stat -c %s "$SDIR/log")
check "the promoted server is out of recovery" f "$(S -c 'SELECT pg_is_in_recovery()')"
on_s tooling_digest "$DB" "$BASE/dig-promoted"
for rel in $SEQS; do rm -f "$BASE/dig-final/$rel" "$BASE/dig-promoted/$rel"; done
if fin_diff=$(tooling_digest_diff "$BASE/dig-final" "$BASE/dig-promoted"); then
    ok "the promoted server holds every row the primary had when it stopped"
else
    not_ok "the promoted server holds the primary's last rows: $fin_diff"
fi
tr=$(now_s)
for _ in $(seq 100); do [[ $(reapers S) == 1 ]] && break; sleep 0.1; done
check "the reaper starts on the promoted server (after $(elapsed "$tr") s)" 1 "$(reapers S)"
reaped=no
for _ in $(seq 300); do
    if [[ $(S -c "SELECT status || ' ' || generation FROM baton.delivery('$TA', $lid)") == "pending $((lgen + 1))" ]]; then
        reaped=yes
        break
    fi
    sleep 0.1
done
check "its reaper returns the lease taken on the old primary ($(elapsed "$tl") s after the claim, lease 20 s)" yes "$reaped"
got=$(S -c "SELECT baton.enqueue('$TA', 'after', 'a1', '{\"x\": 1}');
            SELECT baton.finish('$TA', c.id, c.generation) FROM baton.claim('$TA', 'after', '1 minute') c;
            SELECT baton.finish('$TA', c.id, c.generation) FROM baton.claim('$TA', 'failover', '1 minute') c" | tail -n 2 | tr '\n' ' ')
check "the promoted server enqueues, claims and finishes" "finished finished " "$got"
got=$(S -c "SELECT kind || ' ' || run_status FROM baton.transition_stage('$TA', '$run3',
                baton.acquire_run('$TA', '$run3', 'new-owner', '1 minute'))")
check "the promoted server acquires a run and transitions it" "stage running" "$got"
check "the promoted server's log has no error since the promotion" "" "$(errors_in "$SDIR/log" "$plog_mark")"
check "the old holder is fenced (DU001)" DU001 "$(on_s sqlstate_of "$DB" "SELECT baton.finish('$TA', $lid, $lgen)" | cut -d' ' -f1)"

# ---------------------------------------------------------------- negative control, for real
on_s tooling_digest "$DB" "$BASE/neg-before"
S -c "SET session_replication_role = replica; DELETE FROM baton.deliveries WHERE tenant = '$TA' AND dedup_key = 'k1'" >/dev/null
on_s tooling_digest "$DB" "$BASE/neg-after"
neg_out=$(tooling_digest_diff "$BASE/neg-before" "$BASE/neg-after")
neg_rc=$?
if ((neg_rc != 0)) && grep -q 'deliveries: 1 row(s) missing' <<<"$neg_out"; then
    ok "negative control: a row deleted on the promoted server is reported ($(tr -s ' \n' ' ' <<<"$neg_out"))"
else
    not_ok "negative control: a deleted row is reported (rc $neg_rc): $neg_out"
fi
read -r ct ci cp < <(on_s tooling_amcheck "$DB" 2>/dev/null | head -n 1)
check "amcheck on the promoted server: $ct tables, $ci btree indexes: problems" 0 "${cp:-?}"

# ---------------------------------------------------------------- the default '*'
# The same with baton.reaper_databases left at its default, '*': a standby starts no
# launcher and no reaper; promoted, its launcher finds the database with pg_baton and
# starts a reaper there, and in no other database.
cluster_stop "$SDIR" >/dev/null 2>&1
P2PORT=$(cluster_free_port $((SPORT + 1)))
P2() { PGHOST=$P2DIR/sock PGPORT=$P2PORT q -d "$DB" "$@"; }
S2() { PGHOST=$S2DIR/sock PGPORT=$S2PORT q -d "$DB" "$@"; }
if cluster_start "$P2DIR" "$P2PORT" "shared_preload_libraries = 'pg_baton'" "wal_level = replica" \
    "max_wal_senders = 5" "baton.reaper_interval = '200ms'" 2>"$BASE/start2.err"; then
    P2 -d postgres -c "CREATE DATABASE $DB" -c "CREATE DATABASE baton_replica_plain" >/dev/null
    P2 -c "CREATE EXTENSION pg_baton" >/dev/null
    for _ in $(seq 50); do [[ $(reapers P2) == 1 ]] && break; sleep 0.1; done
    check "'*': the primary runs a launcher and a reaper in the database with pg_baton" \
        "1 launcher, reapers in $DB" "$(workers P2)"
    S2PORT=$(cluster_free_port $((P2PORT + 1)))
    s2_rc=0
    base_backup "$P2DIR" "$P2PORT" "$S2DIR" && start_standby "$S2DIR" "$S2PORT" || s2_rc=$?
    check "'*': the standby starts" 0 "$s2_rc"
    sleep 1  # five reaper intervals
    check "'*': the standby is in recovery" t "$(S2 -c 'SELECT pg_is_in_recovery()')"
    check "'*': no launcher and no reaper run on the standby" "0 launcher, reapers in none" "$(workers S2)"
    if grep -q 'pg_baton \(reaper\|launcher\)' "$S2DIR/log"; then
        not_ok "'*': the standby's log does not mention a launcher or reaper"
    else
        ok "'*': the standby's log does not mention a launcher or reaper"
    fi
    as_owner "$BIN/pg_ctl" -D "$P2DIR/data" -m fast -w -t 60 stop >/dev/null
    S2 -c "SELECT pg_promote(true, 30)" >/dev/null
    s2log_mark=$(stat -c %s "$S2DIR/log")
    tr=$(now_s)
    for _ in $(seq 100); do [[ $(reapers S2) == 1 ]] && break; sleep 0.1; done
    check "'*': promoted, it runs a launcher and a reaper in the database with pg_baton only (after $(elapsed "$tr") s)" \
        "1 launcher, reapers in $DB" "$(workers S2)"
    check "'*': the promoted server's log has no error since the promotion" "" "$(errors_in "$S2DIR/log" "$s2log_mark")"
else
    cat "$BASE/start2.err"
    not_ok "'*': the primary starts"
fi

echo "# run time $(elapsed "$t0") s"
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
