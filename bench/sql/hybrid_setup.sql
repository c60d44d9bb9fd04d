-- A candidate layout for deliveries, as plain SQL: pg_baton's table keeps every column
-- but only the indexes on what never changes (primary key, dedup key, run), so that a
-- claim's, renew's, finish's or retry's update is HOT (room left on each page); what
-- the partial indexes on changing columns did moves to two side tables:
--   h_ready   the pending rows in claim order (and by run_after, for the oldest due):
--             inserted when a row becomes pending, deleted by the claim that takes it
--   h_leases  one row per lease handed out, in order of expiry, for reap; a finish
--             leaves it, reap deletes it once expired (checking the row's generation)
-- :rows pending rows of one tenant and target. psql variables: tenant, rows. Expects
-- pg_baton installed (its table is the model).
CREATE EXTENSION IF NOT EXISTS pg_baton;
DROP TABLE IF EXISTS h, h_ready, h_leases;
CREATE TABLE h (LIKE baton.deliveries INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS)
    WITH (fillfactor = 50);
ALTER TABLE h ADD PRIMARY KEY (tenant, id), ADD UNIQUE (tenant, target, dedup_key);
CREATE INDEX h_run ON h (tenant, run_id) WHERE run_id IS NOT NULL;
CREATE TABLE h_ready (
    tenant    uuid        NOT NULL,
    target    text        NOT NULL,
    priority  integer     NOT NULL,
    id        bigint      NOT NULL,
    run_after timestamptz NOT NULL
);
CREATE INDEX h_ready_claimable ON h_ready (tenant, target, priority DESC, id);
CREATE INDEX h_ready_due ON h_ready (run_after);
CREATE TABLE h_leases (
    tenant      uuid        NOT NULL,
    id          bigint      NOT NULL,
    generation  bigint      NOT NULL,
    lease_until timestamptz NOT NULL
);
CREATE INDEX h_leases_expiry ON h_leases (lease_until);
ALTER TABLE h SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
ALTER TABLE h_ready SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
ALTER TABLE h_leases SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
WITH i AS (INSERT INTO h (tenant, target, dedup_key)
           SELECT :'tenant', 'bench', 'k' || g FROM generate_series(1, :rows) AS g
           RETURNING tenant, id, target, priority, run_after)
INSERT INTO h_ready (tenant, target, priority, id, run_after)
SELECT tenant, target, priority, id, run_after FROM i;
-- Leases held elsewhere, none near expiry, and enough of them that the planner reads by
-- index: reap, and the cycles here in its place, read the index from its expired end.
INSERT INTO h_leases (tenant, id, generation, lease_until)
SELECT :'tenant', -g, 1, 'infinity' FROM generate_series(1, 100000) AS g;
VACUUM ANALYZE h, h_ready, h_leases;
