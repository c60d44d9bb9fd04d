-- One batched cycle on the split layout (split_setup.sql): claim up to :batch items (one
-- transaction), finish them in one statement (one transaction) and, with -D reap=1,
-- delete as many lease rows, expired first, in the reap's place, so that the figure
-- counts it (bench/costs.sh); with reap=0 that is left to a reaper (bench/run.sh).
WITH r AS (
    DELETE FROM s_ready
     WHERE ctid = ANY (ARRAY(SELECT ctid FROM s_ready
                              WHERE tenant = :tenant AND target = 'bench' AND run_after <= now()
                              ORDER BY priority DESC, id LIMIT :batch FOR UPDATE SKIP LOCKED))
    RETURNING tenant, id),
c AS (
    UPDATE s_state s SET status = 'claimed', generation = s.generation + 1, attempts = s.attempts + 1,
                         lease_until = now() + interval '30 seconds'
      FROM r WHERE s.tenant = r.tenant AND s.id = r.id
    RETURNING s.tenant, s.id, s.generation, s.lease_until),
l AS (INSERT INTO s_leases SELECT tenant, id, generation, lease_until FROM c)
SELECT count(*) AS n, array_agg(c.id) AS ids, array_agg(c.generation) AS gens, max(i.payload::text) AS payload
  FROM c JOIN s_items i ON i.tenant = c.tenant AND i.id = c.id \gset
\if :n > 0
\if :reap
WITH f AS (
    UPDATE s_state s SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
      FROM unnest(:ids::bigint[], :gens::bigint[]) AS u(i, g)
     WHERE s.tenant = :tenant AND s.id = u.i AND s.generation = u.g AND s.status = 'claimed'
    RETURNING s.id)
DELETE FROM s_leases
 WHERE ctid = ANY (ARRAY(SELECT ctid FROM s_leases ORDER BY lease_until LIMIT (SELECT count(*) FROM f) FOR UPDATE SKIP LOCKED));
\else
UPDATE s_state s SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
  FROM unnest(:ids::bigint[], :gens::bigint[]) AS u(i, g)
 WHERE s.tenant = :tenant AND s.id = u.i AND s.generation = u.g AND s.status = 'claimed';
\endif
\endif
