-- ===========================================================================
-- The views for monitoring (0.2.0): baton.delivery_stats (per tenant and target) and
-- baton.run_stats (per tenant and workflow), over known data. Timestamps are set by
-- direct UPDATEs relative to now(), so every window and age has a known answer.
-- ===========================================================================
\set t '00000000-0000-0000-0e07-000000000001'
\set u '00000000-0000-0000-0e07-000000000002'
SELECT baton.create_tenant(:'t');
SELECT baton.create_tenant(:'u');

-- ---------------------------------------------------------------------------
-- delivery_stats
-- ---------------------------------------------------------------------------
-- Target 'mon': k1..k9. k1, k2 pending; k3 claimed with an expired lease, k4 claimed
-- with a live one; k5 finished 30 s ago, k6 finished 3 min ago, k7 finished 10 min ago;
-- k8 failed 2 min ago, k9 failed 1 hour ago. Target 'mon2' of tenant u: one pending.
-- (k1 and k2 have a lower priority, so the claim of 7 leaves them pending.)
SELECT count(*) AS enqueued FROM (
  SELECT baton.enqueue(:'t', 'mon', 'k' || i, priority => CASE WHEN i <= 2 THEN -1 ELSE 0 END, max_attempts => 1)
    FROM generate_series(1, 9) i) e;
SELECT baton.enqueue(:'u', 'mon2', 'x1') IS NOT NULL AS enqueued;
SELECT count(*) AS claimed FROM baton.claim(:'t', 'mon', '1 hour', 7);
SELECT count(*) AS finished
  FROM baton.deliveries d, LATERAL baton.finish(:'t', d.id, d.generation)
 WHERE d.tenant = :'t' AND d.dedup_key IN ('k5', 'k6', 'k7');
SELECT count(*) AS failed
  FROM baton.deliveries d, LATERAL baton.finish(:'t', d.id, d.generation, 'failed')
 WHERE d.tenant = :'t' AND d.dedup_key IN ('k8', 'k9');
SELECT status, count(*) FROM baton.deliveries WHERE tenant = :'t' GROUP BY status ORDER BY status;
UPDATE baton.deliveries SET lease_until = now() - interval '1 second' WHERE tenant = :'t' AND dedup_key = 'k3';
UPDATE baton.deliveries SET settled_at = now() - interval '30 seconds' WHERE tenant = :'t' AND dedup_key = 'k5';
UPDATE baton.deliveries SET settled_at = now() - interval '3 minutes' WHERE tenant = :'t' AND dedup_key = 'k6';
UPDATE baton.deliveries SET settled_at = now() - interval '10 minutes' WHERE tenant = :'t' AND dedup_key = 'k7';
UPDATE baton.deliveries SET settled_at = now() - interval '2 minutes' WHERE tenant = :'t' AND dedup_key = 'k8';
UPDATE baton.deliveries SET settled_at = now() - interval '1 hour' WHERE tenant = :'t' AND dedup_key = 'k9';
UPDATE baton.deliveries SET created_at = now() - interval '20 minutes' WHERE tenant = :'t' AND dedup_key = 'k2';
-- Expected: pending 2, claimed 2, finished 3, failed 2, expired_leases 1 (k3);
-- finished_last_1m 1 (k5), finished_last_5m 2 (k5, k6), failed_last_5m 1 (k8);
-- the oldest pending (k2) is 20 minutes old.
SELECT tenant = :'t' AS is_t, target, pending, claimed, finished, failed, expired_leases,
       finished_last_1m, finished_last_5m, failed_last_5m,
       oldest_pending_age >= interval '20 minutes' AND oldest_pending_age < interval '21 minutes' AS pending_age_20m
  FROM baton.delivery_stats WHERE tenant IN (:'t', :'u') ORDER BY target;
-- After a reap, the expired lease is settled (failed: k3 had max_attempts 1), and it
-- counts in the failures of the last minutes.
SELECT baton.reap() >= 1 AS reaped;
SELECT target, pending, claimed, finished, failed, expired_leases, failed_last_5m
  FROM baton.delivery_stats WHERE tenant = :'t' ORDER BY target;

-- ---------------------------------------------------------------------------
-- run_stats
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('mon_gate', '{"start": "a", "requires_approval": true, "stages": {"a": {"next": ["@finish"]}}}') AS v;
SELECT baton.define_workflow('mon_auto', '{"start": "a", "stages": {"a": {"next": ["@finish"], "max_attempts": 3}}}') AS v;
-- mon_gate: two submitted (awaiting approval); the older 15 minutes old.
SELECT baton.submit(:'t', 'mon_gate', '{"n": 1}', 'g1') AS g1 \gset
SELECT baton.submit(:'t', 'mon_gate', '{"n": 2}', 'g2') AS g2 \gset
UPDATE baton.runs SET created_at = now() - interval '15 minutes' WHERE tenant = :'t' AND id = :'g1';
-- mon_auto: r1 approved (never acquired); r2 running; r3 running with its stage failed,
-- waiting on a retry deadline an hour away; r4 running, owner's lease expired (stuck);
-- r5 completed just now; r6 completed an hour ago; r7 failed (its stage's attempts
-- spent); r8 cancelled.
SELECT count(*) AS submitted FROM (
  SELECT baton.submit(:'t', 'mon_auto', jsonb_build_object('n', i), 'a' || i) FROM generate_series(1, 8) i) s;
