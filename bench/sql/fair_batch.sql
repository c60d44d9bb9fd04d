-- bench/fair.sh, cost: one batched cycle of the fair claim: baton.claim_fair of up to
-- :batch deliveries (one transaction), then one statement that finishes them with one
-- baton.finish_batch per tenant among them (one transaction; finish_batch takes one
-- tenant). pgbench -M prepared -D target=... -D batch=N.
SELECT count(*) AS n, array_agg(tenant) AS tns, array_agg(id) AS ids, array_agg(generation) AS gens
  FROM baton.claim_fair(:target, '30 seconds', :batch) \gset
\if :n > 0
SELECT count(*) FROM (SELECT t, array_agg(i) AS ids, array_agg(g) AS gens
                        FROM unnest(:tns::uuid[], :ids::bigint[], :gens::bigint[]) AS u(t, i, g) GROUP BY t) s,
                     LATERAL baton.finish_batch(s.t, s.ids, s.gens);
\endif
