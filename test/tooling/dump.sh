#!/usr/bin/env bash
# pg_dump and pg_restore keep pg_baton's rows. On a throwaway cluster of its own: a
# database filled with rows of every kind (tooling_fill: tenants in every state,
# deliveries in every status with TOASTed payloads and results, workflows of two
# versions, runs, stages, approvals, step entries, markers, a bound target, grants) is
# dumped and restored, without special flags, by a superuser:
#   - pg_dump -Fc | pg_restore, pg_restore -j 2, and plain pg_dump | psql;
#   - each restored database holds every row of every baton table, compared row by row
#     (md5 of each row) with the source, and the comparison is shown to fail when one
#     row is missing;
#   - the counters come back as they were, the loaded deliveries not counted again;
#   - sequences continue, grants survive, the restored database works at once
#     (enqueue, claim, finish, a transition, a marker claim), the fence holds there;
#   - the way a restore passes the fence is no way for live writes to pass it;
#   - pg_dump --schema-only, a dump of another schema and --data-only into an existing
#     install behave as docs/guide/operations.md says; amcheck is clean on every restored copy.
# Last line: "N passed, N failed".
set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source=test/tooling/lib.sh
source "$HERE/lib.sh"
B=$TOOLING_BINDIR

# The background reaper runs in "fresh", a restored copy (it must leave a restore alone).
tooling_cluster dump 56800 "shared_preload_libraries = 'pg_baton'" \
    "baton.reaper_databases = 'fresh'" "baton.reaper_interval = '100ms'"

TA=$TOOLING_T_ACTIVE TQ=$TOOLING_T_QUIESCING TF=$TOOLING_T_FENCED TD=$TOOLING_T_DELETED
q -c "CREATE ROLE baton_dump_app" -c "CREATE ROLE baton_dump_loader" -c "CREATE DATABASE src" >/dev/null
q -d src -c "CREATE EXTENSION pg_baton" >/dev/null
tooling_fill src baton_dump_app || not_ok "fill the source database"
# A lease that has expired by the time of the dump.
q -d src -c "SELECT baton.enqueue('$TA', 'short', 's1')" -c "SELECT count(*) FROM baton.claim('$TA', 'short', '1 millisecond')" >/dev/null
# The counters of all that, written into baton.event_counts (no reaper runs in src).
q -d src -c "SELECT baton.flush_counts()" >/dev/null
tooling_digest src "$DIR/src"
echo "source rows: $(awk '{printf "%s%s=%s", sep, $1, $2; sep = " "}' "$DIR/src/counts")"
check "the source holds deliveries in every status" "claimed,failed,finished,pending" \
    "$(q -d src -c "SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM baton.deliveries")"
check "the source holds tenants in every state" "active,deleted,fenced,quiescing" \
    "$(q -d src -c "SELECT string_agg(state, ',' ORDER BY state) FROM baton.tenants")"
check "the source holds TOASTed payloads and results" "t" \
    "$(q -d src -c "SELECT count(*) >= 3 FROM baton.deliveries WHERE pg_column_size(payload) > 2000 OR pg_column_size(result) > 2000")"

# --- pg_dump -Fc | pg_restore, in one job and in two --------------------------------
"$B/pg_dump" -Fc -d src -f "$DIR/src.dump"
q -c "CREATE DATABASE custom" -c "CREATE DATABASE parallel" -c "CREATE DATABASE plain" >/dev/null
if "$B/pg_restore" -d custom "$DIR/src.dump" 2>"$DIR/restore.err"; then
    ok "pg_restore of pg_dump -Fc reports no error"
else
    not_ok "pg_restore of pg_dump -Fc reports errors: $(head -c 600 "$DIR/restore.err")"
fi
tooling_restored custom src
# The restore brings the counters and counts none of the deliveries it loads again.
counters="SELECT concat_ws(' ', sum(enqueued), sum(claimed), sum(finished), sum(failed)) FROM baton.delivery_counters"
check "the restored counters are the source's: the restore counted nothing again" "$(q -d src -c "$counters") 0" \
    "$(q -d custom -c "SELECT baton.flush_counts()" >/dev/null; q -d custom -c "$counters") $(q -d custom -c "SELECT baton.flush_counts()")"
if "$B/pg_restore" -j 2 -d parallel "$DIR/src.dump" 2>"$DIR/restore-j.err"; then
    ok "pg_restore -j 2 reports no error"
