-- The producer of bench/sustained.sh's fixed rate: one enqueue_batch of :batch
-- deliveries a transaction (pgbench -R paces the transactions). pgbench -D tenant='UUID'
-- -D batch=N -D ordered=1|0 (dedup keys in order of time, or random uuids).
SELECT count(*) FROM baton.enqueue_batch(:tenant, (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
    'target', 'bench', 'dedup_key', CASE WHEN :ordered = 1
      THEN pg_catalog.to_char(pg_catalog.clock_timestamp(), 'YYYYMMDDHH24MISSUS') || '-' || :client_id || '-' || g
      ELSE pg_catalog.gen_random_uuid()::text END, 'payload', pg_catalog.jsonb_build_object('n', g)))
  FROM pg_catalog.generate_series(1, :batch) AS g));
