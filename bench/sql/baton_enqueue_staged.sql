-- pg_baton's path for loading millions (docs/internals/performance.md): the rows COPY'd into a
-- staging table (bench_staging, by the caller: bench/run.sh's \copy), then ONE statement
-- that cuts them into arrays of :batch items, in staging order, and gives each to
-- baton.enqueue_batch: one transaction, all or nothing, and idempotent if run again.
-- NOTIFY off. Expects a fresh pg_baton with the tenant. psql variables: tenant, batch.
SET baton.notify = off;
SELECT count(*)
  FROM (SELECT jsonb_agg(jsonb_build_object('target', s.target, 'dedup_key', s.dedup_key, 'payload', s.payload)
                         ORDER BY s.n) AS items
          FROM bench_staging s
         GROUP BY (s.n - 1) / :batch) AS slice,
       LATERAL baton.enqueue_batch(:'tenant', slice.items);
