-- Workflows and runs: every rule of "Workflows and runs" in docs/internals/contract.md (with its Precise
-- readings) and docs/internals/choices.md, as behaviour (bad arguments are workflow_errors.sql).
-- Refusals show their SQLSTATE. Run ids and stage ids are never printed (stage ids come
-- from one sequence across the database): they are compared as booleans. Refusals whose
-- message or detail names a stage id are shown with VERBOSITY sqlstate or terse.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
\set t1 '00000000-0000-0000-0007-000000000001'
\set t2 '00000000-0000-0000-0007-000000000002'
\set t3 '00000000-0000-0000-0007-000000000003'
\set tx '00000000-0000-0000-0007-0000000000ff'
\set no_run '00000000-0000-0000-0007-00000000ffff'
SELECT baton.create_tenant(:'t1');
SELECT baton.create_tenant(:'t2');
SELECT baton.create_tenant(:'t3');

-- The decide functions live in wf_app. wf_app.decide logs its context and the role it
-- runs as, then returns what wf_app.plan holds (SQL NULL included), or raises WF001.
CREATE SCHEMA wf_app;
CREATE TABLE wf_app.plan (decision jsonb, raise boolean NOT NULL DEFAULT false);
INSERT INTO wf_app.plan VALUES (NULL, false);
CREATE TABLE wf_app.log (n serial PRIMARY KEY, who text NOT NULL, ctx jsonb NOT NULL);
CREATE FUNCTION wf_app.decide(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE p wf_app.plan;
BEGIN
  INSERT INTO wf_app.log (who, ctx) VALUES (current_user, ctx);
  SELECT * INTO p FROM wf_app.plan;
  IF p.raise THEN
    RAISE EXCEPTION 'decide refuses' USING ERRCODE = 'WF001';
  END IF;
  RETURN p.decision;
END $$;
CREATE FUNCTION wf_app.go_b(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"next": "b"}'::jsonb $$;
CREATE FUNCTION wf_app.go_c(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"next": "c"}'::jsonb $$;

-- Helpers (temporary): tr() calls transition_stage, keeps its row in tr_last (stage_id
-- included) and prints it without ids or timestamps; snap() is a digest of a run's row
-- and all of its stage rows, to show "nothing changed"; work() transitions, starts and
-- completes the current stage with a result.
CREATE TEMP TABLE tr_last (kind text, stage_id bigint, stage text, entry_seq int, inputs jsonb,
                           attempt int, wait_until timestamptz, run_status text);
CREATE FUNCTION pg_temp.tr(t uuid, r uuid, g bigint, prev bigint DEFAULT NULL)
RETURNS TABLE (kind text, stage text, entry_seq int, inputs jsonb, attempt int, waits boolean,
               run_status text) LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tr_last;
  INSERT INTO tr_last SELECT * FROM baton.transition_stage(t, r, g, prev);
  RETURN QUERY SELECT l.kind, l.stage, l.entry_seq, l.inputs, l.attempt, l.wait_until IS NOT NULL,
                      l.run_status FROM tr_last l;
END $$;
CREATE FUNCTION pg_temp.snap(r uuid) RETURNS text LANGUAGE sql AS $$
  SELECT md5((SELECT x::text FROM baton.runs x WHERE x.id = r) || '|' ||
             coalesce((SELECT string_agg(s::text, ';' ORDER BY s.id) FROM baton.stages s
                        WHERE s.run_id = r), ''))
$$;
CREATE FUNCTION pg_temp.work(t uuid, r uuid, g bigint, res jsonb DEFAULT '{}') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE x record;
BEGIN
  SELECT * INTO x FROM baton.transition_stage(t, r, g);
  IF x.kind <> 'stage' THEN RETURN x.kind || ' ' || x.run_status; END IF;
  PERFORM baton.start_stage(t, r, g, x.stage_id);
  PERFORM baton.complete_stage(t, r, g, x.stage_id, res);
  RETURN x.stage || '#' || x.entry_seq;
END $$;
-- The stages of a run in id order, with the predecessor shown as "the previous row".
CREATE TEMP VIEW st AS
SELECT s.run_id, s.id, s.stage, s.entry_seq, s.status, s.is_current, s.attempt, s.inputs, s.result,
       s.error, s.transition,
       s.predecessor_id IS NOT DISTINCT FROM lag(s.id) OVER (PARTITION BY s.run_id ORDER BY s.id) AS pred_ok
  FROM baton.stages s;

-- ---------------------------------------------------------------------------
-- 1. define_workflow: 1 for a new name; an identical definition (jsonb equality, key
--    order irrelevant) returns the latest version; a changed one a new version;
--    "identical" compares with the latest version only.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('wf_lin', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}') AS v;
SELECT baton.define_workflow('wf_lin', '{"stages": {"b": {"next": ["@finish"]}, "a": {"next": ["b"]}}, "start": "a"}') AS same_v;
SELECT baton.define_workflow('wf_lin', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"], "max_attempts": 4}}}') AS changed_v;
SELECT baton.define_workflow('wf_lin', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"], "max_attempts": 4}}}') AS same_v2;
-- v1's definition again: it differs from the latest (v2), so it is a new version
SELECT baton.define_workflow('wf_lin', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}') AS back_to_v1;
SELECT name, version, definition, decide FROM baton.workflows WHERE name = 'wf_lin' ORDER BY version;
-- another name starts at 1 again; decide is stored as the function
SELECT baton.define_workflow('wf_d', '{"start": "a", "decide": "wf_app.go_b", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}') AS v;
SELECT name, version, decide FROM baton.workflows WHERE name = 'wf_d';

-- ---------------------------------------------------------------------------
-- 2. Runs keep the version they were submitted with: the stages of their version
--    (declarative) and the decide function of their version.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('wf_ver', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}') AS v;
SELECT baton.submit(:'t1', 'wf_ver', '{"n": 1}') AS ver_old \gset
SELECT baton.acquire_run(:'t1', :'ver_old', 'w1', '1 hour') AS g;
SELECT pg_temp.work(:'t1', :'ver_old', 1, '{"from": "a"}');
SELECT baton.define_workflow('wf_ver', '{"start": "a", "stages": {"a": {"next": ["c"]}, "c": {"next": ["@finish"]}}}') AS v;
SELECT baton.submit(:'t1', 'wf_ver', '{"n": 2}') AS ver_new \gset
SELECT baton.acquire_run(:'t1', :'ver_new', 'w1', '1 hour') AS g;
SELECT pg_temp.work(:'t1', :'ver_new', 1, '{"from": "a"}');
-- the old run goes to b (v1), the new one to c (v2)
SELECT kind, stage, entry_seq, inputs, run_status FROM pg_temp.tr(:'t1', :'ver_old', 1);
SELECT kind, stage, entry_seq, inputs, run_status FROM pg_temp.tr(:'t1', :'ver_new', 1);
SELECT id = :'ver_old' AS old_run, version, status FROM baton.runs WHERE id IN (:'ver_old', :'ver_new') ORDER BY version;
-- and each finishes by its own version
SELECT pg_temp.work(:'t1', :'ver_old', 1), pg_temp.work(:'t1', :'ver_old', 1);
SELECT pg_temp.work(:'t1', :'ver_new', 1), pg_temp.work(:'t1', :'ver_new', 1);
SELECT r.version, r.status, array_agg(s.stage ORDER BY s.id) AS stages
  FROM baton.runs r JOIN baton.stages s ON s.run_id = r.id
 WHERE r.id IN (:'ver_old', :'ver_new') GROUP BY r.version, r.status ORDER BY r.version;
-- decide routing by version: v1 calls go_b, v2 calls go_c
SELECT baton.define_workflow('wf_verd', '{"start": "a", "decide": "wf_app.go_b", "stages": {"a": {"next": ["b", "c"]}, "b": {"next": ["@finish"]}, "c": {"next": ["@finish"]}}}') AS v;
SELECT baton.submit(:'t1', 'wf_verd') AS verd_old \gset
SELECT baton.define_workflow('wf_verd', '{"start": "a", "decide": "wf_app.go_c", "stages": {"a": {"next": ["b", "c"]}, "b": {"next": ["@finish"]}, "c": {"next": ["@finish"]}}}') AS v;
SELECT baton.submit(:'t1', 'wf_verd') AS verd_new \gset
SELECT baton.acquire_run(:'t1', :'verd_old', 'w1', '1 hour') AS g;
SELECT baton.acquire_run(:'t1', :'verd_new', 'w1', '1 hour') AS g;
SELECT pg_temp.work(:'t1', :'verd_old', 1), pg_temp.work(:'t1', :'verd_new', 1);
SELECT kind, stage, run_status FROM pg_temp.tr(:'t1', :'verd_old', 1);
SELECT kind, stage, run_status FROM pg_temp.tr(:'t1', :'verd_new', 1);
SELECT id = :'verd_old' AS old_run, version FROM baton.runs WHERE id IN (:'verd_old', :'verd_new') ORDER BY version;

-- ---------------------------------------------------------------------------
-- 3. submit: idempotent per (tenant, workflow, key); other inputs DU009; NULL key is
--    always a new run; approval at submit; the digest; unknown workflow DU008.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('wf_appr', '{"start": "one", "requires_approval": true, "stages": {"one": {"next": ["@finish"]}}}') AS v;
SELECT baton.define_workflow('wf_auto', '{"start": "one", "requires_approval": false, "stages": {"one": {"next": ["@finish"]}}}') AS v;
SELECT baton.submit(:'t1', 'wf_appr', '{"user": "u1", "n": [1, 2]}', 'k1') AS k1 \gset
SELECT pg_temp.snap(:'k1') AS k1_snap \gset
-- the same inputs (key order irrelevant): the same run, nothing changes
SELECT baton.submit(:'t1', 'wf_appr', '{"n": [1, 2], "user": "u1"}', 'k1') = :'k1' AS same_run;
SELECT pg_temp.snap(:'k1') = :'k1_snap' AS unchanged;
-- other inputs under the key: DU009
SELECT baton.submit(:'t1', 'wf_appr', '{"user": "u2", "n": [1, 2]}', 'k1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'t1', 'wf_appr', '{}', 'k1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'t1', 'wf_appr', idempotency_key => 'k1');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS k1_runs, pg_temp.snap(:'k1') = :'k1_snap' AS unchanged
  FROM baton.runs WHERE tenant = :'t1' AND idempotency_key = 'k1';
-- the key belongs to (tenant, workflow): another workflow or tenant is another run
SELECT baton.submit(:'t1', 'wf_auto', '{"other": true}', 'k1') AS k1_auto \gset
SELECT baton.submit(:'t3', 'wf_appr', '{"other": true}', 'k1') AS k1_t3 \gset
SELECT :'k1_auto' <> :'k1' AS other_workflow_new, :'k1_t3' NOT IN (:'k1', :'k1_auto') AS other_tenant_new;
-- NULL key: always a new run, even with the same inputs
SELECT baton.submit(:'t1', 'wf_appr', '{"same": 1}') AS nk1 \gset
SELECT baton.submit(:'t1', 'wf_appr', '{"same": 1}', NULL) AS nk2 \gset
SELECT :'nk1' <> :'nk2' AS distinct_runs;
-- requires_approval true: submitted; false: approved at submit
SELECT workflow, version, status, inputs, state, owner, generation, lease_until IS NULL AS no_lease,
       idempotency_key, approved_by, approved_at IS NULL AS no_approved_at, reason,
       created_at <= now() AS created
  FROM baton.run(:'t1', :'k1');
SELECT workflow, status, approved_by, approved_at IS NOT NULL AS approved_at_set
  FROM baton.run(:'t1', :'k1_auto');
-- the digest: lowercase hex sha256 of inputs::text, stored and returned by inputs_digest
SELECT baton.submit(:'t1', 'wf_appr', '{"name": "Zoë", "list": [3, {"b": 1, "a": "x"}], "z": null}') AS dg \gset
SELECT inputs::text AS inputs_text,
       inputs_digest = encode(sha256(convert_to(inputs::text, 'UTF8')), 'hex') AS digest_is_sha256,
       inputs_digest ~ '^[0-9a-f]{64}$' AS lowercase_hex,
       baton.inputs_digest(:'t1', :'dg') = inputs_digest AS function_agrees
  FROM baton.run(:'t1', :'dg');
SELECT baton.inputs_digest(:'t1', :'k1') = encode(sha256(convert_to('{"n": [1, 2], "user": "u1"}', 'UTF8')), 'hex') AS digest_of_k1;
-- unknown workflow: DU008, no run
SELECT count(*) AS runs_before FROM baton.runs WHERE tenant = :'t1' \gset
SELECT baton.submit(:'t1', 'wf_missing', '{}', 'k9');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) = :runs_before AS no_new_run FROM baton.runs WHERE tenant = :'t1';

-- ---------------------------------------------------------------------------
-- 4. approve and cancel.
-- ---------------------------------------------------------------------------
-- k1 is submitted (wf_appr). A wrong digest: DU006; status, approver, stages unchanged.
SELECT baton.approve(:'t1', :'k1', 'alice', 'deadbeef');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'t1', :'k1', 'alice', encode(sha256(convert_to('{"n": [1, 2], "user": "u2"}', 'UTF8')), 'hex'));
\echo :LAST_ERROR_SQLSTATE
-- the digest in upper case is another string
SELECT baton.approve(:'t1', :'k1', 'alice', upper(baton.inputs_digest(:'t1', :'k1')));
\echo :LAST_ERROR_SQLSTATE
SELECT status, approved_by, pg_temp.snap(:'k1') = :'k1_snap' AS unchanged,
       (SELECT count(*) FROM baton.stages WHERE run_id = :'k1') AS stages
  FROM baton.run(:'t1', :'k1');
-- the right digest: approved, approved_by set, still no stage
SELECT baton.approve(:'t1', :'k1', 'alice', baton.inputs_digest(:'t1', :'k1'));
SELECT status, approved_by, approved_at IS NOT NULL AS approved_at_set,
       (SELECT count(*) FROM baton.stages WHERE run_id = :'k1') AS stages
  FROM baton.run(:'t1', :'k1');
SELECT pg_temp.snap(:'k1') AS k1_snap \gset
-- repeated by the same approver: nothing changes
SELECT baton.approve(:'t1', :'k1', 'alice', baton.inputs_digest(:'t1', :'k1'));
SELECT pg_temp.snap(:'k1') = :'k1_snap' AS unchanged;
-- another approver: DU007, nothing changes
SELECT baton.approve(:'t1', :'k1', 'bob', baton.inputs_digest(:'t1', :'k1'));
\echo :LAST_ERROR_SQLSTATE
SELECT approved_by, pg_temp.snap(:'k1') = :'k1_snap' AS unchanged FROM baton.run(:'t1', :'k1');
-- a run approved at submit: approve with the right digest does nothing
SELECT pg_temp.snap(:'k1_auto') AS auto_snap \gset
SELECT baton.approve(:'t1', :'k1_auto', 'carol', baton.inputs_digest(:'t1', :'k1_auto'));
SELECT status, approved_by, pg_temp.snap(:'k1_auto') = :'auto_snap' AS unchanged FROM baton.run(:'t1', :'k1_auto');
-- cancel of a submitted run: cancelled with its reason; approve then DU007
SELECT baton.cancel(:'t1', :'nk1', 'not wanted');
SELECT status, reason, finished_at IS NOT NULL AS finished FROM baton.runs WHERE id = :'nk1';
SELECT pg_temp.snap(:'nk1') AS nk1_snap \gset
SELECT baton.approve(:'t1', :'nk1', 'alice', baton.inputs_digest(:'t1', :'nk1'));
\echo :LAST_ERROR_SQLSTATE
-- cancel of a cancelled run does nothing (the first reason stays)
SELECT baton.cancel(:'t1', :'nk1', 'another reason');
SELECT status, reason, pg_temp.snap(:'nk1') = :'nk1_snap' AS unchanged FROM baton.run(:'t1', :'nk1');
-- cancel of a completed run (ver_old completed in section 2): DU007
SELECT pg_temp.snap(:'ver_old') AS vo_snap \gset
SELECT baton.cancel(:'t1', :'ver_old', 'too late');
\echo :LAST_ERROR_SQLSTATE
SELECT status, reason, pg_temp.snap(:'ver_old') = :'vo_snap' AS unchanged FROM baton.run(:'t1', :'ver_old');
-- after cancel, the holder's transition_stage answers finished/cancelled, changes nothing
SELECT baton.submit(:'t1', 'wf_auto', '{"c": 1}') AS cx \gset
SELECT baton.acquire_run(:'t1', :'cx', 'w1', '1 hour') AS g;
SELECT kind, stage, run_status FROM pg_temp.tr(:'t1', :'cx', 1);
SELECT baton.cancel(:'t1', :'cx', 'operator stop');
SELECT pg_temp.snap(:'cx') AS cx_snap \gset
SELECT kind, stage, entry_seq, inputs, attempt, waits, run_status FROM pg_temp.tr(:'t1', :'cx', 1);
SELECT stage_id IS NULL AS no_stage_id FROM tr_last;
SELECT status, reason, pg_temp.snap(:'cx') = :'cx_snap' AS unchanged FROM baton.run(:'t1', :'cx');
SELECT stage, status, is_current FROM st WHERE run_id = :'cx';

-- ---------------------------------------------------------------------------
-- 5. acquire_run, renew_run, release_run.
-- ---------------------------------------------------------------------------
SELECT baton.submit(:'t1', 'wf_auto', '{"a": 1}') AS ra \gset
SELECT baton.acquire_run(:'t1', :'ra', 'w1', '1 hour') AS g;
SELECT owner, generation, lease_until > now() + interval '59 minutes' AS leased FROM baton.run(:'t1', :'ra');
SELECT pg_temp.snap(:'ra') AS ra_snap \gset
-- another owner while the lease is unexpired: NULL, nothing changes
SELECT baton.acquire_run(:'t1', :'ra', 'w2', '1 hour') IS NULL AS refused;
SELECT owner, generation, pg_temp.snap(:'ra') = :'ra_snap' AS unchanged FROM baton.run(:'t1', :'ra');
-- the same owner again: a new generation; the old one is fenced everywhere
SELECT baton.acquire_run(:'t1', :'ra', 'w1', '1 hour') AS g;
SELECT kind, stage, run_status FROM pg_temp.tr(:'t1', :'ra', 2);
SELECT stage_id AS ra_s FROM tr_last \gset
SELECT baton.start_stage(:'t1', :'ra', 2, :ra_s);
SELECT pg_temp.snap(:'ra') AS ra_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'ra', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'t1', :'ra', 1, :ra_s);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'t1', :'ra', 1, :ra_s, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'t1', :'ra', 1, :ra_s, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'t1', :'ra', 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'t1', :'ra', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'ra') = :'ra_snap' AS unchanged;
-- after the lease expired, another owner gets a new generation
SELECT baton.acquire_run(:'t1', :'ra', 'w1', '10 milliseconds') AS g;
SELECT pg_sleep(0.1);
SELECT baton.acquire_run(:'t1', :'ra', 'w2', '1 hour') AS g;
SELECT owner, generation, lease_until > now() AS leased FROM baton.run(:'t1', :'ra');
SELECT baton.renew_run(:'t1', :'ra', 3, '1 hour');
\echo :LAST_ERROR_SQLSTATE
-- renew_run extends the lease to now() + lease and returns it
SELECT baton.renew_run(:'t1', :'ra', 4, '2 hours') = now() + interval '2 hours' AS renewed_to_now_plus_lease;
SELECT owner, generation, lease_until > now() + interval '119 minutes' AS extended FROM baton.run(:'t1', :'ra');
-- release_run clears the owner and moves the generation on: the releaser is fenced
SELECT baton.release_run(:'t1', :'ra', 4);
SELECT owner, generation, lease_until IS NULL AS no_lease, status FROM baton.run(:'t1', :'ra');
-- (terse: the detail of a refusal on a released run is not part of the test)
\set VERBOSITY terse
SELECT baton.release_run(:'t1', :'ra', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.transition_stage(:'t1', :'ra', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'t1', :'ra', 4, '1 hour');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
-- a free run: anyone acquires it
SELECT baton.acquire_run(:'t1', :'ra', 'w3', '1 hour') AS g;
-- an ended run: renew_run is DU007 for its holder; release_run still releases it
SELECT baton.cancel(:'t1', :'ra', 'stop');
SELECT pg_temp.snap(:'ra') AS ra_snap \gset
SELECT baton.renew_run(:'t1', :'ra', 6, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'t1', :'ra', 5, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'ra') = :'ra_snap' AS unchanged;
SELECT baton.release_run(:'t1', :'ra', 6);
SELECT owner, generation, lease_until IS NULL AS no_lease, status FROM baton.run(:'t1', :'ra');
\set VERBOSITY terse
SELECT baton.release_run(:'t1', :'ra', 6);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
-- acquire_run of a terminal run: NULL, nothing changes (for any owner)
SELECT pg_temp.snap(:'ra') AS ra_snap \gset
SELECT baton.acquire_run(:'t1', :'ra', 'w3', '1 hour') IS NULL AS null_for_ended;
SELECT baton.acquire_run(:'t1', :'ver_old', 'w1', '1 hour') IS NULL AS null_for_completed;
SELECT pg_temp.snap(:'ra') = :'ra_snap' AS unchanged, pg_temp.snap(:'ver_old') = :'vo_snap' AS completed_unchanged;
-- acquire_run of an unknown run: DU008
SELECT baton.acquire_run(:'t1', :'no_run', 'w1', '1 hour');
\echo :LAST_ERROR_SQLSTATE
-- a run of another tenant is unknown here
SELECT baton.acquire_run(:'t3', :'k1', 'w1', '1 hour');
\echo :LAST_ERROR_SQLSTATE

-- ---------------------------------------------------------------------------
-- 6. acquire_next_run: the oldest runnable run of that workflow.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('wf_next', '{"start": "a", "requires_approval": true, "stages": {"a": {"next": ["@finish"], "max_attempts": 2}}}') AS v;
SELECT baton.submit(:'t1', 'wf_next', '{"i": 1}') AS n1 \gset
SELECT baton.submit(:'t1', 'wf_next', '{"i": 2}') AS n2 \gset
SELECT baton.submit(:'t1', 'wf_next', '{"i": 3}') AS n3 \gset
SELECT baton.submit(:'t1', 'wf_next', '{"i": 4}') AS n4 \gset
SELECT baton.submit(:'t1', 'wf_next', '{"i": 5}') AS n5 \gset
SELECT baton.submit(:'t1', 'wf_next', '{"i": 6}') AS n6 \gset
SELECT baton.submit(:'t1', 'wf_next', '{"i": 7}') AS n7 \gset
SELECT baton.submit(:'t3', 'wf_next', '{"i": 8}') AS n8 \gset
-- n1 stays submitted; the others are approved; n7 is then cancelled
SELECT baton.approve(:'t1', r, 'alice', baton.inputs_digest(:'t1', r))
  FROM unnest(ARRAY[:'n2', :'n3', :'n4', :'n5', :'n6', :'n7']::uuid[]) r;
SELECT baton.approve(:'t3', :'n8', 'alice', baton.inputs_digest(:'t3', :'n8'));
SELECT baton.cancel(:'t1', :'n7', 'not needed');
-- the oldest runnable (n1 is submitted: skipped), then the next (n2's lease is unexpired)
SELECT run_id = :'n2' AS is_n2, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
SELECT run_id = :'n3' AS is_n3, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
-- n2: its stage failed with the deadline an hour ahead; n3: failed with the deadline now
SELECT kind, stage FROM pg_temp.tr(:'t1', :'n2', 1);
SELECT stage_id AS n2_s FROM tr_last \gset
SELECT baton.start_stage(:'t1', :'n2', 1, :n2_s);
SELECT baton.fail_stage(:'t1', :'n2', 1, :n2_s, 'later', '1 hour') = now() + interval '1 hour' AS deadline_in_an_hour;
SELECT baton.release_run(:'t1', :'n2', 1);
SELECT kind, stage FROM pg_temp.tr(:'t1', :'n3', 1);
SELECT stage_id AS n3_s FROM tr_last \gset
SELECT baton.start_stage(:'t1', :'n3', 1, :n3_s);
SELECT baton.fail_stage(:'t1', :'n3', 1, :n3_s, 'at once', '0 seconds') = now() AS deadline_now;
SELECT baton.release_run(:'t1', :'n3', 1);
-- n5: failed twice, its 2 attempts spent (the last with a deadline an hour ahead)
SELECT baton.acquire_run(:'t1', :'n5', 'w9', '1 hour') AS g;
SELECT kind, stage FROM pg_temp.tr(:'t1', :'n5', 1);
SELECT stage_id AS n5_s FROM tr_last \gset
SELECT baton.start_stage(:'t1', :'n5', 1, :n5_s);
SELECT baton.fail_stage(:'t1', :'n5', 1, :n5_s, 'first', '0 seconds') IS NOT NULL AS failed;
SELECT kind, stage, attempt FROM pg_temp.tr(:'t1', :'n5', 1);
SELECT baton.start_stage(:'t1', :'n5', 1, :n5_s);
SELECT baton.fail_stage(:'t1', :'n5', 1, :n5_s, 'second', '1 hour') IS NOT NULL AS failed;
SELECT status, attempt, retry_at > now() AS deadline_ahead FROM baton.stages WHERE id = :n5_s;
SELECT baton.release_run(:'t1', :'n5', 1);
-- n2 waits for its deadline; n3 (deadline passed) is taken, then n4, then n5 (attempts
-- spent: runnable at once)
SELECT run_id = :'n3' AS is_n3, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
SELECT run_id = :'n4' AS is_n4, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
SELECT run_id = :'n5' AS is_n5, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
-- n5's next transition fails the run
SELECT kind, stage, run_status FROM pg_temp.tr(:'t1', :'n5', 3);
-- n6 with a lease that expires: taken again after it expired
SELECT run_id = :'n6' AS is_n6, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '10 milliseconds');
SELECT pg_sleep(0.1);
SELECT run_id = :'n6' AS is_n6, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w2', '1 hour');
SELECT owner, generation FROM baton.run(:'t1', :'n6');
-- none left: zero rows (n1 submitted, n2 before its deadline, n7 cancelled, n8 of t3,
-- the others held), and nothing changed
SELECT pg_temp.snap(:'n1') AS n1_snap, pg_temp.snap(:'n2') AS n2_snap, pg_temp.snap(:'n7') AS n7_snap \gset
SELECT count(*) AS taken FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
SELECT pg_temp.snap(:'n1') = :'n1_snap' AS n1_unchanged, pg_temp.snap(:'n2') = :'n2_snap' AS n2_unchanged,
       pg_temp.snap(:'n7') = :'n7_snap' AS n7_unchanged;
-- once n2's deadline has passed (moved into the past directly), it is taken
UPDATE baton.stages SET retry_at = now() - interval '1 second' WHERE id = :n2_s;
SELECT run_id = :'n2' AS is_n2, generation FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
SELECT kind, stage, entry_seq, attempt, waits, run_status FROM pg_temp.tr(:'t1', :'n2', 3);
SELECT stage_id = :n2_s AS same_stage FROM tr_last;
SELECT count(*) AS taken FROM baton.acquire_next_run(:'t1', 'wf_next', 'w1', '1 hour');
-- another tenant's runs are its own
SELECT run_id = :'n8' AS is_n8, generation FROM baton.acquire_next_run(:'t3', 'wf_next', 'w1', '1 hour');
-- a workflow without runnable runs: zero rows
SELECT count(*) AS taken FROM baton.acquire_next_run(:'t1', 'wf_lin', 'w1', '1 hour');
-- unknown workflow DU008, unknown tenant DU002
SELECT * FROM baton.acquire_next_run(:'t1', 'wf_missing', 'w1', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'tx', 'wf_next', 'w1', '1 hour');
\echo :LAST_ERROR_SQLSTATE

-- ---------------------------------------------------------------------------
-- 7. transition_stage with a decide function, case by case (run f1).
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('wf_flow', '{
  "start": "gate", "requires_approval": true, "decide": "wf_app.decide",
  "stages": {
    "gate":         {"next": ["purge_db"]},
    "purge_db":     {"next": ["purge_agents", "purge_db", "@finish"], "max_attempts": 2, "retry_delay": "10 minutes"},
    "purge_agents": {"next": ["purge_db", "@finish"]}}}') AS v;
SELECT baton.submit(:'t1', 'wf_flow', '{"user": "u1"}', 'f1') AS f1 \gset
-- a submitted run may be acquired, but not transitioned (DU007, nothing written)
SELECT baton.acquire_run(:'t1', :'f1', 'w1', '1 hour') AS g;
SELECT pg_temp.snap(:'f1') AS f1_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'f1', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status, pg_temp.snap(:'f1') = :'f1_snap' AS unchanged,
       (SELECT count(*) FROM baton.stages WHERE run_id = :'f1') AS stages
  FROM baton.run(:'t1', :'f1');
SELECT baton.approve(:'t1', :'f1', 'alice', baton.inputs_digest(:'t1', :'f1'));
-- approved, not started: the start stage (inputs = run inputs, entry_seq 1, current,
-- pending), and the run running
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id AS gate FROM tr_last \gset
SELECT stage, entry_seq, status, is_current, attempt, inputs, result, transition,
       predecessor_id IS NULL AS no_predecessor, id = :gate AS is_returned
  FROM baton.stages WHERE run_id = :'f1';
SELECT status, state FROM baton.run(:'t1', :'f1');
-- pending current: returned unchanged, nothing new
SELECT pg_temp.snap(:'f1') AS f1_snap \gset
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id = :gate AS same_stage FROM tr_last;
SELECT pg_temp.snap(:'f1') = :'f1_snap' AS unchanged;
-- start_stage returns the inputs; running current: returned unchanged
SELECT baton.start_stage(:'t1', :'f1', 1, :gate) AS started_inputs;
SELECT pg_temp.snap(:'f1') AS f1_snap \gset
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id = :gate AS same_stage FROM tr_last;
SELECT pg_temp.snap(:'f1') = :'f1_snap' AS unchanged;
-- completed: decide and switch
SELECT baton.complete_stage(:'t1', :'f1', 1, :gate, '{"gate": "open"}');
UPDATE wf_app.plan SET decision = '{"next": "purge_db", "inputs": {"community": "c1"}, "state": {"done": []}}';
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id AS p1 FROM tr_last \gset
SELECT stage, entry_seq, status, is_current, attempt, inputs, result, transition, pred_ok
  FROM st WHERE run_id = :'f1' ORDER BY id;
SELECT status, state FROM baton.run(:'t1', :'f1');
-- the decide function saw the context of the contract
SELECT who, ctx->'run'->'inputs' AS run_inputs, ctx->'run'->'state' AS run_state,
       ctx->'stage'->>'name' AS name, ctx->'stage'->'entry_seq' AS entry_seq,
       ctx->'stage'->'inputs' AS stage_inputs, ctx->'stage'->'result' AS stage_result
  FROM wf_app.log ORDER BY n DESC LIMIT 1;
SELECT count(*) AS decide_calls FROM wf_app.log \gset
-- again after the switch: the same successor, no second one, decide not called again
SELECT pg_temp.snap(:'f1') AS f1_snap \gset
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id = :p1 AS same_successor FROM tr_last;
SELECT pg_temp.snap(:'f1') = :'f1_snap' AS unchanged, (SELECT count(*) FROM wf_app.log) = :decide_calls AS no_decide;
-- with previous_stage_id of the run: the same
SELECT kind, stage, entry_seq FROM pg_temp.tr(:'t1', :'f1', 1, :gate);
SELECT stage_id = :p1 AS same_successor FROM tr_last;
-- previous_stage_id of another run or unknown: DU008, nothing written
\set VERBOSITY sqlstate
SELECT * FROM baton.transition_stage(:'t1', :'f1', 1, :ra_s);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.transition_stage(:'t1', :'f1', 1, -1);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT pg_temp.snap(:'f1') = :'f1_snap' AS unchanged;
-- purge_db#1: a decision without inputs gives the completed stage's result as inputs,
-- and without state keeps the run's state
SELECT baton.start_stage(:'t1', :'f1', 1, :p1) AS started_inputs;
SELECT baton.complete_stage(:'t1', :'f1', 1, :p1, '{"has_agents": false, "n": 1}');
UPDATE wf_app.plan SET decision = '{"next": "purge_db"}';
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id AS p2 FROM tr_last \gset
SELECT status, state FROM baton.run(:'t1', :'f1');
SELECT ctx->'run'->'state' AS run_state, ctx->'stage'->>'name' AS name, ctx->'stage'->'entry_seq' AS entry_seq,
       ctx->'stage'->'inputs' AS stage_inputs, ctx->'stage'->'result' AS stage_result
  FROM wf_app.log ORDER BY n DESC LIMIT 1;
-- purge_db#2 fails: fail_stage returns now() + the stage's retry_delay (10 minutes)
SELECT baton.start_stage(:'t1', :'f1', 1, :p2) AS started_inputs;
SELECT baton.fail_stage(:'t1', :'f1', 1, :p2, 'db busy') = now() + interval '10 minutes' AS retry_at_is_now_plus_delay;
SELECT status, attempt, error, is_current FROM baton.stages WHERE id = :p2;
-- failed before its deadline: wait, wait_until = the stage's retry_at; nothing changes
SELECT pg_temp.snap(:'f1') AS f1_snap \gset
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id = :p2 AS same_stage, wait_until = (SELECT retry_at FROM baton.stages WHERE id = :p2) AS waits_for_retry_at
  FROM tr_last;
SELECT pg_temp.snap(:'f1') = :'f1_snap' AS unchanged;
-- start_stage before the deadline: DU007
SELECT baton.start_stage(:'t1', :'f1', 1, :p2);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'f1') = :'f1_snap' AS unchanged;
-- after the deadline (moved into the past directly): the same stage again, same entry_seq
UPDATE baton.stages SET retry_at = now() - interval '1 second' WHERE id = :p2;
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id = :p2 AS same_stage FROM tr_last;
SELECT count(*) AS stages FROM baton.stages WHERE run_id = :'f1';
-- start_stage makes attempt + 1
SELECT baton.start_stage(:'t1', :'f1', 1, :p2) AS started_inputs;
SELECT status, attempt, error FROM baton.stages WHERE id = :p2;
SELECT baton.complete_stage(:'t1', :'f1', 1, :p2, '{"has_agents": true}');
-- a decision with state replaces the run's state
UPDATE wf_app.plan SET decision = '{"next": "purge_agents", "state": {"done": ["db"]}}';
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id AS pa1 FROM tr_last \gset
SELECT status, state FROM baton.run(:'t1', :'f1');
SELECT pg_temp.work(:'t1', :'f1', 1, '{"agents": 2}');
UPDATE wf_app.plan SET decision = '{"next": "purge_db", "inputs": {"again": true}}';
-- purge_db a third time: entry_seq 3 (purge_agents in between does not count)
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id AS p3 FROM tr_last \gset
SELECT baton.start_stage(:'t1', :'f1', 1, :p3) AS started_inputs;
-- failed with retry_in 0: the same stage at once
SELECT baton.fail_stage(:'t1', :'f1', 1, :p3, 'first', '0 seconds') = now() AS retry_now;
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id = :p3 AS same_stage FROM tr_last;
SELECT baton.start_stage(:'t1', :'f1', 1, :p3) AS started_inputs;
SELECT baton.fail_stage(:'t1', :'f1', 1, :p3, 'second', '1 hour') IS NOT NULL AS failed;
-- max_attempts (2) spent: the run fails, no new stage, the stage stays current
SELECT count(*) AS stages FROM baton.stages WHERE run_id = :'f1' \gset
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT stage_id IS NULL AS no_stage_id FROM tr_last;
SELECT status, reason LIKE '%purge_db%' AS reason_names_stage, finished_at IS NOT NULL AS finished
  FROM baton.run(:'t1', :'f1');
