-- The floor of bulk enqueue: a plain table with baton.deliveries' columns, defaults and
-- indexes (primary key, dedup key, claimable, leases, run, settled, due), without its
-- triggers and foreign key. Expects pg_baton installed (its table is the model).
DROP TABLE IF EXISTS bench_floor;
CREATE TABLE bench_floor (LIKE baton.deliveries INCLUDING ALL);
