-- enqueue_batch, claim, finish and finish_batch through direct heap and index access
-- (src/pg/deliveries/delivery_direct.cpp) against the SPI statements kept as their fallback
-- (src/pg/deliveries/delivery_statements.cpp; src/pg/deliveries/delivery_store.hpp picks one, and both ask
-- src/core/delivery.cpp what a row owes its caller): the
-- same calls give the same answers and leave the same rows; the fallback is taken when
-- baton.direct_access is off, when baton.deliveries has a trigger that is not
-- pg_baton's own, when it has row level security, and for a claim with `expected`.
--
-- Which path a call took is seen through the fence trigger: the statements fire
-- baton.fence_row for each row they write, the direct path never does (it does the
-- trigger's work inline). With track_functions = 'all' its calls are counted in
-- pg_stat_xact_user_functions; da_call() reports whether a call made it fire.
--
-- This file sets baton.direct_access itself wherever it matters, so its output is the
-- same under PGOPTIONS='-c baton.direct_access=off' (test/run-all.sh's second pass).
-- Messages that name a delivery id (not stable across runs) show it as #.
\set SHOW_CONTEXT never
\set VERBOSITY default
\set a  00000000-0000-0000-00d1-000000000001
\set b  00000000-0000-0000-00d1-000000000002
\set tr 00000000-0000-0000-00d1-000000000003
\set fb 00000000-0000-0000-00d1-000000000004
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');
SELECT baton.create_tenant(:'tr');
SELECT baton.create_tenant(:'fb');

-- ---------------------------------------------------------------------------
-- 1. The setting: on unless set otherwise, and any user may set it for a session.
-- ---------------------------------------------------------------------------
SELECT name, vartype, boot_val, context FROM pg_settings WHERE name = 'baton.direct_access';
SET baton.direct_access = off;
SHOW baton.direct_access;
SET baton.direct_access = on;
SHOW baton.direct_access;

SET track_functions = 'all';
-- Calls of the fence trigger so far in this transaction.
CREATE FUNCTION da_fence_calls() RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions
   WHERE schemaname = 'baton' AND funcname = 'fence_row' $$;
-- Runs query q: its rows as text, in the order returned (NULL for none), or its error as
-- 'SQLSTATE: message'; fence_fired: whether the fence trigger fired meanwhile (the call
-- wrote a delivery through a statement, not directly).
CREATE FUNCTION da_call(q text, OUT answer text, OUT fence_fired boolean) LANGUAGE plpgsql AS $$
DECLARE
  before bigint := da_fence_calls();
BEGIN
  BEGIN
    EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', q) INTO answer;
  EXCEPTION WHEN OTHERS THEN
    answer := SQLSTATE || ': ' || regexp_replace(SQLERRM, 'delivery \d+', 'delivery #');
  END;
  fence_fired := da_fence_calls() > before;
END $$;
-- The id of a delivery by tenant and dedup key.
CREATE FUNCTION da_id(t uuid, k text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT id FROM baton.deliveries WHERE tenant = t AND dedup_key = k $$;
-- The rows of a tenant, without what differs between tenants and runs (ids, times).
CREATE FUNCTION da_rows(t uuid) RETURNS TABLE(dedup_key text, target text, status text, generation bigint,
                                              attempts int, max_attempts int, leased_for interval,
                                              due_in interval, settled_now boolean, result jsonb,
                                              last_error text, payload jsonb)
LANGUAGE sql AS $$
  SELECT d.dedup_key, d.target, d.status, d.generation, d.attempts, d.max_attempts,
         d.lease_until - now(), greatest(d.run_after - now(), interval '0'), d.settled_at = now(),
         d.result, d.last_error, d.payload
    FROM baton.deliveries d WHERE d.tenant = t ORDER BY d.id $$;

-- ---------------------------------------------------------------------------
-- 2. One sequence of calls, run once with direct access and once without, each in a
-- tenant of its own and in one transaction (so that every call must see the writes of
-- the calls before it): every answer and every row is the same.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE da_steps (mode text, step int, call text, answer text, fence_fired boolean);
CREATE TEMP TABLE da_state AS SELECT ''::text AS mode, * FROM da_rows(NULL) LIMIT 0;

CREATE FUNCTION da_sequence(t uuid, direct boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  mode text := CASE WHEN direct THEN 'direct' ELSE 'spi' END;
  n int := 0;
  lit text := quote_literal(t);
  -- s3 has the highest priority, s7 a low one, s8 the lowest (a binding, for
  -- `expected`); s5 has a single attempt; s6 is not due for an hour.
  items jsonb := '[{"target": "q", "dedup_key": "s1", "payload": {"n": 1}},
                   {"target": "q", "dedup_key": "s2", "payload": {"n": 2}},
                   {"target": "q", "dedup_key": "s3", "payload": {"n": 3}, "priority": 5},
                   {"target": "q", "dedup_key": "s4", "payload": {"n": 4}},
                   {"target": "q", "dedup_key": "s5", "payload": {"n": 5}, "max_attempts": 1},
                   {"target": "q", "dedup_key": "s6", "payload": {"n": 6}},
                   {"target": "q", "dedup_key": "s7", "payload": {"n": 7}, "priority": -1},
                   {"target": "q", "dedup_key": "s8", "payload": {"n": 8}, "priority": -5,
                    "binding": {"user": "u8"}}]';
  step text;
  r record;
BEGIN
  PERFORM set_config('baton.direct_access', direct::text, true);
  -- s6 due in an hour
  items := jsonb_set(items, '{5,run_after}', to_jsonb(now() + interval '1 hour'));
  FOREACH step IN ARRAY ARRAY[
    -- label | query
    'enqueue_batch|SELECT count(*) FILTER (WHERE inserted) FROM baton.enqueue_batch(' || lit || ', ' || quote_literal(items) || ')',
    'claim 1: s3 (priority 5)|SELECT dedup_key, generation, attempt, lease_until - now(), payload, run_id FROM baton.claim(' || lit || ', ''q'', ''1 minute'')',
    'claim 3: s1 s2 s4|SELECT dedup_key, generation, attempt, lease_until - now() FROM baton.claim(' || lit || ', ''q'', ''2 minutes'', 3)',
    'finish s3 with a result|SELECT baton.finish(' || lit || ', da_id(' || lit || ', ''s3''), 1, ''finished'', ''{"ok": 1}'')',
    'finish s3 again, failed: the stored status|SELECT baton.finish(' || lit || ', da_id(' || lit || ', ''s3''), 1, ''failed'')',
    'finish s3 at generation 0: DU001|SELECT baton.finish(' || lit || ', da_id(' || lit || ', ''s3''), 0)',
    'renew s1|SELECT baton.renew(' || lit || ', da_id(' || lit || ', ''s1''), 1, ''5 minutes'') - now()',
    'retry s2 at once|SELECT baton.retry(' || lit || ', da_id(' || lit || ', ''s2''), 1, ''boom'', ''0'')',
    'finish_batch, failed: s1 s2(lost) s3(stored) unknown s4(stale)|SELECT coalesce(d.dedup_key, ''?''), f.status FROM baton.finish_batch(' || lit ||
      ', ARRAY[da_id(' || lit || ', ''s1''), da_id(' || lit || ', ''s2''), da_id(' || lit || ', ''s3''), -1, da_id(' || lit || ', ''s4'')], ARRAY[1, 1, 1, 1, 7]::bigint[], ''failed'')' ||
      ' WITH ORDINALITY f(id, status, n) LEFT JOIN baton.deliveries d ON d.tenant = ' || lit || ' AND d.id = f.id ORDER BY f.n',
    'claim 3: s2 (retried) s5 s7|SELECT dedup_key, generation, attempt FROM baton.claim(' || lit || ', ''q'', ''3 minutes'', 3)',
    'retry s5: its last attempt, failed|SELECT baton.retry(' || lit || ', da_id(' || lit || ', ''s5''), 1, ''last'')',
    'finish s5 by its settling generation: the stored status|SELECT baton.finish(' || lit || ', da_id(' || lit || ', ''s5''), 1)',
    'retry s7 in an hour|SELECT baton.retry(' || lit || ', da_id(' || lit || ', ''s7''), 1, ''later'', ''1 hour'')',
    'claim with a missed expected|SELECT dedup_key FROM baton.claim(' || lit || ', ''q'', ''1 minute'', 5, ''{"user": "u9"}'')',
    'claim with expected: s8|SELECT dedup_key, generation, binding FROM baton.claim(' || lit || ', ''q'', ''1 minute'', 5, ''{"user": "u8"}'')',
    'claim 5: none due|SELECT dedup_key FROM baton.claim(' || lit || ', ''q'', ''1 minute'', 5)',
    'finish s4, failed, with a result|SELECT baton.finish(' || lit || ', da_id(' || lit || ', ''s4''), 1, ''failed'', ''{"why": "x"}'')',
    'finish s8 at generation 2: DU001|SELECT baton.finish(' || lit || ', da_id(' || lit || ', ''s8''), 2)',
    'finish s6 (pending): DU001|SELECT baton.finish(' || lit || ', da_id(' || lit || ', ''s6''), 0)',
    'finish an unknown id: DU008|SELECT baton.finish(' || lit || ', -1, 1)',
    'finish_batch s8 s2|SELECT f.status FROM baton.finish_batch(' || lit || ', ARRAY[da_id(' || lit || ', ''s8''), da_id(' || lit || ', ''s2'')], ARRAY[1, 3]::bigint[]) f',
    'finish_batch s8 s2 again|SELECT f.status FROM baton.finish_batch(' || lit || ', ARRAY[da_id(' || lit || ', ''s8''), da_id(' || lit || ', ''s2'')], ARRAY[1, 3]::bigint[], ''failed'') f'
  ] LOOP
    n := n + 1;
    SELECT * INTO r FROM da_call(split_part(step, '|', 2));
    INSERT INTO da_steps VALUES (mode, n, split_part(step, '|', 1), r.answer, r.fence_fired);
  END LOOP;
  INSERT INTO da_state SELECT mode, * FROM da_rows(t);
END $$;

SELECT da_sequence(:'a', true);
SELECT da_sequence(:'b', false);

-- Side by side: the answers are the same; the fence trigger fired for the writes of
-- the statements (spi), never for those of the direct path (enqueue_batch, claim,
-- finish, finish_batch); renew, retry and a claim with `expected` are statements on
-- both sides.
SELECT d.step, d.call, d.answer, d.answer IS NOT DISTINCT FROM s.answer AS same_answer,
       d.fence_fired AS direct_fired, s.fence_fired AS spi_fired
  FROM da_steps d JOIN da_steps s ON s.step = d.step AND s.mode = 'spi'
 WHERE d.mode = 'direct' ORDER BY d.step;
SELECT mode, count(*) AS steps FROM da_steps GROUP BY mode ORDER BY mode;
-- The rows each sequence left: the same (no row of either side is missing on the other).
SELECT dedup_key, status, generation, attempts, max_attempts, leased_for, due_in, settled_now, result, last_error
  FROM da_state WHERE mode = 'direct' ORDER BY dedup_key;
(SELECT 'only direct' AS side, dedup_key, target, status, generation, attempts, max_attempts, leased_for, due_in,
        settled_now, result, last_error, payload FROM da_state WHERE mode = 'direct'
 EXCEPT
 SELECT 'only direct', dedup_key, target, status, generation, attempts, max_attempts, leased_for, due_in,
        settled_now, result, last_error, payload FROM da_state WHERE mode = 'spi')
UNION ALL
(SELECT 'only spi', dedup_key, target, status, generation, attempts, max_attempts, leased_for, due_in,
        settled_now, result, last_error, payload FROM da_state WHERE mode = 'spi'
 EXCEPT
 SELECT 'only spi', dedup_key, target, status, generation, attempts, max_attempts, leased_for, due_in,
        settled_now, result, last_error, payload FROM da_state WHERE mode = 'direct');
SELECT mode, count(*) AS rows_left FROM da_state GROUP BY mode ORDER BY mode;

-- Calls nested in one SQL statement (one command) see each other's writes: a renew
-- (a statement) evaluated as an argument of finish, a retry (making the row pending
-- again at once) as an argument of claim. Both paths.
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'tr', '[
  {"target": "nest-on", "dedup_key": "n1"}, {"target": "nest-on", "dedup_key": "n2"},
  {"target": "nest-off", "dedup_key": "n1"}, {"target": "nest-off", "dedup_key": "n2"}]');
SELECT dedup_key, generation FROM baton.claim(:'tr', 'nest-on', '1 hour', 2);
SELECT dedup_key, generation FROM baton.claim(:'tr', 'nest-off', '1 hour', 2);
SELECT id AS on1 FROM baton.deliveries WHERE tenant = :'tr' AND target = 'nest-on' AND dedup_key = 'n1' \gset
SELECT id AS on2 FROM baton.deliveries WHERE tenant = :'tr' AND target = 'nest-on' AND dedup_key = 'n2' \gset
SELECT id AS off1 FROM baton.deliveries WHERE tenant = :'tr' AND target = 'nest-off' AND dedup_key = 'n1' \gset
SELECT id AS off2 FROM baton.deliveries WHERE tenant = :'tr' AND target = 'nest-off' AND dedup_key = 'n2' \gset
SELECT baton.finish(:'tr', :on1, 1, 'finished', jsonb_build_object('renewed', baton.renew(:'tr', :on1, 1, '2 hours') IS NOT NULL));
SELECT dedup_key, generation, attempt
  FROM baton.claim(:'tr', 'nest-on' || left(baton.retry(:'tr', :on2, 1, 'again', '0'), 0), '1 hour');
SET baton.direct_access = off;
SELECT baton.finish(:'tr', :off1, 1, 'finished', jsonb_build_object('renewed', baton.renew(:'tr', :off1, 1, '2 hours') IS NOT NULL));
SELECT dedup_key, generation, attempt
  FROM baton.claim(:'tr', 'nest-off' || left(baton.retry(:'tr', :off2, 1, 'again', '0'), 0), '1 hour');
SET baton.direct_access = on;
SELECT target, dedup_key, status, generation, attempts, result, last_error
  FROM baton.deliveries WHERE tenant = :'tr' AND target LIKE 'nest-%' ORDER BY target DESC, dedup_key;
SELECT count(*) AS finished
  FROM baton.finish_batch(:'tr', ARRAY[:on2, :off2], ARRAY[3, 3]) WHERE status = 'finished';

-- ---------------------------------------------------------------------------
-- 3. A trigger of the user's own on baton.deliveries: every claim and finish goes
-- through the statements, so the trigger fires for each row they write. Once it is
-- dropped, the direct path is back and the answers are still right.
-- ---------------------------------------------------------------------------
CREATE TABLE da_log (op text, dedup_key text, old_status text, new_status text, generation bigint);
CREATE FUNCTION da_log_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO da_log VALUES (TG_OP, NEW.dedup_key, OLD.status, NEW.status, NEW.generation);
  RETURN NULL;
END $$;
CREATE TRIGGER da_audit AFTER UPDATE ON baton.deliveries FOR EACH ROW EXECUTE FUNCTION da_log_update();
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'tr',
  (SELECT jsonb_agg(jsonb_build_object('target', 'tr', 'dedup_key', 'tr' || g) ORDER BY g) FROM generate_series(1, 6) g));
SHOW baton.direct_access;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'tr', '1 hour')$$);
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'tr', '1 hour', 2)$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'tr1'), 1)$$);
SELECT * FROM da_call($$SELECT status FROM baton.finish_batch('00000000-0000-0000-00d1-000000000003',
  ARRAY[da_id('00000000-0000-0000-00d1-000000000003', 'tr2'), da_id('00000000-0000-0000-00d1-000000000003', 'tr3')], ARRAY[1, 1]::bigint[], 'failed')$$);
