-- ===========================================================================
-- baton.purge(older_than, max_rows) (0.2.0): removes settled deliveries and terminal
-- runs (with their stages, markers and deliveries) older than a bound, skipping fenced
-- tenants, in batches of at most max_rows top-level rows. purge is fleet-wide, so this
-- test starts from a fresh extension.
-- ===========================================================================
DROP EXTENSION pg_baton CASCADE;
CREATE EXTENSION pg_baton;
\set a '00000000-0000-0000-0e07-00000000000a'
\set b '00000000-0000-0000-0e07-00000000000b'
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');

-- ---------------------------------------------------------------------------
-- Refusals: NULL arguments 22004; a negative age, or max_rows out of 1..100000, 22023.
-- ---------------------------------------------------------------------------
SELECT baton.purge(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.purge('1 day', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.purge('-1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.purge('1 day -1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.purge('1 day', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.purge('1 day', 100001);
\echo :LAST_ERROR_SQLSTATE
-- Nothing to purge yet.
SELECT baton.purge('0 seconds') AS removed;

-- ---------------------------------------------------------------------------
-- Deliveries of tenant a: d1 finished and d2 failed two days ago (purged); d3 finished
-- just now (kept); d4 claimed and d5 pending, both created three days ago (kept: not
-- settled). Tenant b: e1 finished two days ago (kept while b is fenced).
-- ---------------------------------------------------------------------------
SELECT count(*) AS enqueued FROM (
  SELECT baton.enqueue(:'a', 'ret', 'd' || i) FROM generate_series(1, 5) i) e;
SELECT baton.enqueue(:'b', 'ret', 'e1') IS NOT NULL AS enqueued;
SELECT count(*) AS claimed FROM baton.claim(:'a', 'ret', '1 hour', 4);
SELECT count(*) AS claimed FROM baton.claim(:'b', 'ret', '1 hour', 1);
SELECT d.dedup_key, baton.finish(d.tenant, d.id, d.generation, CASE WHEN d.dedup_key = 'd2' THEN 'failed' ELSE 'finished' END)
  FROM baton.deliveries d WHERE d.dedup_key IN ('d1', 'd2', 'd3', 'e1') ORDER BY d.dedup_key;
SELECT dedup_key, status FROM baton.deliveries WHERE dedup_key IN ('d4', 'd5') ORDER BY dedup_key;
-- (Created before they settled, as every delivery is: purge reads them in order of
-- creation.)
UPDATE baton.deliveries SET settled_at = now() - interval '2 days', created_at = now() - interval '3 days'
 WHERE dedup_key IN ('d1', 'd2', 'e1');
UPDATE baton.deliveries SET created_at = now() - interval '3 days' WHERE dedup_key IN ('d4', 'd5');

-- ---------------------------------------------------------------------------
-- Runs of tenant a (workflow ret_wf, one stage): r1 completed two days ago, with a
-- marker on its stage and a finished delivery (purged with everything); r2 cancelled
-- two days ago but with a delivery still claimed (kept: in flight); r3
-- completed just now (kept); r4 running (kept) with a delivery settled two days ago
-- (kept: it belongs to a live run).
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('ret_wf', '{"start": "s", "stages": {"s": {"next": ["@finish"]}}}') AS v;
SELECT baton.submit(:'a', 'ret_wf', '{"n": 1}', 'r1') AS r1 \gset
SELECT baton.submit(:'a', 'ret_wf', '{"n": 2}', 'r2') AS r2 \gset
SELECT baton.submit(:'a', 'ret_wf', '{"n": 3}', 'r3') AS r3 \gset
SELECT baton.submit(:'a', 'ret_wf', '{"n": 4}', 'r4') AS r4 \gset
SELECT count(*) AS acquired FROM (SELECT baton.acquire_run(:'a', r, 'w', '1 hour')
  FROM unnest(ARRAY[:'r1', :'r3', :'r4']::uuid[]) r) x;
SELECT count(*) AS started FROM (SELECT baton.transition_stage(:'a', r, 1)
  FROM unnest(ARRAY[:'r1', :'r3', :'r4']::uuid[]) r) x;
SELECT id AS r1_s FROM baton.stages WHERE run_id = :'r1' \gset
SELECT id AS r3_s FROM baton.stages WHERE run_id = :'r3' \gset
SELECT baton.start_stage(:'a', :'r1', 1, :r1_s) IS NOT NULL AS started;
SELECT baton.claim_marker(:'a', :r1_s, "position" => 0, kind => 'email') AS marker_claimed;
SELECT baton.complete_marker(:'a', :r1_s, "position" => 0, state => 'done') AS marker_done;
SELECT baton.enqueue(:'a', 'ret_run', 'of-r1', run_id => :'r1') IS NOT NULL AS enqueued;
SELECT baton.enqueue(:'a', 'ret_run', 'of-r2', run_id => :'r2') IS NOT NULL AS enqueued;
SELECT baton.enqueue(:'a', 'ret_run', 'of-r4', run_id => :'r4') IS NOT NULL AS enqueued;
SELECT count(*) AS finished FROM baton.claim(:'a', 'ret_run', '1 hour', 10) c, LATERAL baton.finish(:'a', c.id, c.generation)
 WHERE c.dedup_key IN ('of-r1', 'of-r4');
SELECT dedup_key, status FROM baton.deliveries WHERE target = 'ret_run' ORDER BY dedup_key;
SELECT baton.complete_stage(:'a', :'r1', 1, :r1_s);
SELECT kind, run_status FROM baton.transition_stage(:'a', :'r1', 1);
SELECT baton.start_stage(:'a', :'r3', 1, :r3_s) IS NOT NULL AS started;
SELECT baton.complete_stage(:'a', :'r3', 1, :r3_s);
SELECT kind, run_status FROM baton.transition_stage(:'a', :'r3', 1);
SELECT baton.cancel(:'a', :'r2', 'dropped');
UPDATE baton.runs SET finished_at = now() - interval '2 days' WHERE id IN (:'r1', :'r2');
UPDATE baton.deliveries SET settled_at = now() - interval '2 days' WHERE dedup_key IN ('of-r1', 'of-r4');
SELECT idempotency_key, status, finished_at < now() - interval '1 day' AS old FROM baton.runs ORDER BY idempotency_key;

-- ---------------------------------------------------------------------------
-- Tenant b fenced: its rows are skipped, without error.
-- ---------------------------------------------------------------------------
SELECT baton.set_tenant_state(:'b', 'fenced');

-- A batch of one: the oldest row of the first tenant; then the rest (d2 and r1: 2 rows).
SELECT baton.purge('1 day', 1) AS removed;
SELECT (SELECT count(*) FROM baton.deliveries WHERE dedup_key IN ('d1', 'd2'))
     + (SELECT count(*) FROM baton.runs WHERE idempotency_key = 'r1') AS old_rows_left;
SELECT baton.purge('1 day') AS removed;
SELECT baton.purge('1 day') AS removed_again;
-- What is left: a's recent and unsettled deliveries, the run deliveries of r2 and r4,
-- b's fenced delivery; runs r2, r3, r4; r1's stage and marker are gone with it.
SELECT tenant = :'a' AS of_a, dedup_key, status FROM baton.deliveries ORDER BY tenant, dedup_key;
SELECT idempotency_key, status FROM baton.runs ORDER BY idempotency_key;
SELECT count(*) AS r1_stages FROM baton.stages WHERE run_id = :'r1';
SELECT count(*) AS r1_markers FROM baton.markers WHERE entry_id = :r1_s;
SELECT count(*) AS r3_stages FROM baton.stages WHERE run_id = :'r3';

-- Once the delivery of r2 settles, r2 goes, and its delivery with it (one row counted).
SELECT baton.finish(:'a', d.id, d.generation) FROM baton.deliveries d WHERE d.dedup_key = 'of-r2';
SELECT baton.purge('1 day') AS removed;
SELECT count(*) AS r2_deliveries FROM baton.deliveries WHERE dedup_key = 'of-r2';
SELECT idempotency_key FROM baton.runs ORDER BY idempotency_key;
-- A bound of zero removes everything settled or terminal now: d3, r3.
SELECT baton.purge('0 seconds') AS removed;
SELECT tenant = :'a' AS of_a, dedup_key, status FROM baton.deliveries ORDER BY tenant, dedup_key;
SELECT idempotency_key, status FROM baton.runs ORDER BY idempotency_key;
-- Tenant b active again: its old delivery goes.
SELECT baton.set_tenant_state(:'b', 'active');
SELECT baton.purge('1 day') AS removed;
SELECT count(*) AS b_rows FROM baton.deliveries WHERE tenant = :'b';
-- A removed delivery's dedup key is free again: enqueue makes a new delivery.
SELECT baton.enqueue(:'a', 'ret', 'd1') IS NOT NULL AS enqueued_again;
SELECT dedup_key, status, generation FROM baton.deliveries WHERE dedup_key = 'd1';

-- ---------------------------------------------------------------------------
-- Who may purge: admins; not workers or producers (42501).
-- ---------------------------------------------------------------------------
CREATE ROLE baton_ret_admin;
CREATE ROLE baton_ret_worker;
SELECT baton.grant_admin('baton_ret_admin');
SELECT baton.grant_worker('baton_ret_worker');
SET ROLE baton_ret_worker;
SELECT baton.purge('1 day');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE baton_ret_admin;
SELECT baton.purge('1 day') AS removed_by_admin;
RESET ROLE;
DROP OWNED BY baton_ret_admin, baton_ret_worker;
DROP ROLE baton_ret_admin, baton_ret_worker;
