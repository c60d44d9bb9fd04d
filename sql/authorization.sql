-- Authorization: nothing for PUBLIC, what grant_producer / grant_worker / grant_admin
-- give (docs/internals/choices.md, "Authorization"), bound targets (DU005), and functions that
-- no search_path can steer.
\set SHOW_CONTEXT never
\set VERBOSITY default
SET client_min_messages = warning;

\set t1 '00000000-0000-0000-0005-000000000001'
\set t2 '00000000-0000-0000-0005-000000000002'
\set t3 '00000000-0000-0000-0005-000000000003'
\set t4 '00000000-0000-0000-0005-000000000004'
\set t5 '00000000-0000-0000-0005-000000000005'
\set tx '00000000-0000-0000-0005-0000000000ff'

SELECT baton.create_tenant(:'t1');
SELECT baton.create_tenant(:'t2');
SELECT baton.set_tenant_state(:'t2', 'fenced');

-- ---------------------------------------------------------------------------
-- 1. Nothing is granted to PUBLIC: no ACL of the schema, its functions, tables,
--    view or sequence names PUBLIC (grantee 0), and no function keeps the default
--    ACL (NULL proacl means EXECUTE for PUBLIC).
-- ---------------------------------------------------------------------------
SELECT n.nspname, n.nspacl IS NOT NULL AS has_acl,
       EXISTS (SELECT 1 FROM aclexplode(n.nspacl) a WHERE a.grantee = 0) AS public_granted
  FROM pg_namespace n WHERE n.nspname = 'baton';
-- functions that PUBLIC may execute (none), out of all of the schema's
SELECT count(*) FILTER (WHERE p.proacl IS NULL
                           OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0)) AS public_functions,
       count(*) >= 18 AS checked_all
  FROM pg_proc p WHERE p.pronamespace = 'baton'::regnamespace;
-- relations (tables, views, sequences) or columns with a grant to PUBLIC (none)
SELECT c.relname, c.relkind
  FROM pg_class c
 WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind IN ('r', 'v', 'S', 'm', 'p', 'f')
   AND (EXISTS (SELECT 1 FROM aclexplode(c.relacl) a WHERE a.grantee = 0)
        OR EXISTS (SELECT 1 FROM pg_attribute t, aclexplode(t.attacl) a
                    WHERE t.attrelid = c.oid AND a.grantee = 0))
 ORDER BY c.relname;
SELECT count(*) >= 6 AS checked_relations
  FROM pg_class c WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind IN ('r', 'v', 'S');

-- ---------------------------------------------------------------------------
-- 2. Roles of each kind, made by the helpers (which only the owner may run).
-- ---------------------------------------------------------------------------
CREATE ROLE baton_authz_nobody;
CREATE ROLE baton_authz_usage;
CREATE ROLE baton_authz_producer;
CREATE ROLE baton_authz_worker;
CREATE ROLE baton_authz_admin;
CREATE ROLE baton_authz_team;
CREATE ROLE baton_authz_team2;
GRANT USAGE ON SCHEMA baton TO baton_authz_usage;

