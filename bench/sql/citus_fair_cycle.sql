-- bench/citus_fair.sh: one fair cycle on a distributed install, one transaction: up to
-- 10 deliveries of target fx from the tenants the caller serves (baton.claim_fair), each
-- finished (baton.finish per row).
BEGIN;
SELECT count(*) AS n, array_agg(tenant) AS ts, array_agg(id) AS ids, array_agg(generation) AS gens
  FROM baton.claim_fair('fx', '30 seconds', 10) \gset
\if :n > 0
SELECT count(baton.finish(f.tenant, f.id, f.generation))
  FROM unnest(:ts::uuid[], :ids::bigint[], :gens::bigint[]) AS f(tenant, id, generation);
\endif
COMMIT;
