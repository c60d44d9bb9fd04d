#!/usr/bin/env bash
# pg_baton in the hands of a database owner who is not a superuser (pg_baton is a
# trusted extension; docs/guide/security.md, "Who installs pg_baton"). On a throwaway cluster
# of its own:
#   - the owner creates the extension in its database; every object belongs to the
#     bootstrap superuser, and the owner gets the rows of the tables, the sequences and
#     the grant option on the functions and views, and nothing that runs code of its
#     own inside pg_baton's writes (no TRIGGER, TRUNCATE, REFERENCES, ALTER);
#   - it hands out the grant_* roles, and the API works for them;
#   - pg_baton's calls act with the owner's rights and never more: a right taken from
#     the owner is missing in its calls, and the background reaper, led to a function
#     of the owner's making, calls it as the owner, not as a superuser;
#   - as that owner, with no flags, pg_dump -Fc | pg_restore and pg_dump | psql into a
#     fresh database it owns report no error and keep every row (compared row by row),
#     the grants, the fence; the copy works at once; amcheck is clean;
#   - a dump of a superuser's install, restored by the owner, keeps every row; its one
#     error is Postgres' own ALTER SCHEMA ... OWNER TO, which --no-owner leaves out.
# Last line: "N passed, N failed".
set -uo pipefail
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$HERE/../.." && pwd)
# shellcheck source=scripts/cluster.sh
source "$ROOT/scripts/cluster.sh"
# shellcheck source=test/tooling/lib.sh
source "$HERE/lib.sh"
B=$TOOLING_BINDIR

tooling_cluster owner 57000 "shared_preload_libraries = 'pg_baton'" \
    "baton.reaper_databases = 'appdb'" "baton.reaper_interval = '100ms'"

APP=baton_owner_app
WORKER=baton_owner_worker
TA=$TOOLING_T_ACTIVE TF=$TOOLING_T_FENCED
# as ROLE q-args...: q as a login role.
as() { local role=$1; shift; PGUSER=$role q "$@"; }
# state_as ROLE DB SQL: the SQLSTATE of SQL run as ROLE ("ok" if it succeeds).
state_as() { PGUSER=$1 sqlstate_of "$2" "$3" | cut -d' ' -f1; }
q -c "CREATE ROLE $APP LOGIN" -c "CREATE ROLE $WORKER LOGIN" -c "CREATE DATABASE appdb OWNER $APP" >/dev/null

# --- the owner installs it ------------------------------------------------------------
check "a database owner who is not a superuser creates the extension" "ok" \
    "$(state_as $APP appdb "CREATE EXTENSION pg_baton")"
check "the extension's owner is that role, not a superuser" "$APP false" \
    "$(q -d appdb -c "SELECT extowner::regrole || ' ' || rolsuper FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE extname = 'pg_baton'")"
check "every table, view and sequence belongs to the bootstrap superuser" "postgres" \
    "$(q -d appdb -c "SELECT string_agg(DISTINCT relowner::regrole::text, ',') FROM pg_class WHERE relnamespace = 'baton'::regnamespace AND relkind IN ('r', 'v', 'S')")"
check "the owner may read and write the rows of each of the 17 tables, and nothing more" "17 0" \
    "$(q -d appdb -c "SELECT count(*) FILTER (WHERE has_table_privilege('$APP', c.oid, 'SELECT, INSERT, UPDATE, DELETE')
                                              AND has_table_privilege('$APP', c.oid, 'SELECT') AND has_table_privilege('$APP', c.oid, 'INSERT')
                                              AND has_table_privilege('$APP', c.oid, 'UPDATE') AND has_table_privilege('$APP', c.oid, 'DELETE'))
                              || ' ' || count(*) FILTER (WHERE has_table_privilege('$APP', c.oid, 'TRUNCATE, TRIGGER, REFERENCES'))
                      FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind = 'r'")"
check "the owner may grant EXECUTE on every function" "0" \
    "$(q -d appdb -c "SELECT count(*) FROM pg_proc WHERE pronamespace = 'baton'::regnamespace AND NOT has_function_privilege('$APP', oid, 'EXECUTE WITH GRANT OPTION')")"
