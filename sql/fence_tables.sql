-- ===========================================================================
-- The tenant write fence on every table of schema baton, found in the catalog (relkind
-- r and p), so that a table added later is covered without a change here. Four tenants
-- hold rows in every tenant-owned table (the fixture below writes each one; a table
-- without a row of the tenant shows 0 in "rows"): one active, one quiescing, one
-- fenced, one deleted. For each table with a column "tenant", a direct INSERT (a copy
-- of one of the tenant's rows), UPDATE and DELETE of the tenant's rows, and a TRUNCATE,
-- each undone; the SQLSTATE each gets, or "none" when it went through. Every write to
-- a tenant that is not active is refused with DU002 (the side tables of deliveries,
-- leases and ready, included), every TRUNCATE with DU007 (runs, which other tables
-- reference, with 0A000 before its trigger fires). The active tenant's writes
-- pass the fence (its copies then meet the primary key, 23505). baton.tenants is the
-- fence itself: a tenant's row is what a change of state writes (the trigger
-- state_guard takes the fence exclusively), so an UPDATE that changes nothing passes,
-- and a DELETE is refused (DU007). Tables without a tenant column (workflows, in_use,
-- wakeup_key) are listed with "-". Direct access on or off, the answers are the same.
-- ===========================================================================
\set ta '00000000-0000-0000-0f0c-000000000001'
\set tq '00000000-0000-0000-0f0c-000000000002'
\set tf '00000000-0000-0000-0f0c-000000000003'
\set td '00000000-0000-0000-0f0c-000000000004'
CREATE ROLE baton_fence_tables_role;
CREATE SCHEMA fence_tables;
SELECT baton.define_workflow('fence_tables_wf', '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}');

-- A row of the tenant in every tenant-owned table: a bound target (target_bindings),
-- three deliveries, one claimed (deliveries, leases, ready), a run with a stage and a
-- marker (runs, stages, markers), a step entry (step_entries), a schedule
-- (schedule_rows), a key limited to one with a delivery admitted and one waiting
-- (key_limits, key_slots, key_waiting), the counts of all that (event_counts).
CREATE FUNCTION fence_tables.fill(t uuid) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    run uuid;
    gen bigint;
    sid bigint;
BEGIN
    PERFORM baton.create_tenant(t);
    PERFORM baton.bind_target(t, 'fence-bound', 'baton_fence_tables_role');
    PERFORM baton.enqueue(t, 'fence-w', 'k' || i) FROM generate_series(1, 3) i;
    PERFORM baton.claim(t, 'fence-w', '1 hour', 1);
    run := baton.submit(t, 'fence_tables_wf', '{}', 'fence-run');
    gen := baton.acquire_run(t, run, 'o', '1 hour');
    SELECT stage_id INTO sid FROM baton.transition_stage(t, run, gen);
    PERFORM baton.start_stage(t, run, gen, sid);
    PERFORM baton.claim_marker(t, sid, "position" => 0, kind => 'mail');
    PERFORM baton.enter_step(t, 'user-1', 'purge', 'd1');
    PERFORM baton.schedule(t, 'fence-s', 'fence-w', '@daily');
    PERFORM baton.limit_key(t, 'fence-bound', 1, 'one');
    PERFORM baton.enqueue_keyed(t, 'fence-bound', 'kk' || i, 'one') FROM generate_series(1, 2) i;
END $$;
SELECT fence_tables.fill(:'ta'), fence_tables.fill(:'tq'), fence_tables.fill(:'tf'), fence_tables.fill(:'td');
-- The counts of what fill() did, into baton.event_counts while the tenants are active.
SELECT baton.flush_counts() > 0 AS flushed;
SELECT baton.set_tenant_state(:'tq', 'quiescing');
SELECT baton.set_tenant_state(:'tf', 'fenced');
SELECT baton.set_tenant_state(:'td', 'deleted');

-- Runs `sql` ($1: the tenant) and undoes it; its SQLSTATE, or "none".
CREATE FUNCTION fence_tables.try(sql text, t uuid) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql USING t;
    RAISE SQLSTATE 'FT000';
EXCEPTION WHEN OTHERS THEN
    RETURN CASE WHEN SQLSTATE = 'FT000' THEN 'none' ELSE SQLSTATE END;
END $$;

-- Every table of schema baton, what each direct write to the tenant's rows gets.
CREATE FUNCTION fence_tables.probe(t uuid)
    RETURNS TABLE ("table" name, "rows" bigint, "insert" text, "update" text, "delete" text, "truncate" text)
    LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.relname, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                                          AND a.attname = 'tenant' AND NOT a.attisdropped) AS owned
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = 'baton' AND c.relkind IN ('r', 'p')
              ORDER BY c.relname LOOP
        "table" := r.relname;
        IF NOT r.owned THEN
            "rows" := NULL;
            "insert" := '-'; "update" := '-'; "delete" := '-'; "truncate" := '-';
        ELSE
            EXECUTE format('SELECT count(*) FROM baton.%I WHERE tenant = $1', r.relname) INTO "rows" USING t;
            "insert" := fence_tables.try(format('INSERT INTO baton.%1$I OVERRIDING SYSTEM VALUE '
                                                'SELECT * FROM baton.%1$I WHERE tenant = $1 LIMIT 1', r.relname), t);
            "update" := fence_tables.try(format('UPDATE baton.%I SET tenant = tenant WHERE tenant = $1', r.relname), t);
            "delete" := fence_tables.try(format('DELETE FROM baton.%I WHERE tenant = $1', r.relname), t);
            "truncate" := fence_tables.try(format('TRUNCATE baton.%I', r.relname), t);
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

-- Active: every write passes the fence.
SELECT * FROM fence_tables.probe(:'ta');
-- Quiescing, fenced, deleted: every write is refused, each table alike.
SELECT * FROM fence_tables.probe(:'tq');
SELECT * FROM fence_tables.probe(:'tf');
SELECT * FROM fence_tables.probe(:'td');

-- Nothing was written: the side rows are still there.
SELECT tenant, count(*) AS leases FROM baton.leases
 WHERE tenant IN (:'ta', :'tq', :'tf', :'td') GROUP BY tenant ORDER BY tenant;
SELECT tenant, count(*) AS ready FROM baton.ready
 WHERE tenant IN (:'ta', :'tq', :'tf', :'td') GROUP BY tenant ORDER BY tenant;

DROP SCHEMA fence_tables CASCADE;
DROP ROLE baton_fence_tables_role;
