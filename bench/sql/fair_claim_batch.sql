-- bench/fair.sh, cost: one batched cycle of today's claim: baton.claim of up to :batch
-- deliveries of the client's next tenant (as fair_claim_cycle.sql picks it; one
-- transaction), then the same finishing statement as fair_batch.sql (one transaction).
-- pgbench -M prepared -D k=0 -D target=... -D tenants=N -D batch=N.
\set k :k + 1
\set t 1 + (:client_id * 7919 + :k) % :tenants
SELECT count(*) AS n, array_agg(bench_tenant(:t)) AS tns, array_agg(id) AS ids, array_agg(generation) AS gens
  FROM baton.claim(bench_tenant(:t), :target, '30 seconds', :batch) \gset
\if :n > 0
SELECT count(*) FROM (SELECT t, array_agg(i) AS ids, array_agg(g) AS gens
                        FROM unnest(:tns::uuid[], :ids::bigint[], :gens::bigint[]) AS u(t, i, g) GROUP BY t) s,
                     LATERAL baton.finish_batch(s.t, s.ids, s.gens);
\endif
