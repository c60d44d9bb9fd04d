-- The threats of docs/guide/security.md that sql/authorization.sql does not already cover:
-- a caller's search_path that shadows Postgres' operators, functions and pg_baton's
-- table names; the rights the functions run with and the decide function's; role
-- names that carry SQL; the GUCs a non-superuser can set; advisory lock keys; who
-- can listen to wake-ups. Roles are created and dropped here (baton_sec_*).
\set SHOW_CONTEXT never
\set VERBOSITY default
\set t 00000000-0000-0000-00a3-000000000001
\set o 00000000-0000-0000-00a3-000000000002

-- ---------------------------------------------------------------------------
-- 1. A hostile search_path. Schema sec_evil shadows every operator and function
-- pg_baton's statements use, and has tables named like pg_baton's; each shadow records
-- its call. This session is new, so pg_baton prepares every statement under that
-- search_path. Every function behaves, and no shadow is ever called.
-- ---------------------------------------------------------------------------
CREATE SCHEMA sec_evil;
CREATE TABLE sec_evil.calls (what text);
GRANT USAGE ON SCHEMA sec_evil TO PUBLIC;
GRANT INSERT, SELECT ON sec_evil.calls TO PUBLIC;
CREATE TABLE sec_evil.deliveries (tenant uuid, id bigint);
CREATE TABLE sec_evil.runs (tenant uuid, id uuid);
CREATE TABLE sec_evil.tenants (tenant uuid, state text);
CREATE TABLE sec_evil.stages (tenant uuid, id bigint);
CREATE TABLE sec_evil.markers (tenant uuid, entry_id bigint);
CREATE TABLE sec_evil.step_entries (tenant uuid, id bigint);
CREATE TABLE sec_evil.workflows (name text, version int);
CREATE TABLE sec_evil.target_bindings (tenant uuid, target text);
-- one shadow per operator: it records the call and answers as the real one would
DO $$
DECLARE
    op record;
BEGIN
    FOR op IN SELECT * FROM (VALUES
        ('=', 'uuid', 'uuid', 'boolean', 'uuid_eq'), ('=', 'text', 'text', 'boolean', 'texteq'),
        ('=', 'bigint', 'bigint', 'boolean', 'int8eq'), ('=', 'integer', 'integer', 'boolean', 'int4eq'),
        ('=', 'jsonb', 'jsonb', 'boolean', 'jsonb_eq'), ('<>', 'text', 'text', 'boolean', 'textne'),
        ('<>', 'bigint', 'bigint', 'boolean', 'int8ne'), ('<', 'timestamptz', 'timestamptz', 'boolean', 'timestamptz_lt'),
        ('<=', 'timestamptz', 'timestamptz', 'boolean', 'timestamptz_le'),
        ('>=', 'integer', 'integer', 'boolean', 'int4ge'), ('+', 'timestamptz', 'interval', 'timestamptz', 'timestamptz_pl_interval'),
        ('+', 'bigint', 'bigint', 'bigint', 'int8pl'), ('+', 'integer', 'integer', 'integer', 'int4pl'),
        ('@>', 'jsonb', 'jsonb', 'boolean', 'jsonb_contains'), ('~~', 'text', 'text', 'boolean', 'textlike'),
        ('||', 'text', 'text', 'text', 'textcat'), ('->', 'jsonb', 'text', 'jsonb', 'jsonb_object_field'),
        ('->>', 'jsonb', 'text', 'text', 'jsonb_object_field_text'), ('-', 'timestamptz', 'timestamptz', 'interval', 'timestamptz_mi'))
        AS x(opname, l, r, res, impl)
    LOOP
        EXECUTE format('CREATE FUNCTION sec_evil.%I(a %s, b %s) RETURNS %s LANGUAGE plpgsql AS $f$
            BEGIN INSERT INTO sec_evil.calls VALUES (%L); RETURN pg_catalog.%I(a, b); END $f$',
            'op_' || op.impl, op.l, op.r, op.res, op.opname || '(' || op.l || ',' || op.r || ')', op.impl);
        EXECUTE format('CREATE OPERATOR sec_evil.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = sec_evil.%I)',
            op.opname, op.l, op.r, 'op_' || op.impl);
    END LOOP;
