#!/usr/bin/env bash
# pg_baton across PostgreSQL majors: pg_upgrade from the older major to the newer keeps
# everything, and so does pg_dump of the older server restored into the newer.
#
#   bash test/majors/upgrade.sh        (as root; its own throwaway clusters under /tmp)
#
# Environment (optional):
#   BATON_OLD_PG_CONFIG   the older server's pg_config (default: PG_CONFIG, else pg_config
#                         on PATH: 15)
#   BATON_NEW_PG_CONFIG   the newer one's (default /usr/local/pg_baton-postgres/18/bin/pg_config,
#                         built by scripts/build-postgres.sh 18)
#   BATON_MAJORS_PORT     first port to try (default 56200)
# pg_baton must be installed into both (make install with each PG_CONFIG); when the newer
# server or its pg_baton is missing the suite says why and reports "0 passed, 0 failed".
#
# On the older major, a cluster that preloads pg_baton (shared_preload_libraries, as it
# runs in production, the background reaper with its default settings) holds:
#   app     the current version: tooling_fill's rows (tenants in every state, so a fenced
#           and a quiescing one; deliveries in every status with TOASTed payloads and
#           results; two versions of a workflow; runs completed, failed mid-retry, gated
#           and cancelled; markers a dead owner left in progress; step entries; a bound
#           target and grants), and besides: a lease valid for hours, a lease already
#           expired (and one of the fenced tenant), a run mid-stage whose owner holds it
#           with a marker in doubt, a schedule not yet due and one due since hours.
#   oldver  pg_baton created at an older version (OLD_VERSION below), given the same rows
#           by plain SQL (the library refuses calls on an older schema),
#           then updated on the older major (its regprocedure column, below).
# Its reapers are stopped before the expired leases and the due schedule are made, so
# that they are still there when the cluster stops: what the upgrade must carry
# unchanged, and what a reaper of the newer server must then take. Before the upgrade:
# no column of pg_baton's tables has a reg* type whose OIDs pg_upgrade does not keep.
#
# pg_upgrade: the newer major's pg_upgrade, --check and then the upgrade, as the postgres
# user, into a new cluster initdb'd with cluster.sh's options and preloading pg_baton too.
# No pg_baton worker may run while pg_upgrade holds a server in binary-upgrade mode (its
# server logs are read). Then, on the upgraded cluster: every row of both databases is
# identical (a digest per row of every table, baton.in_use, baton.wakeup_key and every
# lease row included, and every sequence); amcheck (bt_index_check and
# bt_index_parent_check, both with heapallindexed, verify_heapam with TOAST) on every
# table and btree index; the fence still refuses every write with DU002 (functions, the
# holder of a lease, a superuser's INSERT); the valid lease is honoured (no claim gets it,
# its holder renews and finishes it with its generation); baton.reap() reaps the expired
# one and fences its holder (DU001), and leaves the fenced tenant's; the run goes on from
# its stage; the marker in doubt is never claimed twice and its owner resolves it;
# pg_upgrade's update_extensions.sql names no database, and ALTER EXTENSION pg_baton
# UPDATE in oldver changes no row and leaves a working extension; then, with the background reaper
# switched on, it reaps, and the schedules fire, on the newer major in both databases.
#
# pg_dump: app, dumped from the older server by the newer major's pg_dump (with pg_dumpall
# --globals-only for the roles) and restored with pg_restore into a fresh database of a
# fresh cluster of the newer major: every row identical (tooling_restored: the rows a
# dump carries, and amcheck), the fence holds, the valid lease is honoured, a claim and a
# finish work, the background reaper takes the expired lease and leaves the fenced one.
# Each check prints "ok - ..." or "not ok - ..."; the last line is "N passed, N failed".
set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
START_SECONDS=$SECONDS

OLD_PG_CONFIG=${BATON_OLD_PG_CONFIG:-${PG_CONFIG:-pg_config}}
NEW_PG_CONFIG=${BATON_NEW_PG_CONFIG:-/usr/local/pg_baton-postgres/18/bin/pg_config}
# The older version oldver is created at: one with an update script to the current one.
OLD_VERSION=0.9.0

skip() {
    echo "skip - $*"
    echo "0 passed, 0 failed"
    exit 0
}
# major PG_CONFIG: the major version number of that server ("PostgreSQL 15.18 (...)" -> 15).
major() { "$1" --version 2>/dev/null | sed -n -E 's/^PostgreSQL ([0-9]+).*/\1/p'; }
# has_baton PG_CONFIG: pg_baton's library and control file are installed for that server.
has_baton() { [[ -f $("$1" --pkglibdir)/pg_baton.so && -f $("$1" --sharedir)/extension/pg_baton.control ]]; }

