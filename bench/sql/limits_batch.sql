-- bench/limits.sh: one batched cycle of today's claim on the one tenant: baton.claim of up
-- to :batch deliveries (one transaction), then one baton.finish_batch of them, in the
-- order the claim returned them (one transaction): a worker that finishes its batch as
-- it got it. pgbench -M prepared -D target=... -D batch=N.
SELECT count(*) AS n, array_agg(id) AS ids, array_agg(generation) AS gens
  FROM baton.claim(bench_tenant(1), :target, '30 seconds', :batch) \gset
\if :n > 0
SELECT count(*) FROM baton.finish_batch(bench_tenant(1), :ids::bigint[], :gens::bigint[]);
\endif