SELECT baton.grant_producer('baton_authz_producer');
SELECT baton.grant_worker('baton_authz_worker');
SELECT baton.grant_admin('baton_authz_admin');
-- the helpers are idempotent
SELECT baton.grant_producer('baton_authz_producer');
-- the helpers' own arguments
SELECT baton.grant_producer(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.grant_worker(0::oid::regrole);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.grant_admin(4000000000::oid::regrole);
\echo :LAST_ERROR_SQLSTATE

-- EXECUTE per function and role kind, as docs/internals/choices.md lists it:
-- producer: enqueue, enqueue_batch, delivery, tenant_write_allowed;
-- worker: claim, renew, finish, retry, reap, delivery, tenant_write_allowed;
-- admin: every function but the grant_* helpers; nobody gets the helpers.
SELECT p.proname,
       has_function_privilege('baton_authz_producer', p.oid, 'EXECUTE') AS producer,
       has_function_privilege('baton_authz_worker', p.oid, 'EXECUTE') AS worker,
       has_function_privilege('baton_authz_admin', p.oid, 'EXECUTE') AS admin,
       has_function_privilege('baton_authz_usage', p.oid, 'EXECUTE') AS usage_only,
       has_function_privilege('baton_authz_nobody', p.oid, 'EXECUTE') AS nobody
  FROM pg_proc p
 WHERE p.pronamespace = 'baton'::regnamespace
   AND p.proname IN ('create_tenant', 'set_tenant_state', 'tenant_write_allowed', 'enqueue',
                     'enqueue_batch', 'claim', 'renew', 'finish', 'retry', 'reap', 'delivery',
                     'bind_target', 'grant_producer', 'grant_worker', 'grant_admin')
 ORDER BY p.proname;
-- The same rules over every function the schema has (so a function added later
-- is covered): the exact sets of a producer and a worker, and the functions an
-- admin lacks (none) or has among the helpers (none).
SELECT r.rolname,
       array_to_string(ARRAY(SELECT p.proname FROM pg_proc p
                              WHERE p.pronamespace = 'baton'::regnamespace
                                AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                              ORDER BY p.proname), ', ') AS executes
  FROM pg_roles r
 WHERE r.rolname IN ('baton_authz_producer', 'baton_authz_worker', 'baton_authz_usage', 'baton_authz_nobody')
 ORDER BY r.rolname;
SELECT p.proname AS admin_lacks
  FROM pg_proc p
 WHERE p.pronamespace = 'baton'::regnamespace AND p.prorettype <> 'trigger'::regtype
   AND p.proname NOT LIKE 'grant\_%'
   AND NOT has_function_privilege('baton_authz_admin', p.oid, 'EXECUTE')
 ORDER BY p.proname;
SELECT p.proname AS admin_has_helper
  FROM pg_proc p
 WHERE p.pronamespace = 'baton'::regnamespace AND p.proname LIKE 'grant\_%'
   AND has_function_privilege('baton_authz_admin', p.oid, 'EXECUTE')
 ORDER BY p.proname;

-- USAGE on the schema: every granted kind, and nothing more (no CREATE).
SELECT r.rolname,
       has_schema_privilege(r.oid, 'baton', 'USAGE') AS usage,
       has_schema_privilege(r.oid, 'baton', 'CREATE') AS create
  FROM pg_roles r WHERE r.rolname LIKE 'baton\_authz\_%' ORDER BY r.rolname;

-- Privileges on the relations: none, except SELECT on the views for an admin.
-- Listed: every privilege a granted role holds beyond that (none), and every view
-- an admin cannot read (none).
SELECT c.relname, r.rolname, p.privilege
  FROM pg_class c
 CROSS JOIN pg_roles r
 CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p(privilege)
 WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
   AND r.rolname IN ('baton_authz_producer', 'baton_authz_worker', 'baton_authz_admin')
   AND (has_table_privilege(r.oid, c.oid, p.privilege)
        OR (p.privilege <> 'TRUNCATE' AND p.privilege <> 'DELETE' AND p.privilege <> 'TRIGGER'
            AND has_any_column_privilege(r.oid, c.oid, p.privilege)))
   AND NOT (r.rolname = 'baton_authz_admin' AND c.relkind = 'v' AND p.privilege = 'SELECT')
 ORDER BY 1, 2, 3;
SELECT c.relname AS view_admin_cannot_read
  FROM pg_class c
 WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind = 'v'
   AND NOT has_table_privilege('baton_authz_admin', c.oid, 'SELECT')
 ORDER BY 1;
SELECT has_table_privilege('baton_authz_admin', 'baton.delivery_stats', 'SELECT') AS admin_reads_stats;
SELECT c.relname, r.rolname
  FROM pg_class c, pg_roles r
 WHERE c.relnamespace = 'baton'::regnamespace AND c.relkind = 'S'
   AND r.rolname IN ('baton_authz_producer', 'baton_authz_worker', 'baton_authz_admin')
   AND has_sequence_privilege(r.oid, c.oid, 'USAGE, SELECT, UPDATE')
 ORDER BY 1, 2;

-- ---------------------------------------------------------------------------
-- 3. Calling every function as each kind of role (SET ROLE). A call that passes the
--    EXECUTE check shows 'ok' or the function's own refusal (DU008 for id -1,
--    22023 for reap(0)); a call that may not run shows 42501.
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.authz_try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

