-- pg_baton's delivery layout before 0.9.0 as plain SQL: a table with baton.deliveries' columns,
-- defaults and indexes (LIKE ... INCLUDING ALL), without its triggers and foreign key;
-- :rows pending rows of one tenant and target. What the storage engine alone costs for
-- this layout, apart from pg_baton's code (bench/layouts.sh, bench/costs.sh --systems).
-- psql variables: tenant, rows. Expects pg_baton installed (its table is the model).
CREATE EXTENSION IF NOT EXISTS pg_baton;
DROP TABLE IF EXISTS w;
CREATE TABLE w (LIKE baton.deliveries INCLUDING ALL);
-- The claim order and the leases, as indexes of the table itself: what baton.deliveries
-- had before the side tables baton.ready and baton.leases took them.
CREATE INDEX w_claimable ON w (tenant, target, priority DESC, id) WHERE status = 'pending';
CREATE INDEX w_leases ON w (lease_until) WHERE status = 'claimed';
ALTER TABLE w SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
INSERT INTO w (tenant, target, dedup_key)
SELECT :'tenant', 'bench', 'k' || g FROM generate_series(1, :rows) AS g;
VACUUM ANALYZE w;
