-- Writes the calls a client that holds its items makes: SET baton.notify = off, then one
-- SELECT baton.enqueue_batch(tenant, '<items>') per :batch items, the items a JSON
-- literal (target 'bench', dedup key 'k' || g, payload {"n": g}), as graphile-worker's
-- addJobs and pg-boss' insert get theirs from their Node.js clients. bench/run.sh runs
-- the output with psql -f, timed. psql variables: tenant, rows, batch.
SELECT 'SET baton.notify = off;';
SELECT format('SELECT count(*) FROM baton.enqueue_batch(%L, %L);', :'tenant',
              jsonb_agg(jsonb_build_object('target', 'bench', 'dedup_key', 'k' || g, 'payload', jsonb_build_object('n', g))
                        ORDER BY g))
  FROM generate_series(1, :rows) AS g
 GROUP BY (g - 1) / :batch
 ORDER BY (g - 1) / :batch;
