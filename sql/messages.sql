-- Every refusal names its object: each SQLSTATE each function can raise (docs/internals/contract.md), with
-- the identifier its message must name (tenant, delivery id, run id, stage id, workflow,
-- entry and marker position, target, role, argument, relation). The check is made here
-- in SQL: refusal() runs a statement, catches its error (rolling back whatever it and
-- its preparation did) and says whether the message holds every identifier. A path
-- whose message loses its identifier shows names_it = f, and the count at the end is
-- not zero.
\set SHOW_CONTEXT never
-- Run ids numbered from 1, as setup.sql numbers them (retention.sql made the extension
-- again): the expected output shows the messages that name them.
CREATE SEQUENCE messages_run_ids;
ALTER TABLE baton.runs ALTER COLUMN id
    SET DEFAULT ('00000000-0000-4000-8000-' || lpad(nextval('messages_run_ids')::text, 12, '0'))::uuid;
\set VERBOSITY default
\set t  00000000-0000-0000-00e5-000000000001
\set tf 00000000-0000-0000-00e5-000000000002
\set td 00000000-0000-0000-00e5-000000000003
\set tu 00000000-0000-0000-00e5-0000000000ff
\set ru 00000000-0000-0000-00e5-0000000000aa
\set dg 0000000000000000000000000000000000000000000000000000000000000000

-- ---------------------------------------------------------------------------
-- The helper: identifiers by name, filled into statements and expectations.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE ids (name text PRIMARY KEY, value text NOT NULL);

