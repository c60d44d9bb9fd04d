-- One unbatched pg_baton cycle: claim one delivery (its own transaction), then finish it
-- (its own transaction). pgbench -D tenant=UUID. The claim's row is read as a worker
-- reads it, with no wrapper around the call: \aset assigns nothing when the queue is
-- empty, so id stays 0 and the finish is skipped.
\set id 0
SELECT id, generation FROM baton.claim(:tenant, 'bench', '30 seconds') \aset
\if :id > 0
SELECT baton.finish(:tenant, :id, :generation);
\endif
