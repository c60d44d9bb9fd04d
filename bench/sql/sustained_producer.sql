-- The producer of bench/sustained.sh's fixed rate: one enqueue_batch of :batch
-- deliveries a transaction (pgbench -R paces the transactions). pgbench -D tenant='UUID'
-- -D batch=N.
SELECT count(*) FROM baton.enqueue_batch(:tenant, (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
    'target', 'bench', 'dedup_key', pg_catalog.gen_random_uuid(), 'payload', pg_catalog.jsonb_build_object('n', g)))
  FROM pg_catalog.generate_series(1, :batch) AS g));