command -v "$OLD_PG_CONFIG" >/dev/null 2>&1 || skip "no older server: '$OLD_PG_CONFIG' (BATON_OLD_PG_CONFIG) not found"
command -v "$NEW_PG_CONFIG" >/dev/null 2>&1 || skip "no newer server: '$NEW_PG_CONFIG' (BATON_NEW_PG_CONFIG) not found (scripts/build-postgres.sh 18 builds one)"
OLD_MAJOR=$(major "$OLD_PG_CONFIG")
NEW_MAJOR=$(major "$NEW_PG_CONFIG")
[[ -n $OLD_MAJOR && -n $NEW_MAJOR ]] || skip "cannot read the servers' versions"
((OLD_MAJOR < NEW_MAJOR)) || skip "the newer server ($NEW_MAJOR) is not a later major than the older ($OLD_MAJOR)"
has_baton "$OLD_PG_CONFIG" || skip "pg_baton is not installed in the older server ($OLD_PG_CONFIG: make install)"
has_baton "$NEW_PG_CONFIG" || skip "pg_baton is not installed in the newer server (make PG_CONFIG=$NEW_PG_CONFIG install)"
OLD_BIN=$("$OLD_PG_CONFIG" --bindir)
NEW_BIN=$("$NEW_PG_CONFIG" --bindir)
[[ -x $NEW_BIN/pg_upgrade ]] || skip "the newer server has no pg_upgrade ($NEW_BIN)"
[[ -f $("$NEW_PG_CONFIG" --pkglibdir)/amcheck.so ]] || skip "the newer server has no amcheck (contrib)"
[[ -f $("$OLD_PG_CONFIG" --sharedir)/extension/pg_baton--$OLD_VERSION--0.10.0.sql ]] \
    || skip "the older server's pg_baton has no update from $OLD_VERSION"

# The client programs (psql, pg_dump, pg_dumpall, pg_restore) are the newer major's for
# every server. pg_dump reads servers of its own major and older ones, never newer; and a
# dump that moves data to a newer major is taken with that major's pg_dump, as
# PostgreSQL's documentation of upgrades recommends: it writes what the newer server
# reads, and knows the older server's catalogs.
# shellcheck disable=SC2034 # read by test/tooling/lib.sh
TOOLING_BINDIR=$NEW_BIN
# shellcheck source=test/tooling/lib.sh
source "$ROOT/test/tooling/lib.sh"
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }
finish() {
    echo "# took $((SECONDS - START_SECONDS)) s"
    echo "$PASS passed, $FAIL failed"
    exit $((FAIL == 0 ? 0 : 1))
}

