-- bench/limits.sh: one unbatched cycle of today's claim on the one tenant: baton.claim of
-- one delivery (its own transaction), then baton.finish of it (its own transaction). As
-- fair_claim_cycle.sql with -D tenants=1: \aset assigns nothing when nothing was
-- claimed, id stays 0 and the finish is skipped. pgbench -M prepared -D target=...
\set id 0
SELECT id, generation FROM baton.claim(bench_tenant(1), :target, '30 seconds', 1) \aset
\if :id > 0
SELECT baton.finish(bench_tenant(1), :id, :generation);
\endif