as $APP -d appdb -c "CREATE FUNCTION public.own_trigger() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'" >/dev/null
check "the owner cannot add a trigger to pg_baton's tables" "42501" \
    "$(state_as $APP appdb "CREATE TRIGGER own BEFORE INSERT ON baton.deliveries FOR EACH ROW EXECUTE FUNCTION public.own_trigger()")"
check "the owner cannot disable the fence's triggers" "42501" \
    "$(state_as $APP appdb "ALTER TABLE baton.deliveries DISABLE TRIGGER ALL")"
check "the owner cannot truncate pg_baton's tables" "42501" "$(state_as $APP appdb "TRUNCATE baton.deliveries")"

# --- the owner runs it ----------------------------------------------------------------
if PGUSER=$APP tooling_fill appdb $WORKER; then
    ok "the owner fills its database: tenants, grant_* helpers, deliveries, workflows, markers"
else
    not_ok "the owner fills its database"
fi
check "the worker it granted claims and finishes" "finished" \
    "$(as $WORKER -d appdb -c "SELECT baton.enqueue('$TA', 'own', 'o1')" \
        -c "SELECT baton.finish('$TA', c.id, c.generation) FROM baton.claim('$TA', 'own', '1 minute') c" | tail -n 1)"
check "the fence holds for the owner's own INSERT into a fenced tenant" "DU002" \
    "$(state_as $APP appdb "INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('$TF', 'w', 'direct')")"
# pg_baton's calls act with the owner's rights: a right the owner loses is gone from them.
q -d appdb -c "REVOKE SELECT ON baton.runs FROM $APP" >/dev/null
check "a right taken from the owner is missing in pg_baton's calls (baton.run without SELECT on runs)" \
    "42501 permission denied for table runs" \
    "$(PGUSER=$WORKER sqlstate_of appdb "SELECT baton.run('$TA', '00000000-0000-0000-0000-000000000000')")"
q -d appdb -c "GRANT SELECT ON baton.runs TO $APP" >/dev/null
check "and is back with the right" "DU008" \
    "$(state_as $WORKER appdb "SELECT baton.run('$TA', '00000000-0000-0000-0000-000000000000')")"

# The background reaper connects as the bootstrap superuser. The owner owns the schema
# baton (Postgres creates it for the role that runs CREATE EXTENSION) and can put one of
# its own in its place, with a baton.reap() of its making: the reaper calls it, as the
# owner.
as $APP -d appdb >/dev/null <<'SQL'
ALTER SCHEMA baton RENAME TO baton_real;
CREATE SCHEMA baton;
CREATE TABLE public.reaped_as (who name, super boolean);
CREATE FUNCTION baton.reap(integer) RETURNS integer LANGUAGE sql AS
$$ INSERT INTO public.reaped_as SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user; SELECT 0 $$;
SQL
for _ in $(seq 1 100); do
    [[ $(q -d appdb -c "SELECT count(*) > 0 FROM public.reaped_as") == t ]] && break
    sleep 0.1
done
check "the reaper, led to a function of the owner's making, calls it as the owner" "$APP false" \
    "$(q -d appdb -c "SELECT string_agg(DISTINCT who || ' ' || super, ',') FROM public.reaped_as")"
as $APP -d appdb -c "DROP SCHEMA baton CASCADE" -c "ALTER SCHEMA baton_real RENAME TO baton" >/dev/null 2>&1
as $APP -d appdb -c "SELECT baton.enqueue('$TA', 'short', 's1')" -c "SELECT count(*) FROM baton.claim('$TA', 'short', '1 millisecond')" >/dev/null
reaped=f
for _ in $(seq 1 100); do
    reaped=$(q -d appdb -c "SELECT status = 'pending' FROM baton.deliveries WHERE tenant = '$TA' AND dedup_key = 's1'")
    [[ $reaped == t ]] && break
    sleep 0.1
done
check "the reaper reaps in the owner's database" "t" "$reaped"

