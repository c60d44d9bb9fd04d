-- The one workload of the differential test (test/differential/run.sh), run once with
-- baton.direct_access on and once with it off (psql variable direct_access), each in a
-- database of its own made by setup.sql. One connection, one step a transaction, fixed
-- keys, payloads and order: both runs make the same calls with the same ids. Times are
-- the runs' own; every answer shows them relative to now() (a lease as its length),
-- and the rows are compared with their times ranked (run.sh).
--
-- Each line is `n|kind|fired|hot|label|answer` (dw.step in setup.sql): the answers must
-- be the same in both runs; `fired` tells which path wrote, `hot` how many of the
-- step's updates of baton.deliveries were heap-only (run.sh checks both).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET track_functions = 'all';
SET baton.direct_access = :'direct_access';
CREATE TEMP SEQUENCE dw_steps;
\pset format unaligned
\pset tuples_only on
\pset null '(null)'

-- ---------------------------------------------------------------------------------
-- Enqueues: single calls (statements on both paths) and batches (direct inserts).
-- ---------------------------------------------------------------------------------
SELECT * FROM dw.step('sql', 'create tenants a, b, c', $$
  SELECT baton.create_tenant(t) FROM unnest(ARRAY[dw.a(), dw.b(), dw.c()]) t $$);
SELECT * FROM dw.step('sql', 'enqueue a/q: s1 s2, s3 priority 5, s4 due long ago, s5 one attempt', $$
  SELECT baton.enqueue(dw.a(), 'q', 's1', '{"n": "s1"}'),
         baton.enqueue(dw.a(), 'q', 's2', '{"n": "s2"}'),
         baton.enqueue(dw.a(), 'q', 's3', '{"n": "s3"}', priority => 5),
         baton.enqueue(dw.a(), 'q', 's4', '{"n": "s4"}', run_after => '2000-01-01 00:00:00+00'),
         baton.enqueue(dw.a(), 'q', 's5', '{"n": "s5"}', max_attempts => 1) $$);
SELECT * FROM dw.step('direct', 'enqueue_batch a/q: q1..q40', $$
  SELECT id, inserted FROM baton.enqueue_batch(dw.a(), dw.items('q', 'q', 40)) $$);
SELECT * FROM dw.step('direct', 'enqueue_batch a/r: r1..r12', $$
  SELECT id, inserted FROM baton.enqueue_batch(dw.a(), dw.items('r', 'r', 12)) $$);
SELECT * FROM dw.step('direct', 'enqueue_batch b/q: b1..b6 and c/q: c1..c6', $$
  SELECT 'b', id, inserted FROM baton.enqueue_batch(dw.b(), dw.items('q', 'b', 6))
  UNION ALL
  SELECT 'c', id, inserted FROM baton.enqueue_batch(dw.c(), dw.items('q', 'c', 6)) $$);
SELECT * FROM dw.step('direct', 'enqueue_batch a/q: q39 q40 again (dedup hits), q41 q42 new, q41 twice', $$
  SELECT id, inserted FROM baton.enqueue_batch(dw.a(), dw.items('q', 'q', 4, 39) || dw.items('q', 'q', 1, 41)) $$);
-- A batch whose key is taken with another payload goes on item by item through the
-- statements, on both paths (src/api/enqueue.cpp, enqueue_each()): kind mixed.
SELECT * FROM dw.step('mixed', 'enqueue_batch a/q: q43 new, q1 with another payload: DU009, nothing inserted', $$
  SELECT id, inserted FROM baton.enqueue_batch(dw.a(), dw.items('q', 'q', 1, 43) || '[{"target": "q", "dedup_key": "q1", "payload": {"other": 1}}]') $$);
SELECT * FROM dw.step('sql', 'enqueue a/q: s1 again (same id), s2 with another payload (DU009)', $$
  SELECT baton.enqueue(dw.a(), 'q', 's1', '{"n": "s1"}') = dw.id(dw.a(), 's1') AS same_id,
         baton.enqueue(dw.a(), 'q', 's2', '{"n": "other"}') $$);
SELECT * FROM dw.step('sql', 'enqueue a/x: x1 with a binding (for a claim with expected)', $$
  SELECT baton.enqueue(dw.a(), 'x', 'x1', '{"n": "x1"}', '{"user": "u1"}') $$);
-- Every range of the BRIN summarized: from here on, an update that stays on its page
-- must widen that page's summary.
SELECT * FROM dw.step('sql', 'summarize every range of dx_brin', $$ SELECT dw.summarize() > 0 $$);

-- ---------------------------------------------------------------------------------
-- Claims, finishes, renewals, retries (a/q, leases of an hour).
-- ---------------------------------------------------------------------------------
SELECT * FROM dw.step('direct', 'claim a/q: s3 (priority 5)', $$
  SELECT id, dedup_key, generation, attempt, lease_until - now() AS lease, payload
    FROM baton.claim(dw.a(), 'q', '1 hour') $$);
