-- Tenants and the write fence: create_tenant, set_tenant_state, tenant_write_allowed,
-- the fence on every write path (functions and direct SQL) for each non-active state,
-- the guards on baton.tenants, the fence inside one transaction, and reap's skipping.
-- Every refusal is followed by its SQLSTATE.
\set SHOW_CONTEXT never
\set t1 00000000-0000-0000-0001-000000000001
\set t2 00000000-0000-0000-0001-000000000002
\set t3 00000000-0000-0000-0001-000000000003
\set t4 00000000-0000-0000-0001-000000000004
\set t5 00000000-0000-0000-0001-000000000005
\set t6 00000000-0000-0000-0001-000000000006
\set tu 00000000-0000-0000-0001-0000000000ff

-- ---------------------------------------------------------------------------
-- create_tenant: new tenants are active; repeating it does nothing.
-- ---------------------------------------------------------------------------
SELECT baton.tenant_write_allowed(:'t1') AS before_create;
SELECT baton.create_tenant(:'t1');
SELECT state, state_changed_at = created_at AS unchanged_since_creation
  FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.tenant_write_allowed(:'t1') AS after_create;
SELECT xmin::text AS t1_xmin FROM baton.tenants WHERE tenant = :'t1' \gset
SELECT baton.create_tenant(:'t1');
SELECT count(*) AS rows, bool_and(xmin::text = :'t1_xmin') AS row_untouched, min(state) AS state
  FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.create_tenant(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.tenant_write_allowed(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS tenants FROM baton.tenants WHERE tenant::text LIKE '00000000-0000-0000-0001-%';

-- ---------------------------------------------------------------------------
-- set_tenant_state through every state; tenant_write_allowed in each.
-- ---------------------------------------------------------------------------
SELECT baton.set_tenant_state(:'t1', 'quiescing');
SELECT state, baton.tenant_write_allowed(:'t1') AS write_allowed FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.set_tenant_state(:'t1', 'fenced');
SELECT state, baton.tenant_write_allowed(:'t1') AS write_allowed FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.set_tenant_state(:'t1', 'quiescing');
SELECT state, baton.tenant_write_allowed(:'t1') AS write_allowed FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.set_tenant_state(:'t1', 'active');
SELECT state, baton.tenant_write_allowed(:'t1') AS write_allowed FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.set_tenant_state(:'t1', 'fenced');
SELECT state, baton.tenant_write_allowed(:'t1') AS write_allowed FROM baton.tenants WHERE tenant = :'t1';
-- create_tenant of an existing fenced tenant does nothing: it stays fenced.
SELECT baton.create_tenant(:'t1');
SELECT state, baton.tenant_write_allowed(:'t1') AS write_allowed FROM baton.tenants WHERE tenant = :'t1';
-- The same state again does nothing: the row is not even rewritten.
SELECT xmin::text AS t1_xmin, state_changed_at AS t1_changed FROM baton.tenants WHERE tenant = :'t1' \gset
SELECT baton.set_tenant_state(:'t1', 'fenced');
SELECT state, xmin::text = :'t1_xmin' AS row_untouched, state_changed_at = :'t1_changed' AS same_changed_at
  FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.set_tenant_state(:'t1', 'active');
SELECT xmin::text AS t1_xmin, state_changed_at AS t1_changed FROM baton.tenants WHERE tenant = :'t1' \gset
SELECT baton.set_tenant_state(:'t1', 'active');
SELECT state, xmin::text = :'t1_xmin' AS row_untouched, state_changed_at = :'t1_changed' AS same_changed_at
  FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.tenant_write_allowed(:'t1') AS write_allowed;
-- Refusals: unknown tenant, bad state text, NULLs; each leaves the tenant as it was.
SELECT baton.set_tenant_state(:'tu', 'fenced');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'tu', 'active');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS unknown_rows FROM baton.tenants WHERE tenant = :'tu';
SELECT baton.tenant_write_allowed(:'tu') AS unknown_write_allowed;
SELECT baton.set_tenant_state(:'t1', 'paused');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'t1', 'Active');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'t1', '');
\echo :LAST_ERROR_SQLSTATE
-- argument values are checked before the tenant's existence
SELECT baton.set_tenant_state(:'tu', 'paused');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(NULL, 'fenced');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'t1', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT state, xmin::text = :'t1_xmin' AS row_untouched FROM baton.tenants WHERE tenant = :'t1';
-- deleted is final.
SELECT baton.set_tenant_state(:'t1', 'deleted');
SELECT state, baton.tenant_write_allowed(:'t1') AS write_allowed FROM baton.tenants WHERE tenant = :'t1';
SELECT xmin::text AS t1_xmin FROM baton.tenants WHERE tenant = :'t1' \gset
SELECT baton.set_tenant_state(:'t1', 'deleted');
SELECT state, xmin::text = :'t1_xmin' AS row_untouched FROM baton.tenants WHERE tenant = :'t1';
SELECT baton.set_tenant_state(:'t1', 'active');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'t1', 'quiescing');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'t1', 'fenced');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.create_tenant(:'t1');
\echo :LAST_ERROR_SQLSTATE
SELECT state, xmin::text = :'t1_xmin' AS row_untouched, baton.tenant_write_allowed(:'t1') AS write_allowed
  FROM baton.tenants WHERE tenant = :'t1';