SELECT count(*) = :stages AS no_new_stage FROM baton.stages WHERE run_id = :'f1';
SELECT stage, entry_seq, status, is_current, attempt, error FROM baton.stages WHERE id = :p3;
-- later calls: finished, nothing changes
SELECT pg_temp.snap(:'f1') AS f1_snap \gset
SELECT * FROM pg_temp.tr(:'t1', :'f1', 1);
SELECT pg_temp.snap(:'f1') = :'f1_snap' AS unchanged;
-- the whole history of f1
SELECT stage, entry_seq, status, is_current, attempt, inputs, result, transition, pred_ok
  FROM st WHERE run_id = :'f1' ORDER BY id;

-- ---------------------------------------------------------------------------
-- 8. Decisions refused (DU003, nothing written), decide errors, finish decisions.
-- ---------------------------------------------------------------------------
SELECT baton.submit(:'t1', 'wf_flow', '{"user": "u2"}', 'f2') AS f2 \gset
SELECT baton.approve(:'t1', :'f2', 'alice', baton.inputs_digest(:'t1', :'f2'));
SELECT baton.acquire_run(:'t1', :'f2', 'w1', '1 hour') AS g;
SELECT pg_temp.work(:'t1', :'f2', 1, '{"gate": "ok"}');
SELECT id AS f2_gate FROM baton.stages WHERE run_id = :'f2' \gset
UPDATE baton.runs SET state = '{"kept": true}' WHERE id = :'f2';
SELECT pg_temp.snap(:'f2') AS f2_snap \gset
SELECT count(*) AS decide_calls FROM wf_app.log \gset
-- a stage outside next
UPDATE wf_app.plan SET decision = '{"next": "purge_agents"}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
-- a finish from a stage without @finish
UPDATE wf_app.plan SET decision = '{"finish": "completed"}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
-- "@finish" named as a stage
UPDATE wf_app.plan SET decision = '{"next": "@finish"}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
-- malformed: SQL NULL, JSON null, not an object, next not a string, inputs or state not
-- an object, an unknown key, both next and finish, neither
UPDATE wf_app.plan SET decision = NULL;
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = 'null';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '"purge_db"';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '["purge_db"]';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '{"next": ["purge_db"]}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '{"next": "purge_db", "inputs": [1]}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '{"next": "purge_db", "state": "x"}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '{"next": "purge_db", "priority": 1}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '{"next": "purge_db", "finish": "completed"}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET decision = '{"inputs": {}}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
-- an error raised inside decide reaches the caller with its own SQLSTATE
UPDATE wf_app.plan SET decision = '{"next": "purge_db"}', raise = true;
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE wf_app.plan SET raise = false;
-- nothing was written: no stage, the gate completed and current without a transition,
-- the run's state unchanged, and the decide calls' own writes rolled back with them
SELECT pg_temp.snap(:'f2') = :'f2_snap' AS unchanged,
       (SELECT count(*) FROM wf_app.log) = :decide_calls AS decide_writes_rolled_back;
