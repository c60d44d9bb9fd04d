-- The ceiling of an unbatched cycle: two single-row UPDATEs by primary key, each its own
-- transaction (as a claim and a finish are), random keys among :rows rows. Completed
-- cycles = sum(n) / 2 after - before. pgbench -D rows=N.
\set k random(1, :rows)
UPDATE bench_ceiling SET n = n + 1 WHERE id = :k;
\set k random(1, :rows)
UPDATE bench_ceiling SET n = n + 1 WHERE id = :k;