DIR=$(mktemp -d /tmp/pg_baton-majors.XXXXXX)
chmod 755 "$DIR"
OLD=$DIR/old   # the older major's cluster (scripts/cluster.sh)
NEW=$DIR/new   # the newer major's cluster pg_upgrade fills
COPY=$DIR/copy # a fresh cluster of the newer major, for the restore
WORK=$DIR/work # pg_upgrade's working directory and socket directory
# Every cluster this suite started is stopped, by its data directory, and removed, however
# it ends (cluster_stop leaves alone a directory it did not mark as its own).
cleanup() {
    PG_CONFIG=$NEW_PG_CONFIG cluster_stop "$COPY" >/dev/null 2>&1
    PG_CONFIG=$NEW_PG_CONFIG cluster_stop "$NEW" >/dev/null 2>&1
    PG_CONFIG=$OLD_PG_CONFIG cluster_stop "$OLD" >/dev/null 2>&1
    rm -rf -- "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# on CLUSTER_DIR PORT: the lib.sh helpers (q, sqlstate_of, tooling_*) talk to that server.
on() { export PGHOST="$1/sock" PGPORT=$2 PGUSER=postgres PGDATABASE=postgres; }
# pgctl BINDIR CLUSTER_DIR ARGS...: pg_ctl of that major on that cluster, as its owner.
pgctl() {
    local bin=$1 dir=$2
    shift 2
    (cd "$dir" && _cluster_as_owner "$bin/pg_ctl" -D "$dir/data" "$@")
}
# wait_for DB SQL [SECONDS]: until SQL returns t (polls every 0.2 s, 15 s by default).
wait_for() {
    local db=$1 sql=$2 limit=${3:-15} i
    for ((i = 0; i < limit * 5; i++)); do
        [[ $(q -d "$db" -c "$sql" 2>/dev/null) == t ]] && return 0
        sleep 0.2
    done
    return 1
}
# state DB SQL: the SQLSTATE a statement fails with, "ok" when it succeeds.
state() { sqlstate_of "$1" "$2" | cut -d' ' -f1; }
# same NAME A B: the two digest directories hold the same rows (tooling_digest).
same() {
    local out
    if out=$(tooling_digest_diff "$2" "$3"); then
        ok "$1 ($(awk '{n += $2} END {print n}' "$3/counts") rows in $(wc -l <"$3/counts") tables, every sequence at the same value)"
    else
        not_ok "$1:"
        echo "$out"
    fi
}
# amcheck_both DB: bt_index_check and bt_index_parent_check, both with heapallindexed, and
# verify_heapam with TOAST, on every baton table and btree index (lib.sh: tooling_amcheck),
# which must be every index of pg_baton's tables and of their TOAST tables.
amcheck_both() {
    local db=$1 mode out tables indexes problems all
    all=$(q -d "$db" -c "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
                         WHERE c.relnamespace = 'baton'::regnamespace OR c.oid IN
                               (SELECT reltoastrelid FROM pg_class WHERE relnamespace = 'baton'::regnamespace)")
    for mode in check primary; do
        out=$(tooling_amcheck "$db" "$mode" 2>/dev/null)
        read -r tables indexes problems <<<"$(head -n 1 <<<"$out")"
        if [[ $problems == 0 && $indexes =~ ^[0-9]+$ && $indexes -gt 0 && $indexes == "$all" ]]; then
            ok "amcheck on $db, $([[ $mode == check ]] && echo bt_index_check || echo bt_index_parent_check): $tables tables, $indexes indexes, no problem"
        else
            not_ok "amcheck on $db ($mode; $all indexes in all): $(head -c 800 <<<"$out")"
        fi
    done
}

TA=$TOOLING_T_ACTIVE TQ=$TOOLING_T_QUIESCING TF=$TOOLING_T_FENCED TD=$TOOLING_T_DELETED
ROLE=baton_majors_app
echo "# PostgreSQL $OLD_MAJOR ($OLD_BIN) -> $NEW_MAJOR ($NEW_BIN)"

# --- the older major: a production-like cluster, filled ---------------------------------
OLD_PORT=$(cluster_free_port "${BATON_MAJORS_PORT:-56200}")
if ! PG_CONFIG=$OLD_PG_CONFIG cluster_start "$OLD" "$OLD_PORT" "shared_preload_libraries = 'pg_baton'" >/dev/null; then
    not_ok "a cluster of PostgreSQL $OLD_MAJOR preloading pg_baton starts"
    finish
fi
on "$OLD" "$OLD_PORT"
q -c "CREATE ROLE $ROLE" -c "CREATE DATABASE app" -c "CREATE DATABASE oldver" >/dev/null
q -d app -c "CREATE EXTENSION pg_baton" >/dev/null
q -d oldver -c "CREATE EXTENSION pg_baton VERSION '$OLD_VERSION'" >/dev/null
check "oldver has pg_baton $OLD_VERSION, app the default version" "$OLD_VERSION $(sed -n -E "s/^default_version = '(.*)'/\1/p" "$ROOT/pg_baton.control")" \
    "$(q -d oldver -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'") $(q -d app -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"
tooling_fill app "$ROLE" || not_ok "fill app"
# The library refuses every call on a schema older than its own (docs/guide/versions.md):
# oldver gets app's rows as they are now, by plain SQL (tooling_copy_rows).
tooling_copy_rows app oldver || not_ok "fill oldver (app's rows copied)"

# A lease valid for hours (held), a run mid-stage whose owner holds it, with a marker its
# action left in progress, and a schedule whose next slot is hours away.
read -r HID HGEN < <(q -d app -c "SELECT baton.enqueue('$TA', 'held', 'h1')" \
    -c "SELECT id || ' ' || generation FROM baton.claim('$TA', 'held', '3 hours')" | tail -n 1)
read -r RUN RGEN SID < <(q -d app <<SQL | tail -n 1
SELECT baton.define_workflow('majors_wf', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}') \\gset
SELECT baton.submit('$TA', 'majors_wf', '{"n": 1}', 'mid') AS run \\gset
SELECT baton.acquire_run('$TA', :'run', 'owner-1', '3 hours') AS gen \\gset
SELECT stage_id AS sid FROM baton.transition_stage('$TA', :'run', :gen) \\gset
SELECT baton.start_stage('$TA', :'run', :gen, :sid) \\gset
SELECT baton.claim_marker('$TA', :sid, "position" => 0, kind => 'charge', operation_id => 'op-mid') \\gset
SELECT :'run' || ' ' || :gen || ' ' || :sid;
SQL
)
q -d app -c "SELECT baton.schedule('$TA', 'nightly', 'reports', '0 2 * * *', '{\"r\": 1}', '{}', 'Europe/Paris')" >/dev/null

# The reapers of this cluster run, as in production; then they are stopped: the launcher
# first (terminated, it stays down until the next server start), then each reaper (which
# only the launcher would start again).
if wait_for postgres "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname IN ('app', 'oldver')"; then
    ok "PostgreSQL $OLD_MAJOR runs pg_baton's launcher and a reaper in app and in oldver"
else
    not_ok "PostgreSQL $OLD_MAJOR runs pg_baton's reapers: $(q -c "SELECT string_agg(backend_type || ':' || coalesce(datname, '-'), ',') FROM pg_stat_activity WHERE backend_type LIKE 'pg_baton%'")"
fi
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_baton launcher'" >/dev/null
wait_for postgres "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'pg_baton launcher'" 10
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper'" >/dev/null
wait_for postgres "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type LIKE 'pg_baton%'" 10
sleep 1
check "its reapers are stopped before the expired lease is made" "0" \
    "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'pg_baton%'")"

# A lease that has expired (lapsed), and a schedule due since hours (its next slot moved
# back, as after a pause), which no reaper now takes before the upgrade.
read -r XID XGEN < <(q -d app -c "SELECT baton.enqueue('$TA', 'lapsed', 'x1', max_attempts => 5)" \
    -c "SELECT id || ' ' || generation FROM baton.claim('$TA', 'lapsed', '1 millisecond')" | tail -n 1)
q -d app -c "SELECT baton.schedule('$TA', 'due_tick', 'ticks', '@every 1 hour')" \
    -c "UPDATE baton.schedule_rows SET next_fire_at = now() - interval '3 hours' WHERE name = 'due_tick'" >/dev/null
# An expired lease of the fenced tenant too, claimed and fenced in one transaction: no
# reap may take it back while the fence holds.
read -r FID FGEN < <(q -d app <<SQL | tail -n 1
BEGIN;
SELECT baton.set_tenant_state('$TF', 'active') \\gset
SELECT baton.enqueue('$TF', 'lapsed', 'f1', max_attempts => 5) \\gset
SELECT id || ' ' || generation AS lapsed FROM baton.claim('$TF', 'lapsed', '1 millisecond') \\gset
SELECT baton.set_tenant_state('$TF', 'fenced') \\gset
COMMIT;
SELECT :'lapsed';
SQL
)
sleep 0.1

check "app holds deliveries in every status" "claimed,failed,finished,pending" \
    "$(q -d app -c "SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM baton.deliveries")"
check "app holds tenants in every state" "active,deleted,fenced,quiescing" \
    "$(q -d app -c "SELECT string_agg(state, ',' ORDER BY state) FROM baton.tenants")"
check "app holds a valid lease, an expired one (and one of the fenced tenant), a running stage, markers in doubt, a due and a later schedule" \
    "1 2 1 true due_tick,nightly" \
    "$(q -d app -c "SELECT (SELECT count(*) FROM baton.deliveries WHERE id = $HID AND status = 'claimed' AND lease_until > now() + interval '2 hours')
                       || ' ' || (SELECT count(*) FROM baton.deliveries WHERE id IN ($XID, ${FID:-0}) AND status = 'claimed' AND lease_until < now())
                       || ' ' || (SELECT count(*) FROM baton.stages WHERE run_id = '$RUN' AND status = 'running' AND is_current)
                       || ' ' || (SELECT count(*) >= 5 FROM baton.markers WHERE state = 'in_progress')
                       || ' ' || (SELECT string_agg(name, ',' ORDER BY name) FROM baton.schedules)")"
check "the due schedule is due, the other not" "due_tick:true,nightly:false" \
    "$(q -d app -c "SELECT string_agg(name || ':' || (next_fire_at < now()), ',' ORDER BY name) FROM baton.schedules")"

# Versions before 0.11.0 name a workflow's decide function by its oid (a regprocedure
# column), which pg_upgrade refuses: such a database is updated on the older major first,
# as docs/guide/versions.md says to.
check "oldver at $OLD_VERSION has the regprocedure column pg_upgrade refuses" "baton.workflows.decide regprocedure" \
    "$(q -d oldver -c "SELECT a.attrelid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                       FROM pg_attribute a WHERE a.attrelid = 'baton.workflows'::regclass AND a.attname = 'decide'")"
if q -d oldver -c "ALTER EXTENSION pg_baton UPDATE" >/dev/null 2>"$DIR/update-old.err"; then
    ok "ALTER EXTENSION pg_baton UPDATE in oldver on PostgreSQL $OLD_MAJOR, before pg_upgrade"
else
    not_ok "ALTER EXTENSION pg_baton UPDATE in oldver on PostgreSQL $OLD_MAJOR: $(head -c 600 "$DIR/update-old.err")"
fi
DEFAULT_VERSION=$(q -d oldver -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_baton'")

# What each way must carry: every row for pg_upgrade (a copy of the files), the rows a
# dump carries for pg_dump (lib.sh: tooling_digest).
tooling_digest app "$DIR/app"
tooling_digest app "$DIR/app-all" all
tooling_digest oldver "$DIR/oldver-all" all
echo "# app's rows: $(awk '{printf "%s%s=%s", sep, $1, $2; sep = " "}' "$DIR/app-all/counts")"

# The dump, taken now with the newer major's pg_dump and pg_dumpall (roles), restored below.
if "$NEW_BIN/pg_dump" -Fc -d app -f "$DIR/app.dump" 2>"$DIR/dump.err" \
    && "$NEW_BIN/pg_dumpall" --globals-only -f "$DIR/globals.sql" 2>>"$DIR/dump.err"; then
    ok "PostgreSQL $NEW_MAJOR's pg_dump and pg_dumpall --globals-only read the $OLD_MAJOR server"
else
    not_ok "pg_dump of the $OLD_MAJOR server: $(head -c 600 "$DIR/dump.err")"
fi

# pg_upgrade keeps no OID of functions, operators, types of text search, collations or
# schemas: it refuses a cluster whose tables have a column of a reg* type that stores one
# (regproc, regprocedure, regoper, regoperator, regconfig, regdictionary, regnamespace,
# regcollation; regclass, regtype and regrole are kept). Said here by table and column.
for db in app oldver; do
    check "no column of pg_baton's tables in $db has a reg* type pg_upgrade refuses" "" \
        "$(q -d "$db" -c "SELECT string_agg(a.attrelid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY 1)
                          FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
                          WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind IN ('r', 'm', 'p') AND a.attnum > 0 AND NOT a.attisdropped
                            AND a.atttypid IN ('regproc'::regtype, 'regprocedure'::regtype, 'regoper'::regtype, 'regoperator'::regtype,
                                               'regconfig'::regtype, 'regdictionary'::regtype, 'regnamespace'::regtype, 'regcollation'::regtype)")"
done

echo "# the $OLD_MAJOR cluster started, filled, digested and dumped in $((SECONDS - START_SECONDS)) s"
if ! pgctl "$OLD_BIN" "$OLD" -m fast -w -t 60 stop >/dev/null; then
    not_ok "the $OLD_MAJOR cluster stops cleanly"
fi

# --- pg_upgrade --------------------------------------------------------------------------
# The new cluster: initdb as cluster.sh does it (postgres user, a directory it can read,
# the same locale and encoding), with the old cluster's data checksums setting (18's
# initdb turns them on by default; pg_upgrade needs both alike), and the same settings,
# pg_baton preloaded included (pg_upgrade loads pg_baton's library in the new server).
NEW_PORT=$(cluster_free_port $((OLD_PORT + 1)))
mkdir -p "$NEW/sock" "$WORK"
: >"$NEW/$CLUSTER_MARKER"
: >"$NEW/log"
chmod 0755 "$NEW" "$NEW/sock" "$WORK"
[[ $(id -u) -eq 0 ]] && chown -R postgres:postgres "$NEW" "$WORK"
checksums=()
if [[ $("$OLD_BIN/pg_controldata" "$OLD/data" | sed -n -E 's/^Data page checksum version: *//p') == 0 ]]; then
    [[ $("$NEW_BIN/initdb" --help) == *--no-data-checksums* ]] && checksums=(--no-data-checksums)
else
    checksums=(--data-checksums)
fi
if ! (cd "$NEW" && _cluster_as_owner "$NEW_BIN/initdb" -D "$NEW/data" -U postgres --auth=trust \
    --encoding=UTF8 --locale=C.UTF-8 --no-sync "${checksums[@]}" >"$NEW/initdb.log" 2>&1); then
    not_ok "initdb of PostgreSQL $NEW_MAJOR: $(tail -n 5 "$NEW/initdb.log")"
    finish
fi
cat >>"$NEW/data/postgresql.conf" <<CONF

# --- throwaway test cluster (test/majors/upgrade.sh, as scripts/cluster.sh) ---
listen_addresses = ''
unix_socket_directories = '$NEW/sock'
port = $NEW_PORT
fsync = on
synchronous_commit = on
max_connections = 200
max_locks_per_transaction = 256
shared_buffers = 256MB
logging_collector = off
log_line_prefix = '%m [%p] %q%a '
lc_messages = 'C'
shared_preload_libraries = 'pg_baton'
CONF

# upgrade [--check]: the newer pg_upgrade, as the postgres user, from WORK (where it writes
# update_extensions.sql), its servers on a socket in WORK; --retain keeps their logs.
upgrade() {
    (cd "$WORK" && _cluster_as_owner "$NEW_BIN/pg_upgrade" "$@" --retain -U postgres \
        -b "$OLD_BIN" -B "$NEW_BIN" -d "$OLD/data" -D "$NEW/data" -p "$OLD_PORT" -P "$NEW_PORT" -s "$WORK")
}
# upgrade_failed STEP OUTPUT: reports the failure with pg_upgrade's own words and the
# lists it writes of what it refuses (e.g. tables_using_reg.txt).
upgrade_failed() {
    local f
    not_ok "$1 fails, in its words:"
    grep -v -E '^(Checking|Performing|-+$|$)' "$2" | tail -n 12 | sed 's/^/#   /'
    for f in "$NEW"/data/pg_upgrade_output.d/*/*.txt; do
        [[ -f $f ]] && { echo "# $(basename "$f"):"; sed 's/^/#   /' "$f"; }
    done
}
t0=$SECONDS
upgraded=0
if upgrade --check >"$DIR/check.out" 2>&1; then
    ok "pg_upgrade --check: the clusters are compatible"
    t1=$SECONDS
    if upgrade >"$DIR/upgrade.out" 2>&1; then
        ok "pg_upgrade from $OLD_MAJOR to $NEW_MAJOR"
        upgraded=1
    else
        upgrade_failed "pg_upgrade" "$DIR/upgrade.out"
    fi
    echo "# pg_upgrade --check took $((t1 - t0)) s, pg_upgrade $((SECONDS - t1)) s"
else
    upgrade_failed "pg_upgrade --check" "$DIR/check.out"
fi
# pg_upgrade runs each server in binary-upgrade mode while it reads or writes the
# catalogs: nothing but pg_upgrade may write then, and --check must leave the old
# cluster as it was. A worker of pg_baton's there would reap and fire schedules.
server_logs=$(cat "$NEW"/data/pg_upgrade_output.d/*/log/pg_upgrade_server.log 2>/dev/null)
if grep -q 'ready to accept connections' <<<"$server_logs"; then
    check "no pg_baton worker ran in the servers pg_upgrade started (binary-upgrade mode)" "" \
        "$(grep -E 'pg_baton (launcher|reaper) started' <<<"$server_logs" | sed -E 's/^.*LOG: +//' | sort | uniq -c | sed -E 's/^ *([0-9]+) (.*)$/\2 (x\1)/' | paste -sd';')"
else
    echo "# pg_upgrade started no server: no binary-upgrade server log to read"
fi

if ((upgraded)); then
    # pg_upgrade names the databases whose extensions have updates (update_extensions.sql).
    check "pg_upgrade's update_extensions.sql names no pg_baton (every database is at the default version)" "" \
        "$(awk '/^\\connect/ {db = $2} /^ALTER EXTENSION/ {gsub(/"/, "", $3); print db, $3}' "$WORK/update_extensions.sql" 2>/dev/null | tr -d "'\"" | paste -sd';')"
    # Held off for the first start: the expired lease must be left for baton.reap() below.
    echo "baton.reaper_databases = ''" >>"$NEW/data/postgresql.conf"
    if pgctl "$NEW_BIN" "$NEW" -l "$NEW/log" -w -t 60 start >/dev/null; then
        ok "the upgraded cluster starts on PostgreSQL $NEW_MAJOR"
    else
        not_ok "the upgraded cluster starts: $(tail -n 20 "$NEW/log")"
        upgraded=0
    fi