-- a finish that writes nothing (the stored status) fires nothing
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'tr1'), 1)$$);
SELECT * FROM da_log ORDER BY dedup_key, new_status;
-- A trigger of another kind (per statement) takes the statements too.
DROP TRIGGER da_audit ON baton.deliveries;
CREATE FUNCTION da_log_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO da_log VALUES (TG_OP || ' statement', NULL, NULL, NULL, NULL);
  RETURN NULL;
END $$;
CREATE TRIGGER da_audit_statement AFTER UPDATE ON baton.deliveries FOR EACH STATEMENT EXECUTE FUNCTION da_log_statement();
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'tr', '1 hour')$$);
SELECT op, count(*) FROM da_log WHERE dedup_key IS NULL GROUP BY op;
DROP TRIGGER da_audit_statement ON baton.deliveries;
-- Dropped: the direct path again (the fence trigger does not fire), nothing logged.
TRUNCATE da_log;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'tr', '1 hour', 2)$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'tr4'), 1, 'finished', '{"r": 4}')$$);
SELECT * FROM da_call($$SELECT status FROM baton.finish_batch('00000000-0000-0000-00d1-000000000003',
  ARRAY[da_id('00000000-0000-0000-00d1-000000000003', 'tr5'), da_id('00000000-0000-0000-00d1-000000000003', 'tr6')], ARRAY[1, 1]::bigint[])$$);
