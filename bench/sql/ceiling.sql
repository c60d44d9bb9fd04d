-- The ceiling: one single-row UPDATE by primary key per transaction, a random key among
-- :rows rows. Completed items = sum(n) after - before. pgbench -D rows=N.
\set k random(1, :rows)
UPDATE bench_ceiling SET n = n + 1 WHERE id = :k;
