-- Fixtures of the console's browser test (run.sh), loaded as the superuser.
-- psql variables: admin, viewer, worker (role names).
\set ON_ERROR_STOP on
\set A 'c0501e00-0000-4000-8000-00000000000a'
\set B 'c0501e00-0000-4000-8000-00000000000b'

SELECT baton.grant_admin(:'admin');
GRANT SELECT ON baton.tenants, baton.deliveries, baton.ready, baton.leases, baton.runs TO :"admin";
-- The viewer has the read-only grants of docs/guide/console.md and nothing else: it
-- reads every page but may not cancel, redrive or retry.
GRANT USAGE ON SCHEMA baton TO :"viewer";
GRANT SELECT ON baton.health, baton.delivery_counters, baton.targets, baton.schedules TO :"viewer";
GRANT EXECUTE ON FUNCTION baton.health_checks(), baton.delivery(uuid, bigint), baton.run(uuid, uuid),
    baton.run_history(uuid, uuid), baton.markers_in_doubt(uuid, uuid) TO :"viewer";
GRANT SELECT ON baton.tenants, baton.deliveries, baton.ready, baton.leases, baton.runs TO :"viewer";
SELECT baton.grant_worker(:'worker');

SELECT baton.create_tenant(:'A');
SELECT baton.create_tenant(:'B');

-- mailer of A: c1..c9 claimed; c1, c2 finished; c3, c4 failed; c5, c6 cancelled (c5 with
-- markup as its reason); c7, c8, c9 stay claimed. Then k01..k12 pending (k04 at priority 5)
-- and a key and payload that are markup.
SELECT baton.enqueue(:'A', 'mailer', pg_catalog.format('c%s', g)) FROM pg_catalog.generate_series(1, 9) g;
CREATE TEMP TABLE held AS SELECT c.id, c.generation, c.dedup_key FROM baton.claim(:'A', 'mailer', '1 hour', 9) c;
SELECT baton.enqueue(:'A', 'mailer', pg_catalog.format('k%s', pg_catalog.lpad(g::text, 2, '0')),
                     pg_catalog.jsonb_build_object('n', g), priority => CASE WHEN g = 4 THEN 5 ELSE 0 END)
  FROM pg_catalog.generate_series(1, 12) g;
SELECT baton.enqueue(:'A', 'mailer', '<script>alert(1)</script>',
                     '{"html": "<script>alert(1)</script><b>bold</b>"}');
SELECT baton.finish(:'A', id, generation) FROM held WHERE dedup_key IN ('c1', 'c2');
SELECT baton.finish(:'A', id, generation, 'failed', '{"why": "<b>bad</b>"}') FROM held WHERE dedup_key IN ('c3', 'c4');
SELECT baton.cancel_delivery(:'A', id, '<script>alert(3)</script> by <b>ops</b>') FROM held WHERE dedup_key = 'c5';
SELECT baton.cancel_delivery(:'A', id) FROM held WHERE dedup_key = 'c6';

-- A target whose name is markup, and one bound to the worker role (the console's admin
-- is no member of it: its retry is DU005).
SELECT baton.enqueue(:'A', '<img src=x onerror=alert(2)>', 'x1', '{"a": "<i>x</i>"}');
SELECT baton.bind_target(:'A', 'secure', :'worker');
SELECT baton.enqueue(:'A', 'secure', 's1');
SELECT 1 FROM baton.claim(:'A', 'secure', '1 hour');
SELECT baton.enqueue(:'B', 'indexer', pg_catalog.format('i%s', g)) FROM pg_catalog.generate_series(1, 4) g;

-- A two-stage workflow; its run's second stage holds a marker claimed under the first
-- owner's generation, then the run is taken over: that marker is in doubt.
SELECT baton.define_workflow('console_wf', '{"start": "fetch", "stages": {
    "fetch": {"next": ["store"]}, "store": {"next": ["@finish"]}}}');
CREATE TEMP TABLE r AS SELECT baton.submit(:'A', 'console_wf', '{"user": "<script>alert(4)</script>"}') AS id;
CREATE TEMP TABLE g1 AS SELECT baton.acquire_run(:'A', (SELECT id FROM r), 'owner-1', '1 hour') AS g;
CREATE TEMP TABLE s1 AS SELECT * FROM baton.transition_stage(:'A', (SELECT id FROM r), (SELECT g FROM g1));
SELECT baton.start_stage(:'A', (SELECT id FROM r), (SELECT g FROM g1), (SELECT stage_id FROM s1));
SELECT baton.complete_stage(:'A', (SELECT id FROM r), (SELECT g FROM g1), (SELECT stage_id FROM s1), '{"rows": 3}');
CREATE TEMP TABLE s2 AS SELECT * FROM baton.transition_stage(:'A', (SELECT id FROM r), (SELECT g FROM g1), (SELECT stage_id FROM s1));
SELECT baton.start_stage(:'A', (SELECT id FROM r), (SELECT g FROM g1), (SELECT stage_id FROM s2));
SELECT baton.claim_marker(:'A', (SELECT stage_id FROM s2), "position" => 1, kind => 'http', operation_id => 'op-<b>1</b>');
SELECT baton.release_run(:'A', (SELECT id FROM r), (SELECT g FROM g1));
SELECT baton.acquire_run(:'A', (SELECT id FROM r), 'owner-2', '1 hour');
-- A second run, only submitted.
SELECT baton.submit(:'A', 'console_wf', '{"user": "bob"}');

-- Schedules: one fired once, one not yet due.
SELECT baton.schedule(:'A', 'tick', 'mailer', '@every 1 second');
SELECT baton.schedule(:'A', 'nightly', 'mailer', '0 3 * * *', time_zone => 'Europe/Paris');
SELECT pg_catalog.pg_sleep(1.1);
SELECT baton.fire_schedules();
SELECT baton.schedule(:'A', 'tick', 'mailer', '@every 1 hour');
SELECT baton.flush_counts();