SELECT stage, status, is_current, transition FROM baton.stages WHERE run_id = :'f2';
SELECT status, state FROM baton.run(:'t1', :'f2');
-- an allowed decision now goes through (inputs: the gate's result; state kept)
SELECT * FROM pg_temp.tr(:'t1', :'f2', 1);
SELECT status, state FROM baton.run(:'t1', :'f2');
-- from purge_db: an unknown finish status is malformed
SELECT pg_temp.work(:'t1', :'f2', 1, '{"purged": 10}');
SELECT pg_temp.snap(:'f2') AS f2_snap \gset
UPDATE wf_app.plan SET decision = '{"finish": "done"}';
SELECT * FROM baton.transition_stage(:'t1', :'f2', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'f2') = :'f2_snap' AS unchanged;
-- a finish decision completes the run: reason saved, the last stage stays current with
-- the decision as its transition, state from the decision
UPDATE wf_app.plan SET decision = '{"finish": "completed", "reason": "all done", "state": {"end": 1}}';
SELECT * FROM pg_temp.tr(:'t1', :'f2', 1);
SELECT stage_id IS NULL AS no_stage_id FROM tr_last;
SELECT status, reason, state, finished_at IS NOT NULL AS finished FROM baton.run(:'t1', :'f2');
SELECT stage, entry_seq, status, is_current, inputs, result, transition, pred_ok
  FROM st WHERE run_id = :'f2' ORDER BY id;
-- later calls: finished/completed, nothing changes, decide not called
SELECT pg_temp.snap(:'f2') AS f2_snap \gset
SELECT count(*) AS decide_calls FROM wf_app.log \gset
SELECT * FROM pg_temp.tr(:'t1', :'f2', 1);
SELECT * FROM pg_temp.tr(:'t1', :'f2', 1);
SELECT pg_temp.snap(:'f2') = :'f2_snap' AS unchanged, (SELECT count(*) FROM wf_app.log) = :decide_calls AS no_decide;
-- a finish "failed" decision fails the run, with its reason
SELECT baton.submit(:'t1', 'wf_flow', '{"user": "u3"}', 'f3') AS f3 \gset
SELECT baton.approve(:'t1', :'f3', 'alice', baton.inputs_digest(:'t1', :'f3'));
SELECT baton.acquire_run(:'t1', :'f3', 'w1', '1 hour') AS g;
UPDATE wf_app.plan SET decision = '{"next": "purge_db", "inputs": {}}';
SELECT pg_temp.work(:'t1', :'f3', 1), pg_temp.work(:'t1', :'f3', 1);
UPDATE wf_app.plan SET decision = '{"finish": "failed", "reason": "gave up"}';
SELECT * FROM pg_temp.tr(:'t1', :'f3', 1);
SELECT status, reason, state FROM baton.run(:'t1', :'f3');
SELECT stage, status, is_current, transition FROM st WHERE run_id = :'f3' ORDER BY id;
SELECT * FROM pg_temp.tr(:'t1', :'f3', 1);

-- ---------------------------------------------------------------------------
-- 9. Declarative routing: the first matching entry wins; a plain string always matches;
--    '@finish' completes the run; no match is DU003; inputs are the result.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('wf_decl', '{"start": "a", "stages": {
  "a": {"next": [{"to": "b", "when": "$.stage.result.x == 1"},
                 {"to": "@finish", "when": "$.stage.result.x == 2"},
                 {"to": "c", "when": "$.stage.result.x >= 1"}]},
  "b": {"next": ["c", {"to": "@finish", "when": "$.stage.result.x == 1"}]},
  "c": {"next": ["@finish"]}}}') AS v;
