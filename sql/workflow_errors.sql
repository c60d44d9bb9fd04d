-- Bad input to every workflow function: each refusal with its SQLSTATE (and, for
-- definitions, the detail naming the fault), and nothing changed by it: the digest of
-- every workflow row named wfe_%, and every run and stage of this file's tenants, stays
-- the same.
\set SHOW_CONTEXT never
\set VERBOSITY default
\set a  00000000-0000-0000-0008-000000000001
\set b  00000000-0000-0000-0008-000000000002
\set c  00000000-0000-0000-0008-000000000003
\set tu 00000000-0000-0000-0008-0000000000ff
\set ru 00000000-0000-0000-0008-0000000000aa
\set ok '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}'
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');
SELECT baton.create_tenant(:'c');

CREATE SCHEMA wfe_app;
CREATE FUNCTION wfe_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE sql
  AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
CREATE FUNCTION wfe_app.user_deletion_decide(ctx jsonb) RETURNS jsonb LANGUAGE sql
  AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
CREATE FUNCTION wfe_app.takes_text(ctx text) RETURNS jsonb LANGUAGE sql
  AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
CREATE FUNCTION wfe_app.returns_text(ctx jsonb) RETURNS text LANGUAGE sql
  AS $$ SELECT '{"finish": "completed"}' $$;
CREATE FUNCTION wfe_app.returns_set(ctx jsonb) RETURNS SETOF jsonb LANGUAGE sql
  AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
CREATE AGGREGATE wfe_app.agg(jsonb) (sfunc = pg_catalog.jsonb_concat, stype = jsonb);

-- Two workflows: wfe_flow (first -> second -> @finish, approved at submit) and
-- wfe_gated (one stage, requires approval).
SELECT baton.define_workflow('wfe_flow',
  '{"start": "first", "stages": {"first": {"next": ["second"]}, "second": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('wfe_gated',
  '{"start": "only", "requires_approval": true, "stages": {"only": {"next": ["@finish"]}}}');

-- Tenant a: r1 (held by w1, stage first running), r2 (held by w2, stage first pending),
-- r3 (approved, never acquired: generation 0, acquire_next_run would take it), rr
-- (acquired, then released: generation 2, no owner), rg (submitted, waits for approval).
SELECT baton.submit(:'a', 'wfe_flow', '{"n": 1}', 'r1') AS r1 \gset
SELECT baton.acquire_run(:'a', :'r1', 'w1', '1 hour') AS g1 \gset
SELECT stage_id AS s1 FROM baton.transition_stage(:'a', :'r1', :g1) \gset
SELECT baton.start_stage(:'a', :'r1', :g1, :s1);
SELECT baton.submit(:'a', 'wfe_flow', '{"n": 2}', 'r2') AS r2 \gset
SELECT baton.acquire_run(:'a', :'r2', 'w2', '1 hour') AS g2 \gset
SELECT stage_id AS s2 FROM baton.transition_stage(:'a', :'r2', :g2) \gset
SELECT baton.submit(:'a', 'wfe_flow', '{"n": 3}', 'r3') AS r3 \gset
SELECT baton.submit(:'a', 'wfe_flow', '{"n": 8}', 'rr') AS rr \gset
SELECT baton.acquire_run(:'a', :'rr', 'wr', '1 hour') AS gr \gset
SELECT baton.release_run(:'a', :'rr', :gr);
SELECT baton.submit(:'a', 'wfe_gated', '{"n": 4}', 'rg') AS rg \gset
SELECT baton.inputs_digest(:'a', :'rg') AS dg \gset
-- Tenant c: rc (held, stage first running), then c is fenced.
SELECT baton.submit(:'c', 'wfe_flow', '{"n": 5}', 'rc') AS rc \gset
SELECT baton.acquire_run(:'c', :'rc', 'wc', '1 hour') AS gc \gset
SELECT stage_id AS sc FROM baton.transition_stage(:'c', :'rc', :gc) \gset
SELECT baton.start_stage(:'c', :'rc', :gc, :sc);
SELECT baton.set_tenant_state(:'c', 'fenced');

