-- ===========================================================================
-- baton.health (0.8.0): one row per check, over known data on a fresh install. Ages
-- are set by direct UPDATEs relative to now() (the details are matched allowing a few
-- seconds of a loaded machine); thresholds are SET in the session. The
-- reaper and xmin_horizon rows depend on the cluster (test/reaper and the isolation
-- spec health_xmin check them); here only their shape.
-- ===========================================================================
DROP EXTENSION pg_baton CASCADE;
CREATE EXTENSION pg_baton;
\set t '00000000-0000-0000-0e08-000000000001'
SELECT baton.create_tenant(:'t');

-- The view's columns, and its rows in order.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'baton.health'::regclass AND attnum > 0 ORDER BY attnum;
SELECT name FROM baton.health;
-- The thresholds' defaults, each a setting any session may change.
SELECT name, setting, unit, context FROM pg_settings WHERE name LIKE 'baton.health%' ORDER BY name;

-- Nothing wrong yet: the rows about pg_baton's own tables are ok; every row's status
-- is one of three, every row has a value and a detail, and a hint exactly when not ok.
SELECT name, status, value, detail FROM baton.health
 WHERE name IN ('expired_leases', 'stuck_runs', 'markers_in_doubt', 'schedules_behind', 'oldest_pending');
SELECT name, status IN ('ok', 'warn', 'critical') AS known_status, value IS NOT NULL AS has_value,
       detail IS NOT NULL AS has_detail, (status = 'ok') = (hint IS NULL) AS hint_when_not_ok
  FROM baton.health;

-- ---------------------------------------------------------------------------
-- oldest_pending: the due pending delivery that became due first. A delivery due in
-- an hour does not count.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'t', 'hw', 'later', run_after => now() + interval '1 hour') IS NOT NULL AS enqueued;
SELECT status, value, detail FROM baton.health WHERE name = 'oldest_pending';
SELECT baton.enqueue(:'t', 'hw', 'p1') AS p1 \gset
SELECT baton.enqueue(:'t', 'hw', 'p2') AS p2 \gset
UPDATE baton.deliveries SET run_after = now() - interval '2 minutes' WHERE tenant = :'t' AND id = :p1;
-- Under the default threshold (5 min) the 2-minute wait is ok; at 0 it warns, naming
-- the delivery, its tenant and its target.
SELECT status, value BETWEEN 120 AND 180 AS two_minutes,
       detail ~ ('^delivery ' || :p1 || ' of tenant ' || :'t' || ' to target "hw" has waited 2 min( [0-9] s)? since it was due$') AS names_p1
  FROM baton.health WHERE name = 'oldest_pending';
SET baton.health_pending_warn = 0;
SELECT status, detail LIKE 'delivery ' || :p1 || ' %' AS names_p1, hint FROM baton.health WHERE name = 'oldest_pending';
SET baton.health_pending_warn = '1min';
SELECT status FROM baton.health WHERE name = 'oldest_pending';
RESET baton.health_pending_warn;

-- ---------------------------------------------------------------------------
-- expired_leases: claimed deliveries whose lease expired; warn once the oldest has
-- waited baton.health_expired_warn (default 1 min).
-- ---------------------------------------------------------------------------
SELECT id AS c1 FROM baton.claim(:'t', 'hw', '1 hour', 1) \gset
SELECT count(*) AS claimed FROM baton.claim(:'t', 'hw', '1 hour', 1);
SELECT status, value FROM baton.health WHERE name = 'expired_leases';
UPDATE baton.deliveries SET lease_until = now() - interval '30 seconds' WHERE tenant = :'t' AND id = :c1;
SELECT status, value,
       detail ~ ('^1 expired lease; the oldest, delivery ' || :c1 || ' of tenant ' || :'t' || ' to target "hw", expired 3[0-9] s ago$') AS names_c1
  FROM baton.health WHERE name = 'expired_leases';
SET baton.health_expired_warn = 0;
SELECT status, value, hint FROM baton.health WHERE name = 'expired_leases';
RESET baton.health_expired_warn;
UPDATE baton.deliveries SET lease_until = now() - interval '10 minutes' WHERE tenant = :'t' AND id = :c1;
SELECT status FROM baton.health WHERE name = 'expired_leases';
-- A reap takes it back: ok again.
SELECT baton.reap() AS reaped;
SELECT status, value FROM baton.health WHERE name = 'expired_leases';

-- ---------------------------------------------------------------------------
-- stuck_runs: an owner's lease expired, or a failed stage's retry deadline passed with
-- no live owner, for baton.health_stuck_after (default 5 min) or more.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('health_wf', '{"start": "a", "stages": {"a": {"next": ["@finish"], "max_attempts": 3}}}') AS v;
SELECT baton.submit(:'t', 'health_wf', '{"n": 1}', 'h1') AS r1 \gset
SELECT baton.submit(:'t', 'health_wf', '{"n": 2}', 'h2') AS r2 \gset
SELECT baton.acquire_run(:'t', :'r1', 'owner-1', '1 hour') AS gen;
SELECT baton.acquire_run(:'t', :'r2', 'owner-2', '1 hour') AS gen;
SELECT stage_id AS s1 FROM baton.transition_stage(:'t', :'r1', 1) \gset
SELECT stage_id AS s2 FROM baton.transition_stage(:'t', :'r2', 1) \gset
SELECT status, value FROM baton.health WHERE name = 'stuck_runs';
-- r1's owner is gone: its lease expired 10 minutes ago.
UPDATE baton.runs SET lease_until = now() - interval '10 minutes' WHERE tenant = :'t' AND id = :'r1';
SELECT status, value,
       detail ~ ('^1 stuck run; the longest, run ' || :'r1' || ' of workflow "health_wf" in tenant ' || :'t'
                 || ': the lease of owner "owner-1" expired 10 min( [0-9] s)? ago$') AS names_r1,
       hint
  FROM baton.health WHERE name = 'stuck_runs';
