-- One stage step of a workflow owner in ONE statement, so ONE round trip (and one
-- transaction, the statement's own): transition_stage, then start_stage on the stage
-- it returned, then complete_stage. The subquery is kept apart (OFFSET 0), so each row
-- of transition_stage has its start_stage evaluated before the outer complete_stage;
-- each function's statements see the writes of the one before (a volatile function's
-- statements run on a new snapshot after a command counter increment).
-- pgbench -D tenant=UUID -D loaded=0; each client looks its run up once.
\if :loaded = 0
SELECT run, gen, 1 AS loaded FROM bench_wf_clients WHERE client = :client_id \gset
\endif
SELECT baton.complete_stage(:tenant, :run, :gen, t.stage_id, '{"ok": true}')
  FROM (SELECT t.stage_id, baton.start_stage(:tenant, :run, :gen, t.stage_id)
          FROM baton.transition_stage(:tenant, :run, :gen) AS t OFFSET 0) AS t;
