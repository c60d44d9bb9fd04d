-- The benchmark's workflow: one stage, "step", whose declarative next is
-- ["step", "@finish"]. A plain entry always matches, so every transition from a
-- completed "step" enters "step" again (entry_seq + 1) and the run never ends.
-- psql variables: tenant.
SELECT baton.define_workflow('history_bench',
    '{"start": "step", "stages": {"step": {"next": ["step", "@finish"]}}}') AS version;
SELECT baton.create_tenant(:'tenant');