SELECT count(*) AS logged FROM da_log;
SELECT dedup_key, status, generation, attempts, result FROM baton.deliveries WHERE tenant = :'tr' AND target = 'tr' ORDER BY id;
DROP TABLE da_log;
DROP FUNCTION da_log_update();
DROP FUNCTION da_log_statement();

-- ---------------------------------------------------------------------------
-- 4. Row level security on baton.deliveries: the statements (the functions run as the
-- extension's owner, which the policies do not restrict here); turned off, the direct
-- path again.
-- ---------------------------------------------------------------------------
SELECT count(baton.enqueue(:'tr', 'rls', 'rls' || g)) AS enqueued FROM generate_series(1, 3) g;
ALTER TABLE baton.deliveries ENABLE ROW LEVEL SECURITY;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'rls', '1 hour', 2)$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'rls1'), 1)$$);
SELECT * FROM da_call($$SELECT status FROM baton.finish_batch('00000000-0000-0000-00d1-000000000003',
  ARRAY[da_id('00000000-0000-0000-00d1-000000000003', 'rls2')], ARRAY[1]::bigint[])$$);
ALTER TABLE baton.deliveries DISABLE ROW LEVEL SECURITY;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'rls', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'rls3'), 1)$$);
SELECT dedup_key, status, generation FROM baton.deliveries WHERE tenant = :'tr' AND target = 'rls' ORDER BY id;
SELECT relrowsecurity FROM pg_class WHERE oid = 'baton.deliveries'::regclass;

-- baton.direct_access = off: the statements, whatever the table.
SELECT baton.enqueue(:'tr', 'off', 'off1') > 0 AS enqueued;
SET baton.direct_access = off;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'off', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'off1'), 1)$$);
SET baton.direct_access = on;