END $$;
-- and one shadow per function
CREATE FUNCTION sec_evil.now() RETURNS timestamptz LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sec_evil.calls VALUES ('now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION sec_evil.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sec_evil.calls VALUES ('gen_random_uuid()'); RETURN pg_catalog.gen_random_uuid(); END $$;
CREATE FUNCTION sec_evil.sha256(b bytea) RETURNS bytea LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sec_evil.calls VALUES ('sha256()'); RETURN pg_catalog.sha256(b); END $$;
CREATE FUNCTION sec_evil.encode(b bytea, f text) RETURNS text LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sec_evil.calls VALUES ('encode()'); RETURN pg_catalog.encode(b, f); END $$;
CREATE FUNCTION sec_evil.convert_to(s text, e name) RETURNS bytea LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sec_evil.calls VALUES ('convert_to()'); RETURN pg_catalog.convert_to(s, e); END $$;
CREATE FUNCTION sec_evil.jsonb_build_object(VARIADIC a text[]) RETURNS jsonb LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sec_evil.calls VALUES ('jsonb_build_object()'); RETURN '{}'; END $$;
CREATE FUNCTION sec_evil.pg_has_role(r oid, g oid, m text) RETURNS boolean LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sec_evil.calls VALUES ('pg_has_role()'); RETURN true; END $$;
CREATE FUNCTION sec_evil.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"next": "b"}'::jsonb $$;
-- the shadows work: an unqualified query under that path calls them
SET search_path = sec_evil, pg_catalog;
SELECT 1 = 1 AS shadowed, now() IS NOT NULL AS shadowed_now;
SELECT what FROM sec_evil.calls ORDER BY what;
TRUNCATE sec_evil.calls;