-- s with every {name} of ids replaced by its value.
CREATE FUNCTION pg_temp.fill(s text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT name, value FROM ids ORDER BY length(name) DESC, name LOOP
        s := replace(s, '{' || r.name || '}', r.value);
    END LOOP;
    RETURN s;
END $$;

-- Runs prep (if any) and then stmt, as role (if any), in a subtransaction that always
-- rolls back; returns the SQLSTATE (code) of the error and whether its message names every
-- identifier of idents ('none' when nothing was refused).
CREATE FUNCTION pg_temp.refusal(stmt text, idents text[], prep text DEFAULT NULL, as_role text DEFAULT NULL,
                                OUT code text, OUT names_it boolean, OUT message text)
LANGUAGE plpgsql AS $$
DECLARE
    filled_stmt text := pg_temp.fill(stmt);
    filled_prep text := pg_temp.fill(prep);
    filled_ids text[] := ARRAY(SELECT pg_temp.fill(i) FROM unnest(idents) i);
BEGIN
    BEGIN
        IF as_role IS NOT NULL THEN
            EXECUTE format('SET ROLE %I', as_role);
        END IF;
        IF filled_prep IS NOT NULL THEN
            EXECUTE filled_prep;
        END IF;
        EXECUTE filled_stmt;
        RAISE EXCEPTION 'no refusal' USING ERRCODE = 'ZZ000';
    EXCEPTION WHEN OTHERS THEN
        code := CASE WHEN SQLSTATE = 'ZZ000' THEN 'none' ELSE SQLSTATE END;
        message := SQLERRM;
        names_it := SQLSTATE <> 'ZZ000' AND cardinality(filled_ids) > 0
                    AND NOT EXISTS (SELECT 1 FROM unnest(filled_ids) i WHERE position(i IN SQLERRM) = 0);
    END;
END $$;

-- ---------------------------------------------------------------------------
-- Fixtures: tenants, deliveries, workflows, runs in each state, step entries, markers.
-- ---------------------------------------------------------------------------
CREATE ROLE msg_worker;
CREATE ROLE msg_producer;
CREATE ROLE msg_team;
SELECT baton.grant_worker('msg_worker');
SELECT baton.grant_producer('msg_producer');
SELECT baton.create_tenant(:'t');
SELECT baton.create_tenant(:'tf');
SELECT baton.create_tenant(:'td');
SELECT baton.bind_target(:'t', 'locked', 'msg_team');

-- Deliveries of t: held (claimed at generation 1), done (finished), locked (a bound
-- target, claimed); of tf: fenced (claimed, then the tenant is fenced).
SELECT baton.enqueue(:'t', 'work', 'm-held') AS d_held \gset
SELECT count(*) FROM baton.claim(:'t', 'work', '1 hour');
SELECT baton.enqueue(:'t', 'work', 'm-done') AS d_done \gset
SELECT count(*) FROM baton.claim(:'t', 'work', '1 hour');
SELECT baton.finish(:'t', :d_done, 1);
SELECT baton.enqueue(:'t', 'locked', 'm-locked') AS d_locked \gset
SELECT count(*) FROM baton.claim(:'t', 'locked', '1 hour');
SELECT baton.enqueue(:'tf', 'work', 'm-fenced') AS d_fenced \gset
SELECT count(*) FROM baton.claim(:'tf', 'work', '1 hour');

-- Workflows: msg_gate (needs approval), msg_open (approved at submit), msg_once (one
-- attempt), msg_when (declarative routing that never matches), msg_decide (a decide
-- function that returns the run's inputs.d), msg_private and msg_gone (decide functions
-- the worker may not run, or that will be dropped), msg_meddle (one that changes its run).
CREATE SCHEMA msg_app;
GRANT USAGE ON SCHEMA msg_app TO PUBLIC;
CREATE FUNCTION msg_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT ctx -> 'run' -> 'inputs' -> 'd' $$;
CREATE FUNCTION msg_app.private_decide(ctx jsonb) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
REVOKE EXECUTE ON FUNCTION msg_app.private_decide(jsonb) FROM PUBLIC;
CREATE FUNCTION msg_app.gone_decide(ctx jsonb) RETURNS jsonb LANGUAGE sql
    AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
-- A decide function that cancels its own run through pg_baton.
CREATE FUNCTION msg_app.meddle(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM baton.cancel('00000000-0000-0000-00e5-000000000001', (ctx -> 'run' ->> 'id')::uuid, 'meddling');
    RETURN '{"finish": "completed"}';
END $$;
SELECT baton.define_workflow('msg_gate', '{"start": "a", "requires_approval": true,
    "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('msg_open', '{"start": "a",
    "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('msg_once', '{"start": "a",
    "stages": {"a": {"next": ["@finish"], "max_attempts": 1}}}');
SELECT baton.define_workflow('msg_when', '{"start": "a",
    "stages": {"a": {"next": [{"to": "b", "when": "$.stage.result.go == true"}]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('msg_decide', '{"start": "a", "decide": "msg_app.decide",
    "stages": {"a": {"next": ["b", "@finish"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('msg_private', '{"start": "a", "decide": "msg_app.private_decide",
    "stages": {"a": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('msg_meddle', '{"start": "a", "decide": "msg_app.meddle",
    "stages": {"a": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('msg_gone', '{"start": "a", "decide": "msg_app.gone_decide",
    "stages": {"a": {"next": ["@finish"]}}}');

-- A run moved on by a worker of generation 1: its first stage started and completed.
CREATE FUNCTION pg_temp.first_stage_done(tenant uuid, wf text, inputs jsonb, key text, OUT run_id uuid, OUT stage_id bigint)
LANGUAGE plpgsql AS $$
BEGIN
    run_id := baton.submit(tenant, wf, inputs, key);
    PERFORM baton.acquire_run(tenant, run_id, 'w', '1 hour');
    SELECT t.stage_id INTO stage_id FROM baton.transition_stage(tenant, run_id, 1) t;
    PERFORM baton.start_stage(tenant, run_id, 1, stage_id);
    PERFORM baton.complete_stage(tenant, run_id, 1, stage_id, '{"go": false}');
END $$;

-- r_sub: submitted, acquired (generation 1) but not approved.
SELECT baton.submit(:'t', 'msg_gate', '{"n": 1}', 'k-sub') AS r_sub \gset
SELECT baton.acquire_run(:'t', :'r_sub', 'w', '1 hour');
-- r_cancelled: submitted, then cancelled.
SELECT baton.submit(:'t', 'msg_gate', '{"n": 2}', 'k-cancelled') AS r_cancelled \gset
SELECT baton.inputs_digest(:'t', :'r_cancelled') AS dg_cancelled \gset
SELECT baton.cancel(:'t', :'r_cancelled', 'not needed');
-- r_approved: approved by alice.
SELECT baton.submit(:'t', 'msg_gate', '{"n": 3}', 'k-approved') AS r_approved \gset
SELECT baton.inputs_digest(:'t', :'r_approved') AS dg_approved \gset
SELECT baton.approve(:'t', :'r_approved', 'alice', :'dg_approved');
-- r_live: running, stage a pending (s_live), held at generation 1.
SELECT baton.submit(:'t', 'msg_open', '{"n": 4}', 'k-live') AS r_live \gset
SELECT baton.acquire_run(:'t', :'r_live', 'w', '1 hour');
SELECT stage_id AS s_live FROM baton.transition_stage(:'t', :'r_live', 1) \gset
-- r_two: stage a completed (s_two_a), stage b current and pending (s_two_b).
SELECT run_id AS r_two, stage_id AS s_two_a FROM pg_temp.first_stage_done(:'t', 'msg_open', '{"n": 5}', 'k-two') \gset
SELECT stage_id AS s_two_b FROM baton.transition_stage(:'t', :'r_two', 1) \gset
-- r_completed_stage: stage a completed, no transition yet (s_cs).
SELECT run_id AS r_cs, stage_id AS s_cs FROM pg_temp.first_stage_done(:'t', 'msg_open', '{"n": 6}', 'k-cs') \gset
-- r_wait: stage a failed, retry in an hour (s_wait).
SELECT baton.submit(:'t', 'msg_open', '{"n": 7}', 'k-wait') AS r_wait \gset
SELECT baton.acquire_run(:'t', :'r_wait', 'w', '1 hour');
SELECT stage_id AS s_wait FROM baton.transition_stage(:'t', :'r_wait', 1) \gset
SELECT baton.start_stage(:'t', :'r_wait', 1, :s_wait);
SELECT baton.fail_stage(:'t', :'r_wait', 1, :s_wait, 'boom', '1 hour') > now() AS waits;
-- r_spent: msg_once, its one attempt failed (s_spent).
SELECT baton.submit(:'t', 'msg_once', '{"n": 8}', 'k-spent') AS r_spent \gset
SELECT baton.acquire_run(:'t', :'r_spent', 'w', '1 hour');
SELECT stage_id AS s_spent FROM baton.transition_stage(:'t', :'r_spent', 1) \gset
SELECT baton.start_stage(:'t', :'r_spent', 1, :s_spent);
SELECT baton.fail_stage(:'t', :'r_spent', 1, :s_spent, 'boom', '1 hour') > now() AS waits;
-- r_done: msg_once completed (s_done).
SELECT run_id AS r_done, stage_id AS s_done FROM pg_temp.first_stage_done(:'t', 'msg_once', '{"n": 9}', 'k-done') \gset
SELECT kind, run_status FROM baton.transition_stage(:'t', :'r_done', 1);
-- Runs whose next transition refuses: routing without a match, a decision outside the
-- allowed set, a malformed decision, a decide function the worker may not run, one
-- that is dropped, one that cancels its own run.
SELECT run_id AS r_when FROM pg_temp.first_stage_done(:'t', 'msg_when', '{}', 'k-when') \gset
SELECT run_id AS r_na FROM pg_temp.first_stage_done(:'t', 'msg_decide', '{"d": {"next": "zzz"}}', 'k-na') \gset
SELECT run_id AS r_mal FROM pg_temp.first_stage_done(:'t', 'msg_decide', '{"d": [1]}', 'k-mal') \gset
SELECT run_id AS r_priv FROM pg_temp.first_stage_done(:'t', 'msg_private', '{}', 'k-priv') \gset
SELECT run_id AS r_gone FROM pg_temp.first_stage_done(:'t', 'msg_gone', '{}', 'k-gone') \gset
SELECT run_id AS r_meddle FROM pg_temp.first_stage_done(:'t', 'msg_meddle', '{}', 'k-meddle') \gset
-- A run of the fenced tenant, submitted before the fence.
SELECT baton.submit(:'tf', 'msg_open', '{}', 'k-f') AS r_f \gset

-- Step entries and markers: e_step (enter_step, marker 0 in progress); on s_live,
-- marker 0 in progress under generation 1 and marker 1 done.
SELECT entry_id AS e_step FROM baton.enter_step(:'t', 'user-1', 'purge', :'dg') \gset
SELECT baton.claim_marker(:'t', :e_step, 0, 'call');
SELECT baton.claim_marker(:'t', :s_live, 0, 'call');
SELECT baton.claim_marker(:'t', :s_live, 1, 'call');
SELECT baton.complete_marker(:'t', :s_live, 1, 'done');

SELECT baton.set_tenant_state(:'tf', 'fenced');
SELECT baton.set_tenant_state(:'td', 'deleted');

INSERT INTO ids VALUES
    ('t', :'t'), ('tf', :'tf'), ('td', :'td'), ('tu', :'tu'), ('ru', :'ru'), ('dg', :'dg'),
    ('d_held', :'d_held'), ('d_done', :'d_done'), ('d_locked', :'d_locked'), ('d_fenced', :'d_fenced'),
    ('r_sub', :'r_sub'), ('r_cancelled', :'r_cancelled'), ('dg_cancelled', :'dg_cancelled'),
    ('r_approved', :'r_approved'), ('dg_approved', :'dg_approved'),
    ('r_live', :'r_live'), ('s_live', :'s_live'), ('r_two', :'r_two'), ('s_two_a', :'s_two_a'),
    ('s_two_b', :'s_two_b'), ('r_cs', :'r_cs'), ('s_cs', :'s_cs'), ('r_wait', :'r_wait'), ('s_wait', :'s_wait'),
    ('r_spent', :'r_spent'), ('s_spent', :'s_spent'), ('r_done', :'r_done'), ('s_done', :'s_done'),
    ('r_when', :'r_when'), ('r_na', :'r_na'), ('r_mal', :'r_mal'), ('r_priv', :'r_priv'), ('r_gone', :'r_gone'),
    ('r_meddle', :'r_meddle'), ('r_f', :'r_f'), ('e_step', :'e_step');

-- ---------------------------------------------------------------------------
-- Every refusal path: the function, the SQLSTATE it must raise, the statement (with
-- an optional preparation and role), and the identifiers its message must name.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE paths (n serial, fn text, want text, stmt text, idents text[], prep text, as_role text);
INSERT INTO paths (fn, want, stmt, idents, prep, as_role) VALUES
-- tenants
('create_tenant', '22004', $$SELECT baton.create_tenant(NULL)$$, '{"\"tenant\""}', NULL, NULL),
('create_tenant', 'DU007', $$SELECT baton.create_tenant('{td}')$$, '{"{td}"}', NULL, NULL),
('set_tenant_state', '22004', $$SELECT baton.set_tenant_state(NULL, 'active')$$, '{"\"tenant\""}', NULL, NULL),
('set_tenant_state', '22004', $$SELECT baton.set_tenant_state('{t}', NULL)$$, '{"\"state\""}', NULL, NULL),
('set_tenant_state', '22023', $$SELECT baton.set_tenant_state('{t}', 'paused')$$, '{"\"state\""}', NULL, NULL),
('set_tenant_state', 'DU002', $$SELECT baton.set_tenant_state('{tu}', 'active')$$, '{"{tu}"}', NULL, NULL),
('set_tenant_state', 'DU007', $$SELECT baton.set_tenant_state('{td}', 'active')$$, '{"{td}"}', NULL, NULL),
('tenant_write_allowed', '22004', $$SELECT baton.tenant_write_allowed(NULL)$$, '{"\"tenant\""}', NULL, NULL),
-- enqueue
('enqueue', '22004', $$SELECT baton.enqueue('{t}', 'work', NULL)$$, '{"\"dedup_key\""}', NULL, NULL),
('enqueue', '22023', $$SELECT baton.enqueue('{t}', '', 'x')$$, '{"\"target\""}', NULL, NULL),
('enqueue', '22023', $$SELECT baton.enqueue('{t}', 'work', 'x', '{}', '{"cause": {"email": "x"}}')$$, '{"\"binding\""}', NULL, NULL),
('enqueue', 'DU002', $$SELECT baton.enqueue('{tf}', 'work', 'x')$$, '{"{tf}"}', NULL, NULL),
('enqueue', 'DU002', $$SELECT baton.enqueue('{tu}', 'work', 'x')$$, '{"{tu}"}', NULL, NULL),
('enqueue', 'DU008', $$SELECT baton.enqueue('{t}', 'work', 'x', run_id => '{ru}')$$, '{"{ru}","{t}"}', NULL, NULL),
('enqueue', 'DU009', $$SELECT baton.enqueue('{t}', 'work', 'm-held', '{"other": 1}')$$, '{"\"m-held\"","\"work\"","{t}"}', NULL, NULL),
-- enqueue_batch
('enqueue_batch', '22004', $$SELECT baton.enqueue_batch('{t}', NULL)$$, '{"\"items\""}', NULL, NULL),
('enqueue_batch', '22023', $$SELECT baton.enqueue_batch('{t}', '{}')$$, '{"\"items\""}', NULL, NULL),
('enqueue_batch', 'DU002', $$SELECT baton.enqueue_batch('{tf}', '[{"target": "work", "dedup_key": "b"}]')$$, '{"{tf}"}', NULL, NULL),
('enqueue_batch', 'DU008', $$SELECT baton.enqueue_batch('{t}', '[{"target": "work", "dedup_key": "b", "run_id": "{ru}"}]')$$, '{"{ru}","{t}"}', NULL, NULL),
('enqueue_batch', 'DU009', $$SELECT baton.enqueue_batch('{t}', '[{"target": "work", "dedup_key": "m-done", "payload": {"x": 1}}]')$$, '{"\"m-done\"","\"work\"","{t}"}', NULL, NULL),
-- claim
('claim', '22004', $$SELECT baton.claim('{t}', 'work', NULL)$$, '{"\"lease\""}', NULL, NULL),
('claim', '22023', $$SELECT baton.claim('{t}', 'work', '0 seconds')$$, '{"\"lease\""}', NULL, NULL),
('claim', '22023', $$SELECT baton.claim('{t}', 'work', '1 hour', 1, '{}')$$, '{"\"expected\""}', NULL, NULL),
('claim', 'DU002', $$SELECT baton.claim('{tu}', 'work', '1 hour')$$, '{"{tu}"}', NULL, NULL),
('claim', 'DU002', $$SELECT baton.claim('{tf}', 'work', '1 hour')$$, '{"{tf}"}', NULL, NULL),
('claim', 'DU005', $$SELECT baton.claim('{t}', 'locked', '1 hour')$$, '{"\"msg_worker\"","\"locked\""}', NULL, 'msg_worker'),
('claim', '42501', $$SELECT baton.claim('{t}', 'work', '1 hour')$$, '{"claim"}', NULL, 'msg_producer'),
-- renew
('renew', '22004', $$SELECT baton.renew('{t}', {d_held}, NULL, '1 hour')$$, '{"\"generation\""}', NULL, NULL),
('renew', '22023', $$SELECT baton.renew('{t}', {d_held}, 1, '-1 hour')$$, '{"\"lease\""}', NULL, NULL),
('renew', 'DU002', $$SELECT baton.renew('{tf}', {d_fenced}, 1, '1 hour')$$, '{"{tf}"}', NULL, NULL),
('renew', 'DU008', $$SELECT baton.renew('{t}', 424242, 1, '1 hour')$$, '{"delivery 424242","{t}"}', NULL, NULL),
('renew', 'DU001', $$SELECT baton.renew('{t}', {d_held}, 7, '1 hour')$$, '{"delivery {d_held} "}', NULL, NULL),
('renew', 'DU007', $$SELECT baton.renew('{t}', {d_done}, 1, '1 hour')$$, '{"delivery {d_done} "}', NULL, NULL),
('renew', 'DU005', $$SELECT baton.renew('{t}', {d_locked}, 1, '1 hour')$$, '{"\"msg_worker\"","\"locked\""}', NULL, 'msg_worker'),
-- finish
('finish', '22004', $$SELECT baton.finish('{t}', NULL, 1)$$, '{"\"id\""}', NULL, NULL),
('finish', '22023', $$SELECT baton.finish('{t}', {d_held}, 1, 'done')$$, '{"\"outcome\""}', NULL, NULL),
('finish', 'DU002', $$SELECT baton.finish('{tf}', {d_fenced}, 1)$$, '{"{tf}"}', NULL, NULL),
('finish', 'DU008', $$SELECT baton.finish('{t}', 424242, 1)$$, '{"delivery 424242","{t}"}', NULL, NULL),
('finish', 'DU001', $$SELECT baton.finish('{t}', {d_held}, 7)$$, '{"delivery {d_held} "}', NULL, NULL),
('finish', 'DU005', $$SELECT baton.finish('{t}', {d_locked}, 1)$$, '{"\"msg_worker\"","\"locked\""}', NULL, 'msg_worker'),
-- finish_batch
('finish_batch', '22004', $$SELECT baton.finish_batch('{t}', NULL, '{1}')$$, '{"\"ids\""}', NULL, NULL),
('finish_batch', '22023', $$SELECT baton.finish_batch('{t}', '{1,2}', '{1}')$$, '{"\"generations\""}', NULL, NULL),
('finish_batch', 'DU002', $$SELECT baton.finish_batch('{tf}', '{{d_fenced}}', '{1}')$$, '{"{tf}"}', NULL, NULL),
('finish_batch', 'DU005', $$SELECT baton.finish_batch('{t}', '{{d_locked}}', '{1}')$$, '{"\"msg_worker\"","\"locked\""}', NULL, 'msg_worker'),
-- retry
('retry', '22004', $$SELECT baton.retry('{t}', {d_held}, 1, NULL)$$, '{"\"error\""}', NULL, NULL),
('retry', '22023', $$SELECT baton.retry('{t}', {d_held}, 1, 'e', '-1 second')$$, '{"\"delay\""}', NULL, NULL),
('retry', 'DU002', $$SELECT baton.retry('{tf}', {d_fenced}, 1, 'e')$$, '{"{tf}"}', NULL, NULL),
('retry', 'DU008', $$SELECT baton.retry('{t}', 424242, 1, 'e')$$, '{"delivery 424242","{t}"}', NULL, NULL),
('retry', 'DU001', $$SELECT baton.retry('{t}', {d_held}, 7, 'e')$$, '{"delivery {d_held} "}', NULL, NULL),
('retry', 'DU005', $$SELECT baton.retry('{t}', {d_locked}, 1, 'e')$$, '{"\"msg_worker\"","\"locked\""}', NULL, 'msg_worker'),
-- reap, purge, delivery
('reap', '22004', $$SELECT baton.reap(NULL)$$, '{"\"max_rows\""}', NULL, NULL),
('reap', '22023', $$SELECT baton.reap(0)$$, '{"\"max_rows\""}', NULL, NULL),
('purge', '22004', $$SELECT baton.purge(NULL)$$, '{"\"older_than\""}', NULL, NULL),
('purge', '22023', $$SELECT baton.purge('-1 day')$$, '{"\"older_than\""}', NULL, NULL),
('delivery', '22004', $$SELECT baton.delivery('{t}', NULL)$$, '{"\"id\""}', NULL, NULL),
('delivery', 'DU008', $$SELECT baton.delivery('{t}', 424242)$$, '{"delivery 424242","{t}"}', NULL, NULL),
-- define_workflow
('define_workflow', '22004', $$SELECT baton.define_workflow('msg_bad', NULL)$$, '{"\"definition\""}', NULL, NULL),
('define_workflow', '22023', $$SELECT baton.define_workflow('msg_bad', '{"start": "nowhere", "stages": {"a": {"next": ["@finish"]}}}')$$, '{"\"msg_bad\""}', NULL, NULL),
('define_workflow', '22023', $$SELECT baton.define_workflow('msg_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "retry_delay": "soon"}}}')$$, '{"\"msg_bad\""}', NULL, NULL),
('define_workflow', '22023', $$SELECT baton.define_workflow('msg_bad', '{"start": "a", "decide": "msg_app.missing", "stages": {"a": {"next": ["@finish"]}}}')$$, '{"\"msg_bad\""}', NULL, NULL),
-- submit
('submit', '22004', $$SELECT baton.submit('{t}', NULL)$$, '{"\"workflow\""}', NULL, NULL),
('submit', '22023', $$SELECT baton.submit('{t}', 'msg_open', '[]')$$, '{"\"inputs\""}', NULL, NULL),
('submit', 'DU002', $$SELECT baton.submit('{tf}', 'msg_open')$$, '{"{tf}"}', NULL, NULL),
('submit', 'DU008', $$SELECT baton.submit('{t}', 'msg_missing')$$, '{"\"msg_missing\""}', NULL, NULL),
('submit', 'DU009', $$SELECT baton.submit('{t}', 'msg_gate', '{"n": 99}', 'k-sub')$$, '{"\"k-sub\"","\"msg_gate\"","{t}"}', NULL, NULL),
-- inputs_digest
('inputs_digest', '22004', $$SELECT baton.inputs_digest('{t}', NULL)$$, '{"\"run_id\""}', NULL, NULL),
('inputs_digest', 'DU008', $$SELECT baton.inputs_digest('{t}', '{ru}')$$, '{"{ru}","{t}"}', NULL, NULL),
-- approve
('approve', '22004', $$SELECT baton.approve('{t}', '{r_sub}', 'alice', NULL)$$, '{"\"digest\""}', NULL, NULL),
('approve', '22023', $$SELECT baton.approve('{t}', '{r_sub}', '', '{dg}')$$, '{"\"approver\""}', NULL, NULL),
('approve', 'DU002', $$SELECT baton.approve('{tf}', '{r_f}', 'alice', '{dg}')$$, '{"{tf}"}', NULL, NULL),
('approve', 'DU008', $$SELECT baton.approve('{t}', '{ru}', 'alice', '{dg}')$$, '{"{ru}","{t}"}', NULL, NULL),
('approve', 'DU006', $$SELECT baton.approve('{t}', '{r_sub}', 'alice', '{dg}')$$, '{"{r_sub}"}', NULL, NULL),
('approve', 'DU007', $$SELECT baton.approve('{t}', '{r_cancelled}', 'alice', '{dg_cancelled}')$$, '{"{r_cancelled}"}', NULL, NULL),
('approve', 'DU007', $$SELECT baton.approve('{t}', '{r_approved}', 'bob', '{dg_approved}')$$, '{"{r_approved}"}', NULL, NULL),
-- cancel
('cancel', '22004', $$SELECT baton.cancel('{t}', '{r_sub}', NULL)$$, '{"\"reason\""}', NULL, NULL),
('cancel', '22023', $$SELECT baton.cancel('{t}', '{r_sub}', repeat('x', 100000))$$, '{"\"reason\""}', NULL, NULL),
('cancel', 'DU002', $$SELECT baton.cancel('{tf}', '{r_f}', 'no')$$, '{"{tf}"}', NULL, NULL),
('cancel', 'DU008', $$SELECT baton.cancel('{t}', '{ru}', 'no')$$, '{"{ru}","{t}"}', NULL, NULL),
('cancel', 'DU007', $$SELECT baton.cancel('{t}', '{r_done}', 'no')$$, '{"{r_done}"}', NULL, NULL),
-- acquire_run
('acquire_run', '22004', $$SELECT baton.acquire_run('{t}', '{r_sub}', NULL, '1 hour')$$, '{"\"owner\""}', NULL, NULL),
('acquire_run', '22023', $$SELECT baton.acquire_run('{t}', '{r_sub}', 'w', '0 seconds')$$, '{"\"lease\""}', NULL, NULL),
('acquire_run', 'DU002', $$SELECT baton.acquire_run('{tf}', '{r_f}', 'w', '1 hour')$$, '{"{tf}"}', NULL, NULL),
('acquire_run', 'DU008', $$SELECT baton.acquire_run('{t}', '{ru}', 'w', '1 hour')$$, '{"{ru}","{t}"}', NULL, NULL),
-- acquire_next_run
('acquire_next_run', '22004', $$SELECT baton.acquire_next_run('{t}', NULL, 'w', '1 hour')$$, '{"\"workflow\""}', NULL, NULL),
('acquire_next_run', '22023', $$SELECT baton.acquire_next_run('{t}', 'msg_open', '', '1 hour')$$, '{"\"owner\""}', NULL, NULL),
('acquire_next_run', 'DU002', $$SELECT baton.acquire_next_run('{tu}', 'msg_open', 'w', '1 hour')$$, '{"{tu}"}', NULL, NULL),
('acquire_next_run', 'DU008', $$SELECT baton.acquire_next_run('{t}', 'msg_missing', 'w', '1 hour')$$, '{"\"msg_missing\""}', NULL, NULL),
-- renew_run
('renew_run', '22004', $$SELECT baton.renew_run('{t}', '{r_live}', NULL, '1 hour')$$, '{"\"generation\""}', NULL, NULL),
('renew_run', '22023', $$SELECT baton.renew_run('{t}', '{r_live}', 1, '0 seconds')$$, '{"\"lease\""}', NULL, NULL),
('renew_run', 'DU002', $$SELECT baton.renew_run('{tf}', '{r_f}', 1, '1 hour')$$, '{"{tf}"}', NULL, NULL),
('renew_run', 'DU008', $$SELECT baton.renew_run('{t}', '{ru}', 1, '1 hour')$$, '{"{ru}","{t}"}', NULL, NULL),
('renew_run', 'DU001', $$SELECT baton.renew_run('{t}', '{r_live}', 7, '1 hour')$$, '{"{r_live}"}', NULL, NULL),
('renew_run', 'DU007', $$SELECT baton.renew_run('{t}', '{r_done}', 1, '1 hour')$$, '{"{r_done}"}', NULL, NULL),
-- release_run
('release_run', '22004', $$SELECT baton.release_run('{t}', '{r_live}', NULL)$$, '{"\"generation\""}', NULL, NULL),
('release_run', 'DU002', $$SELECT baton.release_run('{tf}', '{r_f}', 1)$$, '{"{tf}"}', NULL, NULL),
('release_run', 'DU008', $$SELECT baton.release_run('{t}', '{ru}', 1)$$, '{"{ru}","{t}"}', NULL, NULL),
('release_run', 'DU001', $$SELECT baton.release_run('{t}', '{r_live}', 7)$$, '{"{r_live}"}', NULL, NULL),
-- transition_stage
('transition_stage', '22004', $$SELECT baton.transition_stage('{t}', '{r_live}', NULL)$$, '{"\"generation\""}', NULL, NULL),
('transition_stage', 'DU002', $$SELECT baton.transition_stage('{tf}', '{r_f}', 1)$$, '{"{tf}"}', NULL, NULL),
('transition_stage', 'DU008', $$SELECT baton.transition_stage('{t}', '{ru}', 1)$$, '{"{ru}","{t}"}', NULL, NULL),
('transition_stage', 'DU008', $$SELECT baton.transition_stage('{t}', '{r_live}', 1, 424242)$$, '{"stage 424242","{r_live}","{t}"}', NULL, NULL),
('transition_stage', 'DU001', $$SELECT baton.transition_stage('{t}', '{r_live}', 7)$$, '{"{r_live}"}', NULL, NULL),
('transition_stage', 'DU007', $$SELECT baton.transition_stage('{t}', '{r_sub}', 1)$$, '{"{r_sub}"}', NULL, NULL),
('transition_stage', 'DU003', $$SELECT baton.transition_stage('{t}', '{r_when}', 1)$$, '{"\"a\"","{r_when}"}', NULL, NULL),
('transition_stage', 'DU003', $$SELECT baton.transition_stage('{t}', '{r_na}', 1)$$, '{"\"a\"","{r_na}"}', NULL, NULL),
('transition_stage', 'DU003', $$SELECT baton.transition_stage('{t}', '{r_mal}', 1)$$, '{"\"a\"","{r_mal}"}', NULL, NULL),
('transition_stage', 'DU004', $$SELECT baton.transition_stage('{t}', '{r_live}', 1)$$, '{"{r_live}"}',
    $$UPDATE baton.stages SET is_current = false WHERE tenant = '{t}' AND id = {s_live}$$, NULL),
('transition_stage', 'DU004', $$SELECT baton.transition_stage('{t}', '{r_cs}', 1)$$, '{"{r_cs}"}',
    $$UPDATE baton.stages SET result = '[1]' WHERE tenant = '{t}' AND id = {s_cs}$$, NULL),
('transition_stage', 'DU007', $$SELECT baton.transition_stage('{t}', '{r_meddle}', 1)$$, '{"{r_meddle}"}', NULL, NULL),
('transition_stage', 'DU008', $$SELECT baton.transition_stage('{t}', '{r_live}', 1)$$, '{"workflow \"msg_open\" version 99"}',
    $$UPDATE baton.runs SET version = 99 WHERE tenant = '{t}' AND id = '{r_live}'$$, NULL),
('transition_stage', '42501', $$SELECT baton.transition_stage('{t}', '{r_priv}', 1)$$, '{"\"msg_worker\"","\"msg_app.private_decide\""}', NULL, 'msg_worker'),
('transition_stage', '42883', $$SELECT baton.transition_stage('{t}', '{r_gone}', 1)$$, '{"\"msg_app.gone_decide\""}',
    $$DROP FUNCTION msg_app.gone_decide(jsonb)$$, NULL),
-- start_stage
('start_stage', '22004', $$SELECT baton.start_stage('{t}', '{r_live}', 1, NULL)$$, '{"\"stage_id\""}', NULL, NULL),
('start_stage', 'DU002', $$SELECT baton.start_stage('{tf}', '{r_f}', 1, 1)$$, '{"{tf}"}', NULL, NULL),
('start_stage', 'DU008', $$SELECT baton.start_stage('{t}', '{ru}', 1, 1)$$, '{"{ru}","{t}"}', NULL, NULL),
('start_stage', 'DU008', $$SELECT baton.start_stage('{t}', '{r_live}', 1, 424242)$$, '{"stage 424242","{r_live}","{t}"}', NULL, NULL),
('start_stage', 'DU001', $$SELECT baton.start_stage('{t}', '{r_live}', 7, {s_live})$$, '{"{r_live}"}', NULL, NULL),
('start_stage', 'DU007', $$SELECT baton.start_stage('{t}', '{r_done}', 1, {s_done})$$, '{"{r_done}"}', NULL, NULL),
('start_stage', 'DU007', $$SELECT baton.start_stage('{t}', '{r_two}', 1, {s_two_a})$$, '{"stage {s_two_a} ","{r_two}"}', NULL, NULL),
('start_stage', 'DU007', $$SELECT baton.start_stage('{t}', '{r_cs}', 1, {s_cs})$$, '{"stage {s_cs} ","{r_cs}"}', NULL, NULL),
('start_stage', 'DU007', $$SELECT baton.start_stage('{t}', '{r_wait}', 1, {s_wait})$$, '{"stage {s_wait} ","{r_wait}"}', NULL, NULL),
('start_stage', 'DU007', $$SELECT baton.start_stage('{t}', '{r_spent}', 1, {s_spent})$$, '{"stage {s_spent} ","{r_spent}"}', NULL, NULL),
-- complete_stage
('complete_stage', '22004', $$SELECT baton.complete_stage('{t}', '{r_live}', 1, {s_live}, NULL)$$, '{"\"result\""}', NULL, NULL),
('complete_stage', '22023', $$SELECT baton.complete_stage('{t}', '{r_live}', 1, {s_live}, '[]')$$, '{"\"result\""}', NULL, NULL),
('complete_stage', 'DU002', $$SELECT baton.complete_stage('{tf}', '{r_f}', 1, 1)$$, '{"{tf}"}', NULL, NULL),
('complete_stage', 'DU008', $$SELECT baton.complete_stage('{t}', '{r_live}', 1, 424242)$$, '{"stage 424242","{r_live}","{t}"}', NULL, NULL),
('complete_stage', 'DU001', $$SELECT baton.complete_stage('{t}', '{r_live}', 7, {s_live})$$, '{"{r_live}"}', NULL, NULL),
('complete_stage', 'DU007', $$SELECT baton.complete_stage('{t}', '{r_live}', 1, {s_live})$$, '{"stage {s_live} ","{r_live}"}', NULL, NULL),
('complete_stage', 'DU007', $$SELECT baton.complete_stage('{t}', '{r_cs}', 1, {s_cs}, '{"other": 1}')$$, '{"stage {s_cs} ","{r_cs}"}', NULL, NULL),
('complete_stage', 'DU007', $$SELECT baton.complete_stage('{t}', '{r_two}', 1, {s_two_b})$$, '{"stage {s_two_b} ","{r_two}"}', NULL, NULL),
-- fail_stage
('fail_stage', '22004', $$SELECT baton.fail_stage('{t}', '{r_live}', 1, {s_live}, NULL)$$, '{"\"error\""}', NULL, NULL),
('fail_stage', '22023', $$SELECT baton.fail_stage('{t}', '{r_live}', 1, {s_live}, 'e', '-1 hour')$$, '{"\"retry_in\""}', NULL, NULL),
('fail_stage', 'DU002', $$SELECT baton.fail_stage('{tf}', '{r_f}', 1, 1, 'e')$$, '{"{tf}"}', NULL, NULL),
('fail_stage', 'DU008', $$SELECT baton.fail_stage('{t}', '{r_live}', 1, 424242, 'e')$$, '{"stage 424242","{r_live}","{t}"}', NULL, NULL),
('fail_stage', 'DU001', $$SELECT baton.fail_stage('{t}', '{r_live}', 7, {s_live}, 'e')$$, '{"{r_live}"}', NULL, NULL),
('fail_stage', 'DU007', $$SELECT baton.fail_stage('{t}', '{r_live}', 1, {s_live}, 'e')$$, '{"stage {s_live} ","{r_live}"}', NULL, NULL),
('fail_stage', 'DU007', $$SELECT baton.fail_stage('{t}', '{r_done}', 1, {s_done}, 'e')$$, '{"{r_done}"}', NULL, NULL),
-- run, run_history
('run', '22004', $$SELECT baton.run('{t}', NULL)$$, '{"\"run_id\""}', NULL, NULL),
('run', 'DU008', $$SELECT baton.run('{t}', '{ru}')$$, '{"{ru}","{t}"}', NULL, NULL),
('run_history', '22004', $$SELECT baton.run_history(NULL, '{ru}')$$, '{"\"tenant\""}', NULL, NULL),
('run_history', 'DU008', $$SELECT baton.run_history('{t}', '{ru}')$$, '{"{ru}","{t}"}', NULL, NULL),
('run_history', 'DU004', $$SELECT baton.run_history('{t}', '{r_two}')$$, '{"{r_two}"}',
    $$UPDATE baton.stages SET predecessor_id = NULL WHERE tenant = '{t}' AND id = {s_two_b}$$, NULL),
-- enter_step
('enter_step', '22004', $$SELECT baton.enter_step('{t}', NULL, 'purge', '{dg}')$$, '{"\"subject\""}', NULL, NULL),
('enter_step', '22023', $$SELECT baton.enter_step('{t}', 'user-1', 'purge', '')$$, '{"\"digest\""}', NULL, NULL),
('enter_step', 'DU002', $$SELECT baton.enter_step('{tf}', 'user-1', 'purge', '{dg}')$$, '{"{tf}"}', NULL, NULL),
-- claim_marker
('claim_marker', '22004', $$SELECT baton.claim_marker('{t}', {e_step}, NULL, 'call')$$, '{"\"position\""}', NULL, NULL),
('claim_marker', '22023', $$SELECT baton.claim_marker('{t}', {e_step}, -1, 'call')$$, '{"\"position\""}', NULL, NULL),
('claim_marker', 'DU002', $$SELECT baton.claim_marker('{tf}', {e_step}, 0, 'call')$$, '{"{tf}"}', NULL, NULL),
('claim_marker', 'DU008', $$SELECT baton.claim_marker('{t}', 424242, 0, 'call')$$, '{"entry 424242","{t}"}', NULL, NULL),
-- complete_marker
('complete_marker', '22004', $$SELECT baton.complete_marker('{t}', {e_step}, 0, NULL)$$, '{"\"state\""}', NULL, NULL),
('complete_marker', '22023', $$SELECT baton.complete_marker('{t}', {e_step}, 0, 'retry')$$, '{"\"state\""}', NULL, NULL),
('complete_marker', 'DU002', $$SELECT baton.complete_marker('{tf}', {e_step}, 0, 'done')$$, '{"{tf}"}', NULL, NULL),
-- marker, markers_in_doubt
('marker', '22004', $$SELECT baton.marker('{t}', NULL, 0)$$, '{"\"entry_id\""}', NULL, NULL),
('marker', '22023', $$SELECT baton.marker('{t}', {e_step}, -1)$$, '{"\"position\""}', NULL, NULL),
('markers_in_doubt', '22004', $$SELECT baton.markers_in_doubt('{t}', NULL)$$, '{"\"run_id\""}', NULL, NULL),
('markers_in_doubt', 'DU008', $$SELECT baton.markers_in_doubt('{t}', '{ru}')$$, '{"{ru}","{t}"}', NULL, NULL),
-- resolve_marker
('resolve_marker', '22004', $$SELECT baton.resolve_marker('{t}', {s_live}, 0, 1, NULL)$$, '{"\"outcome\""}', NULL, NULL),
('resolve_marker', '22023', $$SELECT baton.resolve_marker('{t}', {s_live}, 0, 1, 'maybe')$$, '{"\"outcome\""}', NULL, NULL),
('resolve_marker', 'DU002', $$SELECT baton.resolve_marker('{tf}', {s_live}, 0, 1, 'done')$$, '{"{tf}"}', NULL, NULL),
('resolve_marker', 'DU008', $$SELECT baton.resolve_marker('{t}', {s_live}, 9, 1, 'done')$$, '{"position 9 of entry {s_live}","{t}"}', NULL, NULL),
('resolve_marker', 'DU001', $$SELECT baton.resolve_marker('{t}', {s_live}, 0, 7, 'done')$$, '{"{r_live}"}', NULL, NULL),
('resolve_marker', 'DU007', $$SELECT baton.resolve_marker('{t}', {s_live}, 0, 1, 'done')$$, '{"position 0 of entry {s_live}"}', NULL, NULL),
('resolve_marker', 'DU007', $$SELECT baton.resolve_marker('{t}', {s_live}, 1, 1, 'done')$$, '{"position 1 of entry {s_live}"}', NULL, NULL),
('resolve_marker', 'DU007', $$SELECT baton.resolve_marker('{t}', {e_step}, 0, 1, 'done')$$, '{"position 0 of entry {e_step}"}', NULL, NULL),
-- authorization
('bind_target', '22004', $$SELECT baton.bind_target('{t}', 'work', NULL)$$, '{"\"role\""}', NULL, NULL),
('bind_target', '22023', $$SELECT baton.bind_target('{t}', 'work', 0::oid::regrole)$$, '{"\"role\""}', NULL, NULL),
('bind_target', 'DU002', $$SELECT baton.bind_target('{tf}', 'work', 'msg_team')$$, '{"{tf}"}', NULL, NULL),
('bind_target', '42501', $$SELECT baton.bind_target('{t}', 'work', 'msg_team')$$, '{"bind_target"}', NULL, 'msg_worker'),
('grant_producer', '22004', $$SELECT baton.grant_producer(NULL)$$, '{"\"role\""}', NULL, NULL),
('grant_worker', '22023', $$SELECT baton.grant_worker(0::oid::regrole)$$, '{"\"role\""}', NULL, NULL),
('grant_admin', '22004', $$SELECT baton.grant_admin(NULL)$$, '{"\"role\""}', NULL, NULL),
('tables', '42501', $$SELECT count(*) FROM baton.deliveries$$, '{"deliveries"}', NULL, 'msg_worker'),
-- the fence trigger, the row rules, the truncate and tenant guards (direct SQL)
('fence_row', 'DU002', $$INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES ('{tf}', 'work', 'direct')$$, '{"{tf}"}', NULL, NULL),
('fence_row', 'DU002', $$UPDATE baton.runs SET inputs = '{}' WHERE tenant = '{tf}'$$, '{"{tf}"}', NULL, NULL),
('fence_row', '22004', $$INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (NULL, 'work', 'direct')$$, '{"\"tenant\"","\"deliveries\""}', NULL, NULL),
('fence_row', '23514', $$UPDATE baton.deliveries SET status = 'done' WHERE id = {d_held}$$, '{"delivery {d_held} ","\"status\"","\"done\"","\"deliveries\""}', NULL, NULL),
('fence_row', '23514', $$UPDATE baton.deliveries SET max_attempts = 0 WHERE id = {d_held}$$, '{"delivery {d_held} ","\"max_attempts\"","\"deliveries\""}', NULL, NULL),
('refuse_truncate', 'DU007', $$TRUNCATE baton.markers$$, '{"\"markers\""}', NULL, NULL),
('refuse_truncate', 'DU007', $$TRUNCATE baton.target_bindings$$, '{"\"target_bindings\""}', NULL, NULL),
('tenant_state_guard', 'DU007', $$DELETE FROM baton.tenants WHERE tenant = '{t}'$$, '{"{t}"}', NULL, NULL),
('tenant_state_guard', 'DU007', $$UPDATE baton.tenants SET tenant = '{tu}' WHERE tenant = '{t}'$$, '{"{t}","{tu}"}', NULL, NULL),
('tenant_state_guard', 'DU007', $$UPDATE baton.tenants SET state = 'active' WHERE tenant = '{td}'$$, '{"{td}"}', NULL, NULL),
('tenant_state_guard', 'DU007', $$TRUNCATE baton.tenants$$, '{"\"tenants\""}', NULL, NULL);

-- ---------------------------------------------------------------------------
-- Each path: the SQLSTATE it raised, whether that is the one it must raise, whether the
-- message names every identifier, and the message.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE outcomes AS
SELECT p.n, p.fn, p.want, r.code AS sqlstate, r.code = p.want AS right_code, r.names_it, r.message
  FROM paths p, LATERAL pg_temp.refusal(p.stmt, p.idents, p.prep, p.as_role) r;
SELECT n, fn, sqlstate, right_code, names_it, message FROM outcomes ORDER BY n;

-- Paths that raised another SQLSTATE, or whose message does not name its object: none.
SELECT count(*) AS paths, count(*) FILTER (WHERE NOT right_code OR NOT names_it) AS failing FROM outcomes;
-- Every SQLSTATE of the contract is among them.
SELECT code, EXISTS (SELECT 1 FROM outcomes o WHERE o.sqlstate = code AND o.names_it) AS covered
  FROM unnest('{DU001,DU002,DU003,DU004,DU005,DU006,DU007,DU008,DU009,22004,22023,42501}'::text[]) code;
-- Nothing was left changed: the refusals rolled back (the held delivery is still
-- claimed at generation 1, the dropped decide function is back, tenant t is active).
SELECT status, generation, max_attempts FROM baton.delivery(:'t', :d_held);
SELECT count(*) FROM pg_proc WHERE proname = 'gone_decide';
SELECT baton.tenant_write_allowed(:'t');

RESET ROLE;
DROP TABLE outcomes, paths, ids;
DROP SCHEMA msg_app CASCADE;
DROP OWNED BY msg_worker, msg_producer, msg_team;
DROP ROLE msg_worker, msg_producer, msg_team;
