-- One unbatched cycle of the plain SQL queue: claim (its own transaction), then finish
-- (its own transaction). The claim's row is read as a worker reads it, from RETURNING:
-- \aset assigns nothing when the queue is empty, so id stays 0 and the finish is skipped.
\set id 0
UPDATE q SET status = 'claimed', generation = generation + 1,
             lease_until = now() + interval '30 seconds'
 WHERE id = (SELECT id FROM q
              WHERE status = 'pending' AND run_after <= now()
              ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, generation AS gen \aset
\if :id > 0
UPDATE q SET status = 'finished' WHERE id = :id AND generation = :gen AND status = 'claimed';
\endif
