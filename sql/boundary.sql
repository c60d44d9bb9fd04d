-- The C++/Postgres boundary under a load of errors, in one backend: thousands of
-- refusals caught by PL/pgSQL, each with the right SQLSTATE, message, detail and hint;
-- a Postgres error raised under the C++ code arrives unchanged; nothing leaks and the
-- backend answers correctly afterwards.
\set SHOW_CONTEXT never
\set VERBOSITY default

\set t '00000000-0000-0000-0006-000000000001'
\set tb '00000000-0000-0000-0006-000000000002'
\set tx '00000000-0000-0000-0006-0000000000ff'

SELECT baton.create_tenant(:'t');
SELECT baton.create_tenant(:'tb');
-- One claimed delivery: its generation is 1, so generation 0 is stale.
SELECT baton.enqueue(:'t', 'boundary', 'held', '{"n": 0}') AS held \gset
SELECT dedup_key, generation, attempt FROM baton.claim(:'t', 'boundary', '1 hour');

-- A trap under the C++ code: a trigger that raises a Postgres error of its own
-- (SQLSTATE UB042, with detail and hint) when a row of tenant tb is inserted.
CREATE FUNCTION public.boundary_trap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'UB042',
        MESSAGE = format('boundary trap for "%s"', NEW.dedup_key),
        DETAIL = 'Raised by a trigger below the extension''s C++ code.',
        HINT = 'It must reach the caller unchanged.';
END $$;
CREATE TRIGGER boundary_trap BEFORE INSERT ON baton.deliveries FOR EACH ROW
    WHEN (NEW.tenant = '00000000-0000-0000-0006-000000000002'::uuid)
    EXECUTE FUNCTION public.boundary_trap();

