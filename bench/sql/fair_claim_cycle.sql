-- bench/fair.sh, cost: one unbatched cycle of today's claim, the tenant named by the
-- client: each call the next of tenants 1 .. :tenants (each client from its own
-- starting point; with -D tenants=1, always tenant 1), then baton.finish. pgbench
-- -M prepared -D k=0 -D target=... -D tenants=N.
\set k :k + 1
\set t 1 + (:client_id * 7919 + :k) % :tenants
\set id 0
SELECT bench_tenant(:t) AS tn, id, generation FROM baton.claim(bench_tenant(:t), :target, '30 seconds', 1) \aset
\if :id > 0
SELECT baton.finish(:tn, :id, :generation);
\endif
