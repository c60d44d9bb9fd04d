-- The floor: the same :rows rows as baton_enqueue.sql (payload {"n": g}) by plain INSERT ... SELECT into
-- bench_floor (floor_setup.sql), :batch rows a statement, one statement per transaction.
-- psql variables: tenant, rows, batch.
SELECT format('INSERT INTO bench_floor (tenant, target, dedup_key, payload) SELECT %L, ''bench'', ''k'' || g, jsonb_build_object(''n'', g) FROM generate_series(%s, %s) AS g',
              :'tenant', lo, least(lo + :batch - 1, :rows))
  FROM generate_series(1, :rows, :batch) AS lo \gexec
