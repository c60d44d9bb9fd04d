-- bench/limits.sh --claim fair: limits_batch.sql with the fair claim: baton.claim_fair of
-- up to :batch deliveries of :target (one transaction; one tenant has work, so all are
-- its own), then one baton.finish_batch of them in the order the claim returned them
-- (one transaction). pgbench -M prepared -D target=... -D batch=N.
SELECT count(*) AS n, (array_agg(tenant))[1] AS tn, array_agg(id) AS ids, array_agg(generation) AS gens
  FROM baton.claim_fair(:target, '30 seconds', :batch) \gset
\if :n > 0
SELECT count(*) FROM baton.finish_batch(:tn, :ids::bigint[], :gens::bigint[]);
\endif