-- The whole API under that search_path, in a new session (no plan prepared before).
-- (The test's own comparisons name pg_catalog's operators, so as not to count.)
\c
\set SHOW_CONTEXT never
\set VERBOSITY default
SET search_path = sec_evil, pg_catalog;
SELECT baton.create_tenant(:'t');
SELECT baton.create_tenant(:'o');
SELECT baton.tenant_write_allowed(:'t');
SELECT baton.enqueue(:'t', 'sec', 'k1', '{"n": 1}', '{"cause": {"webhook": "00000000-0000-0000-0000-000000000001"}}') AS d1 \gset
SELECT baton.enqueue(:'t', 'sec', 'k1', '{"n": 1}', '{"cause": {"webhook": "00000000-0000-0000-0000-000000000001"}}') OPERATOR(pg_catalog.=) :d1 AS dedup_same_id;
SELECT baton.enqueue(:'t', 'sec', 'k1', '{"n": 2}');
SELECT count(*) FROM baton.enqueue_batch(:'t', '[{"target": "sec", "dedup_key": "k2", "run_after": "2000-01-01"}, {"target": "sec", "dedup_key": "k3", "priority": 5}]');
SELECT dedup_key, generation, attempt FROM baton.claim(:'t', 'sec', '1 hour', 10, '{"cause": {"webhook": "00000000-0000-0000-0000-000000000001"}}');
SELECT dedup_key, generation, attempt FROM baton.claim(:'t', 'sec', '1 hour', 10);
SELECT baton.renew(:'t', :d1, 1, '2 hours') OPERATOR(pg_catalog.=) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '2 hours') AS renewed;
SELECT baton.finish(:'t', :d1, 1, 'finished', '{"ok": true}');
\set VERBOSITY sqlstate
SELECT baton.finish(:'t', :d1, 0);
\set VERBOSITY default
SELECT id FROM baton.deliveries WHERE tenant OPERATOR(pg_catalog.=) :'t' AND dedup_key OPERATOR(pg_catalog.=) 'k3' \gset
SELECT baton.retry(:'t', :id, 1, 'boom', '0');
SELECT id OPERATOR(pg_catalog.=) :id AS same, status FROM baton.finish_batch(:'t', ARRAY[:id]::bigint[], ARRAY[1]::bigint[]);
SELECT baton.reap(10) OPERATOR(pg_catalog.>=) 0 AS reaped;
SELECT dedup_key, status, generation, result FROM baton.delivery(:'t', :d1);
SELECT baton.define_workflow('sec_flow', '{"start": "a", "decide": "sec_evil.decide", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('sec_gate', '{"start": "a", "requires_approval": true, "stages": {"a": {"next": [{"to": "@finish", "when": "$.stage.result.ok == true"}]}}}');
SELECT baton.submit(:'t', 'sec_gate', '{"x": 1}', 'g1') AS rg \gset
SELECT baton.inputs_digest(:'t', :'rg') = encode(sha256(convert_to('{"x": 1}', 'UTF8')), 'hex') AS digest_ok;
TRUNCATE sec_evil.calls;  -- (the line above called the shadows itself)
SELECT baton.approve(:'t', :'rg', 'me', baton.inputs_digest(:'t', :'rg'));
SELECT baton.acquire_run(:'t', :'rg', 'w', '1 hour') AS g \gset
SELECT kind, stage, entry_seq, inputs, run_status FROM baton.transition_stage(:'t', :'rg', :g);
SELECT stage_id AS s FROM baton.transition_stage(:'t', :'rg', :g) \gset
SELECT baton.start_stage(:'t', :'rg', :g, :s);
SELECT baton.claim_marker(:'t', :s, 0, 'charge', 'op-1');
SELECT baton.complete_marker(:'t', :s, 0, 'done');
SELECT state, kind, operation_id FROM baton.marker(:'t', :s, 0);
SELECT baton.complete_stage(:'t', :'rg', :g, :s, '{"ok": true}');
SELECT kind, run_status FROM baton.transition_stage(:'t', :'rg', :g);
SELECT stage, status, transition FROM baton.run_history(:'t', :'rg');
SELECT baton.submit(:'t', 'sec_flow', '{}', 'f1') AS rf \gset
SELECT r.run_id OPERATOR(pg_catalog.=) :'rf' AS took_it, r.generation AS gf FROM baton.acquire_next_run(:'t', 'sec_flow', 'w', '1 hour') r \gset
\echo :took_it
SELECT stage_id AS sf FROM baton.transition_stage(:'t', :'rf', :gf) \gset
SELECT baton.start_stage(:'t', :'rf', :gf, :sf);
SELECT baton.fail_stage(:'t', :'rf', :gf, :sf, 'oops', '0') OPERATOR(pg_catalog.=) pg_catalog.now() AS failed_now;
SELECT baton.start_stage(:'t', :'rf', :gf, :sf);
SELECT baton.claim_marker(:'t', :sf, 1, 'mail');
SELECT baton.complete_stage(:'t', :'rf', :gf, :sf, '{}');
SELECT kind, stage FROM baton.transition_stage(:'t', :'rf', :gf);
SELECT baton.renew_run(:'t', :'rf', :gf, '1 hour') OPERATOR(pg_catalog.=) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 hour') AS run_renewed;
SELECT baton.acquire_run(:'t', :'rf', 'w2', '1 hour') IS NULL AS held_by_w;
SELECT baton.release_run(:'t', :'rf', :gf);
SELECT baton.acquire_run(:'t', :'rf', 'w2', '1 hour') AS gf2 \gset
SELECT entry_id, "position", stage, kind FROM baton.markers_in_doubt(:'t', :'rf');
SELECT baton.resolve_marker(:'t', :sf, 1, :gf2, 'done');
SELECT baton.cancel(:'t', :'rf', 'enough');
SELECT status, reason, owner FROM baton.run(:'t', :'rf');
SELECT entry_seq FROM baton.enter_step(:'t', 'subject', 'step', 'dg');
SELECT entry_seq FROM baton.enter_step(:'t', 'subject', 'step', 'dg');
SELECT baton.set_tenant_state(:'o', 'fenced');
SELECT baton.enqueue(:'o', 'sec', 'k');
SELECT baton.set_tenant_state(:'o', 'active');
RESET search_path;
-- no shadow was called, and the look-alike tables are untouched
SELECT count(*) AS shadow_calls FROM sec_evil.calls;
SELECT what FROM sec_evil.calls;
SELECT (SELECT count(*) FROM sec_evil.deliveries) + (SELECT count(*) FROM sec_evil.runs)
     + (SELECT count(*) FROM sec_evil.tenants) + (SELECT count(*) FROM sec_evil.stages)
     + (SELECT count(*) FROM sec_evil.markers) + (SELECT count(*) FROM sec_evil.step_entries)
     + (SELECT count(*) FROM sec_evil.workflows) + (SELECT count(*) FROM sec_evil.target_bindings) AS lookalike_rows;

-- ---------------------------------------------------------------------------
-- 2. The rights the functions run with. None is SECURITY DEFINER or carries its own
-- settings in the catalog: each switches to the extension's owner in C while it runs
-- and back before it returns. PUBLIC has no right on anything of the schema.
-- ---------------------------------------------------------------------------
SELECT count(*) FILTER (WHERE p.prosecdef) AS security_definer,
       count(*) FILTER (WHERE p.proconfig IS NOT NULL) AS with_settings,
       count(*) FILTER (WHERE l.lanname <> 'c') AS not_c
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.pronamespace = 'baton'::regnamespace;
SELECT c.relname, a.privilege_type
  FROM pg_class c, aclexplode(c.relacl) a
 WHERE c.relnamespace = 'baton'::regnamespace AND a.grantee = 0;
SELECT p.proname, a.privilege_type
  FROM pg_proc p, aclexplode(p.proacl) a
 WHERE p.pronamespace = 'baton'::regnamespace AND a.grantee = 0;
SELECT a.privilege_type FROM pg_namespace n, aclexplode(n.nspacl) a
 WHERE n.nspname = 'baton' AND a.grantee = 0;
-- every function has an ACL (a NULL ACL would mean the default: EXECUTE to PUBLIC)
SELECT proname FROM pg_proc WHERE pronamespace = 'baton'::regnamespace AND proacl IS NULL;

CREATE ROLE baton_sec_worker;
CREATE ROLE baton_sec_other;
CREATE ROLE baton_sec_producer;
CREATE ROLE baton_sec_nobody;
SELECT baton.grant_worker('baton_sec_worker');
SELECT baton.grant_worker('baton_sec_other');
SELECT baton.grant_producer('baton_sec_producer');
GRANT USAGE ON SCHEMA sec_evil TO baton_sec_worker, baton_sec_other;

-- The decide function runs as the role that called transition_stage, never as the
-- owner: it sees that role as current_user, cannot touch pg_baton's tables, cannot
-- change role, and needs EXECUTE on it.
CREATE TABLE sec_evil.seen (who text, also_session text);
GRANT INSERT, SELECT ON sec_evil.seen TO PUBLIC;
CREATE FUNCTION sec_evil.decide_who(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO sec_evil.seen VALUES (current_user, session_user);
    RETURN '{"next": "b"}';
END $$;
CREATE FUNCTION sec_evil.decide_write(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    UPDATE baton.deliveries SET status = 'finished';
    RETURN '{"next": "b"}';
END $$;
CREATE FUNCTION sec_evil.decide_setrole(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    SET ROLE postgres;
    RETURN '{"next": "b"}';
END $$;
-- a decide function that calls transition_stage on its own run again, once
CREATE FUNCTION sec_evil.decide_reenter(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    r uuid := (ctx -> 'run' ->> 'id')::uuid;
    t uuid := '00000000-0000-0000-00a3-000000000001';
BEGIN
    IF current_setting('sec.nested', true) IS DISTINCT FROM 'on' THEN
        PERFORM set_config('sec.nested', 'on', true);
        PERFORM * FROM baton.transition_stage(t, r, (SELECT x.generation FROM baton.run(t, r) x));
    END IF;
    RETURN '{"next": "b"}';
END $$;
REVOKE EXECUTE ON FUNCTION sec_evil.decide_setrole(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sec_evil.decide_setrole(jsonb) TO baton_sec_worker;
CREATE FUNCTION sec_evil.decide_private(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"next": "b"}'::jsonb $$;
REVOKE EXECUTE ON FUNCTION sec_evil.decide_private(jsonb) FROM PUBLIC;
CREATE TEMP TABLE sec_runs (wf text, r uuid, g bigint);
GRANT SELECT ON sec_runs TO PUBLIC;
DO $$
DECLARE
    t uuid := '00000000-0000-0000-00a3-000000000001';
    wf text;
    r uuid; g bigint; s bigint;
BEGIN
    FOREACH wf IN ARRAY ARRAY['who', 'write', 'setrole', 'reenter', 'private'] LOOP
        PERFORM baton.define_workflow('sec_' || wf, format('{"start": "a", "decide": "sec_evil.decide_%s", '
            '"stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}', wf)::jsonb);
        r := baton.submit(t, 'sec_' || wf, '{}', wf);
        g := baton.acquire_run(t, r, 'w', '1 hour');
        SELECT x.stage_id INTO s FROM baton.transition_stage(t, r, g) x;
        PERFORM baton.start_stage(t, r, g, s);
        PERFORM baton.complete_stage(t, r, g, s, '{}');
        INSERT INTO sec_runs VALUES (wf, r, g);
    END LOOP;
END $$;
SELECT md5(string_agg(d::text, '|' ORDER BY d.id)) AS deliveries_before FROM baton.deliveries d \gset
SET ROLE baton_sec_worker;
SELECT r AS r_who, g AS g_who FROM sec_runs WHERE wf = 'who' \gset
SELECT kind, stage FROM baton.transition_stage(:'t', :'r_who', :g_who);
SELECT r AS r_write, g AS g_write FROM sec_runs WHERE wf = 'write' \gset
SELECT kind, stage FROM baton.transition_stage(:'t', :'r_write', :g_write);
SELECT r AS r_setrole, g AS g_setrole FROM sec_runs WHERE wf = 'setrole' \gset
SELECT kind, stage FROM baton.transition_stage(:'t', :'r_setrole', :g_setrole);
SELECT current_user AS still;
SELECT r AS r_private, g AS g_private FROM sec_runs WHERE wf = 'private' \gset
SELECT kind, stage FROM baton.transition_stage(:'t', :'r_private', :g_private);
RESET ROLE;
SELECT who, also_session FROM sec_evil.seen;
SELECT md5(string_agg(d::text, '|' ORDER BY d.id)) = :'deliveries_before' AS deliveries_untouched FROM baton.deliveries d;
-- re-entering transition_stage from decide: the inner call moves the run on, the
-- outer one finds it changed (DU007), and nothing of either call is written
SELECT r AS r_re, g AS g_re FROM sec_runs WHERE wf = 'reenter' \gset
SELECT kind, stage FROM baton.transition_stage(:'t', :'r_re', :g_re);
SELECT stage, status, is_current FROM baton.run_history(:'t', :'r_re');

-- ---------------------------------------------------------------------------
-- 3. Role names that carry SQL: the grant helpers quote them; binding by regrole.
-- ---------------------------------------------------------------------------
CREATE ROLE "baton_sec_x""; DROP TABLE baton.deliveries; --";
SELECT baton.grant_worker('"baton_sec_x""; DROP TABLE baton.deliveries; --"');
SELECT baton.grant_producer('"baton_sec_x""; DROP TABLE baton.deliveries; --"');
SELECT baton.grant_admin('"baton_sec_x""; DROP TABLE baton.deliveries; --"');
SELECT has_function_privilege((SELECT oid FROM pg_roles WHERE rolname LIKE 'baton\_sec\_x%'),
                              'baton.claim(uuid,text,interval,integer,jsonb)', 'EXECUTE') AS can_claim,
       to_regclass('baton.deliveries') IS NOT NULL AS deliveries_still_there;
SELECT baton.bind_target(:'t', 'sec_bound', '"baton_sec_x""; DROP TABLE baton.deliveries; --"');
SELECT target, role FROM baton.target_bindings WHERE tenant = :'t';

-- ---------------------------------------------------------------------------
-- 4. A worker cannot reach a target bound to another role, in any tenant, and a
-- producer cannot bind (forge) a binding or reach the tables.
-- ---------------------------------------------------------------------------
SELECT baton.bind_target(:'t', 'sec_bound', 'baton_sec_worker');
SELECT baton.enqueue(:'t', 'sec_bound', 'b1') AS b1 \gset
SET ROLE baton_sec_other;
SELECT * FROM baton.claim(:'t', 'sec_bound', '1 hour');
RESET ROLE;
SET ROLE baton_sec_worker;
SELECT dedup_key, generation FROM baton.claim(:'t', 'sec_bound', '1 hour');
RESET ROLE;
SET ROLE baton_sec_other;
SELECT baton.finish(:'t', :b1, 1);
SELECT baton.renew(:'t', :b1, 1, '1 hour');
SELECT baton.retry(:'t', :b1, 1, 'stolen');
SELECT * FROM baton.finish_batch(:'t', ARRAY[:b1]::bigint[], ARRAY[1]::bigint[]);
RESET ROLE;
SET ROLE baton_sec_producer;
SELECT baton.bind_target(:'t', 'sec_bound', 'baton_sec_producer');
INSERT INTO baton.target_bindings (tenant, target, role) VALUES (:'t', 'sec_forged', 'baton_sec_producer');
-- a producer may enqueue to a bound target (binding restricts who works on it), with
-- any binding object: a worker's `expected` filter is what refuses a forged one
SELECT baton.enqueue(:'t', 'sec_bound', 'forged', '{}', '{"cause": {"webhook": "00000000-0000-0000-0000-0000000000ee"}}') > 0 AS enqueued;
RESET ROLE;
SET ROLE baton_sec_worker;
SELECT count(*) AS forged_wake_claimed
  FROM baton.claim(:'t', 'sec_bound', '1 hour', 10, '{"cause": {"webhook": "00000000-0000-0000-0000-000000000001"}}');
RESET ROLE;

-- ---------------------------------------------------------------------------
-- 5. GUCs: a non-superuser can turn its own wake-ups off, but cannot raise the
-- payload limit; the baton.* prefix is reserved.
-- ---------------------------------------------------------------------------
SET ROLE baton_sec_producer;
SET baton.notify = off;
SHOW baton.notify;
SET baton.max_payload_bytes = '64MB';
SHOW baton.max_payload_bytes;
SET baton.no_such_setting = 1;
RESET baton.notify;
RESET ROLE;

-- ---------------------------------------------------------------------------
-- 6. Advisory locks: the fence (0x0BA7) and the other pg_baton locks use a fourth
-- key that pg_advisory_lock() never produces (it uses 1 or 2), so no user lock can
-- collide with them, whatever its key.
-- ---------------------------------------------------------------------------
BEGIN;
SELECT baton.enqueue(:'t', 'sec', 'lock-probe') > 0 AS enqueued;
SELECT pg_advisory_lock(42);
SELECT pg_advisory_lock(1, 2);
SELECT objsubid, count(*) FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid() GROUP BY objsubid ORDER BY objsubid;
ROLLBACK;
SELECT pg_advisory_unlock_all();

-- ---------------------------------------------------------------------------
-- 7. Wake-ups: LISTEN takes no privilege, so a channel's name is the secret. Each
-- (tenant, target) has its own, named by a keyed hash of both; only a role that may
-- claim there gets it from baton.wakeup_channel(), and nobody else can read the key.
-- A role listening on the old shared channel, or on another target's, hears nothing.
-- ---------------------------------------------------------------------------
SELECT baton.wakeup_channel(:'t', 'sec_bound') AS ch_bound, baton.wakeup_channel(:'t', 'sec') AS ch_sec \gset
SET ROLE baton_sec_nobody;
SELECT baton.wakeup_channel(:'t', 'sec');
SELECT secret FROM baton.wakeup_key;
LISTEN baton_enqueue;
RESET ROLE;
-- a worker who is not a member of the bound role does not get the bound target's channel
SET ROLE baton_sec_other;
SELECT baton.wakeup_channel(:'t', 'sec_bound');
SELECT baton.wakeup_channel(:'t', 'sec') = :'ch_sec' AS other_gets_unbound_channel;
RESET ROLE;
SET ROLE baton_sec_worker;
SELECT baton.wakeup_channel(:'t', 'sec_bound') = :'ch_bound' AS member_gets_bound_channel;
LISTEN :"ch_sec";
RESET ROLE;
-- the worker (listening on 'sec') hears an enqueue to 'sec', not one to 'sec_bound';
-- the stranger on baton_enqueue hears neither (psql prints what arrives, PID masked,
-- the channel's name masked: it differs in every database)
\o | sed -E -e 's/PID [0-9]+/PID N/' -e 's/baton_[0-9a-f]{32}/baton_<channel>/'
SELECT baton.enqueue(:'t', 'sec_bound', 'wake-bound') > 0 AS enqueued;
SELECT baton.enqueue(:'t', 'sec', 'wake-sec') > 0 AS enqueued;
\o
UNLISTEN *;
RESET ROLE;

-- Clean up.
SET client_min_messages = warning;
DROP OWNED BY baton_sec_worker, baton_sec_other, baton_sec_producer, baton_sec_nobody,
    "baton_sec_x""; DROP TABLE baton.deliveries; --";
DELETE FROM baton.target_bindings WHERE tenant = :'t';
DROP ROLE baton_sec_worker, baton_sec_other, baton_sec_producer, baton_sec_nobody,
    "baton_sec_x""; DROP TABLE baton.deliveries; --";
DROP SCHEMA sec_evil CASCADE;
