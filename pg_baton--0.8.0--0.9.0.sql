-- pg_baton 0.8.0 -> 0.9.0: the expiry of leases in a narrow table of its own,
-- baton.leases, in place of the partial index deliveries_leases (docs/architecture.md,
-- "Where a lease's expiry is kept"). Every lease a delivery row takes (a claim, a renew,
-- a row written claimed by direct SQL or a restore) adds a row here, written by the same
-- code that writes the delivery; reap reads it in order of expiry and deletes what it has
-- passed. A delivery's write no longer adds an entry to an index on lease_until: the
-- first of the indexes on changing columns to leave baton.deliveries.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.9.0'" to load this file. \quit

-- One row per lease handed out: the delivery, the generation that holds it, and until
-- when. A row whose delivery no longer holds that lease (finished, retried, renewed,
-- reaped, removed) stays until it expires; reap then deletes it. Not dumped: a restore
-- writes it again from the rows of baton.deliveries it loads.
-- Its primary key leads with the expiry: what reap scans, leases in order of expiry, is
-- the one index (a key for pg_repack and for Citus, which needs the tenant in it, too).
CREATE TABLE baton.leases (
    tenant      uuid        NOT NULL,
    id          bigint      NOT NULL,
    generation  bigint      NOT NULL,
    lease_until timestamptz NOT NULL,
    PRIMARY KEY (lease_until, tenant, id, generation)
);
ALTER TABLE baton.leases SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
REVOKE ALL ON baton.leases FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON baton.leases TO @extowner@;

COMMENT ON TABLE baton.leases IS
    'The expiry of the leases pg_baton handed out, for reap: written with every delivery row that takes a lease, deleted by reap once expired. Not dumped: a restore writes it from the deliveries it loads.';

-- The leases held now (on a distributed install baton.distribute() writes them, once it
-- has distributed the table).
CREATE FUNCTION baton.fill_leases() RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_fill_leases';
SELECT baton.fill_leases();
DROP FUNCTION baton.fill_leases();

DROP INDEX baton.deliveries_leases;