SELECT * FROM dw.step('direct', 'claim a/q 6: priority 2 first, then enqueue order', $$
  SELECT id, dedup_key, generation, attempt, lease_until - now() AS lease
    FROM baton.claim(dw.a(), 'q', '1 hour', 6) $$);
SELECT * FROM dw.step('direct', 'finish s3 with a result', $$
  SELECT baton.finish(dw.a(), dw.id(dw.a(), 's3'), 1, 'finished', '{"ok": 3}') $$);
SELECT * FROM dw.step('direct', 'finish s3 again, failed: the stored status', $$
  SELECT baton.finish(dw.a(), dw.id(dw.a(), 's3'), 1, 'failed') $$);
SELECT * FROM dw.step('direct', 'finish s3 at generation 0: DU001', $$
  SELECT baton.finish(dw.a(), dw.id(dw.a(), 's3'), 0) $$);
SELECT * FROM dw.step('direct', 'finish q5, failed, with a result', $$
  SELECT baton.finish(dw.a(), dw.id(dw.a(), 'q5'), 1, 'failed', '{"why": "q5"}') $$);
SELECT * FROM dw.step('sql', 'renew q10 for two hours', $$
  SELECT baton.renew(dw.a(), dw.id(dw.a(), 'q10'), 1, '2 hours') - now() $$);
SELECT * FROM dw.step('sql', 'retry q15 at once, q20 in an hour', $$
  SELECT baton.retry(dw.a(), dw.id(dw.a(), 'q15'), 1, 'q15 failed', '0'),
         baton.retry(dw.a(), dw.id(dw.a(), 'q20'), 1, 'q20 failed', '1 hour') $$);
SELECT * FROM dw.step('direct', 'finish_batch: s1 s2 (never claimed: lost), q10, q15 (retried: lost), s3 (stored), an unknown id, q20 (retried: lost)', $$
  SELECT f.id, f.status FROM baton.finish_batch(dw.a(),
           dw.ids(dw.a(), ARRAY['s1', 's2', 'q10', 'q15', 's3']) || ARRAY[-1::bigint] || dw.id(dw.a(), 'q20'),
           ARRAY[1, 1, 1, 1, 1, 1, 1]::bigint[]) f $$);
SELECT * FROM dw.step('direct', 'claim a/q 4: q15 (retried: attempt 2), q35, q40, s1', $$
  SELECT id, dedup_key, generation, attempt, lease_until - now() AS lease
    FROM baton.claim(dw.a(), 'q', '1 hour', 4) $$);
SELECT * FROM dw.step('direct', 'claim a/q 3 (s2 s4 s5) and finish s2 and s4 in the same statement', $$
  SELECT c.dedup_key, CASE WHEN c.dedup_key <> 's5'
                           THEN baton.finish(dw.a(), c.id, c.generation, 'finished', jsonb_build_object('k', c.dedup_key)) END
    FROM baton.claim(dw.a(), 'q', '1 hour', 3) c $$);
SELECT * FROM dw.step('sql', 'claim a/x with a missed expected, then with the right one', $$
  SELECT 'miss', count(*)::text, NULL::bigint FROM baton.claim(dw.a(), 'x', '1 hour', 1, '{"user": "u2"}')
  UNION ALL
  SELECT 'hit', dedup_key, generation FROM baton.claim(dw.a(), 'x', '1 hour', 1, '{"user": "u1"}') $$);
SELECT * FROM dw.step('direct', 'finish x1', $$
  SELECT baton.finish(dw.a(), dw.id(dw.a(), 'x1'), 1) $$);
SELECT * FROM dw.step('sql', 'retry s5 (its one attempt): failed', $$
  SELECT baton.retry(dw.a(), dw.id(dw.a(), 's5'), 1, 's5 gave up') $$);
SELECT * FROM dw.step('direct', 'finish s5 by its settling generation: the stored status', $$
  SELECT baton.finish(dw.a(), dw.id(dw.a(), 's5'), 1) $$);

-- ---------------------------------------------------------------------------------
-- Cancels.
-- ---------------------------------------------------------------------------------
SELECT * FROM dw.step('sql', 'cancel q1 (pending) and q25 (claimed), q1 again', $$
  SELECT baton.cancel_delivery(dw.a(), dw.id(dw.a(), 'q1'), 'not needed'),
         baton.cancel_delivery(dw.a(), dw.id(dw.a(), 'q25'), 'withdrawn'),
         baton.cancel_delivery(dw.a(), dw.id(dw.a(), 'q1'), 'again') $$);
