-- ===========================================================================
-- Read-only transactions: every write function of the extension refuses with 25006
-- (read_only_sql_transaction), naming itself, before it reads or writes anything; the
-- read functions and views answer. A standby refuses the same way ("during recovery":
-- test/tooling/replica.sh). Direct access on or off, the answers are the same.
-- ===========================================================================
\set t '00000000-0000-0000-0f01-000000000001'
SELECT baton.create_tenant(:'t');
CREATE ROLE baton_ro_role;
SELECT baton.enqueue(:'t', 'ro', 'k' || i, jsonb_build_object('i', i)) IS NOT NULL AS enqueued
  FROM generate_series(1, 3) i;
SELECT id AS did, generation AS dgen FROM baton.claim(:'t', 'ro', '1 hour') \gset
SELECT baton.define_workflow('ro_wf', '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}');
SELECT baton.submit(:'t', 'ro_wf', '{"n": 1}', 'ro-1') AS run \gset
SELECT baton.submit(:'t', 'ro_wf', '{"n": 2}', 'ro-2') AS run2 \gset
SELECT baton.acquire_run(:'t', :'run', 'o1', '1 hour') AS gen \gset
SELECT stage_id AS sid FROM baton.transition_stage(:'t', :'run', :gen) \gset
SELECT baton.start_stage(:'t', :'run', :gen, :sid);
SELECT baton.claim_marker(:'t', :sid, "position" => 0, kind => 'mail');
-- Acquired again (a new generation): the marker claimed under the old one is in doubt.
SELECT baton.acquire_run(:'t', :'run', 'o1', '1 hour') AS gen \gset

-- The state of every table, to show that nothing below changes it.
CREATE FUNCTION pg_temp.state() RETURNS text LANGUAGE sql AS $$
  SELECT md5(string_agg(x, ',' ORDER BY x)) FROM (
    SELECT 'd' || t::text AS x FROM baton.deliveries t UNION ALL SELECT 'r' || t::text FROM baton.runs t
    UNION ALL SELECT 's' || t::text FROM baton.stages t UNION ALL SELECT 'm' || t::text FROM baton.markers t
    UNION ALL SELECT 'e' || t::text FROM baton.step_entries t UNION ALL SELECT 'w' || t::text FROM baton.workflows t
    UNION ALL SELECT 't' || t::text FROM baton.tenants t UNION ALL SELECT 'b' || t::text FROM baton.target_bindings t
    UNION ALL SELECT 'p' || t::text FROM baton.paused_targets t) u $$;
