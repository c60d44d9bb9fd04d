-- bench/fair.sh, a worker of the baseline pool, as a user builds one today: it cycles
-- through the tenant list itself (tenants 1 .. :tenants, each client from its own
-- starting point) and calls baton.claim of target :target for the next tenant; the
-- claim is logged as fair_worker.sql logs it; :work microseconds of simulated work,
-- then baton.finish. After a whole pass over the list that gave nothing it rests :idle
-- microseconds. pgbench -D k=0 -D dry=0 (the client's place, and its empty claims in a
-- row); -M prepared.
\set k :k + 1
\set t 1 + (:client_id * 7919 + :k) % :tenants
\set id 0
WITH c AS (SELECT id, generation FROM baton.claim(bench_tenant(:t), :target, '5 minutes', 1)),
     l AS (INSERT INTO bench_claims SELECT bench_tenant(:t), id, now() FROM c)
SELECT id, generation FROM c \aset
\if :id > 0
\set dry 0
\sleep :work us
SELECT baton.finish(bench_tenant(:t), :id, :generation);
\else
\set dry :dry + 1
\if :dry >= :tenants
\set dry 0
\sleep :idle us
\endif
\endif