-- ---------------------------------------------------------------------------
-- 5. finish_batch and authorization, per item: finish_batch checks the target of each
-- delivery it finds (remembering the last target checked); a batch with any delivery
-- of a bound target the caller may not work on is DU005 and finishes nothing, whatever
-- its place in the batch and whichever targets come before it. Both paths.
-- ---------------------------------------------------------------------------
CREATE ROLE baton_da_worker;
CREATE ROLE baton_da_team1;
CREATE ROLE baton_da_team2;
SELECT baton.grant_worker('baton_da_worker');
GRANT baton_da_team1 TO baton_da_worker;
SELECT baton.bind_target(:'fb', 'one', 'baton_da_team1');
SELECT baton.bind_target(:'fb', 'two', 'baton_da_team2');
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'fb', '[
  {"target": "one", "dedup_key": "o1"}, {"target": "one", "dedup_key": "o2"}, {"target": "one", "dedup_key": "o3"},
  {"target": "one", "dedup_key": "o4"}, {"target": "one", "dedup_key": "o5"}, {"target": "one", "dedup_key": "o6"},
  {"target": "two", "dedup_key": "t1"}, {"target": "two", "dedup_key": "t2"},
  {"target": "free", "dedup_key": "f1"}, {"target": "free", "dedup_key": "f2"}]');
-- The owner (a member of every role) claims: one* o1 .. o5, two* t1, free* f1 (t2, o6
-- and f2 stay pending).
SELECT count(*) AS claimed FROM baton.claim(:'fb', 'one', '1 hour', 5);
SELECT count(*) AS claimed FROM baton.claim(:'fb', 'two', '1 hour');
SELECT count(*) AS claimed FROM baton.claim(:'fb', 'free', '1 hour');
SELECT da_id(:'fb', 'o1') AS o1, da_id(:'fb', 'o2') AS o2, da_id(:'fb', 'o3') AS o3, da_id(:'fb', 'o4') AS o4,
       da_id(:'fb', 'o5') AS o5, da_id(:'fb', 'o6') AS o6, da_id(:'fb', 't1') AS t1, da_id(:'fb', 't2') AS t2,
       da_id(:'fb', 'f1') AS f1 \gset
CREATE TEMP VIEW da_fb_rows AS
  SELECT dedup_key, target, status, generation FROM baton.deliveries
   WHERE tenant = '00000000-0000-0000-00d1-000000000004' ORDER BY id;

SET ROLE baton_da_worker;
-- one's row, then two's: DU005 names two and its role; o1 (settled first) is not finished.
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:o1, :t1], ARRAY[1, 1]);
-- two's row first
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:t1, :o1], ARRAY[1, 1]);
-- one, an unbound target, one again (the target remembered changes each time), then two
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:o1, :f1, :o2, :t1], ARRAY[1, 1, 1, 1]);
-- one, then two's row that was never claimed: DU005 (before its lease_lost answer)
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:o1, :t2], ARRAY[1, 0]);
-- an unknown id (no target to check) before two's row: still DU005
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:o1, -1, :t1], ARRAY[1, 1, 1]);
-- with the statements: the same
SET baton.direct_access = off;
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:o1, :t1], ARRAY[1, 1]);
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:t1, :o1], ARRAY[1, 1]);
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:o1, :f1, :o2, :t1], ARRAY[1, 1, 1, 1]);
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:o1, :t2], ARRAY[1, 0]);
SET baton.direct_access = on;
RESET ROLE;
-- nothing was finished by any of them
SELECT * FROM da_fb_rows;
SET ROLE baton_da_worker;
-- Without two's rows: every kind of answer in one batch, across one's and the unbound
-- target's rows: applied (o1, f1, o3), the stored status (o2, finished just before), a
-- lost lease (o4 at generation 9, o6 never claimed), an unknown id.
SELECT status FROM baton.finish_batch(:'fb', ARRAY[:o2], ARRAY[1]);
SELECT u.k AS dedup_key, f.status
  FROM baton.finish_batch(:'fb', ARRAY[:o1, :f1, :o2, :o4, -1, :o6, :o3], ARRAY[1, 1, 1, 9, 1, 0, 1], 'failed')
       WITH ORDINALITY f(id, status, n)
  JOIN unnest(ARRAY['o1', 'f1', 'o2', 'o4', 'unknown', 'o6', 'o3']) WITH ORDINALITY u(k, n) ON u.n = f.n
 ORDER BY f.n;
-- The same call with the statements: the same answers (o1, f1, o3 now the stored status).
SET baton.direct_access = off;
SELECT u.k AS dedup_key, f.status
  FROM baton.finish_batch(:'fb', ARRAY[:o1, :f1, :o2, :o4, -1, :o6, :o3], ARRAY[1, 1, 1, 9, 1, 0, 1], 'failed')
       WITH ORDINALITY f(id, status, n)
  JOIN unnest(ARRAY['o1', 'f1', 'o2', 'o4', 'unknown', 'o6', 'o3']) WITH ORDINALITY u(k, n) ON u.n = f.n
 ORDER BY f.n;
SET baton.direct_access = on;
-- A single finish of two's row: DU005, on either path.
\set VERBOSITY terse
SELECT baton.finish(:'fb', :t1, 1);
SET baton.direct_access = off;
SELECT baton.finish(:'fb', :t1, 1);
SET baton.direct_access = on;
-- A claim of two's target: DU005, and nothing claimed (t2 stays pending).
SELECT dedup_key FROM baton.claim(:'fb', 'two', '1 hour');
\set VERBOSITY default
RESET ROLE;
SELECT * FROM da_fb_rows;
-- Settle the rest, so that no lease of this file expires later in the suite.
SELECT status FROM baton.finish_batch(:'fb', ARRAY[:o4, :o5, :t1], ARRAY[1, 1, 1]);
SELECT count(*) AS claimed_left FROM baton.deliveries
 WHERE tenant IN (:'a', :'b', :'tr', :'fb') AND status = 'claimed';

-- ---------------------------------------------------------------------------
-- 6. What a user may add to baton.deliveries besides triggers: CHECK and NOT NULL
-- constraints are checked on the direct path as an UPDATE checks them; a stored
-- generated column or a rule takes the statements (which compute and apply them).
-- ---------------------------------------------------------------------------
SELECT count(baton.enqueue(:'tr', 'added', 'added' || g)) AS enqueued FROM generate_series(1, 6) g;
ALTER TABLE baton.deliveries ADD CONSTRAINT da_result_required
  CHECK (status <> 'finished' OR result IS NOT NULL) NOT VALID;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'added', '1 hour', 2)$$);
