-- Enqueues :rows pending deliveries of target 'bench' through pg_baton's own bulk API:
-- baton.enqueue_batch, 10,000 items per call (its limit), one call per transaction
-- (autocommit), NOTIFY off. Expects a fresh pg_baton with the tenant.
-- psql variables: tenant, rows.
SET baton.notify = off;
SELECT format('SELECT count(*) FROM baton.enqueue_batch(%L, (SELECT jsonb_agg(jsonb_build_object(''target'', ''bench'', ''dedup_key'', ''k'' || g)) FROM generate_series(%s, %s) AS g))',
              :'tenant', lo, least(lo + 9999, :rows))
  FROM generate_series(1, :rows, 10000) AS lo \gexec