-- Every failing call of the load, once at top level: the SQLSTATE of each.
\set VERBOSITY sqlstate
SELECT baton.finish(:'t', :held, 0);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT * FROM baton.claim(:'t', NULL, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'t', 'boundary', 'x', '[1, 2]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'tx', 'boundary', 'x');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.delivery(:'t', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'t', '[{"target": "boundary", "dedup_key": "b0"},
                                          {"target": "boundary", "dedup_key": "b1", "run_after": "not a time"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'t', '[{"target": "boundary", "dedup_key": "p0", "priority": "high"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'t', :held, 1, '400 days');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'tb', 'boundary', 'trap1');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'tb', '[{"target": "boundary", "dedup_key": "trap2"}]');
\echo :LAST_ERROR_SQLSTATE

-- The same ten failing calls, 3000 times each, interleaved, in one DO block; each
-- caught by an EXCEPTION block and counted by its SQLSTATE.
CREATE TEMP TABLE boundary_counts (kind text, sqlstate text, n int);
DO $$
DECLARE
    t uuid := '00000000-0000-0000-0006-000000000001';
    tb uuid := '00000000-0000-0000-0006-000000000002';
    tx uuid := '00000000-0000-0000-0006-0000000000ff';
    held bigint;
    kinds text[] := ARRAY['finish_stale_generation', 'claim_null_target', 'enqueue_array_payload',
                          'enqueue_unknown_tenant', 'delivery_unknown_id', 'batch_bad_run_after',
                          'batch_bad_priority', 'renew_huge_lease', 'enqueue_trap', 'batch_trap'];
    k text;
    st text;
    key text;
    counts jsonb := '{}';
BEGIN
    SELECT d.id INTO STRICT held FROM baton.deliveries d WHERE d.tenant = t AND d.dedup_key = 'held';
    FOR i IN 1 .. 3000 LOOP
        FOREACH k IN ARRAY kinds LOOP
            BEGIN
                CASE k
                    WHEN 'finish_stale_generation' THEN PERFORM baton.finish(t, held, 0);
                    WHEN 'claim_null_target' THEN PERFORM * FROM baton.claim(t, NULL, '1 minute');
                    WHEN 'enqueue_array_payload' THEN PERFORM baton.enqueue(t, 'boundary', 'x', '[1, 2]');
                    WHEN 'enqueue_unknown_tenant' THEN PERFORM baton.enqueue(tx, 'boundary', 'x');
                    WHEN 'delivery_unknown_id' THEN PERFORM baton.delivery(t, -1);
                    WHEN 'batch_bad_run_after' THEN PERFORM * FROM baton.enqueue_batch(t,
                        '[{"target": "boundary", "dedup_key": "b0"},
                          {"target": "boundary", "dedup_key": "b1", "run_after": "not a time"}]');
                    WHEN 'batch_bad_priority' THEN PERFORM * FROM baton.enqueue_batch(t,
                        '[{"target": "boundary", "dedup_key": "p0", "priority": "high"}]');
                    WHEN 'renew_huge_lease' THEN PERFORM baton.renew(t, held, 1, '400 days');
                    WHEN 'enqueue_trap' THEN PERFORM baton.enqueue(tb, 'boundary', 'trap1');
                    WHEN 'batch_trap' THEN PERFORM * FROM baton.enqueue_batch(tb,
                        '[{"target": "boundary", "dedup_key": "trap2"}]');
                END CASE;
                st := 'ok';
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE;
            END;
            key := k || ' ' || st;
            counts := jsonb_set(counts, ARRAY[key], to_jsonb(COALESCE((counts ->> key)::int, 0) + 1));
        END LOOP;
    END LOOP;
    INSERT INTO boundary_counts
    SELECT split_part(e.key, ' ', 1), split_part(e.key, ' ', 2), e.value::int FROM jsonb_each(counts) e;
END $$;
SELECT kind, sqlstate, n FROM boundary_counts ORDER BY kind, sqlstate;
SELECT sum(n) AS calls FROM boundary_counts;

-- Nothing changed: the held delivery is still claimed at generation 1 with its
-- lease, no delivery was added to either tenant, the unknown tenant is still unknown.
SELECT dedup_key, status, generation, attempts, lease_until > now() AS leased, last_error, result
  FROM baton.delivery(:'t', :held);
SELECT tenant, count(*) FROM baton.deliveries WHERE tenant IN (:'t', :'tb', :'tx') GROUP BY tenant ORDER BY tenant;
SELECT count(*) AS unknown_tenant_rows FROM baton.tenants WHERE tenant = :'tx';

-- Every part of each report survives the load: SQLSTATE, message, detail, hint
-- (the held delivery's id in a message is shown as <id>).
CREATE FUNCTION pg_temp.boundary_diag(stmt text, id bigint DEFAULT NULL)
RETURNS TABLE(code text, message text, detail text, hint text) LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    code := 'ok';
    RETURN NEXT;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                            detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    IF id IS NOT NULL THEN
        message := replace(message, 'delivery ' || id || ' ', 'delivery <id> ');
    END IF;
    RETURN NEXT;
END $$;
\x on
SELECT * FROM pg_temp.boundary_diag(format('SELECT baton.finish(%L, %s, 0)', :'t', :held), :held);
SELECT * FROM pg_temp.boundary_diag(format('SELECT * FROM baton.claim(%L, NULL, ''1 minute'')', :'t'));
SELECT * FROM pg_temp.boundary_diag(format('SELECT baton.enqueue(%L, ''boundary'', ''x'', ''[1, 2]'')', :'t'));
SELECT * FROM pg_temp.boundary_diag(format('SELECT baton.enqueue(%L, ''boundary'', ''x'')', :'tx'));
SELECT * FROM pg_temp.boundary_diag(format('SELECT baton.delivery(%L, -1)', :'t'));
SELECT * FROM pg_temp.boundary_diag(format('SELECT * FROM baton.enqueue_batch(%L, %L)', :'t',
    '[{"target": "boundary", "dedup_key": "b0"}, {"target": "boundary", "dedup_key": "b1", "run_after": "not a time"}]'));
SELECT * FROM pg_temp.boundary_diag(format('SELECT * FROM baton.enqueue_batch(%L, %L)', :'t',
    '[{"target": "boundary", "dedup_key": "p0", "priority": "high"}]'));
SELECT * FROM pg_temp.boundary_diag(format('SELECT baton.renew(%L, %s, 1, ''400 days'')', :'t', :held), :held);
-- the trap's error passes through the C++ code unchanged, also from inside a batch
-- (whose own refusals name the item: the trap's detail does not)
SELECT * FROM pg_temp.boundary_diag(format('SELECT baton.enqueue(%L, ''boundary'', ''trap1'')', :'tb'));
SELECT * FROM pg_temp.boundary_diag(format('SELECT * FROM baton.enqueue_batch(%L, %L)', :'tb',
    '[{"target": "boundary", "dedup_key": "trap2"}]'));
\x off

-- The backend still answers correctly: a full cycle.
SELECT baton.enqueue(:'t', 'boundary-after', 'c1', '{"step": 1}', '{"k": "v"}', priority => 3) AS c1 \gset
SELECT baton.enqueue(:'t', 'boundary-after', 'c1', '{"step": 1}', '{"k": "v"}') = :c1 AS same_id;
SELECT id = :c1 AS is_c1, generation, attempt, dedup_key, payload, binding, run_id,
       lease_until = now() + interval '5 minutes' AS lease_ok
  FROM baton.claim(:'t', 'boundary-after', '5 minutes', 10);
SELECT baton.renew(:'t', :c1, 1, '10 minutes') = now() + interval '10 minutes' AS renewed;
SELECT baton.finish(:'t', :c1, 1, 'finished', '{"done": true}');
SELECT baton.finish(:'t', :c1, 1, 'failed');
SELECT dedup_key, status, generation, attempts, priority, payload, binding, result, lease_until
  FROM baton.delivery(:'t', :c1);
-- and the held delivery can still be settled by its holder
SELECT baton.finish(:'t', :held, 1, 'failed', '{"why": "end of test"}');
SELECT status, generation, result FROM baton.delivery(:'t', :held);

-- A DU009 still reports its full message, detail and hint.
DO $$
DECLARE
    st text; msg text; det text; hnt text;
BEGIN
    PERFORM baton.enqueue('00000000-0000-0000-0006-000000000001', 'boundary-after', 'c1', '{"step": 2}', '{"k": "v"}');
    RAISE NOTICE 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                            det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    RAISE NOTICE 'sqlstate: %', st;
    RAISE NOTICE 'message: %', msg;
    RAISE NOTICE 'detail: %', det;
    RAISE NOTICE 'hint: %', hnt;
END $$;
SELECT baton.enqueue(:'t', 'boundary-after', 'c1', '{"step": 1}', '{"k": "other"}');
\echo :LAST_ERROR_SQLSTATE

-- Memory does not grow: 20000 more failing calls change the backend's memory
-- contexts by less than 1 MB, measured after the block (what outlives the
-- transaction) and inside it, around the loop (what outlives each failed call
-- until the transaction ends).
CREATE TEMP TABLE boundary_memory (growth_in_transaction bigint);
SELECT sum(total_bytes) AS mem_before FROM pg_backend_memory_contexts \gset
DO $$
DECLARE
    t uuid := '00000000-0000-0000-0006-000000000001';
    tb uuid := '00000000-0000-0000-0006-000000000002';
    tx uuid := '00000000-0000-0000-0006-0000000000ff';
    c1 bigint;
    failures int := 0;
    m0 bigint;
BEGIN
    SELECT d.id INTO STRICT c1 FROM baton.deliveries d WHERE d.tenant = t AND d.dedup_key = 'c1';
    SELECT sum(total_bytes) INTO m0 FROM pg_backend_memory_contexts;
    FOR i IN 1 .. 2000 LOOP
        BEGIN PERFORM baton.finish(t, c1, 0); EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM * FROM baton.claim(t, NULL, '1 minute'); EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM baton.enqueue(t, 'boundary', 'x', '"text"'); EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM baton.enqueue(tx, 'boundary', 'x'); EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM baton.delivery(t, -1); EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM * FROM baton.enqueue_batch(t, '[{"target": "boundary", "dedup_key": "m", "run_after": "nope"}]');
        EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM * FROM baton.enqueue_batch(t, '[{"target": "boundary", "dedup_key": "m", "max_attempts": 1e20}]');
        EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM baton.renew(t, c1, 1, '400 days'); EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM baton.enqueue(tb, 'boundary', 'trap1'); EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
        BEGIN PERFORM baton.enqueue(t, 'boundary-after', 'c1', '{"step": 3}', '{"k": "v"}');
        EXCEPTION WHEN OTHERS THEN failures := failures + 1; END;
    END LOOP;
    INSERT INTO boundary_memory SELECT sum(total_bytes) - m0 FROM pg_backend_memory_contexts;
    IF failures <> 20000 THEN
        RAISE EXCEPTION 'expected 20000 failures, got %', failures;
    END IF;
END $$;
SELECT sum(total_bytes) - :mem_before < 1024 * 1024 AS memory_stable FROM pg_backend_memory_contexts;
SELECT growth_in_transaction < 1024 * 1024 AS memory_stable_in_transaction FROM boundary_memory;

-- Clean up the trap.
DROP TRIGGER boundary_trap ON baton.deliveries;
DROP FUNCTION public.boundary_trap();
SELECT baton.enqueue(:'tb', 'boundary', 'after-trap') > 0 AS enqueued_after_trap;