SELECT baton.submit(:'t1', 'wf_decl', '{"d": 1}') AS d1 \gset
SELECT baton.submit(:'t1', 'wf_decl', '{"d": 2}') AS d2 \gset
SELECT baton.submit(:'t1', 'wf_decl', '{"d": 3}') AS d3 \gset
SELECT baton.submit(:'t1', 'wf_decl', '{"d": 4}') AS d4 \gset
SELECT baton.acquire_run(:'t1', r, 'w1', '1 hour') AS g FROM unnest(ARRAY[:'d1', :'d2', :'d3', :'d4']::uuid[]) r;
-- x = 1 matches b (first) and c: b; b's plain "c" comes before the matching @finish
SELECT pg_temp.work(:'t1', :'d1', 1, '{"x": 1}');
SELECT kind, stage, entry_seq, inputs, run_status FROM pg_temp.tr(:'t1', :'d1', 1);
SELECT pg_temp.work(:'t1', :'d1', 1, '{"x": 1, "y": 2}');
SELECT kind, stage, entry_seq, inputs, run_status FROM pg_temp.tr(:'t1', :'d1', 1);
SELECT pg_temp.work(:'t1', :'d1', 1, '{"z": 3}');
SELECT kind, stage, entry_seq, inputs, run_status FROM pg_temp.tr(:'t1', :'d1', 1);
SELECT status, reason FROM baton.run(:'t1', :'d1');
SELECT stage, status, is_current, inputs, result, transition, pred_ok FROM st WHERE run_id = :'d1' ORDER BY id;
-- x = 2: '@finish' (before c, which also matches)
SELECT pg_temp.work(:'t1', :'d2', 1, '{"x": 2}');
SELECT kind, stage, run_status FROM pg_temp.tr(:'t1', :'d2', 1);
SELECT status, reason FROM baton.run(:'t1', :'d2');
SELECT stage, status, is_current, transition FROM st WHERE run_id = :'d2' ORDER BY id;
-- x = 3: c
SELECT pg_temp.work(:'t1', :'d3', 1, '{"x": 3}');
SELECT kind, stage, inputs, run_status FROM pg_temp.tr(:'t1', :'d3', 1);
-- x = 0 (and x missing): no match, DU003, nothing written
SELECT pg_temp.work(:'t1', :'d4', 1, '{"x": 0}');
SELECT pg_temp.snap(:'d4') AS d4_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'d4', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'d4') = :'d4_snap' AS unchanged;
SELECT stage, status, is_current, transition FROM st WHERE run_id = :'d4' ORDER BY id;
SELECT status FROM baton.run(:'t1', :'d4');