SELECT r.tenant = :'a' AS in_a, r.idempotency_key, r.workflow, r.status, r.owner, r.generation,
       r.lease_until > now() AS leased, r.approved_by
  FROM baton.runs r WHERE r.tenant IN (:'a', :'b', :'c') ORDER BY r.idempotency_key;
SELECT r.idempotency_key, s.stage, s.entry_seq, s.status, s.attempt, s.is_current
  FROM baton.stages s JOIN baton.runs r ON r.tenant = s.tenant AND r.id = s.run_id
 WHERE s.tenant IN (:'a', :'b', :'c') ORDER BY r.idempotency_key;

-- Everything this file can change, digested.
CREATE TEMP VIEW wfe_digest AS
SELECT (SELECT count(*) FROM baton.workflows w WHERE w.name LIKE 'wfe\_%') AS workflows,
       (SELECT count(*) FROM baton.runs r WHERE r.tenant IN ('00000000-0000-0000-0008-000000000001',
          '00000000-0000-0000-0008-000000000002', '00000000-0000-0000-0008-000000000003')) AS runs,
       (SELECT count(*) FROM baton.stages s WHERE s.tenant IN ('00000000-0000-0000-0008-000000000001',
          '00000000-0000-0000-0008-000000000002', '00000000-0000-0000-0008-000000000003')) AS stages,
       md5(concat_ws('|',
         (SELECT string_agg(w::text, ',' ORDER BY w.name, w.version) FROM baton.workflows w
           WHERE w.name LIKE 'wfe\_%'),
         (SELECT string_agg(r::text, ',' ORDER BY r.tenant, r.id) FROM baton.runs r
           WHERE r.tenant IN ('00000000-0000-0000-0008-000000000001',
             '00000000-0000-0000-0008-000000000002', '00000000-0000-0000-0008-000000000003')),
         (SELECT string_agg(s::text, ',' ORDER BY s.tenant, s.id) FROM baton.stages s
           WHERE s.tenant IN ('00000000-0000-0000-0008-000000000001',
             '00000000-0000-0000-0008-000000000002', '00000000-0000-0000-0008-000000000003')))) AS h;
SELECT workflows, runs, stages FROM wfe_digest;
SELECT h AS h0 FROM wfe_digest \gset