fi

if ((upgraded)); then
    t2=$SECONDS
    on "$NEW" "$NEW_PORT"
    check "it runs PostgreSQL $NEW_MAJOR, pg_baton at the versions of before" "$NEW_MAJOR $DEFAULT_VERSION $DEFAULT_VERSION" \
        "$(q -d app -c "SELECT current_setting('server_version_num')::int / 10000 || ' ' || extversion FROM pg_extension WHERE extname = 'pg_baton'") $(q -d oldver -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"

    # Every row, before anything writes.
    tooling_digest app "$DIR/app-up" all
    same "every row of app is identical after pg_upgrade, baton.in_use, baton.wakeup_key and every lease included" "$DIR/app-all" "$DIR/app-up"
    tooling_digest oldver "$DIR/oldver-up" all
    same "every row of oldver (created at $OLD_VERSION) is identical after pg_upgrade" "$DIR/oldver-all" "$DIR/oldver-up"
    # (oldver's, after its update below: its carried indexes and the one the update builds)
    amcheck_both app

    # The fence.
    check "the fenced tenant refuses an enqueue, a claim, and its lease holder's finish (DU002)" "DU002 DU002 DU002" \
        "$(state app "SELECT baton.enqueue('$TF', 'w', 'late')") $(state app "SELECT baton.claim('$TF', 'w', '1 minute')") $(state app "SELECT baton.finish('$TF', id, generation) FROM baton.deliveries WHERE tenant = '$TF' AND status = 'claimed' ORDER BY id LIMIT 1")"
    check "the quiescing and the deleted tenants refuse an enqueue (DU002)" "DU002 DU002" \
        "$(state app "SELECT baton.enqueue('$TQ', 'w', 'late')") $(state app "SELECT baton.enqueue('$TD', 'w', 'late')")"
    check "a superuser's INSERT into the fenced tenant is refused (DU002)" "DU002" \
        "$(state app "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('$TF', 'w', 'sneak')")"
    check "tenant_write_allowed: the fenced tenant no, the active one yes" "f|t" \
        "$(q -d app -c "SELECT baton.tenant_write_allowed('$TF'), baton.tenant_write_allowed('$TA')")"

    # The valid lease is honoured: no claim gets it, its holder renews and finishes it.
    check "no claim gets the delivery whose lease is valid" "0" \
        "$(q -d app -c "SELECT count(*) FROM baton.claim('$TA', 'held', '1 minute', 10)")"
    check "another generation is refused on it (DU001)" "DU001" \
        "$(state app "SELECT baton.renew('$TA', $HID, $((HGEN + 1)), '1 hour')")"
    check "its holder renews it with its generation, then finishes it" "t finished" \
        "$(q -d app -c "SELECT baton.renew('$TA', $HID, $HGEN, '1 hour') > now() + interval '50 minutes'") $(q -d app -c "SELECT baton.finish('$TA', $HID, $HGEN, 'finished', '{\"done\": true}')")"

    # The expired lease: baton.reap() takes it back and fences its holder.
    check "baton.reap() reaps the lease that expired before the upgrade, and only it" "1" \
        "$(q -d app -c "SELECT baton.reap()")"
    check "it leaves the fenced tenant's expired lease claimed, at its generation" "claimed $FGEN" \
        "$(q -d app -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$TF' AND id = $FID")"
    check "the reaped delivery is pending at the next generation" "pending $((XGEN + 1)) lease expired" \
        "$(q -d app -c "SELECT status || ' ' || generation || ' ' || last_error FROM baton.deliveries WHERE tenant = '$TA' AND id = $XID")"
    check "its former holder is fenced (DU001)" "DU001" \
        "$(state app "SELECT baton.finish('$TA', $XID, $XGEN)")"
    check "a claim gets it again, and finishes it" "finished" \
        "$(q -d app -c "SELECT baton.finish('$TA', c.id, c.generation) FROM baton.claim('$TA', 'lapsed', '1 minute') c")"

    # The run mid-stage goes on from its stage; its marker in doubt is not claimed twice.
    check "the marker the run's owner left in progress is still in doubt, and not claimed again" "in_progress op-mid f" \
        "$(q -d app -c "SELECT state || ' ' || operation_id FROM baton.marker('$TA', $SID, 0)") $(q -d app -c "SELECT baton.claim_marker('$TA', $SID, \"position\" => 0, kind => 'charge')")"
    check "the run's owner resolves it" "t done" \
        "$(q -d app -c "SELECT baton.complete_marker('$TA', $SID, \"position\" => 0, state => 'done')") $(q -d app -c "SELECT state FROM baton.marker('$TA', $SID, 0)")"
    check "the owner completes the running stage and the run moves on (stage b, entry 1)" "stage b 1 running" \
        "$(q -d app -c "SELECT baton.complete_stage('$TA', '$RUN', $RGEN, $SID, '{\"a\": 1}')" \
            -c "SELECT kind || ' ' || stage || ' ' || entry_seq || ' ' || run_status FROM baton.transition_stage('$TA', '$RUN', $RGEN)" | tail -n 1)"
    check "a stale run generation is fenced (DU001)" "DU001" \
        "$(state app "SELECT baton.renew_run('$TA', '$RUN', $((RGEN - 1)), '1 hour')")"
    check "the markers tooling_fill's owners left in progress are not claimed again" "f" \
        "$(q -d app -c "SELECT bool_or(baton.claim_marker(m.tenant, m.entry_id, \"position\" => m.\"position\", kind => m.kind)) FROM baton.markers m WHERE m.state = 'in_progress' AND m.tenant = '$TA'")"
    check "baton.health answers, markers_in_doubt among its rows" "t" \
        "$(q -d app -c "SELECT count(*) >= 8 AND bool_or(name = 'markers_in_doubt') FROM baton.health")"
    check "enqueue, claim and finish of a new delivery" "finished" \
        "$(q -d app -c "SELECT baton.enqueue('$TA', 'after', 'a1')" -c "SELECT baton.finish('$TA', c.id, c.generation) FROM baton.claim('$TA', 'after', '1 minute') c" | tail -n 1)"

    # ALTER EXTENSION UPDATE in oldver, on the newer major: no row changes, and it works.
    tooling_digest oldver "$DIR/oldver-pre" all
    if q -d oldver -c "ALTER EXTENSION pg_baton UPDATE" >/dev/null 2>"$DIR/update.err"; then
        ok "ALTER EXTENSION pg_baton UPDATE in oldver on PostgreSQL $NEW_MAJOR"
    else
        not_ok "ALTER EXTENSION pg_baton UPDATE in oldver: $(head -c 600 "$DIR/update.err")"
    fi
    check "oldver is at the default version" "$(q -d oldver -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_baton'")" \
        "$(q -d oldver -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'")"
    tooling_digest oldver "$DIR/oldver-post" all
    same "the update changed no row of oldver" "$DIR/oldver-pre" "$DIR/oldver-post"
    check "the updated oldver: claim and finish of its pending deliveries" "finished" \
        "$(q -d oldver -c "SELECT string_agg(DISTINCT baton.finish('$TA', c.id, c.generation), ',') FROM baton.claim('$TA', 'w', '1 minute', 100) c")"
    check "the updated oldver: enqueue again of a key of before returns its id, a new one is claimed" "t 1" \
        "$(q -d oldver -c "SELECT baton.enqueue(d.tenant, d.target, d.dedup_key, d.payload, d.binding) = d.id FROM baton.deliveries d WHERE d.tenant = '$TA' AND d.target = 'w' ORDER BY d.id LIMIT 1") $(q -d oldver -c "SELECT baton.enqueue('$TA', 'new', 'n1')" -c "SELECT count(*) FROM baton.claim('$TA', 'new', '1 minute')" | tail -n 1)"
    check "the updated oldver: the fence holds (DU002)" "DU002 DU002" \
        "$(state oldver "SELECT baton.enqueue('$TF', 'w', 'late')") $(state oldver "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('$TF', 'w', 'sneak')")"
    amcheck_both oldver

    # The background reaper on the newer major, with the settings test/reaper uses, in
    # every database with pg_baton: it reaps, and the schedules fire, with no client call.
    q -c "ALTER SYSTEM SET baton.reaper_databases = '*'" -c "ALTER SYSTEM SET baton.reaper_interval = '100ms'" >/dev/null
    if pgctl "$NEW_BIN" "$NEW" -l "$NEW/log" -w -t 60 -m fast restart >/dev/null; then
        ok "restart with the background reaper"
    else
        not_ok "restart with the background reaper: $(tail -n 20 "$NEW/log")"
    fi
    if wait_for postgres "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'pg_baton reaper' AND datname IN ('app', 'oldver')"; then
        ok "a reaper runs in app and in oldver on PostgreSQL $NEW_MAJOR"
    else
        not_ok "reapers on PostgreSQL $NEW_MAJOR: $(q -c "SELECT string_agg(backend_type || ':' || coalesce(datname, '-'), ',') FROM pg_stat_activity WHERE backend_type LIKE 'pg_baton%'"); $(grep -E 'pg_baton|ERROR' "$NEW/log" | tail -n 5)"
    fi
    if wait_for app "SELECT count(*) = 1 FROM baton.deliveries WHERE tenant = '$TA' AND dedup_key LIKE 'schedule:due_tick:%'"; then
        ok "the schedule due since before the upgrade fires once, with no fire_schedules call"
    else
        not_ok "the due schedule fires: $(q -d app -c "SELECT string_agg(dedup_key, ',') FROM baton.deliveries WHERE target = 'ticks'")"
    fi
    check "its next slot is ahead, the later schedule has not fired" "t|t" \
        "$(q -d app -c "SELECT (SELECT next_fire_at > now() FROM baton.schedules WHERE name = 'due_tick'), (SELECT last_fired_at IS NULL AND next_fire_at > now() FROM baton.schedules WHERE name = 'nightly')")"
    q -d app -c "SELECT baton.schedule('$TA', 'tick', 'ticks', '@every 1 second')" >/dev/null
    if wait_for app "SELECT count(*) >= 2 FROM baton.deliveries WHERE tenant = '$TA' AND dedup_key LIKE 'schedule:tick:%'"; then
        ok "a schedule '@every 1 second' made on $NEW_MAJOR fires slot after slot"
    else
        not_ok "a schedule '@every 1 second' fires on $NEW_MAJOR"
    fi
    q -d app -c "SELECT baton.unschedule('$TA', 'tick')" >/dev/null
    for db in app oldver; do
        read -r bid bgen < <(q -d "$db" -c "SELECT baton.enqueue('$TA', 'bg', 'b1', max_attempts => 5)" \
            -c "SELECT id || ' ' || generation FROM baton.claim('$TA', 'bg', '300 milliseconds')" | tail -n 1)
        if wait_for "$db" "SELECT status = 'pending' AND generation = $((bgen + 1)) FROM baton.deliveries WHERE tenant = '$TA' AND id = $bid"; then
            ok "the background reaper reaps an expired lease in $db, with no reap call"
        else
            not_ok "the background reaper reaps in $db: $(q -d "$db" -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$TA' AND id = $bid")"
        fi
    done
    check "the background reaper leaves the fenced tenant's expired lease claimed" "claimed $FGEN" \
        "$(q -d app -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$TF' AND id = $FID")"
    echo "# the checks of the upgraded cluster took $((SECONDS - t2)) s"