else
    not_ok "pg_restore -j 2 reports errors: $(head -c 600 "$DIR/restore-j.err")"
fi
tooling_restored parallel src
# --- plain pg_dump | psql --------------------------------------------------------------
if "$B/pg_dump" -d src | q -d plain >/dev/null 2>"$DIR/plain.err"; then
    ok "pg_dump | psql (ON_ERROR_STOP) runs through"
else
    not_ok "pg_dump | psql stops: $(head -c 600 "$DIR/plain.err")"
fi
tooling_restored plain src

# --- the comparison can fail -----------------------------------------------------------
q -c "CREATE DATABASE missing" >/dev/null
"$B/pg_restore" -d missing "$DIR/src.dump" 2>/dev/null
q -d missing -c "DELETE FROM baton.deliveries WHERE tenant = '$TA' AND id = (SELECT min(id) FROM baton.deliveries WHERE tenant = '$TA')" >/dev/null
tooling_digest missing "$DIR/missing"
out=$(tooling_digest_diff "$DIR/src" "$DIR/missing")
check "the row comparison reports a restored copy that lacks one delivery" "  deliveries: 1 row(s) missing, 0 row(s) extra" "$out"

# --- sequences continue, grants survive, the copy works at once ------------------------
check "a new delivery id follows the restored ones" "t" \
    "$(q -d custom -c "SELECT baton.enqueue('$TA', 'w', 'after-restore') > (SELECT max(id) FROM baton.deliveries WHERE dedup_key <> 'after-restore')")"
check "a new entry id follows the restored stages and step entries" "t" \
    "$(q -d custom -c "SELECT e.entry_id > greatest((SELECT max(id) FROM baton.stages), (SELECT max(id) FROM baton.step_entries))
                       FROM baton.enter_step('$TA', 'user-2', 'after', 'd2') e" 2>&1 | sed 's/.*ERROR.*/error/')"
check "the grant_* helpers' grants survive (EXECUTE on claim, enqueue, set_tenant_state)" "true|true|true" \
    "$(q -d custom -c "SELECT string_agg(has_function_privilege('baton_dump_app', p.oid, 'EXECUTE')::text, '|' ORDER BY p.proname)
                         FROM pg_proc p WHERE p.pronamespace = 'baton'::regnamespace AND p.proname IN ('claim', 'enqueue', 'set_tenant_state')" 2>&1)"
check "the bound role claims its target after the restore" "1" \
    "$(q -d custom -c "SET ROLE baton_dump_app" -c "SELECT count(*) FROM baton.claim('$TA', 'bound', '1 minute', 5)")"
q -d custom -c "SELECT baton.grant_worker('baton_dump_loader')" >/dev/null
check "another role is refused the bound target after the restore" "DU005" \
    "$(sqlstate_of custom "SET ROLE baton_dump_loader; SELECT baton.renew('$TA', $(q -d custom -c "SELECT id FROM baton.deliveries WHERE target = 'bound'"), 1, '1 minute')" | cut -d' ' -f1)"
check "claim and finish after the restore" "finished" \
    "$(q -d custom -c "SELECT string_agg(DISTINCT baton.finish('$TA', c.id, c.generation), ',') FROM baton.claim('$TA', 'w', '1 minute', 100) c")"
check "a claimed delivery of the source is still held by its generation" "t" \
    "$(q -d custom -c "SELECT bool_and(baton.renew(tenant, id, generation, '1 hour') IS NOT NULL) FROM baton.deliveries WHERE tenant = '$TA' AND status = 'claimed' AND target = 'w'" 2>&1)"
check "a workflow transition after the restore (run3 of the active tenant)" "a" \
    "$(q -d custom 2>&1 <<SQL | tail -n 1
SELECT id AS run, baton.acquire_run('$TA', id, 'o2', '1 hour') AS gen FROM baton.runs WHERE tenant = '$TA' AND idempotency_key = 'run3' \\gset
SELECT stage FROM baton.transition_stage('$TA', :'run', :gen);
SQL
)"
check "a marker claim after the restore, and a restored marker is not claimed twice" "t|f" \
    "$(q -d custom -c "SELECT baton.claim_marker('$TA', e.entry_id, 0, 'mail') FROM baton.enter_step('$TA', 'user-3', 'x', 'd3') e" 2>&1)|$(q -d custom -c "SELECT baton.claim_marker('$TA', (SELECT entry_id FROM baton.markers WHERE tenant = '$TA' AND kind = 'db'), 1, 'db')" 2>&1)"
