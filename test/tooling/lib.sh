# shellcheck shell=bash
# Shared helpers of the tooling checks (test/tooling/*.sh): counters, psql, a database
# filled with every kind of row, row-by-row digests and amcheck. Source it; PG_CONFIG
# chooses the server (default pg_config on PATH). TOOLING_BINDIR, when set before, names
# the directory of the client programs instead (psql, pg_dump): a suite that spans two
# majors uses the newer one's, which read and dump the older server too.

TOOLING_BINDIR=${TOOLING_BINDIR:-$("${PG_CONFIG:-pg_config}" --bindir)}
PASS=${PASS:-0}
FAIL=${FAIL:-0}
ok() { PASS=$((PASS + 1)); echo "ok   - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "FAIL - $*"; }
# check NAME EXPECTED ACTUAL
check() { if [[ $2 == "$3" ]]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi; }
# q [psql args...]: one psql call, unaligned, tuples only, stopping at the first error.
q() { "$TOOLING_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
# sqlstate_of DB SQL: the SQLSTATE the statement fails with ("ok" if it succeeds) and its
# message, as "STATE message".
sqlstate_of() {
    local out
    if out=$("$TOOLING_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -d "$1" -c "$2" 2>&1); then
        echo "ok"
    else
        sed -n -E 's/^(psql:[^E]*)?ERROR: +([0-9A-Z]{5}): (.*)$/\2 \3/p' <<<"$out" | head -n 1
    fi
}

# tooling_cluster NAME PORT [postgresql.conf lines...]: the check's own throwaway cluster
# (scripts/cluster.sh, which the caller has sourced) in $DIR/cluster, DIR being a new
# /tmp/pg_baton-NAME.XXXXXX that is removed on exit; PGHOST, PGPORT and PGUSER point at
# it. When it cannot start, reports that and exits.
tooling_cluster() {
    local name=$1 port=$2
    shift 2
    DIR=$(mktemp -d "/tmp/pg_baton-$name.XXXXXX")
    chmod 755 "$DIR"
    trap 'cluster_stop "$DIR/cluster" >/dev/null 2>&1 || true; rm -rf -- "$DIR"' EXIT
    mkdir -p "$DIR/cluster"
    if ! cluster_start "$DIR/cluster" "$(cluster_free_port "$port")" "$@" >/dev/null; then
        not_ok "start a cluster"
        echo "$PASS passed, $FAIL failed"
        exit 1
    fi
}

# The tenants of tooling_fill: one in each state.
TOOLING_T_ACTIVE=00000000-0000-0000-0013-000000000001
TOOLING_T_QUIESCING=00000000-0000-0000-0013-000000000002
TOOLING_T_FENCED=00000000-0000-0000-0013-000000000003
TOOLING_T_DELETED=00000000-0000-0000-0013-000000000004

# tooling_fill DB ROLE: pg_baton rows of every kind in DB (which has the extension):
# tenants in every state, deliveries in every status (some with TOASTed payloads and
# results), a bound target, another with a weight and a pause, a target paused everywhere, two
# versions of a workflow, runs in several states with
# stages, an approval, step entries and markers; ROLE (existing) gets the grant_*
# helpers' privileges and the bound target.
tooling_fill() {
    local db=$1 role=$2 ta=$TOOLING_T_ACTIVE tq=$TOOLING_T_QUIESCING tf=$TOOLING_T_FENCED td=$TOOLING_T_DELETED
    q -d "$db" >/dev/null <<SQL
SELECT baton.create_tenant(t) FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t;
SELECT baton.grant_producer('$role'), baton.grant_worker('$role'), baton.grant_admin('$role');
SELECT baton.bind_target('$ta', 'bound', '$role');
SELECT baton.enqueue(t, 'w', 'k' || i, jsonb_build_object('i', i), '{"cause": {"event": "e"}}')
  FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t, generate_series(1, 12) i;
-- TOASTed: payloads of about 200 kB of hardly compressible text.
SELECT baton.enqueue('$ta', 'big', 'big' || i,
       jsonb_build_object('blob', (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 6000) g)))
  FROM generate_series(1, 3) i;
SELECT baton.finish(t, c.id, c.generation, 'finished',
       jsonb_build_object('out', (SELECT string_agg(md5('r' || g::text), '') FROM generate_series(1, 6000) g)))
  FROM unnest(ARRAY['$ta']::uuid[]) t, baton.claim(t, 'big', '1 hour', 1) c;
SELECT baton.finish(t, c.id, c.generation) FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t, baton.claim(t, 'w', '1 hour', 3) c;
SELECT baton.finish(t, c.id, c.generation, 'failed', '{"why": "no"}') FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t, baton.claim(t, 'w', '1 hour', 2) c;
SELECT baton.retry(t, c.id, c.generation, 'again', '1 hour') FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t, baton.claim(t, 'w', '1 hour', 2) c;
SELECT baton.claim(t, 'w', '1 hour', 2) FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t;
SELECT baton.enqueue('$ta', 'bound', 'b1');
-- Two versions of a workflow, and a gated one.
SELECT baton.define_workflow('tool_wf', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('tool_wf', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"], "max_attempts": 5}}}');
SELECT baton.define_workflow('tool_gate', '{"start": "a", "requires_approval": true, "stages": {"a": {"next": ["@finish"]}}}');
SELECT baton.submit(t, 'tool_wf', jsonb_build_object('n', i), 'run' || i)
  FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t, generate_series(1, 3) i;
SELECT baton.submit('$ta', 'tool_gate', '{"n": 9}', 'gate1') AS g1 \gset
SELECT baton.submit('$ta', 'tool_gate', '{"n": 10}', 'gate2') AS g2 \gset
SELECT baton.approve('$ta', :'g1', 'alice', (SELECT inputs_digest FROM baton.runs WHERE tenant = '$ta' AND id = :'g1'));
SELECT baton.cancel('$ta', :'g2', 'not needed');
-- Each tenant: run1 completed, run2 with a failed stage and a marker in doubt.
SELECT baton.acquire_run(t, r.id, 'o', '1 hour')
  FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t JOIN baton.runs r ON r.tenant = t AND r.idempotency_key IN ('run1', 'run2');
SELECT baton.transition_stage(r.tenant, r.id, 1) FROM baton.runs r WHERE r.idempotency_key IN ('run1', 'run2');
SELECT baton.start_stage(s.tenant, s.run_id, 1, s.id) FROM baton.stages s;
SELECT baton.claim_marker(s.tenant, s.id, "position" => 0, kind => 'mail', operation_id => 'op-' || s.id) FROM baton.stages s;
SELECT baton.complete_marker(s.tenant, s.id, "position" => 0, state => 'done')
  FROM baton.stages s JOIN baton.runs r ON r.tenant = s.tenant AND r.id = s.run_id WHERE r.idempotency_key = 'run1';
SELECT baton.complete_stage(s.tenant, s.run_id, 1, s.id, '{"a": 1}')
  FROM baton.stages s JOIN baton.runs r ON r.tenant = s.tenant AND r.id = s.run_id WHERE r.idempotency_key = 'run1';
SELECT baton.fail_stage(s.tenant, s.run_id, 1, s.id, 'boom', '1 hour')
  FROM baton.stages s JOIN baton.runs r ON r.tenant = s.tenant AND r.id = s.run_id WHERE r.idempotency_key = 'run2';
SELECT baton.transition_stage(r.tenant, r.id, 1) FROM baton.runs r WHERE r.idempotency_key = 'run1';
SELECT baton.start_stage(s.tenant, s.run_id, 1, s.id) FROM baton.stages s WHERE s.is_current AND s.status = 'pending';
SELECT baton.complete_stage(s.tenant, s.run_id, 1, s.id, '{"b": 1}') FROM baton.stages s WHERE s.is_current AND s.status = 'running';
SELECT baton.transition_stage(r.tenant, r.id, 1) FROM baton.runs r WHERE r.idempotency_key = 'run1';
SELECT baton.enqueue(r.tenant, 'runw', 'of-' || r.id, run_id => r.id) FROM baton.runs r WHERE r.idempotency_key = 'run1';
-- Step entries outside the engine, with markers.
SELECT e.entry_id, baton.claim_marker(t, e.entry_id, "position" => 1, kind => 'db')
  FROM unnest(ARRAY['$ta', '$tq', '$tf', '$td']::uuid[]) t, baton.enter_step(t, 'user-1', 'purge', 'd1') e;
-- A binding with a weight and a pause, and a target paused everywhere (0.13.0).
SELECT baton.bind_target('$ta', 'paused', '$role');
SELECT baton.set_weight('$ta', 'paused', 3), baton.pause('$ta', 'paused'), baton.pause_everywhere('runw');
-- Keys limited to one, each with a delivery admitted and one waiting (0.14.0).
SELECT baton.bind_target('$ta', 'keyed', '$role');
SELECT baton.limit_key('$ta', 'keyed', 1, 'k'), baton.limit_key('$ta', 'keyed', 1, ordered => true);
SELECT baton.enqueue_keyed('$ta', 'keyed', 'keyed-' || key || g, key) FROM unnest(ARRAY['k', 'other']) key, generate_series(1, 2) g;
-- Tenant states last.
SELECT baton.set_tenant_state('$tq', 'quiescing'), baton.set_tenant_state('$tf', 'fenced');
SELECT baton.set_tenant_state('$td', 'quiescing'), baton.set_tenant_state('$td', 'deleted');
SQL
}

# tooling_copy_rows FROM TO: the rows of pg_baton's tables in database FROM (at the
# default version, filled through the functions) written into database TO, whose
# pg_baton is at an older version. The library refuses every call there, and every
# write its triggers see, until ALTER EXTENSION pg_baton UPDATE (docs/guide/versions.md): so
# the rows go in as plain SQL, by COPY of the columns TO's tables have, as a superuser
# with triggers off (session_replication_role = replica), and TO's sequences are set
# to FROM's. TO keeps its own wake-up secret, and its in-use mark is set when FROM's
# is. FROM's rows must be valid in TO's schema (its statuses, its columns).
tooling_copy_rows() {
    local from=$1 to=$2 table cols seq
    for table in $(q -d "$to" -c "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace
                                    AND c.relkind = 'r' AND c.relname NOT IN ('wakeup_key', 'in_use') ORDER BY 1"); do
        cols=$(q -d "$to" -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
                               WHERE attrelid = 'baton.$table'::regclass AND attnum > 0 AND NOT attisdropped")
        q -d "$from" -c "COPY (SELECT $cols FROM baton.$table) TO STDOUT" \
            | q -d "$to" -c "SET session_replication_role = replica" -c "COPY baton.$table ($cols) FROM STDIN" || return 1
    done
    if [[ -n $(q -d "$to" -c "SELECT to_regclass('baton.in_use')") && $(q -d "$from" -c "SELECT count(*) FROM baton.in_use") != 0 ]]; then
        q -d "$to" -c "INSERT INTO baton.in_use DEFAULT VALUES ON CONFLICT DO NOTHING" >/dev/null || return 1
    fi
    for seq in $(q -d "$to" -c "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind = 'S'"); do
        q -d "$to" -c "SELECT setval('baton.$seq', last_value, is_called) FROM (VALUES ($(q -d "$from" -c "SELECT last_value || ', ' || is_called FROM baton.$seq"))) v(last_value, is_called)" >/dev/null || return 1
    done
}

# tooling_tables DB: the tables and sequences of schema baton, one per line.
tooling_tables() {
    q -d "$1" -c "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = 'baton' AND c.relkind IN ('r', 'S') ORDER BY c.relkind, c.relname"
}

# tooling_digest DB DIR [all]: DIR/<table> holds one md5 per row of each baton table
# (sorted), DIR/<sequence> its last_value and is_called; DIR/counts the row count of each.
# baton.in_use is left out: it says whether this copy has been written to, and a
# restored copy starts without its row by design (docs/guide/operations.md, "Backups"). So is
# baton.wakeup_key: every copy makes a secret of its own (docs/guide/wakeups.md). Of
# baton.leases only the live rows count (those of leases the deliveries hold): it is not
# dumped, and a restore writes those alone. Of baton.key_slots and baton.key_waiting
# (not dumped either) the counts and the waiting deliveries count, not the times a
# restore wrote them at. With "all" (a copy of the files, as
# pg_upgrade makes, which must keep everything) none of this is left out: baton.in_use,
# baton.wakeup_key and every row of baton.leases count too.
tooling_digest() {
    local db=$1 dir=$2 mode=${3:-} rel kind skip="'in_use', 'wakeup_key'"
    [[ $mode == all ]] && skip="''"
    mkdir -p "$dir"
    : >"$dir/counts"
    while IFS='|' read -r rel kind; do
        if [[ $kind == S ]]; then
            q -d "$db" -c "SELECT last_value || ' ' || is_called FROM baton.$rel" >"$dir/$rel"
        elif [[ $rel =~ ^key_(slots|waiting)$ && $mode != all ]]; then
            # Not dumped: a restore admits the deliveries it loads afresh, at its own
            # time; the counts and who waits must match, not when.
            local cols="t.tenant, t.target, t.key, t.admitted, t.ready"
            [[ $rel == key_waiting ]] && cols="t.tenant, t.target, t.key, t.rank, t.id, t.priority, t.run_after"
            q -d "$db" -c "SELECT md5(($cols)::text) FROM baton.$rel t ORDER BY 1" >"$dir/$rel"
            echo "$rel $(wc -l <"$dir/$rel")" >>"$dir/counts"
        elif [[ $rel == leases && $mode != all ]]; then
            # Not dumped: a restore writes the leases its claimed deliveries hold, and
            # only those (the rows no delivery holds any longer wait for reap).
            q -d "$db" -c "SELECT md5(l::text) FROM baton.leases l JOIN baton.deliveries d ON d.tenant = l.tenant AND d.id = l.id
                             AND d.generation = l.generation AND d.lease_until = l.lease_until AND d.status = 'claimed' ORDER BY 1" >"$dir/$rel"
            echo "$rel $(wc -l <"$dir/$rel")" >>"$dir/counts"
        else
            q -d "$db" -c "SELECT md5(t::text) FROM baton.$rel t ORDER BY 1" >"$dir/$rel"
            echo "$rel $(wc -l <"$dir/$rel")" >>"$dir/counts"
        fi
    done < <(q -d "$db" -c "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                            WHERE n.nspname = 'baton' AND c.relkind IN ('r', 'S') AND c.relname NOT IN ($skip)
                            ORDER BY c.relname")
}

# tooling_digest_diff A B: prints the tables whose rows differ (with how many rows each
# side lacks); returns non-zero when any differs or a side has a table the other lacks.
tooling_digest_diff() {
    local a=$1 b=$2 name rc=0
    for name in $( (ls "$a"; ls "$b") | sort -u); do
        [[ $name == counts ]] && continue
        if [[ ! -f $a/$name || ! -f $b/$name ]]; then
            echo "  $name: only on one side"
            rc=1
        elif ! cmp -s "$a/$name" "$b/$name"; then
            echo "  $name: $(comm -23 "$a/$name" "$b/$name" | wc -l) row(s) missing, $(comm -13 "$a/$name" "$b/$name" | wc -l) row(s) extra"
            rc=1
        fi
    done
    return $rc
}

# tooling_restored COPY SOURCE: the restored database COPY holds exactly the rows of
# SOURCE, whose digest is in $DIR/SOURCE (tooling_digest); amcheck finds nothing in it.
tooling_restored() {
    local copy=$1 source=$2 out tables indexes problems
    tooling_digest "$copy" "$DIR/$copy"
    if out=$(tooling_digest_diff "$DIR/$source" "$DIR/$copy"); then
        ok "$copy holds every row of $source ($(awk '{n += $2} END {print n}' "$DIR/$copy/counts") rows in $(wc -l <"$DIR/$copy/counts") tables, sequences at the same values)"
    else
        not_ok "$copy differs from $source:"
        echo "$out"
    fi
    read -r tables indexes problems < <(tooling_amcheck "$copy" | head -n 1)
    check "amcheck on $copy ($tables tables, $indexes indexes)" "0" "$problems"
}

# tooling_amcheck DB [standby|check]: amcheck on every baton table (verify_heapam with
# its TOAST) and every btree index of them and of their TOAST tables:
# bt_index_parent_check(heapallindexed, rootdescend) on a primary, bt_index_check
# (heapallindexed) on a standby (where amcheck must already be installed: it is created
# on the primary when missing) and with "check" (bt_index_check on a primary, amcheck
# created when missing). Prints "TABLES INDEXES PROBLEMS", then each problem.
tooling_amcheck() {
    local db=$1 mode=${2:-primary} idxcheck tables indexes idx out problems=()
    if [[ $mode == standby || $mode == check ]]; then
        [[ $mode == check ]] && q -d "$db" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null
        idxcheck="bt_index_check(%s, heapallindexed => true)"
    else
        q -d "$db" -c "CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null
        idxcheck="bt_index_parent_check(%s, heapallindexed => true, rootdescend => true)"
    fi
    local rels="SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'baton' AND c.relkind = 'r'"
    tables=$(q -d "$db" -c "SELECT count(*) FROM ($rels) r")
    while IFS= read -r out; do
        [[ -n $out ]] && problems+=("$out")
    done < <(q -d "$db" -c "SELECT r.oid::regclass || ' block ' || coalesce(v.blkno::text, '?') || ': ' || v.msg
                            FROM ($rels) r, LATERAL verify_heapam(r.oid, check_toast => true) v" 2>&1)
    indexes=0
    while IFS= read -r idx; do
        indexes=$((indexes + 1))
        # shellcheck disable=SC2059
        if ! out=$(q -d "$db" -c "SELECT $(printf "$idxcheck" "'$idx'::regclass")" 2>&1); then
            problems+=("$idx: $out")
        fi
    done < <(q -d "$db" -c "SELECT i.indexrelid::regclass FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                            JOIN pg_am a ON a.oid = ic.relam AND a.amname = 'btree'
                            WHERE i.indrelid IN (SELECT oid FROM ($rels) r UNION ALL
                                                 SELECT reltoastrelid FROM ($rels) r WHERE reltoastrelid <> 0)
                            ORDER BY 1")
    echo "$tables $indexes ${#problems[@]}"
    ((${#problems[@]} == 0)) || printf '%s\n' "${problems[@]}"
}
