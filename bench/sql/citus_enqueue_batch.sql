-- One baton.enqueue_batch of :batch new deliveries of target 'bench' (each dedup key a
-- new uuid), the call alone in its statement with the items as a parameter (pgbench -M
-- prepared), as Citus delegates it to the node that holds the tenant. The items are
-- built by a statement of their own first. pgbench -D tenant=UUID -D batch=N.
SELECT jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', gen_random_uuid()::text,
                                    'payload', jsonb_build_object('n', g))) AS items
  FROM generate_series(1, :batch) g \gset
SELECT * FROM baton.enqueue_batch(:tenant, :items);