-- no result: 23514 on either path; with one, finished
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'added1'), 1)$$);
SET baton.direct_access = off;
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'added1'), 1)$$);
SET baton.direct_access = on;
SELECT * FROM da_call($$SELECT status FROM baton.finish_batch('00000000-0000-0000-00d1-000000000003',
  ARRAY[da_id('00000000-0000-0000-00d1-000000000003', 'added2')], ARRAY[1]::bigint[])$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'added1'), 1, 'finished', '{"ok": true}')$$);
ALTER TABLE baton.deliveries DROP CONSTRAINT da_result_required;
-- A stored generated column: the statements compute it.
ALTER TABLE baton.deliveries ADD COLUMN da_settled boolean
  GENERATED ALWAYS AS (status IN ('finished', 'failed')) STORED;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'added', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'added2'), 1)$$);
SELECT dedup_key, status, da_settled FROM baton.deliveries WHERE tenant = :'tr' AND target = 'added' ORDER BY id;
ALTER TABLE baton.deliveries DROP COLUMN da_settled;
-- A rule: the statements apply it.
CREATE TABLE da_rule_log (dedup_key text, status text);
CREATE RULE da_rule AS ON UPDATE TO baton.deliveries DO ALSO
  INSERT INTO da_rule_log VALUES (NEW.dedup_key, NEW.status);
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'added', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'added4'), 1)$$);
SELECT * FROM da_rule_log ORDER BY dedup_key, status;
DROP RULE da_rule ON baton.deliveries;
DROP TABLE da_rule_log;
-- All gone: the direct path again.
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'added', '1 hour')$$);
SELECT * FROM da_call($$SELECT status FROM baton.finish_batch('00000000-0000-0000-00d1-000000000003',
  ARRAY[da_id('00000000-0000-0000-00d1-000000000003', 'added3'), da_id('00000000-0000-0000-00d1-000000000003', 'added5')], ARRAY[1, 1]::bigint[])$$);
SELECT dedup_key, status, generation, result FROM baton.deliveries WHERE tenant = :'tr' AND target = 'added' ORDER BY id;

-- ---------------------------------------------------------------------------
-- 7. The column numbers of baton.deliveries (and its oid) are found once per backend and
-- kept until the table changes (src/pg/runtime/relations.cpp). Here result and max_attempts are
-- dropped and added again, which gives them new numbers: the next calls of this same
-- session write the new result column on the direct path, and the fence trigger checks
-- the new max_attempts; after the rollback, the old columns again. Then the extension
-- is dropped and created again in this session (a new table of the same name), rolled
-- back too: each time the calls that follow find the table as it is.
-- ---------------------------------------------------------------------------
SET baton.direct_access = on;
-- Sets max_attempts of a delivery of tenant tr by its dedup key: 'updated', or the
-- refusal as 'SQLSTATE: message'.
CREATE FUNCTION da_set_max_attempts(k text, n int) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  UPDATE baton.deliveries SET max_attempts = n WHERE tenant = '00000000-0000-0000-00d1-000000000003' AND dedup_key = k;
  RETURN 'updated';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'delivery \d+', 'delivery #');
END $$;
SELECT count(baton.enqueue(:'tr', 'cols', 'cols' || g)) AS enqueued FROM generate_series(1, 3) g;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'cols', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'cols1'), 1, 'finished', '{"n": 1}')$$);
BEGIN;
ALTER TABLE baton.deliveries DROP COLUMN result, DROP COLUMN max_attempts;
ALTER TABLE baton.deliveries ADD COLUMN result jsonb, ADD COLUMN max_attempts integer NOT NULL DEFAULT 3;
-- the two columns now come after every other one
SELECT attname, attnum > 18 AS renumbered FROM pg_attribute
 WHERE attrelid = 'baton.deliveries'::regclass AND attname IN ('result', 'max_attempts') ORDER BY attname;
-- direct claim and finish (the fence trigger does not fire); the result lands in the new column
SELECT * FROM da_call($$SELECT dedup_key, generation, attempt FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'cols', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'cols2'), 1, 'finished', '{"n": 2}')$$);
SELECT dedup_key, status, max_attempts, result FROM baton.deliveries WHERE tenant = :'tr' AND target = 'cols' ORDER BY id;
-- the fence trigger reads the new max_attempts: 0 breaks a row rule (23514)
SELECT da_set_max_attempts('cols3', 0);
ROLLBACK;
-- The old columns again: cols2 is pending, and finishing it fills the old result column;
-- the trigger reads the old max_attempts.
SELECT * FROM da_call($$SELECT dedup_key, generation, attempt FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'cols', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'cols2'), 1, 'finished', '{"n": 2}')$$);
SELECT dedup_key, status, max_attempts, result FROM baton.deliveries WHERE tenant = :'tr' AND target = 'cols' ORDER BY id;
SELECT da_set_max_attempts('cols3', 0);
-- The extension dropped and created again in this session: a new baton.deliveries.
BEGIN;
SET LOCAL client_min_messages = warning;
DROP EXTENSION pg_baton CASCADE;
CREATE EXTENSION pg_baton;
SELECT baton.create_tenant(:'tr');
SELECT count(baton.enqueue(:'tr', 'recreated', 'again' || g)) AS enqueued FROM generate_series(1, 2) g;
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'recreated', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'again1'), 1, 'finished', '{"n": 3}')$$);
SELECT dedup_key, status, result FROM baton.deliveries WHERE tenant = :'tr' ORDER BY id;
ROLLBACK;
-- The first table again, after the rollback.
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'cols', '1 hour')$$);
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'cols3'), 1, 'finished', '{"n": 4}')$$);
SELECT dedup_key, status, max_attempts, result FROM baton.deliveries WHERE tenant = :'tr' AND target = 'cols' ORDER BY id;
DROP FUNCTION da_set_max_attempts(text, int);

