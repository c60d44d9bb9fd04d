-- pg_baton, fresh: its tables refuse TRUNCATE, so the extension is dropped and created
-- again. Then one tenant and :rows pending deliveries of target 'bench' (dedup key
-- 'k' || g), enqueued as users enqueue them: baton.enqueue_batch, 10,000 a call, one call
-- a transaction. psql variables: tenant, rows, and fillfactor if set (baton.deliveries'
-- fillfactor before the load: 100 leaves no room on a page for a heap-only update).
DROP EXTENSION IF EXISTS pg_baton CASCADE;
CREATE EXTENSION pg_baton;
\if :{?fillfactor}
ALTER TABLE baton.deliveries SET (fillfactor = :fillfactor);
\endif
SELECT baton.create_tenant(:'tenant');
SET baton.notify = off;
SELECT format('SELECT count(*) FROM baton.enqueue_batch(%L, (SELECT jsonb_agg(jsonb_build_object(''target'', ''bench'', ''dedup_key'', ''k'' || g)) FROM generate_series(%s, %s) AS g))',
              :'tenant', lo, least(lo + 9999, :rows))
  FROM generate_series(1, :rows, 10000) AS lo \gexec
VACUUM ANALYZE baton.deliveries;