for t in "$TQ quiescing" "$TF fenced" "$TD deleted"; do
    set -- $t
    check "the $2 tenant still refuses writes after the restore (enqueue)" "DU002" \
        "$(sqlstate_of custom "SELECT baton.enqueue('$1', 'w', 'late')" | cut -d' ' -f1)"
done
check "the fenced tenant refuses a claim after the restore" "DU002" \
    "$(sqlstate_of custom "SELECT baton.claim('$TF', 'w', '1 minute')" | cut -d' ' -f1)"

# --- the restore's way past the fence is no way for live writes ------------------------
# A fresh restore not yet written to: the window in which a restore's COPY passes the
# fence (docs/guide/operations.md, "Backups"). Each other kind of write is refused even now.
q -c "CREATE DATABASE fresh" >/dev/null
"$B/pg_restore" -d fresh "$DIR/src.dump" 2>/dev/null
in_use() { q -d fresh -c "SELECT count(*) FROM baton.in_use"; }
check "a fresh restore is not in use yet" "0" "$(in_use)"
check "the restore wrote the lease of every claimed delivery it loaded into baton.leases (not dumped)" "t" \
    "$(q -d fresh -c "SELECT count(*) > 0 AND count(*) = (SELECT count(*) FROM baton.deliveries WHERE status = 'claimed') FROM baton.leases l JOIN baton.deliveries d ON d.tenant = l.tenant AND d.id = l.id AND d.generation = l.generation AND d.lease_until = l.lease_until AND d.status = 'claimed'")"
sleep 1
check "the background reaper leaves a restore alone (an expired lease stays claimed)" "claimed 0" \
    "$(q -d fresh -c "SELECT status FROM baton.deliveries WHERE dedup_key = 's1'") $(in_use)"
row="'$TF', 'w', 'sneak'"
check "a superuser's INSERT into a fenced tenant is refused" "DU002" \
    "$(sqlstate_of fresh "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ($row)" | cut -d' ' -f1)"
q -d fresh -c "GRANT USAGE ON SCHEMA baton TO baton_dump_loader" -c "GRANT INSERT ON baton.deliveries TO baton_dump_loader" >/dev/null
check "COPY FROM by a role that may insert but does not own the table is refused" "fenced" \
    "$(printf '%s\tw\tsneak\n' "$TF" | q -d fresh -c "SET ROLE baton_dump_loader" -c "COPY baton.deliveries (tenant, target, dedup_key) FROM STDIN" 2>&1 | sed -n 's/^ERROR: .* is fenced$/fenced/p; /ERROR/!d; /is fenced/!p')"
printf '%s\tw\tsneak\n' "$TF" >"$DIR/row.tsv"
chmod 644 "$DIR/row.tsv"
check "COPY run from inside a function is refused" "DU002" \
    "$(sqlstate_of fresh "DO \$\$ BEGIN EXECUTE 'COPY baton.deliveries (tenant, target, dedup_key) FROM ''$DIR/row.tsv'''; END \$\$" | cut -d' ' -f1)"
q -d fresh >/dev/null <<SQL
CREATE TABLE public.inbox (tenant uuid, target text, dedup_key text);
CREATE FUNCTION public.forward() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (NEW.tenant, NEW.target, NEW.dedup_key); RETURN NEW; END \$\$;
CREATE TRIGGER forward AFTER INSERT ON public.inbox FOR EACH ROW EXECUTE FUNCTION public.forward();
SQL
check "a COPY into another table whose trigger writes to a fenced tenant is refused" "1" \
    "$(printf '%s\tw\tsneak\n' "$TF" | q -d fresh -c "COPY public.inbox FROM STDIN" 2>&1 | grep -c 'is fenced')"
check "the functions refuse the fenced tenant" "DU002" \
    "$(sqlstate_of fresh "SELECT baton.retry('$TF', id, generation, 'x') FROM baton.deliveries WHERE tenant = '$TF' AND status = 'claimed' LIMIT 1" | cut -d' ' -f1)"