SELECT pg_temp.state() AS before \gset
-- The SQLSTATE and message a statement fails with, or 'ok'.
CREATE FUNCTION pg_temp.outcome(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE TEMP TABLE writes (fn text, sql text);
INSERT INTO writes VALUES
  ('enqueue',          format('SELECT baton.enqueue(%L, ''ro'', ''k9'')', :'t')),
  ('enqueue_batch',    format('SELECT * FROM baton.enqueue_batch(%L, ''[{"target": "ro", "dedup_key": "k8"}]'')', :'t')),
  ('claim',            format('SELECT * FROM baton.claim(%L, ''ro'', ''1 minute'', 5)', :'t')),
  ('renew',            format('SELECT baton.renew(%L, %s, %s, ''1 minute'')', :'t', :did, :dgen)),
  ('finish',           format('SELECT baton.finish(%L, %s, %s)', :'t', :did, :dgen)),
  ('finish_batch',     format('SELECT * FROM baton.finish_batch(%L, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[])', :'t', :did, :dgen)),
  ('retry',            format('SELECT baton.retry(%L, %s, %s, ''again'', ''0 seconds'')', :'t', :did, :dgen)),
  ('reap',             'SELECT baton.reap()'),
  ('purge',            'SELECT baton.purge(''0 seconds'')'),
  ('flush_counts',     'SELECT baton.flush_counts()'),
  ('cancel_delivery',  format('SELECT baton.cancel_delivery(%L, %s)', :'t', :did)),
  ('redrive',          format('SELECT baton.redrive(%L, ''ro'')', :'t')),
  ('schedule',         format('SELECT baton.schedule(%L, ''ro'', ''ro'', ''@daily'')', :'t')),
  ('unschedule',       format('SELECT baton.unschedule(%L, ''ro'')', :'t')),
  ('fire_schedules',   'SELECT baton.fire_schedules()'),
  ('create_tenant',    'SELECT baton.create_tenant(''00000000-0000-0000-0f01-0000000000ff'')'),
  ('set_tenant_state', format('SELECT baton.set_tenant_state(%L, ''quiescing'')', :'t')),
  ('bind_target',      format('SELECT baton.bind_target(%L, ''ro'', ''baton_ro_role'')', :'t')),
  ('claim_fair',       'SELECT * FROM baton.claim_fair(''ro'', ''1 minute'', 5)'),
  ('pause',            format('SELECT baton.pause(%L, ''ro'')', :'t')),
  ('resume',           format('SELECT baton.resume(%L, ''ro'')', :'t')),
  ('set_weight',       format('SELECT baton.set_weight(%L, ''ro'', 2)', :'t')),
  ('limit_key',        format('SELECT baton.limit_key(%L, ''ro'', 2, ''k'')', :'t')),
  ('unlimit_key',      format('SELECT baton.unlimit_key(%L, ''ro'', ''k'')', :'t')),
  ('rate_limit_key',   format('SELECT baton.rate_limit_key(%L, ''ro'', 5, ''1 second'')', :'t')),
  ('age_pending',      'SELECT baton.age_pending()'),
  ('enqueue_keyed',    format('SELECT baton.enqueue_keyed(%L, ''ro'', ''rok'', ''k'')', :'t')),
  ('pause_everywhere', 'SELECT baton.pause_everywhere(''ro'')'),
  ('resume_everywhere', 'SELECT baton.resume_everywhere(''ro'')'),
  ('grant_producer',   'SELECT baton.grant_producer(''baton_ro_role'')'),
  ('grant_worker',     'SELECT baton.grant_worker(''baton_ro_role'')'),
  ('grant_admin',      'SELECT baton.grant_admin(''baton_ro_role'')'),
  ('distribute',       'SELECT baton.distribute()'),
  ('define_workflow',  'SELECT baton.define_workflow(''ro_wf2'', ''{"start": "a", "stages": {"a": {"next": ["@finish"]}}}'')'),
  ('submit',           format('SELECT baton.submit(%L, ''ro_wf'', ''{"n": 3}'', ''ro-3'')', :'t')),
  ('approve',          format('SELECT baton.approve(%L, %L, ''alice'', baton.inputs_digest(%L, %L))', :'t', :'run2', :'t', :'run2')),
  ('cancel',           format('SELECT baton.cancel(%L, %L, ''no'')', :'t', :'run2')),
  ('acquire_run',      format('SELECT baton.acquire_run(%L, %L, ''o3'', ''1 minute'')', :'t', :'run2')),
  ('acquire_next_run', format('SELECT * FROM baton.acquire_next_run(%L, ''ro_wf'', ''o3'', ''1 minute'')', :'t')),
  ('renew_run',        format('SELECT baton.renew_run(%L, %L, %s, ''1 minute'')', :'t', :'run', :gen)),
  ('release_run',      format('SELECT baton.release_run(%L, %L, %s)', :'t', :'run', :gen)),
  ('transition_stage', format('SELECT * FROM baton.transition_stage(%L, %L, %s)', :'t', :'run', :gen)),
  ('start_stage',      format('SELECT baton.start_stage(%L, %L, %s, %s)', :'t', :'run', :gen, :sid)),
  ('complete_stage',   format('SELECT baton.complete_stage(%L, %L, %s, %s, ''{}'')', :'t', :'run', :gen, :sid)),
  ('fail_stage',       format('SELECT baton.fail_stage(%L, %L, %s, %s, ''boom'')', :'t', :'run', :gen, :sid)),
  ('enter_step',       format('SELECT * FROM baton.enter_step(%L, ''user-1'', ''purge'', ''d1'')', :'t')),
  ('claim_marker',     format('SELECT baton.claim_marker(%L, %s, "position" => 1, kind => ''db'')', :'t', :sid)),
  ('complete_marker',  format('SELECT baton.complete_marker(%L, %s, "position" => 0, state => ''done'')', :'t', :sid)),
  ('resolve_marker',   format('SELECT baton.resolve_marker(%L, %s, 0, %s, ''done'')', :'t', :sid, :gen));
-- Every function of the extension is either one of these writes or a read below (the
-- *_rows functions exist on a distributed install: what its views read, below).
SELECT p.proname AS unclassified FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'baton' AND p.prorettype <> 'trigger'::regtype
   AND p.proname NOT IN (SELECT fn FROM writes)
   AND p.proname NOT IN ('delivery', 'run', 'run_history', 'inputs_digest', 'marker', 'markers_in_doubt',
                         'tenant_write_allowed', 'wakeup_channel', 'new_wakeup_secret', 'health_checks',
                         'delivery_stats_rows', 'run_stats_rows', 'schedules_rows')
 ORDER BY 1;

-- ---------------------------------------------------------------------------
-- BEGIN READ ONLY: every write refuses, naming itself.
-- ---------------------------------------------------------------------------
BEGIN READ ONLY;
SELECT fn, pg_temp.outcome(sql) FROM writes ORDER BY fn;
-- The reads answer.
SELECT id = :did AS same_id, status, generation FROM baton.delivery(:'t', :did);
SELECT status, owner, generation FROM baton.run(:'t', :'run');
SELECT stage, entry_seq, status, attempt FROM baton.run_history(:'t', :'run');
SELECT length(baton.inputs_digest(:'t', :'run')) AS digest_chars;
SELECT state, kind FROM baton.marker(:'t', :sid, 0);
SELECT "position", stage, kind, generation FROM baton.markers_in_doubt(:'t', :'run');
SELECT baton.tenant_write_allowed(:'t');
SELECT baton.wakeup_channel(:'t', 'ro') ~ '^baton_[0-9a-f]{32}$' AS channel;
SELECT length(baton.new_wakeup_secret()) AS secret_bytes;
SELECT target, pending, claimed FROM baton.delivery_stats WHERE tenant = :'t';
SELECT workflow, submitted, approved, running FROM baton.run_stats WHERE tenant = :'t';
SELECT count(*) AS checks FROM baton.health;
COMMIT;
SELECT pg_temp.state() = :'before' AS nothing_changed;

-- The whole refusal: message, detail and hint.
\set VERBOSITY default
BEGIN READ ONLY;
SELECT * FROM baton.claim(:'t', 'ro', '1 minute');
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE

-- default_transaction_read_only, direct access on and off.
SET default_transaction_read_only = on;
SET baton.direct_access = on;
SELECT * FROM baton.claim(:'t', 'ro', '1 minute');
SELECT baton.finish(:'t', :did, :dgen);
SET baton.direct_access = off;
SELECT * FROM baton.claim(:'t', 'ro', '1 minute');
SELECT baton.finish(:'t', :did, :dgen);
RESET baton.direct_access;
RESET default_transaction_read_only;
\set VERBOSITY sqlstate
SELECT pg_temp.state() = :'before' AS nothing_changed;

-- Read-write again: the same calls work.
SELECT count(*) AS claimed FROM baton.claim(:'t', 'ro', '1 minute');
SELECT baton.finish(:'t', :did, :dgen);
DROP OWNED BY baton_ro_role;
DROP ROLE baton_ro_role;