CREATE FUNCTION pg_temp.authz_matrix(t uuid)
RETURNS TABLE(fn text, result text) LANGUAGE plpgsql AS $$
DECLARE
    calls text[][] := ARRAY[
        ['create_tenant', 'SELECT baton.create_tenant(''00000000-0000-0000-0005-000000000003'')'],
        ['set_tenant_state', format('SELECT baton.set_tenant_state(%L, ''active'')', t)],
        ['tenant_write_allowed', format('SELECT baton.tenant_write_allowed(%L)', t)],
        ['bind_target', format('SELECT baton.bind_target(%L, ''authz-matrix-bound'', ''baton_authz_team'')', t)],
        ['enqueue', format('SELECT baton.enqueue(%L, ''authz-matrix'', ''k-'' || current_user)', t)],
        ['enqueue_batch', format('SELECT * FROM baton.enqueue_batch(%L, jsonb_build_array(jsonb_build_object('
                                 '''target'', ''authz-matrix'', ''dedup_key'', ''b-'' || current_user)))', t)],
        ['claim', format('SELECT * FROM baton.claim(%L, ''authz-nothing'', ''1 minute'')', t)],
        ['renew', format('SELECT baton.renew(%L, -1, 1, ''1 minute'')', t)],
        ['finish', format('SELECT baton.finish(%L, -1, 1)', t)],
        ['retry', format('SELECT baton.retry(%L, -1, 1, ''e'')', t)],
        ['reap', 'SELECT baton.reap(0)'],
        ['delivery', format('SELECT baton.delivery(%L, -1)', t)],
        ['grant_producer', 'SELECT baton.grant_producer(''baton_authz_team2'')'],
        ['grant_worker', 'SELECT baton.grant_worker(''baton_authz_team2'')'],
        ['grant_admin', 'SELECT baton.grant_admin(''baton_authz_team2'')']];
BEGIN
    FOR i IN 1 .. array_length(calls, 1) LOOP
        fn := calls[i][1];
        result := pg_temp.authz_try(calls[i][2]);
        RETURN NEXT;
    END LOOP;
    -- the calls, failed or not, hand the caller's identity back
    fn := 'current_user after';
    result := current_user;
    RETURN NEXT;
END $$;

-- The same statements tried against the relations directly.
CREATE FUNCTION pg_temp.authz_direct(t uuid)
RETURNS TABLE(stmt text, result text) LANGUAGE plpgsql AS $$
DECLARE
    stmts text[][] := ARRAY[
        ['select tenants', 'SELECT * FROM baton.tenants'],
        ['select deliveries', 'SELECT * FROM baton.deliveries'],
        ['select runs', 'SELECT * FROM baton.runs'],
        ['select stages', 'SELECT * FROM baton.stages'],
        ['select target_bindings', 'SELECT * FROM baton.target_bindings'],
        ['select delivery_stats', 'SELECT * FROM baton.delivery_stats'],
        ['insert tenants', 'INSERT INTO baton.tenants (tenant) VALUES (''00000000-0000-0000-0005-0000000000ee'')'],
        ['insert deliveries', format('INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (%L, ''authz-direct'', ''d'')', t)],
        ['insert runs', format('INSERT INTO baton.runs (tenant, workflow, version, inputs_digest) VALUES (%L, ''w'', 1, ''x'')', t)],
        ['insert target_bindings', format('INSERT INTO baton.target_bindings (tenant, target, role) VALUES (%L, ''authz-direct'', ''baton_authz_team'')', t)],
        ['update tenants', 'UPDATE baton.tenants SET state = ''active'''],
        ['update deliveries', 'UPDATE baton.deliveries SET priority = 7'],
        ['update runs', 'UPDATE baton.runs SET owner = ''x'''],
        ['update target_bindings', 'UPDATE baton.target_bindings SET role = ''baton_authz_team'''],
        ['delete tenants', 'DELETE FROM baton.tenants'],
        ['delete deliveries', 'DELETE FROM baton.deliveries'],
        ['delete runs', 'DELETE FROM baton.runs'],
        ['delete target_bindings', 'DELETE FROM baton.target_bindings'],
        ['truncate deliveries', 'TRUNCATE baton.deliveries'],
        ['nextval deliveries_id_seq', 'SELECT nextval(''baton.deliveries_id_seq'')']];
BEGIN
    FOR i IN 1 .. array_length(stmts, 1) LOOP
        stmt := stmts[i][1];
        result := pg_temp.authz_try(stmts[i][2]);
        RETURN NEXT;
    END LOOP;
END $$;

-- A role with no grant at all: the schema itself is closed.
SET ROLE baton_authz_nobody;
SELECT baton.enqueue(:'t1', 'authz-matrix', 'nobody');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.tenant_write_allowed(:'t1');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.deliveries;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.authz_matrix(:'t1');
SELECT * FROM pg_temp.authz_direct(:'t1');
RESET ROLE;

-- USAGE on the schema and nothing else: every function is closed.
SET ROLE baton_authz_usage;
SELECT baton.tenant_write_allowed(:'t1');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.authz_matrix(:'t1');
SELECT * FROM pg_temp.authz_direct(:'t1');
RESET ROLE;

-- A producer enqueues and reads; it cannot claim, renew, finish or retry.
SET ROLE baton_authz_producer;
SELECT * FROM baton.claim(:'t1', 'authz-matrix', '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'t1', -1, 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'t1', -1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'t1', -1, 1, 'e');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.create_tenant(:'t3');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.deliveries;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.authz_matrix(:'t1');
SELECT * FROM pg_temp.authz_direct(:'t1');
RESET ROLE;

-- A worker claims and settles; it cannot enqueue.
SET ROLE baton_authz_worker;
SELECT baton.enqueue(:'t1', 'authz-matrix', 'worker-direct');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'t1', '[{"target": "authz-matrix", "dedup_key": "worker-batch"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'t1', 'active');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t1', 'authz-matrix', 'baton_authz_worker');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.deliveries SET priority = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.authz_matrix(:'t1');
SELECT * FROM pg_temp.authz_direct(:'t1');
RESET ROLE;

-- An admin runs every function but the grant_* helpers, and reads the view.
SET ROLE baton_authz_admin;
SELECT baton.grant_producer('baton_authz_nobody');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.grant_admin('baton_authz_admin');
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.deliveries;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.authz_matrix(:'t1');
SELECT * FROM pg_temp.authz_direct(:'t1');
SELECT target, pending, claimed FROM baton.delivery_stats WHERE tenant = :'t1' ORDER BY target;
RESET ROLE;

-- What the calls above did, read by the owner: the producer's, worker's (none: its
-- enqueue was refused) and admin's enqueues; the tenant the admin created; the
-- binding the admin made; nothing from the refused direct writes.
SELECT target, dedup_key, status FROM baton.deliveries WHERE tenant = :'t1' ORDER BY target, dedup_key;
SELECT tenant, state FROM baton.tenants WHERE tenant::text LIKE '00000000-0000-0000-0005-%' ORDER BY tenant;
SELECT target, role FROM baton.target_bindings WHERE tenant = :'t1' ORDER BY target;
SELECT count(*) AS runs FROM baton.runs WHERE tenant = :'t1';
-- the refused grant helpers granted nothing
SELECT has_function_privilege('baton_authz_team2', 'baton.enqueue(uuid,text,text,jsonb,jsonb,timestamptz,int,int,uuid)', 'EXECUTE') AS team2_enqueue,
       has_schema_privilege('baton_authz_nobody', 'baton', 'USAGE') AS nobody_usage,
       has_function_privilege('baton_authz_admin', 'baton.grant_admin(regrole)', 'EXECUTE') AS admin_grant_admin;

-- ---------------------------------------------------------------------------
-- 4. bind_target: arguments, the fence, and who may work on a bound target.
-- ---------------------------------------------------------------------------
SELECT baton.bind_target(:'t1', 'authz-bound', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t1', NULL, 'baton_authz_team');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(NULL, 'authz-bound', 'baton_authz_team');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t1', 'authz-bound', 0::oid::regrole);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t1', 'authz-bound', 4000000000::oid::regrole);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t1', '', 'baton_authz_team');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t1', repeat('x', 201), 'baton_authz_team');
\echo :LAST_ERROR_SQLSTATE
-- a fenced tenant, an unknown one
SELECT baton.bind_target(:'t2', 'authz-bound', 'baton_authz_team');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'tx', 'authz-bound', 'baton_authz_team');
\echo :LAST_ERROR_SQLSTATE
-- as a worker (no EXECUTE)
SET ROLE baton_authz_worker;
SELECT baton.bind_target(:'t1', 'authz-bound', 'baton_authz_worker');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- none of these bound anything
SELECT count(*) AS bindings FROM baton.target_bindings
 WHERE tenant IN (:'t1', :'t2', :'tx') AND target = 'authz-bound';

