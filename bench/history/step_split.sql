-- One full stage step with each call its own transaction (autocommit: three commits per
-- step), as a worker that does the stage's work between start_stage and complete_stage
-- would issue them. Same variables as step.sql.
\set k random(1, :pool)
SELECT r.id AS run, r.generation AS gen FROM baton.runs r
 WHERE r.tenant = :tenant AND r.workflow = 'history_bench'
   AND r.idempotency_key = :prefix::text || '-' || :k::text \gset
SELECT stage_id AS sid FROM baton.transition_stage(:tenant, :run, :gen) \gset
SELECT baton.start_stage(:tenant, :run, :gen, :sid);
SELECT baton.complete_stage(:tenant, :run, :gen, :sid, '{"ok": true}');