-- ===========================================================================
-- define_workflow
-- ===========================================================================
-- NULLs: 22004, before any check of the other argument's value.
SELECT baton.define_workflow(NULL, :'ok');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow(NULL, '[]');
\echo :LAST_ERROR_SQLSTATE
-- The name: 1 to 200 characters.
SELECT baton.define_workflow('', :'ok');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_' || repeat('n', 197), :'ok');
\echo :LAST_ERROR_SQLSTATE
-- A bad name is reported before a bad definition.
SELECT baton.define_workflow('', '[]');
\echo :LAST_ERROR_SQLSTATE
-- The definition is an object.
SELECT baton.define_workflow('wfe_bad', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '"x"');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', 'null');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{}');
\echo :LAST_ERROR_SQLSTATE
-- start
SELECT baton.define_workflow('wfe_bad', '{"stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "b", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "@finish", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": 1, "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
-- stages
SELECT baton.define_workflow('wfe_bad', '{"start": "a"}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": [{"a": {"next": ["@finish"]}}]}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {}}');
\echo :LAST_ERROR_SQLSTATE
-- Stage names: ^[a-z][a-z0-9_]{0,62}$
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"]}, "Gate": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"]}, "1gate": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', format('{"start": "a", "stages": {"a": {"next": ["@finish"]}, "%s": {"next": ["@finish"]}}}', 'g' || repeat('x', 63))::jsonb);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"]}, "gate-user": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"]}, "": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"]}, "@finish": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
-- A stage is an object with next, max_attempts and retry_delay only.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": ["@finish"]}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": "@finish"}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "timeout": 5}}}');
\echo :LAST_ERROR_SQLSTATE
-- next
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": []}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": "@finish"}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["a", "b"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@end"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": [1]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": [{"when": "$.stage.result.ok == true"}]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": [{"to": "@finish", "if": "true"}]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": [{"to": "b"}]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": [{"to": "@finish", "when": ""}]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": [{"to": "@finish", "when": true}]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": [{"to": "@finish", "when": "$.stage like_regex \"a\" flag \"z\""}]}}}');
\echo :LAST_ERROR_SQLSTATE
-- max_attempts: an integer from 1 to 1000.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "max_attempts": 0}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "max_attempts": 1001}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "max_attempts": 2.5}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "max_attempts": "3"}}}');
\echo :LAST_ERROR_SQLSTATE
-- retry_delay: a string that reads as an interval of zero to 365 days.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "retry_delay": "soon"}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "retry_delay": "-1 second"}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "retry_delay": "400 days"}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "stages": {"a": {"next": ["@finish"], "retry_delay": 30}}}');
\echo :LAST_ERROR_SQLSTATE
-- requires_approval: a boolean.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "requires_approval": "yes", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
-- decide: a string naming a function (jsonb) RETURNS jsonb, not a set.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": 42, "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": null, "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "wfe_app.nope", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "wfe_app.takes_text", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "wfe_app.returns_text", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "wfe_app.returns_set", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
-- an aggregate (jsonb) RETURNS jsonb is no function to call with a context
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "wfe_app.agg", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.define_workflow('wfe_bad', jsonb_build_object('start', 'a', 'decide', 'wfe_app.' || repeat('d', 193), 'stages', '{"a": {"next": ["@finish"]}}'::jsonb));
\echo :LAST_ERROR_SQLSTATE
-- decide text is a name, never SQL.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "wfe_app.decide''); drop table baton.runs; --", "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
-- With decide, routing is the function's job: no next entry carries a when.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "decide": "wfe_app.decide", "stages": {"a": {"next": [{"to": "@finish", "when": "true"}]}}}');
\echo :LAST_ERROR_SQLSTATE
-- Unknown top-level key.
SELECT baton.define_workflow('wfe_bad', '{"start": "a", "version": 2, "stages": {"a": {"next": ["@finish"]}}}');
\echo :LAST_ERROR_SQLSTATE
-- Larger than baton.max_payload_bytes.
SET baton.max_payload_bytes = 1024;
SELECT baton.define_workflow('wfe_bad', jsonb_build_object('start', 'a', 'stages',
  (SELECT jsonb_object_agg('s' || i, '{"next": ["@finish"]}'::jsonb) || '{"a": {"next": ["@finish"]}}'
     FROM generate_series(1, 100) i)));
\echo :LAST_ERROR_SQLSTATE
RESET baton.max_payload_bytes;
-- No workflow row for any of those.
SELECT count(*) AS wfe_bad_rows FROM baton.workflows WHERE name = 'wfe_bad' OR name = '' OR name LIKE 'wfe\_nnn%';
SELECT workflows, runs, stages, h = :'h0' AS nothing_changed FROM wfe_digest;

-- The contract's example definition is accepted (with its decide function in wfe_app),
-- and an identical one returns the same version.
\set example '{ "start": "gate_user", "requires_approval": true, "decide": "wfe_app.user_deletion_decide", "stages": { "gate_user": { "next": ["purge_db"] }, "purge_db": { "next": ["purge_agents", "purge_db", "@finish"], "max_attempts": 5, "retry_delay": "30 seconds" }, "purge_agents": { "next": ["purge_db", "@finish"] } } }'
SELECT baton.define_workflow('wfe_example', :'example');
SELECT baton.define_workflow('wfe_example', :'example');
-- With decide, an entry {"to": ...} without when is a plain destination; limits at
-- their edges are accepted (63-character stage name, max_attempts 1 and 1000,
-- retry_delay 0 and 365 days).
SELECT baton.define_workflow('wfe_edges', format('{"start": "%s", "decide": "wfe_app.decide", "stages": {"%s": {"next": [{"to": "b"}], "max_attempts": 1, "retry_delay": "0 seconds"}, "b": {"next": ["@finish"], "max_attempts": 1000, "retry_delay": "365 days"}}}', 'g' || repeat('x', 62), 'g' || repeat('x', 62))::jsonb);
-- A refused definition under an existing name adds no version.
SELECT baton.define_workflow('wfe_example', '{"start": "gate_user", "stages": {"gate_user": {"next": []}}}');
\echo :LAST_ERROR_SQLSTATE
SELECT name, version, decide IS NOT NULL AS has_decide FROM baton.workflows
 WHERE name IN ('wfe_example', 'wfe_edges') ORDER BY name, version;
