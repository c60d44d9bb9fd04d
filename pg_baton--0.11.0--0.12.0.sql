-- pg_baton 0.11.0 -> 0.12.0: the side tables of deliveries (baton.leases, baton.ready)
-- behind the tenant write fence like every other tenant-owned table: a direct INSERT,
-- UPDATE or DELETE of a row of a tenant that is not active is refused (DU002), and a
-- TRUNCATE, which would write to every tenant at once, is refused (DU007). pg_baton's
-- own writes of their rows fire no trigger (heap writes that go with a delivery row,
-- which passed the fence), or are let through at once (docs/architecture.md, "The
-- fence"). No row changes. On Citus, baton.distribute() gives the shards the triggers.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.12.0'" to load this file. \quit

CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.leases
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('leases');
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.ready
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('ready');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.leases
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.ready
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();

COMMENT ON TABLE baton.leases IS
    'The expiry of the leases pg_baton handed out, for reap: written with every delivery row that takes a lease, deleted by reap once expired. Not dumped: a restore writes it from the deliveries it loads. The tenant must be writable (DU002).';
COMMENT ON TABLE baton.ready IS
    'The pending deliveries in claim order, for claim: a row added when a delivery becomes pending, removed when it stops being one. Not dumped: a restore writes it from the deliveries it loads. The tenant must be writable (DU002).';