-- The admin binds authz-bound to baton_authz_team.
SET ROLE baton_authz_admin;
SELECT baton.bind_target(:'t1', 'authz-bound', 'baton_authz_team');
RESET ROLE;
SELECT target, role FROM baton.target_bindings WHERE tenant = :'t1' AND target = 'authz-bound';

-- The binding does not restrict enqueue: a producer (no member) enqueues three.
SET ROLE baton_authz_producer;
SELECT count(*) AS enqueued FROM (
    SELECT baton.enqueue(:'t1', 'authz-bound', 'b1', '{"n": 1}')
    UNION ALL SELECT baton.enqueue(:'t1', 'authz-bound', 'b2', '{"n": 2}')
    UNION ALL SELECT baton.enqueue(:'t1', 'authz-bound', 'b3', '{"n": 3}')) e;
RESET ROLE;
SELECT id AS b1 FROM baton.deliveries WHERE tenant = :'t1' AND target = 'authz-bound' AND dedup_key = 'b1' \gset
SELECT id AS b2 FROM baton.deliveries WHERE tenant = :'t1' AND target = 'authz-bound' AND dedup_key = 'b2' \gset
SELECT id AS b3 FROM baton.deliveries WHERE tenant = :'t1' AND target = 'authz-bound' AND dedup_key = 'b3' \gset

