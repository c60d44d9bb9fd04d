-- A worker of bench/sustained.sh's fixed rate and reap burst: claim up to :batch, finish
-- them with one finish_batch, or rest 5 ms when the queue is empty (as a worker waits
-- for its wake-up). pgbench -D tenant='UUID' -D batch=N.
SELECT count(*) AS n, pg_catalog.quote_literal(pg_catalog.array_agg(id)) AS ids,
       pg_catalog.quote_literal(pg_catalog.array_agg(generation)) AS gens
  FROM baton.claim(:tenant, 'bench', '30 seconds', :batch) \gset
\if :n > 0
SELECT count(*) FROM baton.finish_batch(:tenant, :ids::bigint[], :gens::bigint[]);
\else
\sleep 5 ms
\endif
