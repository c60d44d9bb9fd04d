-- A workflow version names its decide function by its schema-qualified signature
-- (baton.workflows.decide), found again at each decision. A function dropped and created
-- again with the same signature but another kind or result is refused at the decision
-- (42883), never called, and the run stays where it was. Last of the suite: it adds runs,
-- whose numbers the tests before it show.
\set SHOW_CONTEXT never
\set t 00000000-0000-0000-000d-000000000001
SELECT baton.create_tenant(:'t');
CREATE SCHEMA ds_app;
CREATE FUNCTION ds_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
SELECT baton.define_workflow('ds', '{"start": "a", "decide": "ds_app.decide", "stages": {"a": {"next": ["@finish"]}}}');
SELECT decide FROM baton.workflows WHERE name = 'ds';

-- one run per shape the function is created again with
CREATE FUNCTION ds_run() RETURNS TABLE (r uuid, g bigint) LANGUAGE plpgsql AS $$
DECLARE
    s bigint;
BEGIN
    r := baton.submit('00000000-0000-0000-000d-000000000001', 'ds');
    g := baton.acquire_run('00000000-0000-0000-000d-000000000001', r, 'o', '1 hour');
    SELECT t.stage_id INTO s FROM baton.transition_stage('00000000-0000-0000-000d-000000000001', r, g) t;
    PERFORM baton.start_stage('00000000-0000-0000-000d-000000000001', r, g, s);
    PERFORM baton.complete_stage('00000000-0000-0000-000d-000000000001', r, g, s);
    RETURN NEXT;
END $$;

DROP FUNCTION ds_app.decide(jsonb);
CREATE FUNCTION ds_app.decide(ctx jsonb) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
SELECT r AS r1, g AS g1 FROM ds_run() \gset
SELECT kind FROM baton.transition_stage(:'t', :'r1', :g1);
\echo :LAST_ERROR_SQLSTATE

DROP FUNCTION ds_app.decide(jsonb);
CREATE FUNCTION ds_app.decide(ctx jsonb) RETURNS SETOF jsonb LANGUAGE sql AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
SELECT r AS r2, g AS g2 FROM ds_run() \gset
SELECT kind FROM baton.transition_stage(:'t', :'r2', :g2);
\echo :LAST_ERROR_SQLSTATE

DROP FUNCTION ds_app.decide(jsonb);
CREATE PROCEDURE ds_app.decide(ctx jsonb) LANGUAGE sql AS $$ SELECT 1 $$;
SELECT r AS r3, g AS g3 FROM ds_run() \gset
SELECT kind FROM baton.transition_stage(:'t', :'r3', :g3);
\echo :LAST_ERROR_SQLSTATE

-- nothing moved
SELECT count(*) FILTER (WHERE s.status = 'completed' AND s.is_current) AS stopped_at_their_stage
  FROM unnest(ARRAY[:'r1', :'r2', :'r3']::uuid[]) r(id), baton.run_history(:'t', r.id) s;

-- created again as it was, the runs go on
DROP PROCEDURE ds_app.decide(jsonb);
CREATE FUNCTION ds_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
SELECT kind FROM baton.transition_stage(:'t', :'r1', :g1);
SELECT status FROM baton.run(:'t', :'r1');

DROP FUNCTION ds_run();