SELECT h AS h0 FROM wfe_digest \gset

-- ===========================================================================
-- submit
-- ===========================================================================
SELECT baton.submit(NULL, 'wfe_flow');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', 'wfe_flow', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', 'wfe_flow', inputs => NULL, idempotency_key => 'k');
\echo :LAST_ERROR_SQLSTATE
-- NULL before a bad value of another argument
SELECT baton.submit(NULL, 'wfe_flow', '[]', '');
\echo :LAST_ERROR_SQLSTATE
-- inputs: a JSON object within baton.max_payload_bytes
SELECT baton.submit(:'a', 'wfe_flow', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', 'wfe_flow', '"x"');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', 'wfe_flow', 'null');
\echo :LAST_ERROR_SQLSTATE
SET baton.max_payload_bytes = 1024;
SELECT baton.submit(:'a', 'wfe_flow', jsonb_build_object('x', repeat('a', 2000)));
\echo :LAST_ERROR_SQLSTATE
RESET baton.max_payload_bytes;
-- idempotency_key: NULL (none) or 1 to 200 characters
SELECT baton.submit(:'a', 'wfe_flow', '{}', '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', 'wfe_flow', '{}', repeat('k', 201));
\echo :LAST_ERROR_SQLSTATE
-- workflow: a name of 1 to 200 characters
SELECT baton.submit(:'a', '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', 'wfe_' || repeat('n', 197));
\echo :LAST_ERROR_SQLSTATE
-- unknown workflow, unknown or fenced tenant
SELECT baton.submit(:'a', 'wfe_none');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'tu', 'wfe_flow');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'c', 'wfe_flow');
\echo :LAST_ERROR_SQLSTATE
-- order: values before the fence, the fence before the workflow's existence
SELECT baton.submit(:'tu', 'wfe_none', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'tu', 'wfe_none', '{}', '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'tu', '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'tu', 'wfe_none');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'c', 'wfe_none');
\echo :LAST_ERROR_SQLSTATE
SELECT workflows, runs, stages, h = :'h0' AS nothing_changed FROM wfe_digest;