# --- the owner dumps and restores it, with no flags -----------------------------------
tooling_digest appdb "$DIR/appdb"
echo "source rows: $(awk '{printf "%s%s=%s", sep, $1, $2; sep = " "}' "$DIR/appdb/counts")"
q -c "CREATE DATABASE custom OWNER $APP" -c "CREATE DATABASE plain OWNER $APP" >/dev/null
if PGUSER=$APP "$B/pg_dump" -Fc -d appdb -f "$DIR/app.dump" 2>"$DIR/dump.err"; then
    ok "the owner's pg_dump -Fc runs"
else
    not_ok "the owner's pg_dump -Fc fails: $(head -c 600 "$DIR/dump.err")"
fi
if PGUSER=$APP "$B/pg_restore" -d custom "$DIR/app.dump" 2>"$DIR/restore.err"; then
    ok "the owner's pg_restore into a fresh database it owns reports no error"
else
    not_ok "the owner's pg_restore reports errors: $(head -c 600 "$DIR/restore.err")"
fi
tooling_restored custom appdb
if PGUSER=$APP "$B/pg_dump" -d appdb | as $APP -d plain >/dev/null 2>"$DIR/plain.err"; then
    ok "the owner's pg_dump | psql (ON_ERROR_STOP) runs through"
else
    not_ok "the owner's pg_dump | psql stops: $(head -c 600 "$DIR/plain.err")"
fi
tooling_restored plain appdb
check "the restored extension's owner is the owner who restored it" "$APP" \
    "$(q -d custom -c "SELECT extowner::regrole FROM pg_extension WHERE extname = 'pg_baton'")"
check "the grants the owner made survive (the worker's EXECUTE on claim)" "t" \
    "$(q -d custom -c "SELECT has_function_privilege('$WORKER', 'baton.claim(uuid, text, interval, integer, jsonb)', 'EXECUTE')")"
check "the copy works at once: its worker claims and finishes" "finished" \
    "$(as $WORKER -d custom -c "SELECT baton.enqueue('$TA', 'own', 'o2')" \
        -c "SELECT baton.finish('$TA', c.id, c.generation) FROM baton.claim('$TA', 'own', '1 minute') c" | tail -n 1)"
check "the fenced tenant still refuses writes in the copy" "DU002" \
    "$(state_as $WORKER custom "SELECT baton.enqueue('$TF', 'w', 'late')")"

# --- a superuser's install, restored by the owner --------------------------------------
q -c "CREATE DATABASE sudb" -c "CREATE DATABASE sucopy OWNER $APP" -c "CREATE DATABASE sucopy_o OWNER $APP" >/dev/null
q -d sudb -c "CREATE EXTENSION pg_baton" >/dev/null
tooling_fill sudb $WORKER || not_ok "fill the superuser's database"
tooling_digest sudb "$DIR/sudb"
"$B/pg_dump" -Fc -d sudb -f "$DIR/su.dump"
PGUSER=$APP "$B/pg_restore" -d sucopy "$DIR/su.dump" 2>"$DIR/su.err"
check "restored by the owner, a superuser's dump has one error: the schema's owner" \
    "ALTER SCHEMA baton OWNER TO postgres;" "$(sed -n 's/^Command was: //p' "$DIR/su.err" | paste -sd'|')"
tooling_restored sucopy sudb
if PGUSER=$APP "$B/pg_restore" --no-owner -d sucopy_o "$DIR/su.dump" 2>"$DIR/su-o.err"; then
    ok "with --no-owner it reports no error"
else
    not_ok "pg_restore --no-owner reports errors: $(head -c 600 "$DIR/su-o.err")"
fi
tooling_restored sucopy_o sudb
check "the copy works at once for the owner's worker" "finished" \
    "$(as $WORKER -d sucopy_o -c "SELECT baton.enqueue('$TA', 'own', 'o3')" \
        -c "SELECT baton.finish('$TA', c.id, c.generation) FROM baton.claim('$TA', 'own', '1 minute') c" | tail -n 1)"

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
