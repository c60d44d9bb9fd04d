-- One full stage step of the owner loop, as ONE transaction (the realistic worker):
-- transition to the successor, start it, complete it.
-- pgbench -D variables: tenant; prefix and pool: the run is '<prefix>-<k>' for a random
-- k in 1..pool (its id and generation are read first, outside the transaction, the same
-- way for both kinds of run). The stage id comes back through \gset.
\set k random(1, :pool)
SELECT r.id AS run, r.generation AS gen FROM baton.runs r
 WHERE r.tenant = :tenant AND r.workflow = 'history_bench'
   AND r.idempotency_key = :prefix::text || '-' || :k::text \gset
BEGIN;
SELECT stage_id AS sid FROM baton.transition_stage(:tenant, :run, :gen) \gset
SELECT baton.start_stage(:tenant, :run, :gen, :sid);
SELECT baton.complete_stage(:tenant, :run, :gen, :sid, '{"ok": true}');
COMMIT;
