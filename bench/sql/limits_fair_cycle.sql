-- bench/limits.sh --claim fair: limits_cycle.sql with the fair claim: baton.claim_fair of
-- one delivery of :target (its own transaction), then baton.finish of it (its own
-- transaction). pgbench -M prepared -D target=...
\set id 0
SELECT tenant AS tn, id, generation FROM baton.claim_fair(:target, '30 seconds', 1) \aset
\if :id > 0
SELECT baton.finish(:tn, :id, :generation);
\endif