-- Under a longer bound it is not stuck yet.
SET baton.health_stuck_after = '1h';
SELECT status, value, detail FROM baton.health WHERE name = 'stuck_runs';
RESET baton.health_stuck_after;
-- r2: its stage failed, its owner released it, and the retry deadline passed 20
-- minutes ago: the longest stuck now.
SELECT baton.start_stage(:'t', :'r2', 1, :s2) IS NOT NULL AS started;
SELECT baton.fail_stage(:'t', :'r2', 1, :s2, 'boom', '1 second') IS NOT NULL AS failed;
SELECT baton.release_run(:'t', :'r2', 1);
UPDATE baton.stages SET retry_at = now() - interval '20 minutes' WHERE tenant = :'t' AND id = :s2;
SELECT status, value,
       detail ~ ('^2 stuck runs; the longest, run ' || :'r2' || ' of workflow "health_wf" in tenant ' || :'t'
                 || ': stage "a" failed and its retry deadline passed 20 min( [0-9] s)? ago$') AS names_r2,
       hint
  FROM baton.health WHERE name = 'stuck_runs';

-- ---------------------------------------------------------------------------
-- markers_in_doubt: r1's marker, claimed under generation 1, in doubt once another
-- owner took r1 over (generation 2).
-- ---------------------------------------------------------------------------
SELECT baton.start_stage(:'t', :'r1', 1, :s1) IS NOT NULL AS started;
SELECT baton.claim_marker(:'t', :s1, "position" => 3, kind => 'mail', operation_id => 'op-h');
SELECT status, value FROM baton.health WHERE name = 'markers_in_doubt';
SELECT baton.acquire_run(:'t', :'r1', 'owner-3', '1 hour') AS gen;
SELECT status, value,
       detail LIKE '1 marker in doubt; the oldest, position 3 of entry ' || :s1 || ' (kind "mail") of run '
                   || :'r1' || ' in tenant ' || :'t' || ', claimed % ago' AS names_marker,
       hint
  FROM baton.health WHERE name = 'markers_in_doubt';
SELECT baton.resolve_marker(:'t', :s1, 3, 2, 'done');
SELECT status, value FROM baton.health WHERE name = 'markers_in_doubt';
-- The takeover ended r1's expired lease: only r2 is stuck now.
SELECT value FROM baton.health WHERE name = 'stuck_runs';

-- ---------------------------------------------------------------------------
-- dead_rows: the baton table with the most dead rows against live ones; judged once it
-- has baton.health_dead_rows_min dead rows (default 1000).
-- ---------------------------------------------------------------------------
SET baton.health_dead_rows_min = 0;
SET baton.health_dead_rows_warn = 0;
SELECT status, detail LIKE 'table baton.% dead rows against % live (%), %' AS names_table,
       hint LIKE 'Vacuum it (VACUUM baton.%); %' AS says_vacuum
  FROM baton.health WHERE name = 'dead_rows';
RESET baton.health_dead_rows_min;
RESET baton.health_dead_rows_warn;
SELECT status FROM baton.health WHERE name = 'dead_rows';

-- schedules_behind: none behind; then one whose slot is ten minutes past (as when
-- nobody fires schedules) warns, naming it.
SELECT status, value, detail, hint FROM baton.health WHERE name = 'schedules_behind';
SELECT baton.schedule(:'t', 'nightly', 'reports', '0 3 * * *') > now() AS next_slot_ahead;
UPDATE baton.schedule_rows SET next_fire_at = now() - interval '10 minutes' WHERE tenant = :'t' AND name = 'nightly';
SELECT status, value, detail LIKE '1 schedule behind; the most overdue, "nightly" of tenant ' || :'t' || ', is 10 min overdue' AS names_it, hint IS NOT NULL AS has_hint
  FROM baton.health WHERE name = 'schedules_behind';
SELECT baton.unschedule(:'t', 'nightly');

-- The thresholds refuse what is not a duration, or a fraction outside 0..1.
SET baton.health_xmin_warn = 'soon';
SET baton.health_dead_rows_warn = 2;

-- ---------------------------------------------------------------------------
-- Who reads baton.health: admins (grant_admin grants the view and its function);
-- nobody else (42501), PUBLIC included.
-- ---------------------------------------------------------------------------
CREATE ROLE baton_health_admin;
CREATE ROLE baton_health_worker;
SELECT baton.grant_admin('baton_health_admin');
SELECT baton.grant_worker('baton_health_worker');
SELECT has_table_privilege('baton_health_admin', 'baton.health', 'SELECT') AS admin,
       has_table_privilege('baton_health_worker', 'baton.health', 'SELECT') AS worker,
       has_table_privilege('public', 'baton.health', 'SELECT') AS public,
       has_function_privilege('public', 'baton.health_checks()', 'EXECUTE') AS public_function;
SET ROLE baton_health_admin;
SELECT count(*) AS checks FROM baton.health;
RESET ROLE;
\set VERBOSITY sqlstate
SET ROLE baton_health_worker;
SELECT count(*) FROM baton.health;
SELECT count(*) FROM baton.health_checks();
RESET ROLE;
\set VERBOSITY default
DROP OWNED BY baton_health_admin, baton_health_worker;
DROP ROLE baton_health_admin, baton_health_worker;