-- ---------------------------------------------------------------------------
-- 10. decide runs as the caller, who needs EXECUTE on it.
-- ---------------------------------------------------------------------------
CREATE ROLE baton_wf_worker;
SELECT baton.grant_worker('baton_wf_worker');
GRANT USAGE ON SCHEMA wf_app TO baton_wf_worker;
GRANT SELECT ON wf_app.plan TO baton_wf_worker;
GRANT INSERT ON wf_app.log TO baton_wf_worker;
GRANT USAGE ON SEQUENCE wf_app.log_n_seq TO baton_wf_worker;
REVOKE EXECUTE ON FUNCTION wf_app.decide(jsonb) FROM PUBLIC;
SELECT baton.submit(:'t1', 'wf_flow', '{"user": "u4"}', 'f4') AS f4 \gset
SELECT baton.approve(:'t1', :'f4', 'alice', baton.inputs_digest(:'t1', :'f4'));
UPDATE wf_app.plan SET decision = '{"next": "purge_db"}';
SET ROLE baton_wf_worker;
SELECT baton.acquire_run(:'t1', :'f4', 'w1', '1 hour') AS g;
SELECT kind, stage, stage_id AS f4_gate FROM baton.transition_stage(:'t1', :'f4', 1) \gset
SELECT baton.start_stage(:'t1', :'f4', 1, :f4_gate);
SELECT baton.complete_stage(:'t1', :'f4', 1, :f4_gate, '{"ok": true}');
RESET ROLE;
SELECT pg_temp.snap(:'f4') AS f4_snap \gset
SELECT count(*) AS decide_calls FROM wf_app.log \gset
-- without EXECUTE on the decide function: 42501, nothing written
SET ROLE baton_wf_worker;
SELECT kind, stage FROM baton.transition_stage(:'t1', :'f4', 1);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT pg_temp.snap(:'f4') = :'f4_snap' AS unchanged, (SELECT count(*) FROM wf_app.log) = :decide_calls AS no_decide;
SELECT count(*) AS stages, bool_and(is_current) AS gate_current, min(status) AS gate_status
  FROM baton.stages WHERE run_id = :'f4';
