-- One batched pg_baton cycle, the protocol's two commits: claim up to :batch deliveries
-- (one transaction), then finish each of them (one statement, one transaction; the API
-- has no batched finish). pgbench -D tenant=UUID -D batch=N.
SELECT count(*) AS n, array_agg(id) AS ids, array_agg(generation) AS gens
  FROM baton.claim(:tenant, 'bench', '30 seconds', :batch) \gset
\if :n > 0
SELECT count(baton.finish(:tenant, u.i, u.g))
  FROM unnest(:ids::bigint[], :gens::bigint[]) AS u(i, g);
\endif
