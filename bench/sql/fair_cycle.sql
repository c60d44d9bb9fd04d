-- bench/fair.sh, cost: one unbatched cycle of the fair claim: baton.claim_fair of target
-- :target (its own transaction), then baton.finish of what it gave (its own transaction).
-- As baton_cycle.sql: \aset assigns nothing when nothing was claimed, id stays 0 and the
-- finish is skipped. pgbench -M prepared -D target=...
\set id 0
SELECT tenant AS tn, id, generation FROM baton.claim_fair(:target, '30 seconds', 1) \aset
\if :id > 0
SELECT baton.finish(:tn, :id, :generation);
\endif