check "no row of the fenced tenant got in, and refused writes left the restore window open" "0 0" \
    "$(q -d fresh -c "SELECT count(*) FROM baton.deliveries WHERE tenant = '$TF' AND dedup_key = 'sneak'") $(in_use)"
check "in the window, the owner's top-level COPY loads a fenced tenant's row (what a restore does)" "COPY 1" \
    "$(printf '%s\tw\tlate-restore\n' "$TF" | "$TOOLING_BINDIR/psql" -X -At -d fresh -c "COPY baton.deliveries (tenant, target, dedup_key) FROM STDIN" 2>&1)"
q -d fresh -c "SELECT baton.enqueue('$TA', 'w', 'first-write')" >/dev/null
check "the first write closes the window (baton.in_use gets its row)" "1" "$(in_use)"
reaped=f
for _ in $(seq 1 50); do
    [[ $(q -d fresh -c "SELECT status FROM baton.deliveries WHERE dedup_key = 's1'") == pending ]] && { reaped=t; break; }
    sleep 0.2
done
check "once the database is in use, the reaper reaps the expired lease" "t" "$reaped"
check "after it, the owner's COPY into a fenced tenant is refused too" "1" \
    "$(printf '%s\tw\tsneak2\n' "$TF" | q -d fresh -c "COPY baton.deliveries (tenant, target, dedup_key) FROM STDIN" 2>&1 | grep -c 'is fenced')"
# The wake-up secret is not dumped: the restore made one of its own.
check "a restore has a wake-up secret of its own, not the source's" "1 false" \
    "$(q -d fresh -c "SELECT count(*) || ' ' || bool_or(md5(secret) = '$(q -d src -c "SELECT md5(secret) FROM baton.wakeup_key")') FROM baton.wakeup_key")"
check "a database in use has its baton.in_use row (the source)" "1" "$(q -d src -c "SELECT count(*) FROM baton.in_use")"

# --- --schema-only, another schema, --data-only ----------------------------------------
q -c "CREATE DATABASE schema_only" -c "CREATE DATABASE data_only" >/dev/null
if "$B/pg_dump" --schema-only -d src | q -d schema_only >/dev/null 2>"$DIR/schema.err"; then
    ok "pg_dump --schema-only | psql runs through"
else
    not_ok "pg_dump --schema-only | psql: $(head -c 400 "$DIR/schema.err")"
fi
check "the schema-only copy has pg_baton in the source's version and no rows" \
    "$(q -d src -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_baton'") 0" \
    "$(q -d schema_only -c "SELECT extversion || ' ' || (SELECT count(*) FROM baton.deliveries) FROM pg_extension WHERE extname = 'pg_baton'")"
check "the schema-only copy works (create_tenant, enqueue)" "1" \
    "$(q -d schema_only -c "SELECT baton.create_tenant('$TA')" -c "SELECT baton.enqueue('$TA', 'w', 'k')" | tail -n 1)"
q -d src -c "CREATE TABLE public.other (x int)" -c "INSERT INTO public.other VALUES (7)" >/dev/null
if "$B/pg_dump" -n public -d src >"$DIR/public.sql" 2>"$DIR/public.err"; then
    ok "pg_dump -n public (another schema) runs"
else
    not_ok "pg_dump -n public: $(head -c 400 "$DIR/public.err")"
fi
check "a dump of another schema holds that schema and no baton rows" "1 0" \
    "$(grep -c '^COPY public.other' "$DIR/public.sql") $(grep -c '^COPY baton\.' "$DIR/public.sql")"
check "pg_dump --exclude-table-data 'baton.*' leaves pg_baton's rows out" "0" \
    "$("$B/pg_dump" --exclude-table-data 'baton.*' -d src | grep -c '^COPY baton\.')"
q -d data_only -c "CREATE EXTENSION pg_baton" >/dev/null
if "$B/pg_restore" --data-only -d data_only "$DIR/src.dump" 2>"$DIR/data.err"; then
    ok "pg_restore --data-only into an empty install reports no error"
else
    not_ok "pg_restore --data-only: $(head -c 600 "$DIR/data.err")"
fi
tooling_restored data_only src
"$B/pg_restore" --data-only -d data_only "$DIR/src.dump" >"$DIR/again.err" 2>&1
check "pg_restore --data-only again into the same install refuses the duplicate rows" "t" \
    "$(grep -q 'duplicate key value' "$DIR/again.err" && echo t || echo f)"

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