GRANT EXECUTE ON FUNCTION wf_app.decide(jsonb) TO baton_wf_worker;
-- with EXECUTE: the transition goes through, and decide ran as the caller
SET ROLE baton_wf_worker;
SELECT kind, stage, entry_seq, inputs, run_status FROM baton.transition_stage(:'t1', :'f4', 1);
RESET ROLE;
SELECT who FROM wf_app.log ORDER BY n DESC LIMIT 1;
SELECT count(*) = :decide_calls + 1 AS one_decide_call FROM wf_app.log;
SELECT stage, status, is_current FROM st WHERE run_id = :'f4' ORDER BY id;

-- ---------------------------------------------------------------------------
-- 11. DU004: the saved history is inconsistent.
-- ---------------------------------------------------------------------------
-- a running run with no current stage
SELECT baton.submit(:'t1', 'wf_decl', '{"e": 1}') AS e1 \gset
SELECT baton.acquire_run(:'t1', :'e1', 'w1', '1 hour') AS g;
SELECT kind, stage FROM pg_temp.tr(:'t1', :'e1', 1);
UPDATE baton.stages SET is_current = false WHERE run_id = :'e1';
SELECT pg_temp.snap(:'e1') AS e1_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'e1', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'e1') = :'e1_snap' AS unchanged;
-- a current stage whose name is not a stage of the run's version: pending ...
UPDATE baton.stages SET is_current = true, stage = 'zzz' WHERE run_id = :'e1';
SELECT pg_temp.snap(:'e1') AS e1_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'e1', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'e1') = :'e1_snap' AS unchanged;
-- ... and completed
UPDATE baton.stages SET status = 'completed', result = '{"x": 1}' WHERE run_id = :'e1';
SELECT pg_temp.snap(:'e1') AS e1_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'e1', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'e1') = :'e1_snap' AS unchanged;
-- a completed stage whose saved result is not an object (declarative workflow): from b
-- (a plain entry matches) and from a (entries with `when`)
SELECT baton.submit(:'t1', 'wf_decl', '{"e": 2}') AS e2 \gset
SELECT baton.acquire_run(:'t1', :'e2', 'w1', '1 hour') AS g;
SELECT pg_temp.work(:'t1', :'e2', 1, '{"x": 1}'), pg_temp.work(:'t1', :'e2', 1, '{"y": 1}');
UPDATE baton.stages SET result = '[1]' WHERE run_id = :'e2' AND stage = 'b';
SELECT pg_temp.snap(:'e2') AS e2_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'e2', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'e2') = :'e2_snap' AS unchanged;
SELECT baton.submit(:'t1', 'wf_decl', '{"e": 3}') AS e3 \gset
SELECT baton.acquire_run(:'t1', :'e3', 'w1', '1 hour') AS g;
SELECT pg_temp.work(:'t1', :'e3', 1, '{"x": 1}');
UPDATE baton.stages SET result = '[1]' WHERE run_id = :'e3';
SELECT pg_temp.snap(:'e3') AS e3_snap \gset
SELECT * FROM baton.transition_stage(:'t1', :'e3', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'e3') = :'e3_snap' AS unchanged;
SELECT stage, status, is_current, transition FROM st WHERE run_id IN (:'e2', :'e3') ORDER BY id;

