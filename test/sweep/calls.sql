-- Writes the psql script of a sweep pass (test/sweep/sweep.sh): every function of schema
-- baton, as the catalog lists them (no list kept here: a new function is swept too), each
-- called in every shape below, each statement followed by
--   \echo sweep FUNCTION SHAPE :SQLSTATE
-- so that the pass prints one line per statement that answered (00000) or refused (its
-- SQLSTATE); a statement that kills the backend ends psql there, and its line and the
-- rest are missing. The shapes:
--   alone      SELECT f(...)                       Citus delegates these two
--   from       SELECT * FROM f(...)
--   subquery   SELECT count(*) FROM (SELECT * FROM f(...)) s
--   scalar     SELECT (SELECT count(*) FROM f(...))
--   cte        WITH s AS (SELECT * FROM f(...)) SELECT count(*) FROM s
--   lateral    SELECT count(*) FROM (VALUES (1)) v(x) CROSS JOIN LATERAL (SELECT * FROM f(...)) s
--   union      SELECT count(*) FROM (SELECT 1 FROM f(...) UNION ALL SELECT 1) s
--   prepared   PREPARE of the subquery shape, the tenant a parameter, EXECUTEd 6 times
--              (a plan cache's five custom plans, then its generic one); a function
--              without a tenant argument has no parameter, so its plan is generic from
--              the first EXECUTE: twice
--   plpgsql    a DO block: a FOR loop over f(...)'s rows, then PERFORM f(...) in a loop
-- With mode = 'txn' each statement runs inside BEGIN ... COMMIT of its own.
-- The arguments are plausible: the pass's tenant and the ids setup.sql made (psql
-- variables), chosen by the argument's name and the function; an argument not named
-- below gets NULL of its type (a new function is swept all the same, and refuses).
-- psql variables in: those of setup.sql, mode ('plain' or 'txn').
WITH fns AS (
    SELECT p.oid, p.proname::text AS fn
      FROM pg_catalog.pg_proc p
     WHERE p.pronamespace = 'baton'::regnamespace AND p.prokind = 'f'
), params AS (
    SELECT f.oid, f.fn, a.n, coalesce(p.proargnames[a.n], '') AS name, a.type
      FROM fns f JOIN pg_catalog.pg_proc p ON p.oid = f.oid,
           unnest(p.proargtypes::oid[]) WITH ORDINALITY a(type, n)
), valued AS (
    SELECT oid, fn, n, name, type,
           CASE
             WHEN name = 'tenant' THEN :'t'
             WHEN name = 'state' THEN CASE fn WHEN 'complete_marker' THEN 'done' ELSE 'active' END
             WHEN name = 'target' THEN CASE fn WHEN 'claim' THEN 'sweep-pool' WHEN 'bind_target' THEN 'sweep-bound'
                                               WHEN 'schedule' THEN 'sweep-ticks' ELSE 'sweep' END
             WHEN name = 'dedup_key' THEN 'sweep-key'
             WHEN name IN ('payload', 'binding', 'inputs', 'result') THEN '{}'
             WHEN name = 'items' THEN '[{"target": "sweep", "dedup_key": "sweep-batch"}]'
             WHEN name = 'priority' THEN '0'
             WHEN name = 'max_attempts' THEN '3'
             WHEN name = 'run_id' THEN CASE WHEN fn = 'enqueue' THEN NULL
                                            WHEN fn IN ('acquire_run', 'release_run', 'cancel', 'approve') THEN :'run_b'
                                            ELSE :'run' END
             WHEN name = 'lease' THEN '1 hour'
             WHEN name = 'max_items' THEN '1'
             WHEN name = 'id' THEN CASE fn WHEN 'finish' THEN :'d_fin' WHEN 'retry' THEN :'d_retry'
                                           WHEN 'cancel_delivery' THEN :'d_cancel' ELSE :'d_claimed' END
             WHEN name = 'generation' THEN CASE fn WHEN 'renew' THEN :'g_claimed' WHEN 'finish' THEN :'g_fin'
                                                   WHEN 'retry' THEN :'g_retry' ELSE :'rgen' END
             WHEN name = 'ids' THEN CASE fn WHEN 'finish_batch' THEN '{' || :'d_fb' || '}' ELSE '{' || :'d_cancel' || '}' END
             WHEN name = 'generations' THEN '{' || :'g_fb' || '}'
             WHEN name = 'outcome' THEN CASE fn WHEN 'resolve_marker' THEN 'done' ELSE 'finished' END
             WHEN name = 'error' THEN 'sweep error'
             WHEN name IN ('max_rows', 'batch') THEN '10'
             WHEN name = 'older_than' THEN '1 day'
             WHEN name = 'name' THEN CASE fn WHEN 'define_workflow' THEN :'wf' ELSE 'sweep-schedule' END
             WHEN name = 'definition' THEN '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}'
             WHEN name = 'workflow' THEN :'wf'
             WHEN name = 'idempotency_key' THEN 'sweep-run'
             WHEN name IN ('approver', 'owner') THEN 'sweeper'
             WHEN name = 'digest' THEN 'sweep-digest'
             WHEN name = 'reason' THEN 'sweep'
             WHEN name = 'stage_id' THEN :'stage'
             WHEN name = 'subject' THEN 'sweep-subject'
             WHEN name = 'step' THEN 'sweep-step'
             WHEN name = 'entry_id' THEN :'entry'
             WHEN name = 'position' THEN '0'
             WHEN name = 'kind' THEN 'sweep'
             WHEN name = 'role' THEN 'baton_sweep'
             WHEN name = 'spec' THEN '@every 1 hour'
             WHEN name = 'time_zone' THEN 'UTC'
           END AS value
      FROM params
), calls AS (
    -- The call with every argument a typed literal, and with the tenant as $1 (prepared).
    SELECT f.oid, f.fn,
           format('baton.%I(%s)', f.fn, coalesce(string_agg(format('%s::%s', quote_nullable(v.value),
               format_type(v.type, NULL)), ', ' ORDER BY v.n) FILTER (WHERE v.oid IS NOT NULL), '')) AS call,
           format('baton.%I(%s)', f.fn, coalesce(string_agg(CASE WHEN v.name = 'tenant' AND v.n = 1 THEN '$1'
               ELSE format('%s::%s', quote_nullable(v.value), format_type(v.type, NULL)) END, ', ' ORDER BY v.n)
               FILTER (WHERE v.oid IS NOT NULL), '')) AS call_p,
           coalesce(bool_or(v.name = 'tenant' AND v.n = 1), false) AS has_tenant
      FROM fns f LEFT JOIN valued v ON v.oid = f.oid
     GROUP BY f.oid, f.fn
), shapes(ord, shape, template) AS (VALUES
    (1, 'alone', 'SELECT %s'),
    (2, 'from', 'SELECT * FROM %s'),
    (3, 'subquery', 'SELECT count(*) FROM (SELECT * FROM %s) s'),
    (4, 'scalar', 'SELECT (SELECT count(*) FROM %s)'),
    (5, 'cte', 'WITH s AS (SELECT * FROM %s) SELECT count(*) FROM s'),
    (6, 'lateral', 'SELECT count(*) FROM (VALUES (1)) v(x) CROSS JOIN LATERAL (SELECT * FROM %s) s'),
    (7, 'union', 'SELECT count(*) FROM (SELECT 1 FROM %s UNION ALL SELECT 1) s'),
    (9, 'plpgsql', 'DO $sweep$ DECLARE r record; BEGIN FOR r IN SELECT * FROM %1$s LOOP END LOOP; '
                   'FOR i IN 1..2 LOOP PERFORM %1$s; END LOOP; END $sweep$')
), statements AS (
    SELECT c.oid, s.ord, 0 AS k, s.shape, format(s.template, c.call) AS sql
      FROM calls c CROSS JOIN shapes s
    UNION ALL
    SELECT c.oid, 8, 0, 'prepare',
           format('PREPARE sweep_%s%s AS SELECT count(*) FROM (SELECT * FROM %s) s', c.oid,
                  CASE WHEN c.has_tenant THEN '(uuid)' ELSE '' END, c.call_p)
      FROM calls c
    UNION ALL
    SELECT c.oid, 8, k, 'execute',
           format('EXECUTE sweep_%s%s', c.oid, CASE WHEN c.has_tenant THEN format('(%L)', :'t') ELSE '' END)
      FROM calls c CROSS JOIN generate_series(1, CASE WHEN c.has_tenant THEN 6 ELSE 2 END) k
)
SELECT CASE WHEN :'mode' = 'txn' THEN 'BEGIN;' || E'\n' ELSE '' END
       || s.sql || ';' || E'\n'
       || format('\echo sweep %s %s :SQLSTATE', c.fn, s.shape)
       || CASE WHEN :'mode' = 'txn' THEN E'\nCOMMIT;' ELSE '' END
       || CASE WHEN s.shape = 'execute' AND s.k = CASE WHEN c.has_tenant THEN 6 ELSE 2 END
               THEN format(E'\nDEALLOCATE sweep_%s;', c.oid) ELSE '' END
  FROM statements s JOIN calls c ON c.oid = s.oid
 ORDER BY s.oid, s.ord, s.k;
