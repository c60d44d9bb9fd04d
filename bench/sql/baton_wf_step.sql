-- One stage step of a workflow owner, ONE transaction: transition_stage (decides, saves
-- the decision, inserts the successor), start_stage, complete_stage.
-- pgbench -D tenant=UUID -D loaded=0; each client looks its run up once.
\if :loaded = 0
SELECT run, gen, 1 AS loaded FROM bench_wf_clients WHERE client = :client_id \gset
\endif
BEGIN;
SELECT stage_id AS sid FROM baton.transition_stage(:tenant, :run, :gen) \gset
SELECT baton.start_stage(:tenant, :run, :gen, :sid);
SELECT baton.complete_stage(:tenant, :run, :gen, :sid, '{"ok": true}');
COMMIT;
