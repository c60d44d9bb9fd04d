-- The pg_baton calls whose statements had the shapes that crash the planner of Citus 13.2
-- and 14.0 (SIGSEGV in CheckAndBuildDelayedFastPathPlan): a generic plan of an UPDATE of a
-- distributed table with now() inside a CASE, as retry's give-back
--   UPDATE baton.deliveries d SET run_after = CASE WHEN $5 IS NULL THEN d.run_after
--          ELSE pg_catalog.now() + $5 END, settled_at = CASE WHEN $5 IS NULL THEN
--          pg_catalog.now() END WHERE d.tenant = $1 AND d.id = $2
-- and resolve_marker's update of the marker. Each call runs more than five times on
-- every path (a plan cache switches to a generic plan after five custom plans): alone
-- (delegated to the tenant's node), inside a transaction and inside a PL/pgSQL block
-- (run on the coordinator, statements routed to the shard), and as a prepared
-- statement. run.sh then checks that no backend of any node died. A rewrite that
-- brings a crashing shape back kills a backend here.
-- psql variable: t, an active tenant.
\set ON_ERROR_STOP 1
SELECT baton.define_workflow('shapes', '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}') IS NOT NULL AS defined;

-- retry: give back with a delay (pending) and without attempts left (failed, settled).
SELECT baton.enqueue(:'t', 'shapes', 'r' || i, '{}', max_attempts => 100) > 0 AS enqueued FROM generate_series(1, 40) i;
SELECT format('SELECT baton.retry(%L, %s, %s, ''e'', ''0 seconds'')', :'t', id, generation)
  FROM baton.claim(:'t', 'shapes', '1 hour', 7) \gexec
BEGIN;
SELECT format('SELECT baton.retry(%L, %s, %s, ''e'', ''0 seconds'')', :'t', id, generation)
  FROM baton.claim(:'t', 'shapes', '1 hour', 7) \gexec
COMMIT;
SET shapes.t = :'t';
DO $$
DECLARE c record;
BEGIN
  FOR c IN SELECT * FROM baton.claim(current_setting('shapes.t')::uuid, 'shapes', '1 hour', 7) LOOP
    PERFORM baton.retry(current_setting('shapes.t')::uuid, c.id, c.generation, 'e', NULL);
  END LOOP;
END $$;
PREPARE give_back(uuid, bigint, bigint) AS SELECT baton.retry($1, $2, $3, 'e', NULL);
SELECT format('EXECUTE give_back(%L, %s, %s)', :'t', id, generation)
  FROM baton.claim(:'t', 'shapes', '1 hour', 7) \gexec
-- Attempts spent: the settling branch of the CASE.
SELECT baton.enqueue(:'t', 'shapes', 'last' || i, '{}', max_attempts => 1) > 0 AS enqueued FROM generate_series(1, 7) i;
SELECT format('SELECT baton.retry(%L, %s, %s, ''e'')', :'t', id, generation)
  FROM baton.claim(:'t', 'shapes', '1 hour', 7) \gexec

-- resolve_marker: seven markers claimed under one generation, in doubt under the next,
-- resolved one by one; alone, then inside a transaction.
SELECT baton.submit(:'t', 'shapes', '{}', 'shapes-1') AS run \gset
SELECT baton.acquire_run(:'t', :'run', 'o', '1 hour') AS gen \gset
SELECT stage_id AS sid FROM baton.transition_stage(:'t', :'run', :gen) \gset
SELECT baton.start_stage(:'t', :'run', :gen, :sid) IS NOT NULL AS started;
SELECT format('SELECT baton.claim_marker(%L, %s, "position" => %s, kind => ''k'')', :'t', :sid, i)
  FROM generate_series(0, 13) i \gexec
SELECT baton.release_run(:'t', :'run', :gen) IS NULL AS released;
SELECT baton.acquire_run(:'t', :'run', 'o2', '1 hour') AS gen \gset
SELECT format('SELECT baton.resolve_marker(%L, %s, %s, %s, ''done'')', :'t', :sid, i, :gen)
  FROM generate_series(0, 6) i \gexec
BEGIN;
SELECT format('SELECT baton.resolve_marker(%L, %s, %s, %s, ''failed'')', :'t', :sid, i, :gen)
  FROM generate_series(7, 13) i \gexec
COMMIT;
SELECT count(*) = 14 AS all_resolved FROM baton.markers m WHERE m.tenant = :'t' AND m.entry_id = :sid AND m.state <> 'in_progress';