SELECT * FROM dw.step('sql', 'cancel q5 (failed): DU007', $$
  SELECT baton.cancel_delivery(dw.a(), dw.id(dw.a(), 'q5')) $$);
SELECT * FROM dw.step('direct', 'finish q25 by its holder: DU001 (cancelled)', $$
  SELECT baton.finish(dw.a(), dw.id(dw.a(), 'q25'), 1) $$);

-- ---------------------------------------------------------------------------------
-- Short leases, a fence, reap: a/r, b/q and c/q claimed for a second; r1 renewed for
-- an hour, r2 given back with the backoff (a second); once the leases have expired, b
-- fenced, then reap takes a's and c's, not b's. Nothing that records its time comes
-- between the claims and the wait but the renewal and the retry, whose times lie an
-- hour and a second after theirs: however slow the steps, the times keep their order
-- (the rows are compared with their times ranked).
-- ---------------------------------------------------------------------------------
SELECT * FROM dw.step('direct', 'claim a/r 8, b/q 2, c/q 3 for one second', $$
  SELECT 'a', id, dedup_key, generation, lease_until - now() FROM baton.claim(dw.a(), 'r', '1 second', 8)
  UNION ALL
  SELECT 'b', id, dedup_key, generation, lease_until - now() FROM baton.claim(dw.b(), 'q', '1 second', 2)
  UNION ALL
  SELECT 'c', id, dedup_key, generation, lease_until - now() FROM baton.claim(dw.c(), 'q', '1 second', 3) $$);
SELECT * FROM dw.step('sql', 'renew r1 for an hour; retry r2 with the backoff (1 second)', $$
  SELECT baton.renew(dw.a(), dw.id(dw.a(), 'r1'), 1, '1 hour') - now(),
         baton.retry(dw.a(), dw.id(dw.a(), 'r2'), 1, 'r2 failed') $$);
SELECT * FROM dw.step('sql', 'wait for the one-second leases to expire', $$ SELECT pg_sleep(1.5) $$);
SELECT * FROM dw.step('sql', 'fence b', $$ SELECT baton.set_tenant_state(dw.b(), 'fenced') $$);
SELECT * FROM dw.step('sql', 'reap: a/r r3 r4 r5 r6 r7 r10 and c/q c1 c2 c5 (not r1, renewed; not b, fenced)', $$
  SELECT baton.reap() $$);
SELECT * FROM dw.step('sql', 'the rows reap left', $$
  SELECT tenant = dw.b() AS b, dedup_key, status, generation, attempts, last_error, lease_until IS NULL AS no_lease
    FROM baton.deliveries WHERE target = 'r' OR tenant <> dw.a() ORDER BY tenant, id $$);
SELECT * FROM dw.step('direct', 'b fenced: enqueue_batch refused', $$
  SELECT id FROM baton.enqueue_batch(dw.b(), dw.items('q', 'b', 1, 7)) $$);
SELECT * FROM dw.step('direct', 'b fenced: claim refused', $$ SELECT id FROM baton.claim(dw.b(), 'q', '1 hour') $$);
SELECT * FROM dw.step('direct', 'b fenced: finish refused', $$ SELECT baton.finish(dw.b(), dw.id(dw.b(), 'b1'), 1) $$);
SELECT * FROM dw.step('direct', 'b fenced: finish_batch refused', $$
  SELECT status FROM baton.finish_batch(dw.b(), dw.ids(dw.b(), ARRAY['b1', 'b2']), ARRAY[1, 1]::bigint[]) $$);
SELECT * FROM dw.step('sql', 'b fenced: enqueue refused', $$
  SELECT baton.enqueue(dw.b(), 'q', 'b9') $$);
SELECT * FROM dw.step('sql', 'b fenced: renew refused', $$ SELECT baton.renew(dw.b(), dw.id(dw.b(), 'b1'), 1, '1 hour') $$);
SELECT * FROM dw.step('sql', 'b fenced: retry refused', $$ SELECT baton.retry(dw.b(), dw.id(dw.b(), 'b1'), 1, 'no') $$);
SELECT * FROM dw.step('sql', 'b fenced: cancel refused', $$ SELECT baton.cancel_delivery(dw.b(), dw.id(dw.b(), 'b3')) $$);
SELECT * FROM dw.step('sql', 'b fenced: redrive refused', $$ SELECT baton.redrive(dw.b(), 'q') $$);
SELECT * FROM dw.step('sql', 'b fenced: a direct UPDATE refused by the fence trigger', $$
  SELECT dw.reprioritize(dw.b(), 9) $$);
SELECT * FROM dw.step('direct', 'c1''s old holder: finish after reap is DU001', $$
  SELECT baton.finish(dw.c(), dw.id(dw.c(), 'c1'), 1) $$);
