-- ===========================================================================
-- The deliveries' counters (0.15.0): baton.delivery_counters, one row per tenant and
-- target, counts each committed enqueue, claim, finish, failure, retry, cancel, reap and
-- redrive, whatever wrote it (the functions, the direct path, enqueue_batch's
-- multi-insert, direct SQL); nothing of a rolled-back transaction or subtransaction;
-- purge and a fence leave the counts; baton.flush_counts() moves what commits left in
-- shared memory into the table (here the database has no reaper to do it); who may read
-- them and flush; baton.count_events.
-- ===========================================================================
\set a '00000000-0000-0000-0c0a-00000000000a'
\set b '00000000-0000-0000-0c0a-00000000000b'
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');
CREATE FUNCTION pg_temp.counters(t uuid) RETURNS TABLE (target text, enqueued bigint, claimed bigint,
    finished bigint, failed bigint, retried bigint, cancelled bigint, reaped bigint, redriven bigint)
    LANGUAGE sql AS $$
    SELECT c.target, c.enqueued, c.claimed, c.finished, c.failed, c.retried, c.cancelled, c.reaped, c.redriven
      FROM baton.delivery_counters c WHERE c.tenant = t ORDER BY c.target $$;

-- The view's columns.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'baton.delivery_counters'::regclass AND attnum > 0 ORDER BY attnum;

-- ---------------------------------------------------------------------------
-- Every event once, committed.
-- ---------------------------------------------------------------------------
SELECT count(*) AS enqueued FROM (SELECT baton.enqueue(:'a', 'job', 'e' || g) FROM generate_series(1, 6) g) e;
SELECT count(*) AS batched FROM baton.enqueue_batch(:'a',
  '[{"target": "job", "dedup_key": "b1"}, {"target": "job", "dedup_key": "b2"}, {"target": "mail", "dedup_key": "m1"}]');
-- A repeated enqueue inserts nothing: not counted.
SELECT baton.enqueue(:'a', 'job', 'e1') > 0 AS same_id;
SELECT baton.finish(:'a', id, generation) FROM baton.claim(:'a', 'job', '1 hour', 2);
SELECT baton.finish(:'a', id, generation, 'failed') FROM baton.claim(:'a', 'job', '1 hour', 1);
SELECT baton.retry(:'a', id, generation, 'again later') FROM baton.claim(:'a', 'job', '1 hour', 1);
SELECT id AS cancelled_id FROM baton.claim(:'a', 'job', '1 hour', 1) \gset
SELECT baton.cancel_delivery(:'a', :cancelled_id);
SELECT baton.redrive(:'a', 'job');
-- Two leases run out: one is reaped back to pending, the other (its last attempt) to failed.
SELECT baton.enqueue(:'a', 'job', 'last', max_attempts => 1) AS last_id \gset
SELECT count(*) AS claimed FROM baton.claim(:'a', 'job', '1 hour', 10);
UPDATE baton.deliveries SET lease_until = now() - interval '1 minute'
 WHERE tenant = :'a' AND status = 'claimed' AND id IN (:last_id, (SELECT min(id) FROM baton.deliveries WHERE tenant = :'a' AND status = 'claimed'));
SELECT baton.reap();
SELECT baton.flush_counts() > 0 AS flushed;
SELECT * FROM pg_temp.counters(:'a');
-- What each counter counted, against the rows.
SELECT status, count(*) FROM baton.deliveries WHERE tenant = :'a' GROUP BY status ORDER BY status;

-- ---------------------------------------------------------------------------
-- Nothing of a rolled-back transaction or subtransaction; direct SQL counts.
-- ---------------------------------------------------------------------------
BEGIN;
SELECT baton.enqueue(:'b', 'job', 'gone') > 0 AS enqueued;
ROLLBACK;
BEGIN;
SELECT baton.enqueue(:'b', 'job', 'kept') > 0 AS enqueued;
SAVEPOINT s;
SELECT baton.enqueue(:'b', 'job', 'undone') > 0 AS enqueued;
SELECT count(*) AS claimed FROM baton.claim(:'b', 'job', '1 hour', 10);
ROLLBACK TO SAVEPOINT s;
INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (:'b', 'job', 'direct');
COMMIT;
SELECT baton.flush_counts() AS flushed;
SELECT * FROM pg_temp.counters(:'b');
-- A second flush finds nothing new.
SELECT baton.flush_counts() AS flushed;

-- ---------------------------------------------------------------------------
-- Purge leaves the counts. A tenant fenced before the flush: its counts wait in shared
-- memory (the fence refuses the write) until it is active again.
-- ---------------------------------------------------------------------------
SELECT baton.purge('0 seconds') > 0 AS purged;
SELECT target, enqueued, claimed, finished, failed FROM pg_temp.counters(:'a');
SELECT baton.enqueue(:'b', 'job', 'before the fence') > 0 AS enqueued;
SELECT baton.set_tenant_state(:'b', 'fenced');
SELECT baton.flush_counts() AS flushed;
SELECT target, enqueued FROM pg_temp.counters(:'b');
UPDATE baton.event_counts SET enqueued = 0 WHERE tenant = :'b';
SELECT baton.set_tenant_state(:'b', 'active');
SELECT baton.flush_counts() AS flushed;
SELECT target, enqueued FROM pg_temp.counters(:'b');

-- ---------------------------------------------------------------------------
-- baton.count_events: off, nothing is counted; only a superuser sets it.
-- ---------------------------------------------------------------------------
SET baton.count_events = off;
SELECT baton.enqueue(:'b', 'job', 'uncounted') > 0 AS enqueued;
RESET baton.count_events;
SELECT baton.flush_counts() AS flushed;
SELECT target, enqueued FROM pg_temp.counters(:'b');

-- ---------------------------------------------------------------------------
-- Grants: grant_admin gives the view and flush_counts; producers and workers neither.
-- ---------------------------------------------------------------------------
CREATE ROLE baton_counters_admin;
CREATE ROLE baton_counters_worker;
SELECT baton.grant_admin('baton_counters_admin');
SELECT baton.grant_worker('baton_counters_worker');
SET ROLE baton_counters_admin;
SELECT count(*) > 0 AS has_rows FROM baton.delivery_counters;
SELECT baton.flush_counts() AS flushed;
RESET ROLE;
SET ROLE baton_counters_worker;
SELECT count(*) FROM baton.delivery_counters;
SELECT baton.flush_counts();
SET baton.count_events = off;
RESET ROLE;
-- The counts themselves are not writable by them.
SET ROLE baton_counters_admin;
UPDATE baton.event_counts SET enqueued = 0;
RESET ROLE;
DROP OWNED BY baton_counters_admin, baton_counters_worker;
DROP ROLE baton_counters_admin, baton_counters_worker;
