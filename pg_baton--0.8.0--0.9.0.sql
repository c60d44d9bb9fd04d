-- pg_baton 0.8.0 -> 0.9.0: the side tables of deliveries (docs/internals/architecture.md, "The side
-- tables of deliveries"). The expiry of leases moves to baton.leases, in place of the
-- partial index deliveries_leases; the pending rows in claim order and by due time move
-- to baton.ready, in place of the partial indexes deliveries_claimable and
-- deliveries_due. Both are written by the same code that writes the delivery (the fence
-- trigger, or the direct claim), in the same transaction: claim reads baton.ready, reap
-- reads baton.leases. Purge reads a new index on created_at, in place of the one on
-- settled_at, and the table leaves room on its pages: the updates of a claim, a renew, a
-- finish, a retry and a reap become HOT.
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

-- One row per pending delivery, in claim order: its primary key is what claim scans, a
-- target's rows, highest priority first (rank is the priority negated, so that the key
-- orders them ascending: a primary key cannot mix DESC and ASC), then oldest. A key for
-- pg_repack, for logical replication (a Citus shard move) and, with the tenant in it,
-- for Citus. In order of becoming due, what baton.health's oldest_pending reads. Added
-- when a delivery becomes pending, removed when it stops being one, by the transaction
-- that holds the delivery's row. Not dumped: a restore writes it from the deliveries it
-- loads. The target in byte order ("C"): the key only ever compares it for equality,
-- which no deterministic collation answers otherwise, and a locale's comparison costs
-- several times a memcmp on every step of every descent. row_tid: where enqueue_batch
-- wrote the delivery's row, a hint that spares a claim the look-up by its primary key
-- (checked before use: the row there must be that delivery's, seen by the claim); NULL
-- where it is not known (a row made pending by an update, a trigger, a restore).
CREATE TABLE baton.ready (
    tenant    uuid        NOT NULL,
    target    text        COLLATE "C" NOT NULL,
    rank      bigint      NOT NULL,
    id        bigint      NOT NULL,
    run_after timestamptz NOT NULL,
    row_tid   tid,
    PRIMARY KEY (tenant, target, rank, id)
);
CREATE INDEX ready_due ON baton.ready (run_after);
ALTER TABLE baton.ready SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
REVOKE ALL ON baton.ready FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON baton.ready TO @extowner@;

COMMENT ON TABLE baton.ready IS
    'The pending deliveries in claim order, for claim: a row added when a delivery becomes pending, removed when it stops being one. Not dumped: a restore writes it from the deliveries it loads.';

-- The leases held and the pending rows now (on a distributed install baton.distribute()
-- writes them, once it has distributed the tables).
CREATE FUNCTION baton.fill_side_tables() RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_fill_side_tables';
SELECT baton.fill_side_tables();
DROP FUNCTION baton.fill_side_tables();

DROP INDEX baton.deliveries_leases;
DROP INDEX baton.deliveries_claimable;
DROP INDEX baton.deliveries_due;

-- What purge scans: the deliveries outside runs in order of creation (a delivery settles
-- after it is created, so those settled before a cutoff are among those created before
-- it), in place of deliveries_settled, whose key a finish wrote. created_at never
-- changes: no index of baton.deliveries is on a column a claim, a renew, a finish, a
-- retry or a reap writes any longer.
CREATE INDEX deliveries_created ON baton.deliveries (created_at) WHERE run_id IS NULL;
DROP INDEX baton.deliveries_settled;
-- Room on each page for the next versions of its rows, so that those updates stay on the
-- page and write no index entry (HOT): seven tenths of it, room for a claim's version and
-- a finish's beside each row, as a finish often comes before the claim's old version can
-- be pruned (other workers' snapshots still see it). docs/internals/performance.md, "The layout of
-- deliveries": at 70 a batch of 500 cost half again as much; at 50, with 16 workers
-- claiming 50 at a time, half the finishes were not HOT, at 30 all were. Pages written
-- before keep theirs full until their rows change.
ALTER TABLE baton.deliveries SET (fillfactor = 30);