-- A worker who is not a member of baton_authz_team cannot claim (the error names the
-- target and the role); nothing is claimed.
SET ROLE baton_authz_worker;
SELECT id FROM baton.claim(:'t1', 'authz-bound', '1 minute');
\echo :LAST_ERROR_SQLSTATE
-- with max_items and a filter too
SELECT id FROM baton.claim(:'t1', 'authz-bound', '1 minute', 10, '{"x": 1}');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT dedup_key, status, generation, attempts FROM baton.deliveries
 WHERE tenant = :'t1' AND target = 'authz-bound' ORDER BY id;

-- The owner (a superuser: a member of every role) claims b1.
SELECT generation AS g1, lease_until AS l1 FROM baton.claim(:'t1', 'authz-bound', '1 hour') \gset
SELECT :g1 AS generation;

-- The non-member may not renew, finish or retry it, with the right generation or
-- a stale one (authorization comes before the generation check); the row is untouched.
SET ROLE baton_authz_worker;
SELECT baton.renew(:'t1', :b1, :g1, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'t1', :b1, :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'t1', :b1, :g1, 'failed', '{"r": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'t1', :b1, :g1, 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'t1', :b1, :g1, 'nope', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'t1', :b1, 0, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'t1', :b1, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'t1', :b1, 0, 'nope');
\echo :LAST_ERROR_SQLSTATE
-- a pending (never claimed) delivery of the bound target: DU005 before DU001
SELECT baton.finish(:'t1', :b2, 0);
\echo :LAST_ERROR_SQLSTATE
-- an unknown id has no target: DU008
SELECT baton.finish(:'t1', -1, 1);
\echo :LAST_ERROR_SQLSTATE
-- after these refusals the caller is still itself, with its own (lack of) rights
SELECT current_user;
SELECT count(*) FROM baton.deliveries;
\echo :LAST_ERROR_SQLSTATE
-- reads are not restricted by the binding
SELECT dedup_key, status, generation, payload FROM baton.delivery(:'t1', :b1);
RESET ROLE;
SET ROLE baton_authz_producer;
SELECT dedup_key, status, generation, payload FROM baton.delivery(:'t1', :b1);
RESET ROLE;
SELECT dedup_key, status, generation, attempts, lease_until = :'l1' AS lease_unchanged,
       result, last_error
  FROM baton.deliveries WHERE tenant = :'t1' AND target = 'authz-bound' ORDER BY id;

-- GRANT baton_authz_team TO the worker: now it renews, finishes, claims and retries.
GRANT baton_authz_team TO baton_authz_worker;
SET ROLE baton_authz_worker;
SELECT baton.renew(:'t1', :b1, :g1, '2 hours') = now() + interval '2 hours' AS renewed_to_now_plus_2h;
SELECT baton.finish(:'t1', :b1, :g1, 'finished', '{"ok": true}');
SELECT id = :b2 AS is_b2, generation, attempt, payload FROM baton.claim(:'t1', 'authz-bound', '1 hour');
SELECT baton.retry(:'t1', :b2, 1, 'try again', '0 seconds');
RESET ROLE;
SELECT dedup_key, status, generation, attempts, result, last_error
  FROM baton.deliveries WHERE tenant = :'t1' AND target = 'authz-bound' ORDER BY id;

-- Rebinding to another role replaces the binding: members of baton_authz_team
-- (only) are refused now.
SET ROLE baton_authz_admin;
SELECT baton.bind_target(:'t1', 'authz-bound', 'baton_authz_team2');
RESET ROLE;
SELECT target, role FROM baton.target_bindings WHERE tenant = :'t1' AND target = 'authz-bound';
SET ROLE baton_authz_worker;
SELECT id FROM baton.claim(:'t1', 'authz-bound', '1 hour');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT dedup_key, status, generation FROM baton.deliveries
 WHERE tenant = :'t1' AND target = 'authz-bound' ORDER BY id;
GRANT baton_authz_team2 TO baton_authz_worker;
REVOKE baton_authz_team FROM baton_authz_worker;
SET ROLE baton_authz_worker;
SELECT id = :b2 AS is_b2, generation AS g2, attempt FROM baton.claim(:'t1', 'authz-bound', '1 hour') \gset
SELECT :'is_b2' AS is_b2, :g2 AS generation, :attempt AS attempt;
SELECT baton.finish(:'t1', :b2, :g2, 'failed', '{"why": "test"}');
RESET ROLE;
-- Membership through another role counts (pg_has_role MEMBER semantics).
CREATE ROLE baton_authz_middle;
GRANT baton_authz_team2 TO baton_authz_middle;
REVOKE baton_authz_team2 FROM baton_authz_worker;
GRANT baton_authz_middle TO baton_authz_worker;
SET ROLE baton_authz_worker;
SELECT id = :b3 AS is_b3, generation, attempt FROM baton.claim(:'t1', 'authz-bound', '1 hour');
SELECT baton.finish(:'t1', :b3, 1);
RESET ROLE;
SELECT dedup_key, status, generation, attempts, result
  FROM baton.deliveries WHERE tenant = :'t1' AND target = 'authz-bound' ORDER BY id;

-- Rebinding a fenced tenant's target is DU002 as well, and changes nothing.
SELECT baton.set_tenant_state(:'t1', 'quiescing');
SET ROLE baton_authz_admin;
SELECT baton.bind_target(:'t1', 'authz-bound', 'baton_authz_team');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT baton.set_tenant_state(:'t1', 'active');
SELECT target, role FROM baton.target_bindings WHERE tenant = :'t1' AND target = 'authz-bound';

-- ---------------------------------------------------------------------------
-- 5. No search_path steers a function: operators and now() shadowed by a schema
--    searched before pg_catalog.
-- ---------------------------------------------------------------------------
CREATE SCHEMA evil;
CREATE FUNCTION evil.uuid_eq_evil(uuid, uuid) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR evil.= (leftarg = uuid, rightarg = uuid, function = evil.uuid_eq_evil);
CREATE FUNCTION evil.text_eq_evil(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR evil.= (leftarg = text, rightarg = text, function = evil.text_eq_evil);
CREATE FUNCTION evil.int8_eq_evil(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR evil.= (leftarg = bigint, rightarg = bigint, function = evil.int8_eq_evil);
CREATE FUNCTION evil.int4_eq_evil(integer, integer) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR evil.= (leftarg = integer, rightarg = integer, function = evil.int4_eq_evil);
CREATE FUNCTION evil.jsonb_eq_evil(jsonb, jsonb) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR evil.= (leftarg = jsonb, rightarg = jsonb, function = evil.jsonb_eq_evil);
CREATE FUNCTION evil.jsonb_get_evil(jsonb, text) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb';
CREATE OPERATOR evil.-> (leftarg = jsonb, rightarg = text, function = evil.jsonb_get_evil);
CREATE FUNCTION evil.tstz_cmp_evil(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS 'SELECT false';
CREATE OPERATOR evil.<= (leftarg = timestamptz, rightarg = timestamptz, function = evil.tstz_cmp_evil);
CREATE OPERATOR evil.< (leftarg = timestamptz, rightarg = timestamptz, function = evil.tstz_cmp_evil);
CREATE FUNCTION evil.tstz_plus_evil(timestamptz, interval) RETURNS timestamptz LANGUAGE sql
    AS $$SELECT '2000-01-01 00:00:00+00'::timestamptz$$;
CREATE OPERATOR evil.+ (leftarg = timestamptz, rightarg = interval, function = evil.tstz_plus_evil);
CREATE FUNCTION evil.int8_plus_evil(bigint, bigint) RETURNS bigint LANGUAGE sql AS 'SELECT $1';
CREATE OPERATOR evil.+ (leftarg = bigint, rightarg = bigint, function = evil.int8_plus_evil);
CREATE FUNCTION evil.int4_plus_evil(integer, integer) RETURNS integer LANGUAGE sql AS 'SELECT $1';
CREATE OPERATOR evil.+ (leftarg = integer, rightarg = integer, function = evil.int4_plus_evil);
CREATE FUNCTION evil.int4_ge_evil(integer, integer) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.>= (leftarg = integer, rightarg = integer, function = evil.int4_ge_evil);
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql AS $$SELECT '2000-01-01 00:00:00+00'::timestamptz$$;
CREATE FUNCTION evil.jsonb_each(jsonb, OUT key text, OUT value jsonb) RETURNS SETOF record
    LANGUAGE sql AS $$SELECT 'nope'::text, '1'::jsonb$$;
GRANT USAGE ON SCHEMA evil TO PUBLIC;

SET search_path = evil, pg_catalog, public;
-- the trap works: unqualified operators and now() resolve to evil's
SELECT '00000000-0000-0000-0005-000000000004'::uuid = '00000000-0000-0000-0005-000000000004'::uuid AS uuid_eq,
       'a'::text = 'a'::text AS text_eq, 1::bigint = 1::bigint AS int8_eq,
       now() = '2000-01-01 00:00:00+00'::timestamptz AS now_is_old;

-- tenants
SELECT baton.create_tenant(:'t4');
SELECT baton.create_tenant(:'t5');
SELECT baton.create_tenant(:'t5');
SELECT baton.tenant_write_allowed(:'t5') AS t5_writable;
SELECT baton.set_tenant_state(:'t5', 'quiescing');
SELECT baton.tenant_write_allowed(:'t5') AS t5_writable;
SELECT baton.set_tenant_state(:'t5', 'quiescing');
SELECT baton.set_tenant_state(:'t5', 'active');
SELECT baton.tenant_write_allowed(:'t5') AS t5_writable;
SELECT baton.set_tenant_state(:'t5', 'deleted');
SELECT baton.create_tenant(:'t5');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'t5', 'active');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'tx', 'active');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.tenant_write_allowed(:'tx') AS tx_writable;
SELECT baton.enqueue(:'t5', 'evil', 'x');
\echo :LAST_ERROR_SQLSTATE

-- enqueue and its dedup (text, uuid and jsonb equality), enqueue_batch; run_after
-- defaults to the real now() (exactly: the transaction's)
BEGIN;
SELECT baton.enqueue(:'t4', 'evil-target', 'e1', '{"n": 1}', '{"who": "a"}') AS e1 \gset
SELECT baton.enqueue(:'t4', 'evil-target', 'e1', '{"n": 1}', '{"who": "a"}') OPERATOR(pg_catalog.=) :e1 AS same_id;
SELECT inserted FROM baton.enqueue_batch(:'t4',
    '[{"target": "evil-target", "dedup_key": "e2", "payload": {"n": 2}, "binding": {"who": "b"}},
      {"target": "evil-target", "dedup_key": "e1", "payload": {"n": 1}, "binding": {"who": "a"}},
      {"target": "evil-target", "dedup_key": "e3", "payload": {"n": 3}, "priority": 5},
      {"target": "evil-target", "dedup_key": "e4", "payload": {"n": 4}, "binding": {"who": "c"}}]');
SELECT dedup_key, status, generation, attempts, priority, payload, binding,
       run_after OPERATOR(pg_catalog.=) pg_catalog.now() AS run_after_is_now
  FROM baton.deliveries WHERE tenant OPERATOR(pg_catalog.=) :'t4' ORDER BY id;
COMMIT;
SELECT baton.enqueue(:'t4', 'evil-target', 'e1', '{"n": 2}', '{"who": "a"}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'t4', 'evil-target', 'e1', '{"n": 1}', '{"who": "b"}');
\echo :LAST_ERROR_SQLSTATE
SELECT id AS e2 FROM baton.deliveries WHERE tenant OPERATOR(pg_catalog.=) :'t4' AND dedup_key OPERATOR(pg_catalog.=) 'e2' \gset
SELECT id AS e3 FROM baton.deliveries WHERE tenant OPERATOR(pg_catalog.=) :'t4' AND dedup_key OPERATOR(pg_catalog.=) 'e3' \gset
SELECT id AS e4 FROM baton.deliveries WHERE tenant OPERATOR(pg_catalog.=) :'t4' AND dedup_key OPERATOR(pg_catalog.=) 'e4' \gset

-- claim: priority first, then enqueue order; the lease is the real now() + lease;
-- generation and attempt go up by one
SELECT dedup_key, generation, attempt, payload,
       lease_until OPERATOR(pg_catalog.=) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 hour') AS lease_is_now_plus_1h
  FROM baton.claim(:'t4', 'evil-target', '1 hour', 2);
-- claim with expected: only the binding that matches
SELECT dedup_key, generation, attempt FROM baton.claim(:'t4', 'evil-target', '1 hour', 5, '{"who": "c"}');
SELECT dedup_key, generation, attempt FROM baton.claim(:'t4', 'evil-target', '1 hour', 5, '{"who": "zzz"}');
-- renew, finish (and its repeat), retry with a delay and with backoff, stale generations
SELECT baton.renew(:'t4', :e3, 1, '2 hours')
       OPERATOR(pg_catalog.=) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '2 hours') AS renewed_to_now_plus_2h;
\set VERBOSITY sqlstate
SELECT baton.renew(:'t4', :e3, 0, '2 hours');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT baton.finish(:'t4', :e3, 1, 'finished', '{"done": 3}');
SELECT baton.finish(:'t4', :e3, 1, 'failed');
\set VERBOSITY sqlstate
SELECT baton.finish(:'t4', :e3, 0);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
BEGIN;
SELECT baton.retry(:'t4', :e1, 1, 'later', '1 hour');
SELECT baton.retry(:'t4', :e4, 1, 'backoff');
-- e1 runs after now() + 1 hour, e4 after now() + 1 s (backoff of attempt 1)
SELECT dedup_key,
       run_after OPERATOR(pg_catalog.=) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 hour') AS after_1h,
       run_after OPERATOR(pg_catalog.=) (pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 second') AS after_1s
  FROM baton.deliveries
 WHERE tenant OPERATOR(pg_catalog.=) :'t4' AND dedup_key OPERATOR(pg_catalog.=) ANY (ARRAY['e1', 'e4'])
 ORDER BY id;
COMMIT;
\set VERBOSITY sqlstate
SELECT baton.retry(:'t4', :e1, 1, 'later', '1 hour');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT baton.delivery(:'t4', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT dedup_key, status, generation, attempts, result, last_error, lease_until IS NULL AS no_lease
  FROM baton.deliveries WHERE tenant OPERATOR(pg_catalog.=) :'t4' ORDER BY id;
-- a row whose attempts are spent fails on retry at the same generation
SELECT baton.enqueue(:'t4', 'evil-once', 'o1', max_attempts => 1) AS o1 \gset
SELECT dedup_key, generation, attempt FROM baton.claim(:'t4', 'evil-once', '1 hour');
SELECT baton.retry(:'t4', :o1, 1, 'spent');
SELECT baton.retry(:'t4', :o1, 1, 'spent');
SELECT status, generation, attempts, last_error FROM baton.delivery(:'t4', :o1);

-- reap: an expired lease (1 microsecond) is taken back with generation + 1
SELECT dedup_key, generation FROM baton.claim(:'t4', 'evil-target', '1 microsecond');
SELECT pg_sleep(0.05);
SELECT baton.reap(1000) > 0 AS reaped;
\set VERBOSITY sqlstate
SELECT baton.renew(:'t4', :e2, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT status, generation, attempts, last_error, lease_until IS NULL AS no_lease
  FROM baton.delivery(:'t4', :e2);
-- and a spent one is reaped to failed
SELECT baton.enqueue(:'t4', 'evil-once', 'o2', max_attempts => 1) AS o2 \gset
SELECT dedup_key, generation FROM baton.claim(:'t4', 'evil-once', '1 microsecond');
SELECT pg_sleep(0.05);
SELECT baton.reap(1000) > 0 AS reaped;
SELECT status, generation, attempts, last_error FROM baton.delivery(:'t4', :o2);

-- bindings under the trap: the binding is found, non-members refused, members not
SELECT baton.bind_target(:'t4', 'evil-bound', 'baton_authz_team');
SELECT baton.enqueue(:'t4', 'evil-bound', 'eb1') AS eb1 \gset
SET ROLE baton_authz_worker;
SELECT id FROM baton.claim(:'t4', 'evil-bound', '1 hour');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT baton_authz_team TO baton_authz_worker;
SET ROLE baton_authz_worker;
SELECT dedup_key, generation FROM baton.claim(:'t4', 'evil-bound', '1 hour');
SELECT baton.finish(:'t4', :eb1, 1);
RESET ROLE;
-- rebinding under the trap replaces the row (ON CONFLICT) instead of adding one
SELECT baton.bind_target(:'t4', 'evil-bound', 'baton_authz_nobody');
SELECT target, role FROM baton.target_bindings WHERE tenant OPERATOR(pg_catalog.=) :'t4';
SELECT baton.enqueue(:'t4', 'evil-bound', 'eb2') AS eb2 \gset
SET ROLE baton_authz_worker;
SELECT id FROM baton.claim(:'t4', 'evil-bound', '1 hour');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT status, generation FROM baton.delivery(:'t4', :eb2);
-- the fence still holds
SELECT baton.set_tenant_state(:'t4', 'fenced');
SELECT baton.enqueue(:'t4', 'evil-target', 'e9');
\echo :LAST_ERROR_SQLSTATE
SELECT dedup_key FROM baton.claim(:'t4', 'evil-target', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM baton.delivery(:'t4', :e1);
SELECT baton.set_tenant_state(:'t4', 'active');
SELECT tenant, state FROM baton.tenants WHERE tenant::text LIKE '00000000-0000-0000-0005-%' ORDER BY tenant::text;

RESET search_path;
DROP SCHEMA evil CASCADE;

-- ---------------------------------------------------------------------------
-- Clean up: the bindings (by the owner, directly), then the roles.
-- ---------------------------------------------------------------------------
DELETE FROM baton.target_bindings WHERE tenant IN (:'t1', :'t4');
SELECT count(*) AS bindings_left FROM baton.target_bindings WHERE tenant IN (:'t1', :'t4');
DROP OWNED BY baton_authz_nobody, baton_authz_usage, baton_authz_producer, baton_authz_worker,
              baton_authz_admin, baton_authz_team, baton_authz_team2, baton_authz_middle;
DROP ROLE baton_authz_nobody, baton_authz_usage, baton_authz_producer, baton_authz_worker,
          baton_authz_admin, baton_authz_team, baton_authz_team2, baton_authz_middle;
SELECT count(*) AS roles_left FROM pg_roles WHERE rolname LIKE 'baton\_authz\_%';