-- A user's unique index on a column a claim writes is still checked on every row it
-- writes (only the primary key and the dedup key, which a claim leaves as they are, are
-- not): two rows claimed together share their lease_until (23505).
BEGIN;
SELECT count(baton.enqueue(:'tr', 'uq', 'uq' || g)) AS enqueued FROM generate_series(1, 2) g;
CREATE UNIQUE INDEX da_user_unique ON baton.deliveries (tenant, lease_until) WHERE target = 'uq';
\set VERBOSITY terse
SELECT count(*) FROM baton.claim(:'tr', 'uq', '1 hour', 2);
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- Nor is a partial unique index whose key a claim leaves as it is, but whose predicate
-- reads a column it writes: the claimed versions take entries the pending ones had not.
BEGIN;
SELECT count(baton.enqueue(:'tr', 'uq', 'uq' || g)) AS enqueued FROM generate_series(1, 2) g;
CREATE UNIQUE INDEX da_user_unique ON baton.deliveries (tenant, target) WHERE target = 'uq' AND status = 'claimed';
\set VERBOSITY terse
SELECT count(*) FROM baton.claim(:'tr', 'uq', '1 hour', 2);
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;

-- A trigger on a side table (as pg_repack adds while it copies baton.ready or
-- baton.leases, to replay the writes made meanwhile): the claim takes the statements, and
-- the side rows are written by SQL, so that the trigger sees each of them.
CREATE TABLE da_side_log (tbl text, op text, id bigint);
CREATE FUNCTION da_log_side() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO da_side_log VALUES (TG_TABLE_NAME, TG_OP, CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END);
  RETURN NULL;
END $$;
CREATE TRIGGER da_side AFTER INSERT OR DELETE ON baton.ready FOR EACH ROW EXECUTE FUNCTION da_log_side();
CREATE TRIGGER da_side AFTER INSERT OR DELETE ON baton.leases FOR EACH ROW EXECUTE FUNCTION da_log_side();
SET baton.direct_access = on;
SELECT baton.enqueue(:'tr', 'side', 'side1') AS side1 \gset
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'side', '1 hour')$$);
SELECT tbl, op, id = :side1 AS of_side1 FROM da_side_log ORDER BY tbl DESC, op DESC;
-- A finish removes its lease's row, by SQL, so that the trigger sees it (the fence
-- trigger of baton.leases fires for it).
TRUNCATE da_side_log;
SELECT * FROM da_call(format($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', %s, 1)$$, :side1));
SELECT tbl, op, id = :side1 AS of_side1 FROM da_side_log;
-- Either table's trigger alone sends a claim to the statements.
DROP TRIGGER da_side ON baton.ready;
SELECT baton.enqueue(:'tr', 'side', 'side2') AS side2 \gset
SELECT * FROM da_call($$SELECT dedup_key FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'side', '1 hour')$$);
SELECT tbl, op, id = :side2 AS of_side2 FROM da_side_log;
CREATE TRIGGER da_side AFTER INSERT OR DELETE ON baton.ready FOR EACH ROW EXECUTE FUNCTION da_log_side();
DROP TRIGGER da_side ON baton.leases;
TRUNCATE da_side_log;
SELECT baton.enqueue(:'tr', 'side', 'side3') AS side3 \gset
SELECT * FROM da_call($$SELECT dedup_key FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'side', '1 hour')$$);
SELECT tbl, op, id = :side3 AS of_side3 FROM da_side_log ORDER BY op DESC;
DROP TRIGGER da_side ON baton.ready;
DROP TABLE da_side_log;
DROP FUNCTION da_log_side();

-- ---------------------------------------------------------------------------
-- 8. enqueue_batch inserts directly (the fence trigger does not fire), writing what its
-- statement writes (section 2 compares the rows), unless a path above takes the
-- statements, an item names a run (its foreign key is the statement's to check) or the
-- default of status is not 'pending'. A CHECK constraint a user added refuses a row on
-- both paths, with nothing written; a column a user added takes its default; a key
-- already taken rolls the direct insert back, and the batch goes on by look-up.
-- ---------------------------------------------------------------------------
SET baton.direct_access = on;
ALTER TABLE baton.deliveries ADD CONSTRAINT da_low_priority CHECK (priority < 100) NOT VALID;
SELECT * FROM da_call($$SELECT inserted FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  '[{"target": "eb", "dedup_key": "eb1"}, {"target": "eb", "dedup_key": "eb2", "priority": 200}]')$$);
SET baton.direct_access = off;
SELECT * FROM da_call($$SELECT inserted FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  '[{"target": "eb", "dedup_key": "eb1"}, {"target": "eb", "dedup_key": "eb2", "priority": 200}]')$$);
SET baton.direct_access = on;
ALTER TABLE baton.deliveries DROP CONSTRAINT da_low_priority;
SELECT count(*) AS eb_rows FROM baton.deliveries WHERE tenant = :'tr' AND target = 'eb';
ALTER TABLE baton.deliveries ADD COLUMN da_source text DEFAULT 'batch';
SELECT * FROM da_call($$SELECT inserted FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  '[{"target": "eb", "dedup_key": "eb1"}, {"target": "eb", "dedup_key": "eb2", "priority": 2}]')$$);
-- eb1 again, after a new key: the direct insert finds eb1 taken and is rolled back; the
-- look-up returns eb1's row and inserts eb3 alone
SELECT * FROM da_call($$SELECT inserted, id = da_id('00000000-0000-0000-00d1-000000000003', 'eb1') AS eb1s_id FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  '[{"target": "eb", "dedup_key": "eb3"}, {"target": "eb", "dedup_key": "eb1"}]')$$);
-- each row pending, with its ready row in claim order (eb2 first: priority 2)
SELECT d.dedup_key, d.status, d.priority, d.da_source FROM baton.deliveries d
 WHERE d.tenant = :'tr' AND d.target = 'eb' ORDER BY d.id;
SELECT d.dedup_key FROM baton.ready r JOIN baton.deliveries d ON d.tenant = r.tenant AND d.id = r.id
 WHERE r.tenant = :'tr' AND r.target = 'eb' ORDER BY r.rank, r.id;
ALTER TABLE baton.deliveries DROP COLUMN da_source;
-- an item that names a run: the statement
INSERT INTO baton.runs (tenant, id, workflow, version, inputs_digest)
  VALUES (:'tr', '00000000-0000-0000-00d1-0000000000e1', 'wf', 1, 'digest-eb');
