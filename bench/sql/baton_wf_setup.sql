-- pg_baton workflows, fresh: the workflow "bench_loop", one stage "step" whose declarative
-- next is ["step", "@finish"] (a plain string always matches, so each transition enters
-- "step" again). One run per pgbench client, submitted (no approval needed), acquired for
-- a day, and taken through its first step, so that every measured step is the same move:
-- completed current stage -> successor. bench_wf_clients maps pgbench's client_id to
-- its run and generation. Before them, 2,000 finished runs of 10 stages each (inserted
-- directly, through the fence triggers) give the tables the size of a system in use, so
-- that the statistics, and the plans every backend keeps, are those of real tables.
-- psql variables: tenant, clients.
DROP EXTENSION IF EXISTS pg_baton CASCADE;
CREATE EXTENSION pg_baton;
SELECT baton.create_tenant(:'tenant');
SELECT baton.define_workflow('bench_loop',
    '{"start": "step", "stages": {"step": {"next": ["step", "@finish"]}}}');
INSERT INTO baton.runs (tenant, workflow, version, status, inputs_digest, generation, finished_at)
SELECT :'tenant', 'bench_loop', 1, 'completed', encode(sha256('{}'), 'hex'), 1, now()
  FROM generate_series(1, 2000);
INSERT INTO baton.stages (tenant, run_id, stage, entry_seq, is_current, status, attempt, result,
                          transition, started_at, completed_at)
SELECT r.tenant, r.id, 'step', g, g = 10, 'completed', 1, '{"ok": true}',
       CASE WHEN g = 10 THEN '{"finish": "completed"}' ELSE '{"next": "step"}' END::jsonb, now(), now()
  FROM baton.runs r CROSS JOIN generate_series(1, 10) AS g;
DROP TABLE IF EXISTS bench_wf_clients;
CREATE TABLE bench_wf_clients (client integer PRIMARY KEY, run uuid NOT NULL, gen bigint NOT NULL);
SELECT set_config('bench.tenant', :'tenant', false), set_config('bench.clients', :'clients', false) \gset
DO $$
DECLARE
    t uuid := current_setting('bench.tenant');
    r uuid;
    g bigint;
    s bigint;
BEGIN
    FOR c IN 0 .. current_setting('bench.clients')::int - 1 LOOP
        r := baton.submit(t, 'bench_loop', '{}', 'client-' || c);
        g := baton.acquire_run(t, r, 'bench-' || c, '1 day');
        SELECT stage_id INTO s FROM baton.transition_stage(t, r, g);
        PERFORM baton.start_stage(t, r, g, s);
        PERFORM baton.complete_stage(t, r, g, s, '{"ok": true}');
        INSERT INTO bench_wf_clients VALUES (c, r, g);
    END LOOP;
END $$;
VACUUM ANALYZE baton.runs;
VACUUM ANALYZE baton.stages;