-- ---------------------------------------------------------------------------
-- 12. start_stage, complete_stage, fail_stage.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('wf_sf', '{"start": "s", "stages": {"s": {"next": ["t"]}, "t": {"next": ["@finish"], "retry_delay": "2 minutes", "max_attempts": 5}}}') AS v;
SELECT baton.submit(:'t1', 'wf_sf', '{"in": 1}') AS s1 \gset
SELECT baton.submit(:'t1', 'wf_sf', '{"in": 2}') AS s2 \gset
SELECT baton.acquire_run(:'t1', r, 'w1', '1 hour') AS g FROM unnest(ARRAY[:'s1', :'s2']::uuid[]) r;
SELECT kind, stage FROM pg_temp.tr(:'t1', :'s1', 1);
SELECT stage_id AS s1_s FROM tr_last \gset
-- start_stage returns the inputs, attempt + 1, running
SELECT baton.start_stage(:'t1', :'s1', 1, :s1_s) AS inputs;
SELECT status, attempt, started_at IS NOT NULL AS started FROM baton.stages WHERE id = :s1_s;
-- a restarted handler starts it again: a new attempt
SELECT baton.start_stage(:'t1', :'s1', 1, :s1_s) AS inputs;
SELECT status, attempt FROM baton.stages WHERE id = :s1_s;
-- complete_stage saves the result; the same result again is a no-op; another DU007
SELECT baton.complete_stage(:'t1', :'s1', 1, :s1_s, '{"r": 1, "q": [1]}');
SELECT status, result, is_current, completed_at IS NOT NULL AS completed FROM baton.stages WHERE id = :s1_s;
SELECT pg_temp.snap(:'s1') AS s1_snap \gset
SELECT baton.complete_stage(:'t1', :'s1', 1, :s1_s, '{"q": [1], "r": 1}');
SELECT pg_temp.snap(:'s1') = :'s1_snap' AS unchanged;
SELECT baton.complete_stage(:'t1', :'s1', 1, :s1_s, '{"r": 2}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'t1', :'s1', 1, :s1_s);
\echo :LAST_ERROR_SQLSTATE
-- start_stage of a completed stage, even while current: DU007
SELECT baton.start_stage(:'t1', :'s1', 1, :s1_s);
\echo :LAST_ERROR_SQLSTATE
-- fail_stage of a completed stage: DU007
SELECT baton.fail_stage(:'t1', :'s1', 1, :s1_s, 'late');
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'s1') = :'s1_snap' AS unchanged;
-- a stage of another run: DU008
SELECT kind, stage FROM pg_temp.tr(:'t1', :'s2', 1);
SELECT stage_id AS s2_s FROM tr_last \gset
SELECT baton.start_stage(:'t1', :'s2', 1, :s2_s) AS inputs;
\set VERBOSITY sqlstate
SELECT baton.complete_stage(:'t1', :'s2', 1, :s1_s, '{"r": 1, "q": [1]}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'t1', :'s2', 1, :s1_s);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'t1', :'s2', 1, :s1_s, 'x');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'t1', :'s1', 1, -1, '{}');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT pg_temp.snap(:'s1') = :'s1_snap' AS s1_unchanged;
-- fail_stage without retry_in: the default retry_delay of 30 seconds; saves the error
SELECT baton.fail_stage(:'t1', :'s2', 1, :s2_s, 'oops') = now() + interval '30 seconds' AS retry_in_30s;
SELECT status, attempt, error, retry_at > now() AS deadline_ahead FROM baton.stages WHERE id = :s2_s;
-- fail_stage of a failed (not running) stage: DU007
SELECT pg_temp.snap(:'s2') AS s2_snap \gset
SELECT baton.fail_stage(:'t1', :'s2', 1, :s2_s, 'again');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'t1', :'s2', 1, :s2_s, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'s2') = :'s2_snap' AS unchanged;
-- s1 moves on to t (pending): complete_stage and fail_stage of a pending stage: DU007
SELECT kind, stage, inputs FROM pg_temp.tr(:'t1', :'s1', 1);
SELECT stage_id AS s1_t FROM tr_last \gset
SELECT pg_temp.snap(:'s1') AS s1_snap \gset
SELECT baton.complete_stage(:'t1', :'s1', 1, :s1_t, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'t1', :'s1', 1, :s1_t, 'not started');
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'s1') = :'s1_snap' AS unchanged;
-- complete_stage repeated with the same result after the run moved on: a no-op
SELECT baton.complete_stage(:'t1', :'s1', 1, :s1_s, '{"r": 1, "q": [1]}');
SELECT pg_temp.snap(:'s1') = :'s1_snap' AS unchanged;
-- fail_stage without retry_in uses the definition's retry_delay (2 minutes); with
-- retry_in, now() + retry_in
SELECT baton.start_stage(:'t1', :'s1', 1, :s1_t) AS inputs;
SELECT baton.fail_stage(:'t1', :'s1', 1, :s1_t, 'first') = now() + interval '2 minutes' AS retry_in_2min;
UPDATE baton.stages SET retry_at = now() - interval '1 second' WHERE id = :s1_t;
SELECT kind, stage, attempt FROM pg_temp.tr(:'t1', :'s1', 1);
SELECT baton.start_stage(:'t1', :'s1', 1, :s1_t) AS inputs;
SELECT baton.fail_stage(:'t1', :'s1', 1, :s1_t, 'second', '5 minutes') = now() + interval '5 minutes' AS retry_in_5min;
SELECT stage, status, attempt, error, retry_at > now() + interval '4 minutes' AS deadline_saved
  FROM baton.stages WHERE id = :s1_t;

