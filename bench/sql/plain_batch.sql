-- One batched cycle of the plain SQL queue: claim up to :batch rows (one transaction),
-- then finish them all in one statement (one transaction). pgbench -D batch=N.
WITH c AS (
    UPDATE q SET status = 'claimed', generation = generation + 1,
                 lease_until = now() + interval '30 seconds'
     WHERE id IN (SELECT id FROM q
                   WHERE status = 'pending' AND run_after <= now()
                   ORDER BY priority DESC, id LIMIT :batch FOR UPDATE SKIP LOCKED)
    RETURNING id, generation)
SELECT count(*) AS n, array_agg(id) AS ids, array_agg(generation) AS gens FROM c \gset
\if :n > 0
UPDATE q SET status = 'finished'
  FROM unnest(:ids::bigint[], :gens::bigint[]) AS u(i, g)
 WHERE q.id = u.i AND q.generation = u.g AND q.status = 'claimed';
\endif
