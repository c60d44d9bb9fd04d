-- pg_baton 0.9.0 -> 0.10.0: the dedup key of deliveries compared in byte order, its key
-- first (docs/internals/choices.md, "The dedup key's index"). An enqueue writes this index's
-- entry for every item, a descent that compares the key at each level: the tenant, then
-- the dedup key, and the target only where two keys are equal. The target first made
-- every comparison read a second text column (two keys of a queue share their target)
-- and the dedup key after it, at an offset no index tuple can cache; the database's
-- collation made each comparison of two keys a call of strcoll(). Uniqueness is the
-- same: a deterministic collation holds two strings equal only when their bytes are.
-- Sorting by dedup_key now sorts by bytes, as baton.ready's target does.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.10.0'" to load this file. \quit

-- One statement: the old key is dropped before the column changes (no index built twice).
ALTER TABLE baton.deliveries
    DROP CONSTRAINT deliveries_tenant_target_dedup_key_key,
    ALTER COLUMN dedup_key TYPE text COLLATE "C",
    ADD CONSTRAINT deliveries_dedup UNIQUE (tenant, dedup_key, target);
