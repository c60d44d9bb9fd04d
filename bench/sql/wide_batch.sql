-- One batched cycle on pg_baton's layout in plain SQL (wide_setup.sql): claim up to
-- :batch rows (one transaction), finish them in one statement (one transaction). The
-- claimed ids as an array: as a subquery (IN) the planner may join the whole table. The
-- finish asks for a lease (a claimed row has one) rather than status = 'claimed': on
-- that predicate the planner reads every claimed row through the lease index per item.
WITH c AS (
    UPDATE w SET status = 'claimed', generation = w.generation + 1, attempts = w.attempts + 1,
                 lease_until = now() + interval '30 seconds'
     WHERE w.tenant = :tenant
       AND w.id = ANY (ARRAY(SELECT id FROM w
                              WHERE tenant = :tenant AND target = 'bench' AND status = 'pending' AND run_after <= now()
                              ORDER BY priority DESC, id LIMIT :batch FOR UPDATE SKIP LOCKED))
    RETURNING w.id, w.generation, w.payload)
SELECT count(*) AS n, array_agg(id) AS ids, array_agg(generation) AS gens FROM c \gset
\if :n > 0
UPDATE w SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
  FROM unnest(:ids::bigint[], :gens::bigint[]) AS u(i, g)
 WHERE w.tenant = :tenant AND w.id = u.i AND w.generation = u.g AND w.lease_until IS NOT NULL;
\endif
