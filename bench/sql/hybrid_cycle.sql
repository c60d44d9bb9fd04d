-- One unbatched cycle on the hybrid layout (hybrid_setup.sql). The claim deletes the
-- row's ready entry, updates the row (HOT) and records the lease; the finish updates the
-- row (HOT). With -D reap=1, reap's later deletion of the lease row is paid here, one
-- expired-first row a cycle, so that the figure counts it (bench/costs.sh); with reap=0
-- it is left to a reaper, as on a live system (bench/run.sh). pgbench -D tenant=UUID.
\set id 0
WITH r AS (
    DELETE FROM h_ready
     WHERE ctid = (SELECT ctid FROM h_ready
                    WHERE tenant = :tenant AND target = 'bench' AND run_after <= now()
                    ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING tenant, id),
c AS (
    UPDATE h SET status = 'claimed', generation = h.generation + 1, attempts = h.attempts + 1,
                 lease_until = now() + interval '30 seconds'
      FROM r WHERE h.tenant = r.tenant AND h.id = r.id
    RETURNING h.tenant, h.id, h.generation, h.lease_until, h.payload),
l AS (INSERT INTO h_leases SELECT tenant, id, generation, lease_until FROM c)
SELECT id, generation AS gen FROM c \aset
\if :id > 0
UPDATE h SET status = 'finished', result = NULL, lease_until = NULL, settled_at = now()
 WHERE tenant = :tenant AND id = :id AND generation = :gen AND status = 'claimed';
\if :reap
DELETE FROM h_leases WHERE ctid = (SELECT ctid FROM h_leases ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED);
\endif
\endif