-- ---------------------------------------------------------------------------
-- Direct SQL on baton.tenants: a state change passes the same rules; rows are never
-- removed.
-- ---------------------------------------------------------------------------
UPDATE baton.tenants SET state = 'active' WHERE tenant = :'t1';
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.tenants SET state = 'fenced' WHERE tenant = :'t1';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.tenants WHERE tenant = :'t1';
\echo :LAST_ERROR_SQLSTATE
SELECT baton.create_tenant(:'t6');
DELETE FROM baton.tenants WHERE tenant = :'t6';
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.tenants SET tenant = :'tu' WHERE tenant = :'t6';
\echo :LAST_ERROR_SQLSTATE
TRUNCATE baton.tenants;
\echo :LAST_ERROR_SQLSTATE
SET client_min_messages = warning;
TRUNCATE baton.tenants CASCADE;
\echo :LAST_ERROR_SQLSTATE
RESET client_min_messages;
SELECT tenant, state FROM baton.tenants WHERE tenant IN (:'t1', :'t6', :'tu') ORDER BY tenant;
-- A direct UPDATE that changes the state fences like set_tenant_state.
UPDATE baton.tenants SET state = 'fenced' WHERE tenant = :'t6';
SELECT baton.tenant_write_allowed(:'t6') AS write_allowed;
SELECT baton.enqueue(:'t6', 'w', 'direct-fenced');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.tenants SET state = 'active' WHERE tenant = :'t6';
SELECT baton.enqueue(:'t6', 'w', 'direct-active') > 0 AS enqueued;
SELECT dedup_key FROM baton.deliveries WHERE tenant = :'t6' ORDER BY id;

