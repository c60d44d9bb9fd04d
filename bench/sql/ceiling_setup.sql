-- The ceiling: a table of :rows counters, fresh. psql variables: rows.
DROP TABLE IF EXISTS bench_ceiling;
CREATE TABLE bench_ceiling (id integer PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
INSERT INTO bench_ceiling (id) SELECT g FROM generate_series(1, :rows) AS g;
VACUUM ANALYZE bench_ceiling;