SELECT id AS r1 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a1' \gset
SELECT id AS r2 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a2' \gset
SELECT id AS r3 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a3' \gset
SELECT id AS r4 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a4' \gset
SELECT id AS r5 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a5' \gset
SELECT id AS r6 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a6' \gset
SELECT id AS r7 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a7' \gset
SELECT id AS r8 FROM baton.runs WHERE tenant = :'t' AND idempotency_key = 'a8' \gset
-- r2..r7: acquired (generation 1) and moved into their start stage.
SELECT count(*) AS acquired FROM (SELECT baton.acquire_run(:'t', r, 'w1', '1 hour')
  FROM unnest(ARRAY[:'r2', :'r3', :'r4', :'r5', :'r6', :'r7']::uuid[]) r) x;
SELECT count(*) AS started FROM (SELECT baton.transition_stage(:'t', r, 1)
  FROM unnest(ARRAY[:'r2', :'r3', :'r4', :'r5', :'r6', :'r7']::uuid[]) r) x;
SELECT id AS r3_s FROM baton.stages WHERE tenant = :'t' AND run_id = :'r3' \gset
SELECT id AS r5_s FROM baton.stages WHERE tenant = :'t' AND run_id = :'r5' \gset
SELECT id AS r6_s FROM baton.stages WHERE tenant = :'t' AND run_id = :'r6' \gset
SELECT id AS r7_s FROM baton.stages WHERE tenant = :'t' AND run_id = :'r7' \gset
SELECT baton.start_stage(:'t', :'r3', 1, :r3_s) IS NOT NULL AS started;
SELECT baton.fail_stage(:'t', :'r3', 1, :r3_s, 'later', '1 hour') > now() AS waits;
UPDATE baton.runs SET lease_until = now() - interval '1 minute' WHERE tenant = :'t' AND id = :'r4';
SELECT baton.start_stage(:'t', :'r5', 1, :r5_s) IS NOT NULL AS started;
SELECT baton.complete_stage(:'t', :'r5', 1, :r5_s);
SELECT kind, run_status FROM baton.transition_stage(:'t', :'r5', 1);
SELECT baton.start_stage(:'t', :'r6', 1, :r6_s) IS NOT NULL AS started;
SELECT baton.complete_stage(:'t', :'r6', 1, :r6_s);
SELECT kind, run_status FROM baton.transition_stage(:'t', :'r6', 1);
UPDATE baton.runs SET finished_at = now() - interval '1 hour' WHERE tenant = :'t' AND id = :'r6';
-- r7: three failed attempts, each with a deadline of now; the next transition fails the run.
SELECT count(*) AS failed_attempts FROM (
  SELECT baton.start_stage(:'t', :'r7', 1, :r7_s), baton.fail_stage(:'t', :'r7', 1, :r7_s, 'no', '0 seconds')
    FROM generate_series(1, 3)) x;
SELECT kind, run_status FROM baton.transition_stage(:'t', :'r7', 1);
SELECT baton.cancel(:'t', :'r8', 'not needed');
SELECT idempotency_key, status FROM baton.runs WHERE tenant = :'t' ORDER BY workflow, idempotency_key;
-- Expected, mon_auto: approved 1 (r1), running 3 (r2, r3, r4), completed 2 (r5, r6),
-- failed 1, cancelled 1; waiting_retry 1 (r3); stuck 1 (r4); completed_last_5m 1 (r5);
-- failed_last_5m 1 (r7). mon_gate: submitted 2, the oldest 15 minutes old.
SELECT workflow, submitted, approved, running, completed, failed, cancelled, waiting_retry, stuck,
       completed_last_5m, failed_last_5m,
       oldest_unfinished_age >= interval '15 minutes' AS unfinished_15m
  FROM baton.run_stats WHERE tenant = :'t' ORDER BY workflow;
-- A run whose stuck owner renews (or a new owner acquires) is no longer stuck.
SELECT baton.acquire_run(:'t', :'r4', 'w2', '1 hour') AS r4_gen;
SELECT workflow, running, stuck FROM baton.run_stats WHERE tenant = :'t' AND workflow = 'mon_auto';
-- A retry deadline that has passed is no longer a wait.
UPDATE baton.stages SET retry_at = now() - interval '1 second' WHERE tenant = :'t' AND id = :r3_s;
SELECT workflow, waiting_retry FROM baton.run_stats WHERE tenant = :'t' AND workflow = 'mon_auto';

-- ---------------------------------------------------------------------------
-- Who reads the views: admins (grant_admin grants every view of the schema); nobody
-- else, PUBLIC included.
-- ---------------------------------------------------------------------------
CREATE ROLE baton_mon_admin;
CREATE ROLE baton_mon_worker;
SELECT baton.grant_admin('baton_mon_admin');
SELECT baton.grant_worker('baton_mon_worker');
SELECT v AS view,
       has_table_privilege('baton_mon_admin', v, 'SELECT') AS admin,
       has_table_privilege('baton_mon_worker', v, 'SELECT') AS worker,
       has_table_privilege('public', v, 'SELECT') AS public
  FROM unnest(ARRAY['baton.delivery_stats', 'baton.run_stats']) v;
SET ROLE baton_mon_admin;
SELECT workflow, completed FROM baton.run_stats WHERE tenant = :'t' ORDER BY workflow;
RESET ROLE;
SET ROLE baton_mon_worker;
SELECT count(*) FROM baton.run_stats;
RESET ROLE;
DROP OWNED BY baton_mon_admin, baton_mon_worker;
DROP ROLE baton_mon_admin, baton_mon_worker;
