-- One unbatched cycle of the plain SQL queue: claim (its own transaction), then finish
-- (its own transaction). The claim is wrapped in an aggregate so that an empty queue
-- gives n = 0 instead of a \gset error; the finish is then skipped.
WITH c AS (
    UPDATE q SET status = 'claimed', generation = generation + 1,
                 lease_until = now() + interval '30 seconds'
     WHERE id = (SELECT id FROM q
                  WHERE status = 'pending' AND run_after <= now()
                  ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, generation)
SELECT count(*) AS n, coalesce(max(id), 0) AS id, coalesce(max(generation), 0) AS gen FROM c \gset
\if :n > 0
UPDATE q SET status = 'finished' WHERE id = :id AND generation = :gen AND status = 'claimed';
\endif
