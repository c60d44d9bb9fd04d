-- One batched pg_baton cycle, the protocol's two commits: claim up to :batch deliveries
-- (one transaction), then finish them all with baton.finish_batch (one statement, one
-- transaction). pgbench -D tenant=UUID -D batch=N.
SELECT count(*) AS n, array_agg(id) AS ids, array_agg(generation) AS gens
  FROM baton.claim(:tenant, 'bench', '30 seconds', :batch) \gset
\if :n > 0
SELECT count(*) FROM baton.finish_batch(:tenant, :ids::bigint[], :gens::bigint[]);
\endif
