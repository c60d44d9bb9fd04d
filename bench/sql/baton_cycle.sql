-- One unbatched pg_baton cycle: claim one delivery (its own transaction), then finish it
-- (its own transaction). pgbench -D tenant=UUID. The claim is wrapped in an aggregate so
-- that an empty queue gives n = 0 instead of a \gset error; the finish is then skipped.
SELECT count(*) AS n, coalesce(max(id), 0) AS id, coalesce(max(generation), 0) AS generation
  FROM baton.claim(:tenant, 'bench', '30 seconds') \gset
\if :n > 0
SELECT baton.finish(:tenant, :id, :generation);
\endif