-- ---------------------------------------------------------------------------
-- 13. run_history: chain order along predecessor_id, never timestamps; DU004 for a
--     broken chain; DU008 for an unknown run; zero rows before the start.
-- ---------------------------------------------------------------------------
SELECT stage, entry_seq, status, is_current FROM baton.run_history(:'t1', :'f1');
-- timestamps reversed: the order stays
UPDATE baton.stages s SET created_at = now() - (s.id - (SELECT min(id) FROM baton.stages WHERE run_id = :'f1')) * interval '1 minute',
                          started_at = NULL, completed_at = NULL
 WHERE s.run_id = :'f1';
SELECT stage, entry_seq FROM baton.run_history(:'t1', :'f1');
-- a chain whose ids are not in chain order, written directly: c3 (first) -> c1 -> c2
SELECT baton.submit(:'t1', 'wf_decl', '{"h": 1}') AS h1 \gset
UPDATE baton.runs SET status = 'running' WHERE id = :'h1';
SELECT nextval('baton.entry_id_seq') AS c1 \gset
SELECT nextval('baton.entry_id_seq') AS c2 \gset
SELECT nextval('baton.entry_id_seq') AS c3 \gset
INSERT INTO baton.stages (tenant, id, run_id, stage, entry_seq, predecessor_id, is_current, status, created_at)
VALUES (:'t1', :c3, :'h1', 'a', 1, NULL, false, 'completed', now()),
       (:'t1', :c1, :'h1', 'b', 1, :c3, false, 'completed', now() - interval '1 hour'),
       (:'t1', :c2, :'h1', 'c', 1, :c1, true, 'pending', now() - interval '2 hours');
SELECT stage, id = :c3 AS is_c3, id = :c1 AS is_c1, id = :c2 AS is_c2 FROM baton.run_history(:'t1', :'h1');
-- broken chains: DU004 (the details name stage ids: terse)
\set VERBOSITY terse
-- a predecessor that is not a stage of the run
UPDATE baton.stages SET predecessor_id = -5 WHERE id = :c2;
SELECT stage FROM baton.run_history(:'t1', :'h1');
\echo :LAST_ERROR_SQLSTATE
-- a predecessor that is a stage of another run
UPDATE baton.stages SET predecessor_id = :gate WHERE id = :c2;
SELECT stage FROM baton.run_history(:'t1', :'h1');
\echo :LAST_ERROR_SQLSTATE
-- two starts
UPDATE baton.stages SET predecessor_id = NULL WHERE id = :c2;
SELECT stage FROM baton.run_history(:'t1', :'h1');
\echo :LAST_ERROR_SQLSTATE
-- a fork: b and c both follow a
UPDATE baton.stages SET predecessor_id = :c3 WHERE id = :c2;
SELECT stage FROM baton.run_history(:'t1', :'h1');
\echo :LAST_ERROR_SQLSTATE
-- a cycle through every stage (no start)
UPDATE baton.stages SET predecessor_id = :c1 WHERE id = :c2;
UPDATE baton.stages SET predecessor_id = :c2 WHERE id = :c3;
SELECT stage FROM baton.run_history(:'t1', :'h1');
\echo :LAST_ERROR_SQLSTATE
-- a start, and a cycle beside it (b <-> c)
UPDATE baton.stages SET predecessor_id = NULL WHERE id = :c3;
UPDATE baton.stages SET predecessor_id = :c2 WHERE id = :c1;
SELECT stage FROM baton.run_history(:'t1', :'h1');
\echo :LAST_ERROR_SQLSTATE
-- a stage that is its own predecessor
UPDATE baton.stages SET predecessor_id = :c3 WHERE id = :c1;
UPDATE baton.stages SET predecessor_id = :c2 WHERE id = :c2;
SELECT stage FROM baton.run_history(:'t1', :'h1');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
-- repaired: the chain reads again
UPDATE baton.stages SET predecessor_id = :c1 WHERE id = :c2;
SELECT stage FROM baton.run_history(:'t1', :'h1');
-- unknown run (or another tenant's): DU008; a run that has not started: zero rows
SELECT * FROM baton.run_history(:'t1', :'no_run');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.run_history(:'t3', :'f1');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS not_started FROM baton.run_history(:'t1', :'n1');
SELECT count(*) AS approved_not_started FROM baton.run_history(:'t1', :'k1');

-- ---------------------------------------------------------------------------
-- 14. The fence: a fenced tenant refuses every write (DU002), before the generation
--     or state checks; run(), run_history() and inputs_digest() still answer.
-- ---------------------------------------------------------------------------
SELECT baton.submit(:'t2', 'wf_flow', '{"user": "z"}', 'z1') AS z1 \gset
SELECT baton.submit(:'t2', 'wf_sf', '{"z": 2}') AS z2 \gset
SELECT baton.approve(:'t2', :'z1', 'alice', baton.inputs_digest(:'t2', :'z1'));
SELECT baton.acquire_run(:'t2', :'z1', 'w1', '1 hour') AS g;
SELECT baton.acquire_run(:'t2', :'z2', 'w1', '1 hour') AS g;
SELECT kind, stage FROM pg_temp.tr(:'t2', :'z1', 1);
SELECT stage_id AS z1_s FROM tr_last \gset
SELECT kind, stage FROM pg_temp.tr(:'t2', :'z2', 1);
SELECT stage_id AS z2_s FROM tr_last \gset
SELECT baton.start_stage(:'t2', :'z2', 1, :z2_s) AS inputs;
SELECT baton.submit(:'t2', 'wf_appr', '{"w": 1}') AS z3 \gset
SELECT baton.set_tenant_state(:'t2', 'fenced');
SELECT pg_temp.snap(:'z1') AS z1_snap, pg_temp.snap(:'z2') AS z2_snap, pg_temp.snap(:'z3') AS z3_snap \gset
SELECT count(*) AS t2_runs FROM baton.runs WHERE tenant = :'t2' \gset
SELECT baton.submit(:'t2', 'wf_flow', '{"user": "z"}', 'z1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'t2', 'wf_auto', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.approve(:'t2', :'z3', 'alice', baton.inputs_digest(:'t2', :'z3'));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel(:'t2', :'z3', 'stop');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.acquire_run(:'t2', :'z3', 'w1', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.acquire_next_run(:'t2', 'wf_flow', 'w1', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew_run(:'t2', :'z1', 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.transition_stage(:'t2', :'z1', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.start_stage(:'t2', :'z1', 1, :z1_s);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_stage(:'t2', :'z2', 1, :z2_s, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.fail_stage(:'t2', :'z2', 1, :z2_s, 'x');
\echo :LAST_ERROR_SQLSTATE
-- a stale generation is refused by the fence first
SELECT * FROM baton.transition_stage(:'t2', :'z1', 7);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.release_run(:'t2', :'z1', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT pg_temp.snap(:'z1') = :'z1_snap' AS z1_unchanged, pg_temp.snap(:'z2') = :'z2_snap' AS z2_unchanged,
       pg_temp.snap(:'z3') = :'z3_snap' AS z3_unchanged,
       (SELECT count(*) FROM baton.runs WHERE tenant = :'t2') = :t2_runs AS no_new_run;
-- reads still answer
SELECT workflow, status, owner, generation FROM baton.run(:'t2', :'z1');
SELECT stage, entry_seq, status FROM baton.run_history(:'t2', :'z2');
SELECT baton.inputs_digest(:'t2', :'z3') = encode(sha256(convert_to('{"w": 1}', 'UTF8')), 'hex') AS digest_answers;
-- active again: writes go through
SELECT baton.set_tenant_state(:'t2', 'active');
SELECT baton.complete_stage(:'t2', :'z2', 1, :z2_s, '{}');
SELECT stage, status FROM baton.run_history(:'t2', :'z2');

-- ---------------------------------------------------------------------------
-- Clean up: the role, then the schema of the decide functions.
-- ---------------------------------------------------------------------------
DROP OWNED BY baton_wf_worker;
DROP ROLE baton_wf_worker;
DROP SCHEMA wf_app CASCADE;
SELECT count(*) AS schema_left FROM pg_namespace WHERE nspname = 'wf_app';
