#!/usr/bin/env bash
# The direct heap and index path against the SPI statements, by their effects. One mixed
# workload (workload.sql: enqueue, enqueue_batch, claim single and batched, renew,
# finish, finish_batch, retry, reap after one-second leases expire, cancel, redrive, a
# tenant fenced and its writes refused, purge) runs twice on a throwaway cluster of its
# own, with baton.direct_access on and then off, each run in a database of its own
# whose baton.deliveries carries the user's indexes of setup.sql (a BRIN over columns a
# finish writes, a partial index whose predicate reads a column a claim writes, an
# expression index and a unique index over one), a domain on result and a publication.
# Then:
#   - the direct run's claims, finishes and batches wrote without the fence trigger, the
#     SPI run's through it (else the comparison would compare a path with itself);
#   - every call answered alike, and neither run logged a warning;
#   - every row of every baton table is alike, times ranked and ready.row_tid left out
#     (normalise.py), and the comparison tells a changed row; the sequences stand
#     alike; in the direct run a ready row's row_tid points at its delivery;
#   - amcheck in each database: verify_heapam on every baton table, and
#     bt_index_parent_check(heapallindexed => true) on each of their btree indexes
#     (test/tooling/lib.sh, tooling_amcheck); each btree index of baton.deliveries read
#     by an index scan returns the rows a sequential scan returns;
#   - the BRIN: bitmap scans of it return what sequential scans return, for every value
#     of its columns, before and after brin_summarize_new_values(); on PostgreSQL 16 and
#     later, finishes were summarizing heap-only updates (pg_stat_user_tables'
#     n_tup_hot_upd, and heap-only settled rows whose page summary holds them);
#   - pg_stat_user_tables' n_tup_ins, n_tup_upd, n_tup_hot_upd and n_tup_del of every
#     baton table, run against run, but for the differences by design listed below;
#   - what logical decoding sends (a test_decoding slot per database, made before the
#     workload, read after it), times ranked, each transaction's changes as a set.
# PG_CONFIG chooses the server (default pg_config on PATH). BATON_KEEP_LOGS=1 keeps the
# runs' files. Last line: "N passed, N failed".
set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source=test/tooling/lib.sh
source "$ROOT/test/tooling/lib.sh"
# This suite's words for a check (lib.sh's check() calls these).
ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }
PY=${PYTHON:-python3}
# psql's notices (amcheck's CREATE EXTENSION IF NOT EXISTS) are no finding.
export PGOPTIONS="${PGOPTIONS:+$PGOPTIONS }-c client_min_messages=warning"
MAJOR=$("${PG_CONFIG:-pg_config}" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
STARTED=$SECONDS

# No autovacuum: a vacuum or an analyze at a moment of its own choosing would prune
# pages (and so decide which updates stay heap-only) and summarize BRIN ranges
# differently in the two runs. No background reaper: the workload reaps when it means to.
tooling_cluster differential 56300 "shared_preload_libraries = 'pg_baton'" "baton.reaper_databases = ''" \
    "wal_level = logical" "max_replication_slots = 4" "autovacuum = off"
OUT=$DIR/out
mkdir -p "$OUT"
echo "PostgreSQL $MAJOR: $(q -c 'SHOW server_version')"

# A failure's details: the first lines of a diff, each cut at 300 characters.
show() { head -n "${BATON_DIFF_LINES:-40}" | cut -c1-300 | sed 's/^/    /'; }

# --- the two runs --------------------------------------------------------------------
# run_workload MODE SETTING: database diff_MODE from setup.sql, a test_decoding slot,
# the workload with baton.direct_access = SETTING; then, before anything else reads the
# database, its tables' counters (OUT/MODE.stats), what the slot decodes
# (OUT/MODE.decoded) and its rows (OUT/MODE.rows).
run_workload() {
    local mode=$1 setting=$2 db=diff_$1 started=$SECONDS rc=0
    q -c "CREATE DATABASE $db" >/dev/null
    q -d "$db" -f "$HERE/setup.sql" >/dev/null
    q -d "$db" -c "SELECT 1 FROM pg_create_logical_replication_slot('dw_$mode', 'test_decoding')" >/dev/null
    "$TOOLING_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -v direct_access="$setting" -d "$db" \
        -f "$HERE/workload.sql" >"$OUT/$mode.steps" 2>"$OUT/$mode.stderr" || rc=$?
    echo "$mode run: $(wc -l <"$OUT/$mode.steps") steps in $((SECONDS - started)) s (psql exit $rc)"
    q -d "$db" -c "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables
                   WHERE schemaname = 'baton' ORDER BY relname" >"$OUT/$mode.stats"
    q -d "$db" -c "SELECT data FROM pg_logical_slot_get_changes('dw_$mode', NULL, NULL, 'include-xids', '0', 'skip-empty-xacts', '1')" \
        >"$OUT/$mode.decoded"
    q -d "$db" -c "SELECT pg_drop_replication_slot('dw_$mode')" >/dev/null
    q -d "$db" -f "$HERE/checks.sql" >/dev/null
    {
        q -d "$db" -c "SELECT '#time ' || tbl || ' ' || col FROM dw.time_columns()"
        q -d "$db" -F $'\t' -c "SELECT tbl, j FROM dw.rows()"
    } >"$OUT/$mode.rows"
}
run_workload direct on
run_workload spi off

# --- which path wrote ------------------------------------------------------------------
# A step is "n|kind|fired|hot|label|answer" (dw.step in setup.sql). kind direct: its calls
# have a direct path, so in the direct run the fence trigger never fires for them; sql:
# they have none, so it fires alike in both runs; mixed (a batch that goes item by item
# through the statements on both paths, after a direct attempt that wrote nothing in
# the direct run and a statement's in the SPI run): neither.
# fired MODE KIND / hot MODE KIND: the fence trigger's calls, the heap-only updates of
# baton.deliveries, over the steps of that kind.
fired() { awk -F'|' -v kind="$2" '$2 == kind {n += $3} END {print n + 0}' "$OUT/$1.steps"; }
hot() { awk -F'|' -v kind="$2" '$2 == kind {n += $4} END {print n + 0}' "$OUT/$1.steps"; }
direct_fired=$(fired direct direct)
spi_fired=$(fired spi direct)
if ((direct_fired == 0 && spi_fired > 0)); then
    ok "the direct run's claims, finishes and batches wrote without the fence trigger (the SPI run's fired it $spi_fired times)"
else
    not_ok "path: the fence trigger fired $direct_fired times in the direct run's direct steps, $spi_fired times in the SPI run's"
fi
if diff <(awk -F'|' '$2 == "sql" {print $1, $3}' "$OUT/direct.steps") \
    <(awk -F'|' '$2 == "sql" {print $1, $3}' "$OUT/spi.steps") >/dev/null; then
    ok "the steps without a direct path fired the fence trigger alike in both runs ($(fired spi sql) times)"
else
    not_ok "the steps without a direct path fired the fence trigger differently:"
    diff <(awk -F'|' '$2 == "sql" {print $1, $5, $3}' "$OUT/direct.steps") \
        <(awk -F'|' '$2 == "sql" {print $1, $5, $3}' "$OUT/spi.steps") | show
fi

# --- answers -----------------------------------------------------------------------------
answers() { cut -d'|' -f1,2,5- "$OUT/$1.steps"; }
steps=$(wc -l <"$OUT/spi.steps")
if ((steps > 0)) && diff <(answers direct) <(answers spi) >"$OUT/answers.diff"; then
    ok "every call answered alike in both runs ($steps steps)"
else
    not_ok "the calls answered differently (< direct, > spi):"
    show <"$OUT/answers.diff"
fi
for mode in direct spi; do
    if [[ -s $OUT/$mode.stderr ]]; then
        not_ok "the $mode run's workload logged:"
        sort "$OUT/$mode.stderr" | uniq -c | show
    else
        ok "the $mode run's workload logged no warning"
    fi
done

# --- rows and sequences ----------------------------------------------------------------
for mode in direct spi; do
    "$PY" "$HERE/normalise.py" rows "$OUT/$mode.rows" >"$OUT/$mode.rows.normalised"
done
counts() { awk '{n[$1]++} END {for (t in n) printf "%s=%d ", t, n[t]}' "$1" | tr ' ' '\n' | sort | xargs; }
if diff "$OUT/direct.rows.normalised" "$OUT/spi.rows.normalised" >"$OUT/rows.diff"; then
    ok "every row of every baton table alike, times ranked ($(counts "$OUT/spi.rows.normalised"))"
else
    not_ok "the rows differ (< direct, > spi; times ranked):"
    show <"$OUT/rows.diff"
fi
# The comparison can fail: the direct run's rows with one delivery's status changed.
sed '0,/^deliveries .*"status": "finished"/s//&X/' "$OUT/direct.rows.normalised" >"$OUT/rows.changed"
if ! cmp -s "$OUT/rows.changed" "$OUT/direct.rows.normalised" && ! diff -q "$OUT/rows.changed" "$OUT/spi.rows.normalised" >/dev/null; then
    ok "the row comparison tells a run whose delivery has another status"
else
    not_ok "the row comparison did not tell a changed status"
fi
sequences() { q -d "diff_$1" -c "SELECT relname || ' ' || pg_sequence_last_value(oid::regclass) FROM pg_class
                                   WHERE relnamespace = 'baton'::regnamespace AND relkind = 'S' ORDER BY 1" | xargs; }
check "the sequences stand alike" "$(sequences direct)" "$(sequences spi)"
read -r with_tid at_delivery < <(q -d diff_direct -F ' ' -c "SELECT * FROM dw.row_tids()")
if ((with_tid > 0 && with_tid == at_delivery)); then
    ok "direct run: each of the $with_tid ready rows with a row_tid points at its delivery"
else
    not_ok "direct run: $with_tid ready rows with a row_tid, $at_delivery at their delivery"
fi
check "SPI run: no ready row has a row_tid (the trigger runs before the row is written)" "0 0" \
    "$(q -d diff_spi -F ' ' -c "SELECT * FROM dw.row_tids()")"

# --- indexes -----------------------------------------------------------------------------
for mode in direct spi; do
    read -r tables indexes problems < <(tooling_amcheck "diff_$mode" | tee "$OUT/$mode.amcheck" | head -n 1)
    if [[ $problems == 0 ]]; then
        ok "$mode run: amcheck (verify_heapam on $tables tables, bt_index_parent_check heapallindexed on $indexes btree indexes)"
    else
        not_ok "$mode run: amcheck found $problems problems:"
        tail -n +2 "$OUT/$mode.amcheck" | show
    fi
    bad=$(q -d "diff_$mode" -F ' ' -c "SELECT index_name, used_index, by_index, by_seq FROM dw.index_scans()
                                       WHERE NOT used_index OR by_index <> by_seq")
    if [[ -z $bad ]]; then
        ok "$mode run: each btree index of baton.deliveries read by an index scan returns what a sequential scan returns ($(q -d "diff_$mode" -c "SELECT string_agg(index_name, ' ') FROM dw.index_scans()"))"
    else
        not_ok "$mode run: index scans differ from sequential scans (index used rows-and-digest seq-rows-and-digest):"
        echo "$bad" | show
    fi
done

# --- the BRIN ----------------------------------------------------------------------------
brin_check() {
    local mode=$1 when=$2 predicates mismatched used first
    IFS='|' read -r predicates mismatched used first < <(q -d "diff_$mode" -c "SELECT * FROM dw.brin_scans()")
    if [[ $used == t && $mismatched == 0 ]]; then
        ok "$mode run: dx_brin, $when: bitmap scans return what sequential scans return ($predicates predicates on settled_at and lease_until)"
    else
        not_ok "$mode run: dx_brin, $when: $mismatched of $predicates predicates differ (bitmap scan of dx_brin used: $used); first: $first"
    fi
}
for mode in direct spi; do
    IFS='|' read -r heap_only summarized < <(q -d "diff_$mode" -c "SELECT * FROM dw.hot_settled()")
    hot=$(awk '$1 == "deliveries" {print $4}' FS='|' "$OUT/$mode.stats")
    if ((MAJOR >= 16)); then
        # The finishes of the direct kind of steps settle rows: in the direct run those
        # heap-only updates are the direct path's own.
        by_direct=$(hot "$mode" direct)
        if ((hot > 0 && by_direct > 0 && summarized > 0)); then
            ok "$mode run: summarizing heap-only updates happened: n_tup_hot_upd $hot ($by_direct by claims, finishes and batches); $heap_only settled deliveries are heap-only tuples, $summarized of them in a range dx_brin summarizes with bounds that hold their settled_at"
        else
            not_ok "$mode run: summarizing heap-only updates: n_tup_hot_upd $hot ($by_direct by claims, finishes and batches); $heap_only settled deliveries are heap-only tuples, $summarized of them in a range dx_brin summarizes with bounds that hold their settled_at (each must be above 0)"
        fi
    else
        # PostgreSQL 15: a change to a BRIN column blocks HOT like any indexed column.
        check "$mode run: PostgreSQL $MAJOR makes no heap-only update of a settled delivery (settled_at is a BRIN column)" "0" "$heap_only"
    fi
    brin_check "$mode" "as the workload left it"
    q -d "diff_$mode" -c "SELECT brin_summarize_new_values('baton.dx_brin')" >/dev/null
    brin_check "$mode" "after brin_summarize_new_values"
done

# --- pg_stat_user_tables ---------------------------------------------------------------
# The counters count writes of rolled-back subtransactions too. Where the runs' counts
# differ by design, the difference expected (SPI run minus direct run) is listed here:
#   ready n_tup_ins +2: the workload's enqueue_batch of q43 and q1 (q1's key taken with
#     another payload) first tries to insert both at once and rolls that back when it
#     meets the taken key. The statement's BEFORE trigger has written the ready rows of
#     q43 and q1 by the time the insert meets q1's key in the unique index; the direct
#     insert writes every delivery's index entries before any ready row, so it meets
#     the key first and writes none. Neither survives (logical decoding compares what
#     committed).
declare -A DESIGNED=([ready:n_tup_ins]=2)
echo "pg_stat_user_tables (table: n_tup_ins n_tup_upd n_tup_hot_upd n_tup_del, direct / spi):"
join -t'|' "$OUT/direct.stats" "$OUT/spi.stats" | awk -F'|' '{printf "    %-16s %s %s %s %s / %s %s %s %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
counters=(n_tup_ins n_tup_upd n_tup_hot_upd n_tup_del)
unexpected=()
designed=()
while IFS='|' read -r table d1 d2 d3 d4 s1 s2 s3 s4; do
    direct_counts=("$d1" "$d2" "$d3" "$d4")
    spi_counts=("$s1" "$s2" "$s3" "$s4")
    for k in 0 1 2 3; do
        key=$table:${counters[k]}
        delta=$((spi_counts[k] - direct_counts[k]))
        if [[ -n ${DESIGNED[$key]+x} ]]; then
            if ((delta == DESIGNED[$key])); then
                designed+=("$table.${counters[k]} ${direct_counts[k]} / ${spi_counts[k]}")
            else
                unexpected+=("$table.${counters[k]} ${direct_counts[k]} / ${spi_counts[k]} (by design: ${DESIGNED[$key]} more in the SPI run)")
            fi
        elif ((delta != 0)); then
            unexpected+=("$table.${counters[k]} ${direct_counts[k]} / ${spi_counts[k]}")
        fi
    done
done < <(join -t'|' "$OUT/direct.stats" "$OUT/spi.stats")
if ((${#unexpected[@]} == 0 && $(wc -l <"$OUT/spi.stats") > 0)); then
    ok "pg_stat_user_tables: inserts, updates, heap-only updates and deletes alike in both runs, but by design ${designed[*]:-nothing} (direct / spi)"
else
    not_ok "pg_stat_user_tables differ (direct / spi): ${unexpected[*]}"
fi

# --- logical decoding --------------------------------------------------------------------
# Compared a transaction at a time, each one's changes as a set: the order of changes
# inside a transaction differs by design. The statements' fence trigger writes a
# delivery's ready and lease rows before the delivery (BEFORE ROW), the direct path
# after it; a batched claim's UPDATE writes its rows in the order of its join, the
# direct claim in claim order. A consumer sees each transaction whole, at its commit.
for mode in direct spi; do
    "$PY" "$HERE/normalise.py" decoding "$OUT/$mode.decoded" >"$OUT/$mode.decoded.normalised"
    "$PY" "$HERE/normalise.py" decoding --sorted "$OUT/$mode.decoded" >"$OUT/$mode.decoded.sorted"
done
changes=$(grep -c '^table ' "$OUT/spi.decoded.sorted")
xacts=$(grep -c '^BEGIN' "$OUT/spi.decoded.sorted")
if ((changes > 0)) && diff "$OUT/direct.decoded.sorted" "$OUT/spi.decoded.sorted" >"$OUT/decoded.diff"; then
    ok "logical decoding sent the same transactions with the same changes ($xacts transactions, $changes changes; times ranked)"
    echo "    in another order inside the transaction (by design): $("$PY" "$HERE/normalise.py" reordered \
        "$OUT/direct.decoded.normalised" "$OUT/spi.decoded.normalised")"
else
    not_ok "logical decoding differs (< direct, > spi; times ranked, each transaction's changes sorted):"
    show <"$OUT/decoded.diff"
fi

if [[ ${BATON_KEEP_LOGS:-0} == 1 ]]; then
    keep=$(mktemp -d /tmp/pg_baton-differential-logs.XXXXXX)
    cp -a "$OUT/." "$keep/"
    echo "the runs' files: $keep"
fi
echo "PostgreSQL $MAJOR, $((SECONDS - STARTED)) s"
echo "$PASS passed, $FAIL failed"
((FAIL == 0))
