-- One unbatched cycle on pg_baton's layout before 0.9.0 in plain SQL (wide_setup.sql): the claim and
-- the finish write the columns pg_baton's claim and finish write. pgbench -D tenant=UUID.
\set id 0
WITH c AS (
    UPDATE w SET status = 'claimed', generation = w.generation + 1, attempts = w.attempts + 1,
                 lease_until = now() + interval '30 seconds'
     WHERE w.tenant = :tenant
       AND w.id = (SELECT id FROM w
                    WHERE tenant = :tenant AND target = 'bench' AND status = 'pending' AND run_after <= now()
                    ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING w.id, w.generation, w.payload)
SELECT id, generation AS gen FROM c \aset
\if :id > 0
UPDATE w SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
 WHERE tenant = :tenant AND id = :id AND generation = :gen AND status = 'claimed';
\endif