SELECT * FROM da_call($$SELECT inserted FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  '[{"target": "eb", "dedup_key": "eb4", "run_id": "00000000-0000-0000-00d1-0000000000e1"}]')$$);
-- a default of status other than 'pending': the statement, whose trigger refuses the row
-- in its own words (a trigger call that raises is not counted: fence_fired shows f)
BEGIN;
ALTER TABLE baton.deliveries ALTER COLUMN status SET DEFAULT 'waiting';
SELECT * FROM da_call($$SELECT inserted FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003', '[{"target": "eb", "dedup_key": "eb5"}]')$$);
ROLLBACK;
SELECT dedup_key, status, run_id IS NOT NULL AS has_run FROM baton.deliveries
 WHERE tenant = :'tr' AND target = 'eb' ORDER BY id;
-- A batch larger than one heap_multi_insert (1,000 rows or 64 kB of them): every
-- delivery has its ready row, whose row_tid is where the delivery was written, and
-- amcheck finds every row of both tables in each of their indexes. A second batch whose
-- last item's key is taken wrote several rounds of rows before it met the key: all of
-- them are rolled back, the batch looks its keys up, and its 2,499 new items are
-- inserted directly again.
CREATE EXTENSION IF NOT EXISTS amcheck;
SELECT * FROM da_call($$SELECT count(*) FILTER (WHERE inserted) FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  (SELECT jsonb_agg(jsonb_build_object('target', 'many', 'dedup_key', 'many' || g, 'priority', g % 3) ORDER BY g) FROM generate_series(1, 2500) g))$$);
SELECT * FROM da_call($$SELECT count(*) FILTER (WHERE inserted) FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  (SELECT jsonb_agg(jsonb_build_object('target', 'many', 'dedup_key', 'many' || g) ORDER BY g) FROM generate_series(2501, 4999) g)
  || '[{"target": "many", "dedup_key": "many7"}]')$$);
-- Rows of 3 kB payloads (compressed as they are stored): a round ends at 64 kB, so 60 of
-- them take three, and the 100 small rows after them a fourth, larger one.
SELECT * FROM da_call($$SELECT count(*) FILTER (WHERE inserted) FROM baton.enqueue_batch('00000000-0000-0000-00d1-000000000003',
  (SELECT jsonb_agg(CASE WHEN g <= 60 THEN jsonb_build_object('target', 'many', 'dedup_key', 'big' || g, 'payload', jsonb_build_object('s', repeat(md5(g::text), 100)))
                         ELSE jsonb_build_object('target', 'many', 'dedup_key', 'small' || g) END ORDER BY g)
     FROM generate_series(1, 160) g))$$);
SELECT count(*) AS deliveries, count(r.id) AS ready_rows,
       count(*) FILTER (WHERE r.row_tid = d.ctid) AS at_row_tid, count(*) FILTER (WHERE r.row_tid IS NULL) AS no_row_tid,
       count(*) FILTER (WHERE r.rank = -d.priority AND r.run_after = d.run_after) AS in_claim_order,
       count(*) FILTER (WHERE d.dedup_key LIKE 'big%' AND d.payload->>'s' = repeat(md5(substr(d.dedup_key, 4)), 100)) AS big_intact
  FROM baton.deliveries d LEFT JOIN baton.ready r ON r.tenant = d.tenant AND r.target = d.target AND r.id = d.id
 WHERE d.tenant = :'tr' AND d.target = 'many';
SELECT c.relname, bt_index_check(c.oid, true) AS checked
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid IN ('baton.deliveries'::regclass, 'baton.ready'::regclass) ORDER BY 1;

-- ---------------------------------------------------------------------------
-- 9. A finish reads the version its own session's claim wrote by its tid, not by the
-- primary key, when that version is still the one its snapshot sees and is the
-- delivery's own; a claim reads a delivery at its ready row's row_tid on the same terms. VACUUM FULL between the claim and the finish writes the table anew,
-- each row elsewhere (and other rows where these were): each finish still settles its
-- own delivery, and the other rows stay as they were.
-- ---------------------------------------------------------------------------
SET baton.direct_access = on;
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'tr',
  (SELECT jsonb_agg(jsonb_build_object('target', 'tid', 'dedup_key', 'tid' || g) ORDER BY g) FROM generate_series(1, 6) g));
SELECT dedup_key, generation FROM baton.claim(:'tr', 'tid', '1 hour', 2);
-- rows written after them, and the rows of tr written before them gone: the rewrite moves
-- later rows to where tid1 and tid2 were
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'tr',
  (SELECT jsonb_agg(jsonb_build_object('target', 'later', 'dedup_key', 'later' || g) ORDER BY g) FROM generate_series(1, 300) g));
DELETE FROM baton.deliveries WHERE tenant = :'tr' AND target NOT IN ('tid', 'later');
VACUUM FULL baton.deliveries;
SELECT * FROM da_call($$SELECT baton.finish('00000000-0000-0000-00d1-000000000003', da_id('00000000-0000-0000-00d1-000000000003', 'tid1'), 1)$$);
SELECT * FROM da_call($$SELECT status FROM baton.finish_batch('00000000-0000-0000-00d1-000000000003',
  ARRAY[da_id('00000000-0000-0000-00d1-000000000003', 'tid2')], ARRAY[1]::bigint[])$$);
-- So does a claim read a delivery where enqueue_batch wrote it (its ready row's
-- row_tid), once it has checked the row found there is that delivery's: tid3 and tid4,
-- whose row_tid VACUUM FULL left pointing at other rows, are the ones claimed.
SELECT * FROM da_call($$SELECT dedup_key, generation FROM baton.claim('00000000-0000-0000-00d1-000000000003', 'tid', '1 hour', 2)$$);
SELECT dedup_key, status, generation FROM baton.deliveries WHERE tenant = :'tr' AND target = 'tid' ORDER BY id;
SELECT status, count(*) FROM baton.deliveries WHERE tenant = :'tr' AND target = 'later' GROUP BY status;

-- ---------------------------------------------------------------------------
-- 10. A claim and a finish open the table's indexes only when an update needs entries
-- in them (delivery_direct.cpp, open_indexes()). With an index of the user's own on
-- status, a column both write, no update is HOT: every claim and finish writes an entry
-- into every index, each through indexes opened by that write. amcheck then finds every
-- row in every index, and the user's index answers for the statuses.
-- ---------------------------------------------------------------------------
CREATE INDEX da_user_status ON baton.deliveries (status);
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'tr',
  (SELECT jsonb_agg(jsonb_build_object('target', 'nonhot', 'dedup_key', 'nh' || g) ORDER BY g) FROM generate_series(1, 40) g));
