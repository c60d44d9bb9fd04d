-- Enqueues :rows pending deliveries of target 'bench' (dedup key 'k' || g, payload
-- {"n": g}) through pg_baton's own bulk API: baton.enqueue_batch, :batch items per call
-- (at most 10,000, its limit), one call per transaction (autocommit), NOTIFY off, each
-- call's JSON array built by the statement (baton_enqueue_calls.sql: sent by the client).
-- Expects a fresh pg_baton with the tenant. psql variables: tenant, rows, batch.
SET baton.notify = off;
SELECT format('SELECT count(*) FROM baton.enqueue_batch(%L, (SELECT jsonb_agg(jsonb_build_object(''target'', ''bench'', ''dedup_key'', ''k'' || g, ''payload'', jsonb_build_object(''n'', g))) FROM generate_series(%s, %s) AS g))',
              :'tenant', lo, least(lo + :batch - 1, :rows))
  FROM generate_series(1, :rows, :batch) AS lo \gexec