fi

((upgraded)) || not_ok "the checks of the upgraded cluster did not run: no upgraded cluster"

# --- pg_dump of the older server, restored into a fresh database of the newer ----------
t3=$SECONDS
COPY_PORT=$(cluster_free_port $((NEW_PORT + 1)))
if [[ -s $DIR/app.dump ]] && PG_CONFIG=$NEW_PG_CONFIG cluster_start "$COPY" "$COPY_PORT" \
    "shared_preload_libraries = 'pg_baton'" "baton.reaper_interval = '100ms'" >/dev/null; then
    # Preloaded, its background reaper on: it leaves the restored database alone until
    # the first write, then reaps (docs/guide/operations.md, "Backups").
    on "$COPY" "$COPY_PORT"
    check "the dump was written by PostgreSQL $NEW_MAJOR's pg_dump, from a $OLD_MAJOR server" "$NEW_MAJOR $OLD_MAJOR" \
        "$("$NEW_BIN/pg_restore" -l "$DIR/app.dump" | sed -n -E 's/^; +Dumped by pg_dump version: ([0-9]+).*/\1/p') $("$NEW_BIN/pg_restore" -l "$DIR/app.dump" | sed -n -E 's/^; +Dumped from database version: ([0-9]+).*/\1/p')"
    # The roles first (a dump holds none); the bootstrap superuser exists already, which
    # is the one error psql reports here.
    "$NEW_BIN/psql" -X -q -d postgres -f "$DIR/globals.sql" >/dev/null 2>&1
    check "pg_dumpall --globals-only brought the role of the grants" "1" \
        "$(q -c "SELECT count(*) FROM pg_roles WHERE rolname = '$ROLE'")"
    q -c "CREATE DATABASE restored" >/dev/null
    if "$NEW_BIN/pg_restore" -d restored "$DIR/app.dump" 2>"$DIR/restore.err"; then
        ok "pg_restore into a fresh database of PostgreSQL $NEW_MAJOR reports no error"
    else
        not_ok "pg_restore: $(head -c 600 "$DIR/restore.err")"
    fi
    tooling_restored restored app
    check "the fenced tenant refuses an enqueue, a claim, and its lease holder's finish (DU002)" "DU002 DU002 DU002" \
        "$(state restored "SELECT baton.enqueue('$TF', 'w', 'late')") $(state restored "SELECT baton.claim('$TF', 'w', '1 minute')") $(state restored "SELECT baton.finish('$TF', id, generation) FROM baton.deliveries WHERE tenant = '$TF' AND status = 'claimed' ORDER BY id LIMIT 1")"
    check "the quiescing and the deleted tenants refuse an enqueue (DU002)" "DU002 DU002" \
        "$(state restored "SELECT baton.enqueue('$TQ', 'w', 'late')") $(state restored "SELECT baton.enqueue('$TD', 'w', 'late')")"
    check "no claim gets the delivery whose lease is valid" "0" \
        "$(q -d restored -c "SELECT count(*) FROM baton.claim('$TA', 'held', '1 minute', 10)")"
    check "its holder renews it with its generation, then finishes it" "t finished" \
        "$(q -d restored -c "SELECT baton.renew('$TA', $HID, $HGEN, '1 hour') > now() + interval '50 minutes'") $(q -d restored -c "SELECT baton.finish('$TA', $HID, $HGEN)")"
    check "claim and finish of the restored pending deliveries" "finished" \
        "$(q -d restored -c "SELECT string_agg(DISTINCT baton.finish('$TA', c.id, c.generation), ',') FROM baton.claim('$TA', 'w', '1 minute', 100) c")"
    if wait_for restored "SELECT status = 'pending' AND generation = $((XGEN + 1)) FROM baton.deliveries WHERE tenant = '$TA' AND id = $XID"; then
        ok "the copy in use, the background reaper reaps the restored expired lease"
    else
        not_ok "the background reaper reaps the restored expired lease: $(q -d restored -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$TA' AND id = $XID")"
    fi
    check "and leaves the fenced tenant's expired lease claimed" "claimed $FGEN" \
        "$(q -d restored -c "SELECT status || ' ' || generation FROM baton.deliveries WHERE tenant = '$TF' AND id = $FID")"
    check "the fence holds for a superuser's INSERT once the copy is in use (DU002)" "DU002" \
        "$(state restored "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('$TF', 'w', 'sneak')")"
    echo "# the restore and its checks took $((SECONDS - t3)) s"
else
    not_ok "a fresh cluster of PostgreSQL $NEW_MAJOR for the restore (or no dump to restore)"
fi

finish