-- ---------------------------------------------------------------------------
-- Unknown tenant: every write is DU002 (the fence comes before the object's existence);
-- reads answer DU008 (nothing there).
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'tu', 'w', 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'tu', '[{"target": "w", "dedup_key": "k"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'tu', 'w', '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'tu', 1, 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'tu', 1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'tu', 1, 1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'tu', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (:'tu', 'w', 'direct');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.runs (tenant, workflow, version, inputs_digest) VALUES (:'tu', 'wf', 1, 'x');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.target_bindings (tenant, target, role) VALUES (:'tu', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.delivery(:'tu', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT (SELECT count(*) FROM baton.deliveries WHERE tenant = :'tu') AS deliveries,
       (SELECT count(*) FROM baton.runs WHERE tenant = :'tu') AS runs,
       (SELECT count(*) FROM baton.target_bindings WHERE tenant = :'tu') AS bindings,
       (SELECT count(*) FROM baton.tenants WHERE tenant = :'tu') AS tenant_rows;

-- ---------------------------------------------------------------------------
-- The fence on every write path, for each non-active state, on tenant t2 that has a
-- claimed delivery, a pending one, a run with a stage and a target binding.
-- ---------------------------------------------------------------------------
SELECT baton.create_tenant(:'t2');
SELECT baton.create_tenant(:'t3');
SELECT baton.enqueue(:'t2', 'w', 'claimed-one') AS d_claimed \gset
SELECT baton.enqueue(:'t2', 'w', 'pending-one', priority => -1) AS d_pending \gset
SELECT baton.enqueue(:'t3', 'w', 'mover') AS d_mover \gset
SELECT generation, attempt, dedup_key FROM baton.claim(:'t2', 'w', '1 hour');
INSERT INTO baton.runs (tenant, id, workflow, version, inputs_digest)
VALUES (:'t2', '00000000-0000-0000-0001-00000000aaaa', 'wf', 1, 'digest');
INSERT INTO baton.stages (tenant, run_id, stage, entry_seq)
VALUES (:'t2', '00000000-0000-0000-0001-00000000aaaa', 'first', 1);
SELECT baton.bind_target(:'t2', 'bound', 'pg_monitor');
CREATE TEMP VIEW t2_rows AS
SELECT (SELECT string_agg(format('%s:%s:g%s:a%s:p%s:%s', d.dedup_key, d.status, d.generation, d.attempts,
                                 d.priority, d.lease_until > now()), ', ' ORDER BY d.id)
          FROM baton.deliveries d WHERE d.tenant = '00000000-0000-0000-0001-000000000002') AS deliveries,
       (SELECT string_agg(format('%s:%s:%s', r.workflow, r.status, r.version), ', ')
          FROM baton.runs r WHERE r.tenant = '00000000-0000-0000-0001-000000000002') AS runs,
       (SELECT string_agg(format('%s:%s:%s', s.stage, s.entry_seq, s.status), ', ')
          FROM baton.stages s WHERE s.tenant = '00000000-0000-0000-0001-000000000002') AS stages,
       (SELECT string_agg(format('%s:%s', b.target, b.role), ', ')
          FROM baton.target_bindings b WHERE b.tenant = '00000000-0000-0000-0001-000000000002') AS bindings;
SELECT * FROM t2_rows;

-- quiescing
SELECT baton.set_tenant_state(:'t2', 'quiescing');
SELECT baton.enqueue(:'t2', 'w', 'new-one');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'t2', 'w', 'pending-one', priority => -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'t2', '[{"target": "w", "dedup_key": "new-one"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'t2', 'w', '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'t2', :d_claimed, 1, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'t2', :d_claimed, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'t2', :d_claimed, 1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t2', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (:'t2', 'w', 'direct');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.deliveries SET priority = 7 WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.deliveries WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.runs (tenant, workflow, version, inputs_digest) VALUES (:'t2', 'wf2', 1, 'x');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.runs SET status = 'cancelled' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.runs WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.stages (tenant, run_id, stage, entry_seq)
VALUES (:'t2', '00000000-0000-0000-0001-00000000aaaa', 'second', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.stages SET status = 'failed' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.stages WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.target_bindings (tenant, target, role) VALUES (:'t2', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.target_bindings SET role = 'pg_read_all_data' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.target_bindings WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
COPY baton.deliveries (tenant, target, dedup_key) FROM stdin;
00000000-0000-0000-0001-000000000002	w	copied
\.
\echo :LAST_ERROR_SQLSTATE
-- reads still answer
SELECT dedup_key, status, generation FROM baton.delivery(:'t2', :d_claimed);
SELECT baton.tenant_write_allowed(:'t2') AS write_allowed;
SELECT * FROM t2_rows;
-- back to active: the same holder's lease works again
SELECT baton.set_tenant_state(:'t2', 'active');
SELECT baton.renew(:'t2', :d_claimed, 1, '1 hour') > now() AS renewed;

-- fenced
SELECT baton.set_tenant_state(:'t2', 'fenced');
SELECT baton.enqueue(:'t2', 'w', 'new-one');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'t2', 'w', 'pending-one', priority => -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'t2', '[{"target": "w", "dedup_key": "new-one"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'t2', 'w', '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'t2', :d_claimed, 1, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'t2', :d_claimed, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'t2', :d_claimed, 1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t2', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (:'t2', 'w', 'direct');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.deliveries SET priority = 7 WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.deliveries WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.runs (tenant, workflow, version, inputs_digest) VALUES (:'t2', 'wf2', 1, 'x');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.runs SET status = 'cancelled' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.runs WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.stages (tenant, run_id, stage, entry_seq)
VALUES (:'t2', '00000000-0000-0000-0001-00000000aaaa', 'second', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.stages SET status = 'failed' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.stages WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.target_bindings (tenant, target, role) VALUES (:'t2', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.target_bindings SET role = 'pg_read_all_data' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.target_bindings WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
COPY baton.deliveries (tenant, target, dedup_key) FROM stdin;
00000000-0000-0000-0001-000000000002	w	copied
\.
\echo :LAST_ERROR_SQLSTATE
-- moving a row into or out of a fenced tenant is a write to it
UPDATE baton.deliveries SET tenant = :'t2' WHERE tenant = :'t3' AND id = :d_mover;
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.deliveries SET tenant = :'t3' WHERE tenant = :'t2' AND id = :d_pending;
\echo :LAST_ERROR_SQLSTATE
SELECT tenant = :'t3' AS mover_stayed FROM baton.deliveries WHERE id = :d_mover;
-- reads still answer
SELECT dedup_key, status, generation FROM baton.delivery(:'t2', :d_claimed);
SELECT baton.tenant_write_allowed(:'t2') AS write_allowed;
SELECT * FROM t2_rows;
SELECT baton.set_tenant_state(:'t2', 'active');
SELECT baton.renew(:'t2', :d_claimed, 1, '1 hour') > now() AS renewed;

-- deleted
SELECT baton.set_tenant_state(:'t2', 'deleted');
SELECT baton.enqueue(:'t2', 'w', 'new-one');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'t2', 'w', 'pending-one', priority => -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'t2', '[{"target": "w", "dedup_key": "new-one"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'t2', 'w', '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'t2', :d_claimed, 1, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'t2', :d_claimed, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'t2', :d_claimed, 1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.bind_target(:'t2', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (:'t2', 'w', 'direct');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.deliveries SET priority = 7 WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.deliveries WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.runs (tenant, workflow, version, inputs_digest) VALUES (:'t2', 'wf2', 1, 'x');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.runs SET status = 'cancelled' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.runs WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.stages (tenant, run_id, stage, entry_seq)
VALUES (:'t2', '00000000-0000-0000-0001-00000000aaaa', 'second', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.stages SET status = 'failed' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.stages WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.target_bindings (tenant, target, role) VALUES (:'t2', 'w', 'pg_monitor');
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.target_bindings SET role = 'pg_read_all_data' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM baton.target_bindings WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
COPY baton.deliveries (tenant, target, dedup_key) FROM stdin;
00000000-0000-0000-0001-000000000002	w	copied
\.
\echo :LAST_ERROR_SQLSTATE
-- reads still answer
SELECT dedup_key, status, generation FROM baton.delivery(:'t2', :d_claimed);
SELECT baton.tenant_write_allowed(:'t2') AS write_allowed;
SELECT * FROM t2_rows;
-- a direct UPDATE cannot bring a deleted tenant back
UPDATE baton.tenants SET state = 'active' WHERE tenant = :'t2';
\echo :LAST_ERROR_SQLSTATE
SELECT state FROM baton.tenants WHERE tenant = :'t2';

-- TRUNCATE of any baton table is refused (a truncate bypasses the row fence). CASCADE
-- reaches every table referencing it (its NOTICEs are hidden: they list the schema).
SET client_min_messages = warning;
TRUNCATE baton.deliveries CASCADE;
\echo :LAST_ERROR_SQLSTATE
TRUNCATE baton.runs CASCADE;
\echo :LAST_ERROR_SQLSTATE
TRUNCATE baton.stages CASCADE;
\echo :LAST_ERROR_SQLSTATE
TRUNCATE baton.target_bindings CASCADE;
\echo :LAST_ERROR_SQLSTATE
RESET client_min_messages;
SELECT * FROM t2_rows;
SELECT count(*) > 0 AS t3_rows_kept FROM baton.deliveries WHERE tenant = :'t3';

-- ---------------------------------------------------------------------------
-- The fence inside one transaction: a write after the fence, in the same transaction,
-- fails; unfencing in the same transaction lets later writes through.
-- ---------------------------------------------------------------------------
BEGIN;
SELECT baton.enqueue(:'t3', 'w', 'tx-1') > 0 AS enqueued;
SELECT baton.set_tenant_state(:'t3', 'fenced');
SELECT baton.tenant_write_allowed(:'t3') AS write_allowed;
SAVEPOINT s1;
SELECT baton.enqueue(:'t3', 'w', 'tx-2');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO s1;
SAVEPOINT s1b;
INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (:'t3', 'w', 'tx-2-direct');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO s1b;
SELECT baton.set_tenant_state(:'t3', 'active');
SELECT baton.enqueue(:'t3', 'w', 'tx-3') > 0 AS enqueued;
COMMIT;
SELECT dedup_key FROM baton.deliveries WHERE tenant = :'t3' AND dedup_key LIKE 'tx-%' ORDER BY id;
SELECT state FROM baton.tenants WHERE tenant = :'t3';
-- Without savepoints, the failed write aborts the transaction: nothing of it stays,
-- the fence included.
BEGIN;
SELECT baton.enqueue(:'t3', 'w', 'tx-4') > 0 AS enqueued;
SELECT baton.set_tenant_state(:'t3', 'quiescing');
SELECT baton.enqueue(:'t3', 'w', 'tx-5');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT state FROM baton.tenants WHERE tenant = :'t3';
SELECT count(*) AS tx_4_or_5 FROM baton.deliveries WHERE tenant = :'t3' AND dedup_key IN ('tx-4', 'tx-5');
-- A fence set by a direct UPDATE inside the transaction, after a write there.
BEGIN;
SELECT baton.enqueue(:'t3', 'w', 'tx-6') > 0 AS enqueued;
UPDATE baton.tenants SET state = 'fenced' WHERE tenant = :'t3';
SELECT baton.enqueue(:'t3', 'w', 'tx-7');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- A fence set and rolled back to a savepoint, after a write and a refused write in
-- the same transaction: the tenant is active again, so the next write succeeds.
BEGIN;
SELECT baton.enqueue(:'t3', 'w', 'tx-8') > 0 AS enqueued;
SAVEPOINT s2;
SELECT baton.set_tenant_state(:'t3', 'fenced');
SAVEPOINT s3;
SELECT baton.enqueue(:'t3', 'w', 'tx-9');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO s3;
ROLLBACK TO s2;
SELECT state, baton.tenant_write_allowed(:'t3') AS write_allowed FROM baton.tenants WHERE tenant = :'t3';
SELECT baton.enqueue(:'t3', 'w', 'tx-10') > 0 AS enqueued;
COMMIT;
SELECT dedup_key FROM baton.deliveries WHERE tenant = :'t3' AND dedup_key LIKE 'tx-%' ORDER BY id;

-- ---------------------------------------------------------------------------
-- reap skips a non-active tenant's expired leases without error and reaps the active
-- tenants'; after unfencing, it takes them.
-- ---------------------------------------------------------------------------
SELECT baton.create_tenant(:'t4');
SELECT baton.create_tenant(:'t5');
SELECT baton.enqueue(:'t5', 'r', 'r5') AS d_r5 \gset
SELECT baton.enqueue(:'t4', 'r', 'r4') AS d_r4 \gset
-- t5's lease expires first: it is the oldest expired lease.
SELECT generation FROM baton.claim(:'t5', 'r', '1 millisecond');
SELECT generation FROM baton.claim(:'t4', 'r', '1 millisecond');
SELECT pg_sleep(0.01);
SELECT baton.set_tenant_state(:'t5', 'fenced');
SELECT baton.reap(1) AS reaped;
SELECT dedup_key, status, generation, attempts, lease_until IS NULL AS no_lease, last_error
  FROM baton.deliveries WHERE (tenant, id) IN ((:'t4', :d_r4), (:'t5', :d_r5)) ORDER BY dedup_key;
SELECT baton.reap() AS reaped;
SELECT baton.set_tenant_state(:'t5', 'quiescing');
SELECT baton.reap() AS reaped;
SELECT dedup_key, status, generation FROM baton.deliveries WHERE tenant = :'t5';
SELECT baton.set_tenant_state(:'t5', 'active');
SELECT baton.reap() AS reaped;
SELECT dedup_key, status, generation, attempts, lease_until IS NULL AS no_lease, last_error
  FROM baton.deliveries WHERE (tenant, id) IN ((:'t4', :d_r4), (:'t5', :d_r5)) ORDER BY dedup_key;
-- the old holder of t5's row is fenced by the generation now (its message names the
-- delivery's id, which is not stable: show the SQLSTATE only)
\set VERBOSITY sqlstate
SELECT baton.finish(:'t5', :d_r5, 1);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT baton.reap() AS reaped;
DROP VIEW t2_rows;
