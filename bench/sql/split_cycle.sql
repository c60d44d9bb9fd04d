-- One unbatched cycle on the split layout (split_setup.sql). The claim deletes the
-- item's ready row, updates its state (HOT), records the lease and reads the item (the
-- payload a claim returns); the finish updates the state (HOT). With -D reap=1,
-- reap's later deletion of the lease row is paid here, one expired-first row a cycle,
-- so that the figure counts it (bench/costs.sh); with reap=0 it is left to a reaper, as
-- on a live system (bench/run.sh). pgbench -D tenant=UUID.
\set id 0
WITH r AS (
    DELETE FROM s_ready
     WHERE ctid = (SELECT ctid FROM s_ready
                    WHERE tenant = :tenant AND target = 'bench' AND run_after <= now()
                    ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING tenant, id),
c AS (
    UPDATE s_state s SET status = 'claimed', generation = s.generation + 1, attempts = s.attempts + 1,
                         lease_until = now() + interval '30 seconds'
      FROM r WHERE s.tenant = r.tenant AND s.id = r.id
    RETURNING s.tenant, s.id, s.generation, s.lease_until),
l AS (INSERT INTO s_leases SELECT tenant, id, generation, lease_until FROM c)
SELECT c.id, c.generation AS gen, i.payload::text AS payload
  FROM c JOIN s_items i ON i.tenant = c.tenant AND i.id = c.id \aset
\if :id > 0
UPDATE s_state SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
 WHERE tenant = :tenant AND id = :id AND generation = :gen AND status = 'claimed';
\if :reap
DELETE FROM s_leases WHERE ctid = (SELECT ctid FROM s_leases ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED);
\endif
\endif