SELECT count(*) AS claimed FROM baton.claim(:'tr', 'nonhot', '1 hour', 15);
SELECT count(*) AS claimed FROM baton.claim(:'tr', 'nonhot', '1 hour');
SELECT count(baton.finish(:'tr', d.id, d.generation)) AS finished
  FROM (SELECT id, generation FROM baton.deliveries WHERE tenant = :'tr' AND target = 'nonhot' AND status = 'claimed' ORDER BY id LIMIT 10) d;
SELECT count(baton.finish(:'tr', d.id, d.generation, 'failed')) AS failed
  FROM (SELECT id, generation FROM baton.deliveries WHERE tenant = :'tr' AND target = 'nonhot' AND status = 'claimed' ORDER BY id LIMIT 1) d;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT status, count(*) FROM baton.deliveries WHERE tenant = :'tr' AND target = 'nonhot' AND status IN ('claimed', 'finished', 'failed', 'pending')
 GROUP BY status ORDER BY status;
RESET enable_bitmapscan;
RESET enable_seqscan;
SELECT c.relname, bt_index_check(c.oid, true) AS checked
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'baton.deliveries'::regclass ORDER BY 1;
DROP INDEX baton.da_user_status;

-- ---------------------------------------------------------------------------
-- 11. A claim reads its priority level in windows of ids after the claim hint (8 ids and
-- two a row asked for, then 32 times as wide, then the rest of the level), each window
-- one scan of baton.ready's key: a target whose ids lie 50 apart is claimed from the
-- second window (two scans a claim), one whose ids lie 1,000 apart from the rest of the
-- level (three), each row once and in claim order, by single and batched claims. The
-- first claim of a target has no hint and reads from the top (one scan); a claim that
-- finds its level empty reads the level below (one scan) and, at most once a second a
-- target, the top again (one scan).
-- ---------------------------------------------------------------------------
SET baton.direct_access = on;
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'tr', (SELECT jsonb_agg(jsonb_build_object(
    'target', CASE WHEN g % 1000 = 7 THEN 'win1000' WHEN g % 50 = 0 AND g <= 500 THEN 'win50' ELSE 'winpad' END,
    'dedup_key', 'win' || g) ORDER BY g) FROM generate_series(1, 4000) g));
SELECT target, count(*) AS pending, min(gap) AS min_gap
  FROM (SELECT target, id - lag(id) OVER (PARTITION BY target ORDER BY id) AS gap
          FROM baton.deliveries WHERE tenant = :'tr' AND target IN ('win50', 'win1000')) s
 GROUP BY target ORDER BY target;
-- `claims` claims of `per_claim` rows each, in one statement, each with the scans of
-- ready_pkey so far (counted by the statement's transaction as they happen; the
-- subquery names g, so that each row calls claim again).
CREATE FUNCTION da_claims(t uuid, tgt text, per_claim int, claims int)
RETURNS TABLE(g int, claimed text, scans_so_far bigint) LANGUAGE sql AS $$
  WITH before AS (SELECT pg_stat_get_xact_numscans('baton.ready_pkey'::regclass) AS n)
  SELECT g, (SELECT string_agg(c.dedup_key, ',') FROM baton.claim(t, tgt, '1 hour', per_claim + 0 * g) c),
         pg_stat_get_xact_numscans('baton.ready_pkey'::regclass) - before.n
    FROM before, generate_series(1, claims) g $$;
SELECT * FROM da_claims(:'tr', 'win50', 1, 11);
SELECT * FROM da_claims(:'tr', 'win1000', 2, 3);
SELECT target, status, count(*) FROM baton.deliveries WHERE tenant = :'tr' AND target IN ('win50', 'win1000')
 GROUP BY target, status ORDER BY target, status;

-- ---------------------------------------------------------------------------
-- 12. baton.deliveries' primary key is opened (and locked) only by a probe that needs
-- it: a claim that reads its delivery at the ready row's row_tid (enqueue_batch wrote it)
-- and a finish that reads the version its own claim wrote, both HOT updates, leave it
-- unlocked; a claim of a delivery whose ready row has no row_tid (enqueue writes none)
-- probes the key, so locks it. Each in a transaction of its own, after the enqueues,
-- with no statement on baton.deliveries in it (planning one locks all its indexes).
-- ---------------------------------------------------------------------------
SET baton.direct_access = on;
SELECT count(*) AS enqueued FROM baton.enqueue_batch(:'tr',
  (SELECT jsonb_agg(jsonb_build_object('target', 'pk', 'dedup_key', 'pk' || g) ORDER BY g) FROM generate_series(1, 2) g));
SELECT baton.enqueue(:'tr', 'pkone', 'pkone') > 0 AS enqueued;
CREATE FUNCTION da_pkey_locked() RETURNS boolean LANGUAGE sql AS $$
  SELECT EXISTS (SELECT FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'
                   AND relation = 'baton.deliveries_pkey'::regclass) $$;
BEGIN;
SELECT id, generation FROM baton.claim(:'tr', 'pk', '1 hour') \gset pk_
SELECT da_pkey_locked() AS locked_after_claim;
SELECT baton.finish(:'tr', :pk_id, :pk_generation) AS finished;
SELECT da_pkey_locked() AS locked_after_finish;
COMMIT;
BEGIN;
SELECT dedup_key FROM baton.claim(:'tr', 'pkone', '1 hour');
SELECT da_pkey_locked() AS locked_after_probing_claim;
COMMIT;
SELECT target, status, count(*) FROM baton.deliveries WHERE tenant = :'tr' AND target IN ('pk', 'pkone')
 GROUP BY target, status ORDER BY target, status;

-- Clean up: the view, the functions, the bindings, the roles.
DROP VIEW da_fb_rows;
DELETE FROM baton.target_bindings WHERE tenant = :'fb';
DROP OWNED BY baton_da_worker, baton_da_team1, baton_da_team2;
DROP ROLE baton_da_worker, baton_da_team1, baton_da_team2;
DROP FUNCTION da_sequence(uuid, boolean);
DROP FUNCTION da_call(text);
DROP FUNCTION da_claims(uuid, text, int, int);
DROP FUNCTION da_pkey_locked();
DROP FUNCTION da_rows(uuid);
DROP FUNCTION da_id(uuid, text);
DROP FUNCTION da_fence_calls();
RESET track_functions;
RESET baton.direct_access;
