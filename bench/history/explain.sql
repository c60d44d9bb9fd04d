-- The two lookups of transition_stage whose cost could depend on history, run on the long
-- run as the function runs them: the statements of src/api/transition.cpp (g_current, and
-- the entry_seq subquery of g_insert_stage), prepared with parameters and planned
-- generically, as pg_baton keeps every statement (SPI_prepare_cursor with
-- CURSOR_OPT_GENERIC_PLAN, src/pg/runtime/spi.cpp). psql variables: tenant, run.
SET plan_cache_mode = force_generic_plan;
PREPARE g_current(uuid, uuid) AS
SELECT s.id, s.stage, s.entry_seq, s.status, s.attempt, s.max_attempts, s.retry_at,
       s.retry_at OPERATOR(pg_catalog.>) pg_catalog.now(), s.inputs, s.is_current, s.result
  FROM baton.stages s
 WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.run_id OPERATOR(pg_catalog.=) $2 AND s.is_current;
PREPARE g_entry_seq(uuid, uuid, text) AS
SELECT p.entry_seq FROM baton.stages p
 WHERE p.tenant OPERATOR(pg_catalog.=) $1 AND p.run_id OPERATOR(pg_catalog.=) $2
   AND p.stage OPERATOR(pg_catalog.=) $3
 ORDER BY p.entry_seq DESC LIMIT 1;

\echo '-- g_current: the run''s current stage (one probe of the partial unique index stages_current)'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE g_current(:'tenant', :'run');
\echo
\echo '-- g_insert_stage''s subquery: the last entry_seq of stage "step" in the run'
\echo '-- (one backward probe of UNIQUE (tenant, run_id, stage, entry_seq))'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE g_entry_seq(:'tenant', :'run', 'step');
