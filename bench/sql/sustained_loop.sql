-- One round of the closed loop of bench/sustained.sh: enqueue :batch deliveries, claim up
-- to :batch, finish them with one finish_batch; three transactions. Each client
-- enqueues what it finishes, so the queue stays as deep as it was filled (the harness'
-- depth-target method, without a producer of its own). pgbench -D tenant='UUID' -D batch=N
-- -D ordered=1|0 (dedup keys in order of time, or random uuids).
SELECT count(*) FROM baton.enqueue_batch(:tenant, (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
    'target', 'bench', 'dedup_key', CASE WHEN :ordered = 1
      THEN pg_catalog.to_char(pg_catalog.clock_timestamp(), 'YYYYMMDDHH24MISSUS') || '-' || :client_id || '-' || g
      ELSE pg_catalog.gen_random_uuid()::text END, 'payload', pg_catalog.jsonb_build_object('n', g)))
  FROM pg_catalog.generate_series(1, :batch) AS g));
SELECT count(*) AS n, pg_catalog.quote_literal(pg_catalog.array_agg(id)) AS ids,
       pg_catalog.quote_literal(pg_catalog.array_agg(generation)) AS gens
  FROM baton.claim(:tenant, 'bench', '30 seconds', :batch) \gset
\if :n > 0
SELECT count(*) FROM baton.finish_batch(:tenant, :ids::bigint[], :gens::bigint[]);
\endif