-- ===========================================================================
-- inputs_digest, run, run_history, approve, cancel
-- ===========================================================================
SELECT baton.inputs_digest(NULL, :'rg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.inputs_digest(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM baton.run(NULL, :'rg');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM baton.run(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT stage FROM baton.run_history(NULL, :'r1');
\echo :LAST_ERROR_SQLSTATE
SELECT stage FROM baton.run_history(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(NULL, :'rg', 'alice', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'a', NULL, 'alice', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'a', :'rg', NULL, :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'a', :'rg', 'alice', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'a', :'rg', '', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(NULL, :'r3', 'stop');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'a', NULL, 'stop');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'a', :'r3', NULL);
\echo :LAST_ERROR_SQLSTATE
-- approver: 1 to 200 characters (the digest is right: only the name is wrong)
SELECT baton.approve(:'a', :'rg', '', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'a', :'rg', repeat('p', 201), :'dg');
\echo :LAST_ERROR_SQLSTATE
-- cancel's reason: at most 65536 bytes
SELECT baton.cancel(:'a', :'r3', repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
-- unknown run: DU008 (reads answer for any tenant, known or not)
SELECT baton.inputs_digest(:'a', :'ru');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM baton.run(:'a', :'ru');
\echo :LAST_ERROR_SQLSTATE
SELECT stage FROM baton.run_history(:'a', :'ru');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM baton.run(:'tu', :'r1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'a', :'ru', 'alice', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'a', :'ru', 'stop');
\echo :LAST_ERROR_SQLSTATE
-- writes to an unknown or fenced tenant: DU002, before the run is looked up
SELECT baton.approve(:'tu', :'rg', 'alice', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'tu', :'r3', 'stop');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'c', :'ru', 'alice', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'c', :'rc', 'stop');
\echo :LAST_ERROR_SQLSTATE
-- values before the fence
SELECT baton.approve(:'tu', :'rg', '', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'c', :'rc', repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
-- reads still answer for a fenced tenant
SELECT status, owner, generation FROM baton.run(:'c', :'rc');
SELECT stage, status, attempt FROM baton.run_history(:'c', :'rc');
SELECT length(baton.inputs_digest(:'c', :'rc')) AS digest_length;
SELECT workflows, runs, stages, h = :'h0' AS nothing_changed FROM wfe_digest;

-- ===========================================================================
-- acquire_run, acquire_next_run, renew_run, release_run
-- ===========================================================================
SELECT baton.acquire_run(NULL, :'r3', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', NULL, 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', NULL, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', 'w3', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', NULL, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
-- owner: 1 to 200 characters; lease: more than zero, at most 365 days
SELECT baton.acquire_run(:'a', :'r3', '', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', repeat('o', 201), '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', 'w3', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', 'w3', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', 'w3', '365 days 1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'a', :'r3', 'w3', '13 mons');
\echo :LAST_ERROR_SQLSTATE
-- a bad owner is reported before a bad lease
SELECT baton.acquire_run(:'a', :'r3', '', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
-- unknown run; unknown or fenced tenant
SELECT baton.acquire_run(:'a', :'ru', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'tu', :'r3', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'c', :'rc', 'wc', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'c', :'rc', '', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(NULL, 'wfe_flow', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', NULL, 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_flow', NULL, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_flow', 'w3', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', '', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_' || repeat('n', 197), 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'tu', '', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_flow', '', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_flow', repeat('o', 201), '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_flow', 'w3', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_flow', 'w3', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_flow', 'w3', '366 days');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'a', 'wfe_none', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'tu', 'wfe_flow', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'tu', 'wfe_none', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'c', 'wfe_flow', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'tu', 'wfe_none', 'w3', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
-- tenant b sees none of tenant a's runs (r3 is runnable in a)
SELECT count(*) AS taken_through_b FROM baton.acquire_next_run(:'b', 'wfe_flow', 'w3', '1 hour');
SELECT baton.renew_run(NULL, :'r1', :g1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', NULL, :g1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', NULL, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', :g1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', NULL, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', :g1, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', :g1, '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', :g1, '366 days');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'ru', :g1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', -1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r1', 9223372036854775807, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'tu', :'r1', :g1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'c', :'rc', :gc, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(NULL, :'r1', :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', NULL, :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', :'r1', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', :'ru', :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', :'r1', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', :'r1', 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'tu', :'r1', :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'c', :'rc', :gc);
\echo :LAST_ERROR_SQLSTATE
SELECT workflows, runs, stages, h = :'h0' AS nothing_changed FROM wfe_digest;

-- ===========================================================================
-- transition_stage, start_stage, complete_stage, fail_stage
-- ===========================================================================
SELECT kind FROM baton.transition_stage(NULL, :'r1', :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'a', NULL, :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'a', :'r1', NULL);
\echo :LAST_ERROR_SQLSTATE
-- previous_stage_id NULL is the default: allowed (the running current stage comes back)
SELECT kind, stage_id = :s1 AS is_s1, stage, entry_seq, attempt, run_status
  FROM baton.transition_stage(:'a', :'r1', :g1, NULL);
SELECT baton.start_stage(NULL, :'r1', :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', NULL, :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r1', NULL, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r1', :g1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(NULL, :'r1', :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', NULL, :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', NULL, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', :g1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', :g1, :s1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(NULL, :'r1', :g1, :s1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', NULL, :g1, :s1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', NULL, :s1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, NULL, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, :s1, NULL);
\echo :LAST_ERROR_SQLSTATE
-- result: a JSON object within baton.max_payload_bytes
SELECT baton.complete_stage(:'a', :'r1', :g1, :s1, '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', :g1, :s1, '"done"');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', :g1, :s1, 'null');
\echo :LAST_ERROR_SQLSTATE
SET baton.max_payload_bytes = 1024;
SELECT baton.complete_stage(:'a', :'r1', :g1, :s1, jsonb_build_object('x', repeat('a', 2000)));
\echo :LAST_ERROR_SQLSTATE
RESET baton.max_payload_bytes;
-- error: at most 65536 bytes; retry_in: NULL or zero to 365 days
SELECT baton.fail_stage(:'a', :'r1', :g1, :s1, repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, :s1, 'boom', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, :s1, 'boom', '365 days 1 second');
\echo :LAST_ERROR_SQLSTATE
-- a stage of another run of the same tenant, and a stage that does not exist: DU008
-- (the message of the first names the stage id, so only the SQLSTATE is shown)
\set VERBOSITY sqlstate
SELECT kind FROM baton.transition_stage(:'a', :'r1', :g1, :s2);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r1', :g1, :s2);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', :g1, :s2);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, :s2, 'boom');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT kind FROM baton.transition_stage(:'a', :'r1', :g1, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r1', :g1, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', :g1, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, -1, 'boom');
\echo :LAST_ERROR_SQLSTATE
-- unknown run
SELECT kind FROM baton.transition_stage(:'a', :'ru', :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'ru', :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'ru', :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'ru', :g1, :s1, 'boom');
\echo :LAST_ERROR_SQLSTATE
-- extreme generations: DU001
SELECT kind FROM baton.transition_stage(:'a', :'r1', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'a', :'r1', 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r1', -1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r1', 9223372036854775807, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', -1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', 9223372036854775807, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', -1, :s1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', 9223372036854775807, :s1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT workflows, runs, stages, h = :'h0' AS nothing_changed FROM wfe_digest;

-- ===========================================================================
-- Tenant isolation: tenant a's runs, through tenant b (active), with the right
-- generations, digests and stage ids: DU008 for every function.
-- ===========================================================================
SELECT baton.inputs_digest(:'b', :'rg');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM baton.run(:'b', :'r1');
\echo :LAST_ERROR_SQLSTATE
SELECT stage FROM baton.run_history(:'b', :'r1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'b', :'rg', 'alice', :'dg');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'b', :'r3', 'stop');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'b', :'r3', 'w3', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'b', :'r1', :g1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'b', :'r1', :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'b', :'r1', :g1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'b', :'r1', :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'b', :'r1', :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'b', :'r1', :g1, :s1, 'boom');
\echo :LAST_ERROR_SQLSTATE
-- a stage of tenant c's run, named from tenant a's run: not a stage of that run
\set VERBOSITY sqlstate
SELECT baton.start_stage(:'a', :'r1', :g1, :sc);
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'a', :'r1', :g1, :sc);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT workflows, runs, stages, h = :'h0' AS nothing_changed FROM wfe_digest;

-- ===========================================================================
-- Order of checks: NULL, then values, then the fence, then existence, then the
-- generation (and only then the stage).
-- ===========================================================================
-- NULL before values
SELECT baton.complete_stage(:'a', :'r1', NULL, :s1, '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, NULL, repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1, :s1, NULL, '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(NULL, :'r1', :g1, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
-- values before the fence (c is fenced, tu unknown)
SELECT baton.complete_stage(:'c', :'rc', :gc, :sc, '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'c', :'rc', :gc, :sc, 'boom', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'tu', :'ru', -1, -1, repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'c', :'rc', :gc, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
-- the fence before existence and generation
SELECT kind FROM baton.transition_stage(:'c', :'ru', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'c', :'rc', :gc + 5);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'c', :'rc', :gc + 5, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'c', :'rc', :gc, :sc);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'c', :'rc', :gc, :sc, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'tu', :'r1', :g1, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'c', :'ru', 99, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'c', :'rc', :gc + 5);
\echo :LAST_ERROR_SQLSTATE
-- existence before generation
SELECT kind FROM baton.transition_stage(:'a', :'ru', 99);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'ru', 99, :s1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'ru', 99, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', :'ru', 99);
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'b', :'r1', 99);
\echo :LAST_ERROR_SQLSTATE
-- the generation before anything else about the run (its stages)
SELECT kind FROM baton.transition_stage(:'a', :'r1', :g1 + 1, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r1', :g1 + 1, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r1', :g1 + 1, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r1', :g1 + 1, -1, 'boom');
\echo :LAST_ERROR_SQLSTATE
-- A generation that nobody holds: r3 was never acquired (generation 0), rr was released
-- (generation 2, no owner). Such a generation holds no lease ("never claimed"): DU001
-- for every owner call, and nothing is started, renewed or released. (Only the SQLSTATE
-- is shown: the message is the fix's to word.)
\set VERBOSITY sqlstate
SELECT kind FROM baton.transition_stage(:'a', :'r3', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'r3', 0, '1 hour') IS NOT NULL AS renewed;
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', :'r3', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'a', :'r3', 0, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'a', :'r3', 0, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'a', :'r3', 0, -1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT kind FROM baton.transition_stage(:'a', :'rr', :gr + 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'a', :'rr', :gr + 1, '1 hour') IS NOT NULL AS renewed;
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'a', :'rr', :gr + 1);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT workflows, runs, stages, h = :'h0' AS nothing_changed FROM wfe_digest;
-- The runs and stages as they were set up.
SELECT r.tenant = :'a' AS in_a, r.idempotency_key, r.workflow, r.status, r.owner, r.generation,
       r.lease_until > now() AS leased, r.approved_by
  FROM baton.runs r WHERE r.tenant IN (:'a', :'b', :'c') ORDER BY r.idempotency_key;
SELECT r.idempotency_key, s.stage, s.entry_seq, s.status, s.attempt, s.is_current
  FROM baton.stages s JOIN baton.runs r ON r.tenant = s.tenant AND r.id = s.run_id
 WHERE s.tenant IN (:'a', :'b', :'c') ORDER BY r.idempotency_key;

-- ===========================================================================
-- Names with quotes and SQL are plain data: stored as given, or refused by length.
-- ===========================================================================
\set evil 'x''; drop table baton.runs; --'
SELECT baton.define_workflow('wfe_' || :'evil', :'ok');
SELECT baton.define_workflow('wfe_"q"\', :'ok');
SELECT baton.define_workflow('wfe_' || :'evil' || repeat('z', 200), :'ok');
\echo :LAST_ERROR_SQLSTATE
SELECT name, version FROM baton.workflows
 WHERE name IN ('wfe_' || :'evil', 'wfe_"q"\') OR name LIKE 'wfe\_x''%' ORDER BY name;
SELECT baton.submit(:'a', 'wfe_' || :'evil', '{"who": "x''; drop table baton.runs; --"}', :'evil') AS rq \gset
SELECT baton.submit(:'a', 'wfe_' || :'evil', '{"who": "x''; drop table baton.runs; --"}', :'evil') = :'rq' AS same_run;
SELECT baton.acquire_run(:'a', :'rq', :'evil', '1 hour');
SELECT baton.acquire_run(:'a', :'rq', :'evil' || repeat('z', 200), '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'a', 'wfe_gated', '{"n": 6}', 'rq2') AS rq2 \gset
SELECT baton.approve(:'a', :'rq2', :'evil', baton.inputs_digest(:'a', :'rq2'));
SELECT baton.approve(:'a', :'rq2', :'evil' || repeat('z', 200), baton.inputs_digest(:'a', :'rq2'));
\echo :LAST_ERROR_SQLSTATE
SELECT workflow = 'wfe_' || :'evil' AS workflow_kept, idempotency_key = :'evil' AS key_kept,
       owner = :'evil' AS owner_kept, generation, status
  FROM baton.run(:'a', :'rq');
SELECT status, approved_by = :'evil' AS approver_kept FROM baton.run(:'a', :'rq2');
SELECT baton.cancel(:'a', :'rq2', :'evil');
SELECT status, reason = :'evil' AS reason_kept FROM baton.run(:'a', :'rq2');
SELECT to_regclass('baton.runs') IS NOT NULL AS runs_table_exists,
       (SELECT count(*) FROM baton.runs WHERE tenant = :'a') AS runs_of_a;

-- ===========================================================================
-- The limits themselves are accepted at their edges: 200-character names, owners,
-- approvers and keys; a 65536-byte reason; a 365-day lease.
-- ===========================================================================
SELECT baton.define_workflow('wfe_' || repeat('n', 196), :'ok');
SELECT baton.submit(:'a', 'wfe_' || repeat('n', 196), '{}', repeat('k', 200)) AS re \gset
SELECT baton.acquire_run(:'a', :'re', repeat('o', 200), '365 days');
SELECT baton.submit(:'a', 'wfe_gated', '{"n": 7}', 're2') AS re2 \gset
SELECT baton.approve(:'a', :'re2', repeat('p', 200), baton.inputs_digest(:'a', :'re2'));
SELECT baton.cancel(:'a', :'re2', repeat('x', 65536));
SELECT length(workflow) AS workflow_chars, length(idempotency_key) AS key_chars,
       length(owner) AS owner_chars, generation FROM baton.run(:'a', :'re');
SELECT status, length(approved_by) AS approver_chars, octet_length(reason) AS reason_bytes
  FROM baton.run(:'a', :'re2');


-- ===========================================================================
-- A decide function dropped under a workflow version: the run's transition is a clear
-- 42883 that changes nothing. The version names the function by its signature (as
-- pg_dump and pg_upgrade carry it): created anew, the function is found again, by the
-- run's transition and by a definition of the same workflow, which is the same version.
-- ===========================================================================
CREATE FUNCTION wfe_app.gone(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
SELECT baton.define_workflow('wfe_gone', '{"start": "a", "decide": "wfe_app.gone", "stages": {"a": {"next": ["@finish"]}}}') AS gone_v1;
SELECT baton.submit(:'a', 'wfe_gone') AS gr \gset
SELECT baton.acquire_run(:'a', :'gr', 'o', '1 hour') AS gg \gset
SELECT stage_id AS gs FROM baton.transition_stage(:'a', :'gr', :gg) \gset
SELECT baton.start_stage(:'a', :'gr', :gg, :gs);
SELECT baton.complete_stage(:'a', :'gr', :gg, :gs);
DROP FUNCTION wfe_app.gone(jsonb);
SELECT kind FROM baton.transition_stage(:'a', :'gr', :gg);
\echo :LAST_ERROR_SQLSTATE
SELECT s.status, s.is_current, r.status AS run_status
  FROM baton.run_history(:'a', :'gr') s, baton.run(:'a', :'gr') r;
SELECT decide FROM baton.workflows WHERE name = 'wfe_gone';
CREATE FUNCTION wfe_app.gone(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"finish": "completed"}'::jsonb $$;
SELECT baton.define_workflow('wfe_gone', '{"start": "a", "decide": "wfe_app.gone", "stages": {"a": {"next": ["@finish"]}}}') AS gone_same_version;
SELECT kind FROM baton.transition_stage(:'a', :'gr', :gg);
SELECT status FROM baton.run(:'a', :'gr');

DROP VIEW wfe_digest;
DROP SCHEMA wfe_app CASCADE;
