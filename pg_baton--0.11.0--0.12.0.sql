-- pg_baton 0.11.0 -> 0.12.0: the side tables of deliveries (baton.leases, baton.ready)
-- behind the tenant write fence like every other tenant-owned table: a direct INSERT,
-- UPDATE or DELETE of a row of a tenant that is not active is refused (DU002), and a
-- TRUNCATE, which would write to every tenant at once, is refused (DU007). pg_baton's
-- own writes of their rows go with a delivery row that passed the fence: heap writes,
-- which fire no trigger, or let through at once (docs/architecture.md, "The fence").
-- No row changes.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.12.0'" to load this file. \quit

-- On a distributed install (baton.deliveries a Citus table) the triggers are left to
-- baton.distribute(), which creates them once it has written what the deliveries hold
-- into the side tables (an update from before 0.9.0: rows of fenced tenants too), and
-- Citus gives them to every shard (docs/scale-out.md, "Upgrades").
DO $$
DECLARE
    distributed boolean := false;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p '
                'WHERE p.logicalrelid OPERATOR(pg_catalog.=) ''baton.deliveries''::pg_catalog.regclass)'
           INTO distributed;
    END IF;
    IF NOT distributed THEN
        CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.leases
            FOR EACH ROW EXECUTE FUNCTION baton.fence_row('leases');
        CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.ready
            FOR EACH ROW EXECUTE FUNCTION baton.fence_row('ready');
        CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.leases
            FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
        CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.ready
            FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
    END IF;
END $$;

COMMENT ON TABLE baton.leases IS
    'The expiry of the leases pg_baton handed out, for reap: written with every delivery row that takes a lease, deleted by reap once expired. Not dumped: a restore writes it from the deliveries it loads. The tenant must be writable (DU002).';
COMMENT ON TABLE baton.ready IS
    'The pending deliveries in claim order, for claim: a row added when a delivery becomes pending, removed when it stops being one. Not dumped: a restore writes it from the deliveries it loads. The tenant must be writable (DU002).';