SELECT * FROM dw.step('direct', 'a/r: claim 20 (r2 after its backoff, the reaped again: attempt 2), finish_batch them failed', $$
  SELECT f.id, f.status FROM (SELECT array_agg(id ORDER BY id) AS ids, array_agg(generation ORDER BY id) AS gens
                                FROM baton.claim(dw.a(), 'r', '1 hour', 20)) c,
                         baton.finish_batch(dw.a(), c.ids, c.gens, 'failed') f $$);
SELECT * FROM dw.step('direct', 'c/q: claim 10, finish_batch them', $$
  SELECT f.id, f.status FROM (SELECT array_agg(id ORDER BY id) AS ids, array_agg(generation ORDER BY id) AS gens
                                FROM baton.claim(dw.c(), 'q', '1 hour', 10)) c,
                         baton.finish_batch(dw.c(), c.ids, c.gens) f $$);

-- ---------------------------------------------------------------------------------
-- Redrive, purge, and work after both.
-- ---------------------------------------------------------------------------------
SELECT * FROM dw.step('sql', 'redrive a/r by ids: r3 r4 (failed) and r1 (claimed: skipped)', $$
  SELECT baton.redrive(dw.a(), 'r', dw.ids(dw.a(), ARRAY['r3', 'r4', 'r1'])) $$);
SELECT * FROM dw.step('sql', 'redrive a/q: every failed and cancelled one, oldest settled first, at most 3', $$
  SELECT baton.redrive(dw.a(), 'q', max_rows => 3) $$);
SELECT * FROM dw.step('direct', 'claim a/r 2 (the redriven, attempt 1 again) and a/q 5', $$
  SELECT 'r', id, dedup_key, generation, attempt FROM baton.claim(dw.a(), 'r', '1 hour', 2)
  UNION ALL
  SELECT 'q', id, dedup_key, generation, attempt FROM baton.claim(dw.a(), 'q', '1 hour', 5) $$);
-- As many as a's settled s-keys: the oldest created (one transaction made them all),
-- so that no tie of created_at decides which rows go.
SELECT * FROM dw.step('sql', 'purge the settled deliveries, oldest created first, as many as a''s settled s-keys', $$
  SELECT baton.purge('0 seconds', (SELECT count(*) FROM baton.deliveries WHERE tenant = dw.a() AND dedup_key LIKE 's%'
                                      AND status IN ('finished', 'failed', 'cancelled'))::int) $$);
SELECT * FROM dw.step('direct', 'enqueue_batch a/q: q44..q60 (after the purge)', $$
  SELECT id, inserted FROM baton.enqueue_batch(dw.a(), dw.items('q', 'q', 17, 44)) $$);
SELECT * FROM dw.step('direct', 'claim a/q 12', $$
  SELECT id, dedup_key, generation, attempt FROM baton.claim(dw.a(), 'q', '1 hour', 12) $$);
SELECT * FROM dw.step('direct', 'finish_batch every claimed a/q delivery of generation 1 but three', $$
  SELECT f.id, f.status FROM (SELECT array_agg(id ORDER BY id) AS ids, array_agg(generation ORDER BY id) AS gens
                                FROM (SELECT id, generation FROM baton.deliveries
                                       WHERE tenant = dw.a() AND target = 'q' AND status = 'claimed' AND generation = 1
                                       ORDER BY id OFFSET 3) s) c,
                         baton.finish_batch(dw.a(), c.ids, c.gens) f $$);
SELECT * FROM dw.step('direct', 'finish the other claimed a/q deliveries one by one, every other failed', $$
  SELECT d.dedup_key, baton.finish(dw.a(), d.id, d.generation, CASE WHEN d.id % 2 = 0 THEN 'failed' ELSE 'finished' END)
    FROM (SELECT id, dedup_key, generation FROM baton.deliveries
           WHERE tenant = dw.a() AND target = 'q' AND status = 'claimed' ORDER BY id) d $$);
SELECT * FROM dw.step('sql', 'b active again; reap its expired leases', $$
  SELECT baton.set_tenant_state(dw.b(), 'active'), baton.reap() $$);
SELECT * FROM dw.step('direct', 'b/q: claim 3 (b5 b1 again: attempt 2; b2), finish b1', $$
  SELECT c.dedup_key, c.generation, c.attempt,
         CASE WHEN c.dedup_key = 'b1' THEN baton.finish(dw.b(), c.id, c.generation) END
    FROM baton.claim(dw.b(), 'q', '1 hour', 3) c $$);
SELECT * FROM dw.step('sql', 'the statuses left', $$
  SELECT tenant = dw.a() AS a, target, status, count(*) FROM baton.deliveries GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 $$);

-- The stats of this backend reach the shared counters before it exits.
\pset format aligned
\pset tuples_only off
SELECT pg_stat_force_next_flush() \g /dev/null
