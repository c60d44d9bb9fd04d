-- pg_baton 0.11.0 -> 0.12.0: the side tables of deliveries (baton.leases, baton.ready)
-- behind the tenant write fence like every other tenant-owned table: a direct INSERT,
-- UPDATE or DELETE of a row of a tenant that is not active is refused (DU002), and a
-- TRUNCATE, which would write to every tenant at once, is refused (DU007). pg_baton's
-- own writes of their rows go with a delivery row that passed the fence: heap writes,
-- which fire no trigger, or let through at once (docs/internals/architecture.md, "The fence").
-- No row changes.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.12.0'" to load this file. \quit

-- The triggers, by a function of the library (no logic in this script), dropped again.
-- On a distributed install (baton.deliveries a Citus table) it leaves them to
-- baton.distribute(), which creates them once it has written what the deliveries hold
-- into the side tables (an update from before 0.9.0: rows of fenced tenants too), and
-- Citus gives them to every shard (docs/guide/scale-out.md, "Upgrades").
CREATE FUNCTION baton.fence_side_tables_for_update() RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_fence_side_tables_for_update';
SELECT baton.fence_side_tables_for_update();
DROP FUNCTION baton.fence_side_tables_for_update();

COMMENT ON TABLE baton.leases IS
    'The expiry of the leases pg_baton handed out, for reap: written with every delivery row that takes a lease, deleted by reap once expired. Not dumped: a restore writes it from the deliveries it loads. The tenant must be writable (DU002).';
COMMENT ON TABLE baton.ready IS
    'The pending deliveries in claim order, for claim: a row added when a delivery becomes pending, removed when it stops being one. Not dumped: a restore writes it from the deliveries it loads. The tenant must be writable (DU002).';
