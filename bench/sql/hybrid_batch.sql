-- One batched cycle on the hybrid layout (hybrid_setup.sql): claim up to :batch rows
-- (one transaction), finish them in one statement (one transaction) and, with
-- -D reap=1, delete as many lease rows, expired first, in the reap's place, so that the
-- figure counts it (bench/costs.sh); with reap=0 that is left to a reaper (bench/run.sh).
WITH r AS (
    DELETE FROM h_ready
     WHERE ctid = ANY (ARRAY(SELECT ctid FROM h_ready
                              WHERE tenant = :tenant AND target = 'bench' AND run_after <= now()
                              ORDER BY priority DESC, id LIMIT :batch FOR UPDATE SKIP LOCKED))
    RETURNING tenant, id),
c AS (
    UPDATE h SET status = 'claimed', generation = h.generation + 1, attempts = h.attempts + 1,
                 lease_until = now() + interval '30 seconds'
      FROM r WHERE h.tenant = r.tenant AND h.id = r.id
    RETURNING h.tenant, h.id, h.generation, h.lease_until, h.payload),
l AS (INSERT INTO h_leases SELECT tenant, id, generation, lease_until FROM c)
SELECT count(*) AS n, array_agg(id) AS ids, array_agg(generation) AS gens FROM c \gset
\if :n > 0
\if :reap
WITH f AS (
    UPDATE h SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
      FROM unnest(:ids::bigint[], :gens::bigint[]) AS u(i, g)
     WHERE h.tenant = :tenant AND h.id = u.i AND h.generation = u.g AND h.status = 'claimed'
    RETURNING h.id)
DELETE FROM h_leases
 WHERE ctid = ANY (ARRAY(SELECT ctid FROM h_leases ORDER BY lease_until LIMIT (SELECT count(*) FROM f) FOR UPDATE SKIP LOCKED));
\else
UPDATE h SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
  FROM unnest(:ids::bigint[], :gens::bigint[]) AS u(i, g)
 WHERE h.tenant = :tenant AND h.id = u.i AND h.generation = u.g AND h.status = 'claimed';
\endif
\endif
