-- bench/fair.sh, a worker of the fair pool: one baton.claim_fair of target :target
-- (pgbench -D target='...'), the claim logged to bench_claims in the same statement
-- (tenant, id, the claim's now()), :work microseconds of simulated work, then
-- baton.finish. An empty claim rests :idle microseconds. pgbench -M prepared.
\set id 0
WITH c AS (SELECT tenant, id, generation FROM baton.claim_fair(:target, '5 minutes', 1)),
     l AS (INSERT INTO bench_claims SELECT tenant, id, now() FROM c)
SELECT tenant AS tn, id, generation FROM c \aset
\if :id > 0
\sleep :work us
SELECT baton.finish(:tn, :id, :generation);
\else
\sleep :idle us
\endif
