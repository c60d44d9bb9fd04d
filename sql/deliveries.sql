-- Deliveries: every rule of "Deliveries" in docs/internals/contract.md and docs/internals/choices.md.
-- Refusals show their SQLSTATE; refusals whose message names a delivery id (not stable
-- across runs) are shown with VERBOSITY sqlstate.
\set SHOW_CONTEXT never
\set a 00000000-0000-0000-0002-000000000001
\set b 00000000-0000-0000-0002-000000000002
\set c 00000000-0000-0000-0002-000000000003
\set run_a 00000000-0000-0000-0002-00000000a001
\set run_b 00000000-0000-0000-0002-00000000b001
\set no_run 00000000-0000-0000-0002-00000000ffff
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');
SELECT baton.create_tenant(:'c');
-- One row of tenant a, by target and dedup key, as text (to show "nothing changed").
CREATE TEMP VIEW a_row AS
SELECT d.target, d.dedup_key, d::text AS row_text, d.xmin::text AS row_xmin
  FROM baton.deliveries d WHERE d.tenant = '00000000-0000-0000-0002-000000000001';

-- ---------------------------------------------------------------------------
-- enqueue returns the id; dedup on (tenant, target, dedup_key).
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'mail', 'k1', '{"n": 1, "s": "x"}', '{"user": "u1"}') AS k1 \gset
SELECT :k1 > 0 AS has_id;
SELECT target, dedup_key, status, generation, attempts, max_attempts, priority, payload, binding,
       result, last_error, run_id, lease_until, run_after <= now() AS due, created_at <= now() AS created
  FROM baton.delivery(:'a', :k1);
SELECT row_text AS k1_row, row_xmin AS k1_xmin FROM a_row WHERE target = 'mail' AND dedup_key = 'k1' \gset
-- the same payload and binding (jsonb equality: key order does not matter): the same id
SELECT baton.enqueue(:'a', 'mail', 'k1', '{"s": "x", "n": 1}', '{"user": "u1"}') = :k1 AS same_id;
-- the other fields are not compared: the first write wins
SELECT baton.enqueue(:'a', 'mail', 'k1', '{"n": 1, "s": "x"}', '{"user": "u1"}',
                     run_after => now() + interval '1 day', priority => 9, max_attempts => 7,
                     run_id => NULL) = :k1 AS same_id;
SELECT row_text = :'k1_row' AS row_unchanged, row_xmin = :'k1_xmin' AS not_rewritten
  FROM a_row WHERE target = 'mail' AND dedup_key = 'k1';
-- another payload or binding under the same key: DU009, never a silent drop
SELECT baton.enqueue(:'a', 'mail', 'k1', '{"n": 2, "s": "x"}', '{"user": "u1"}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'a', 'mail', 'k1', '{"n": 1, "s": "x"}', '{"user": "u2"}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'a', 'mail', 'k1', '{"n": 1, "s": "x"}', '{"user": "u1", "extra": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'a', 'mail', 'k1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'a', 'mail', 'k1', '{"n": 1, "s": "x"}');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS k1_rows, bool_and(row_text = :'k1_row') AS row_unchanged,
       bool_and(row_xmin = :'k1_xmin') AS not_rewritten
  FROM a_row WHERE dedup_key = 'k1';
-- the key belongs to (tenant, target): another target or tenant is another delivery
SELECT baton.enqueue(:'a', 'sms', 'k1', '{"other": true}') AS k1_sms \gset
SELECT baton.enqueue(:'b', 'mail', 'k1', '{"other": true}') AS k1_b \gset
SELECT :k1_sms <> :k1 AS sms_is_new, :k1_b NOT IN (:k1, :k1_sms) AS tenant_b_is_new;
SELECT tenant = :'a' AS tenant_a, target, dedup_key, payload FROM baton.deliveries
 WHERE id IN (:k1, :k1_sms, :k1_b) ORDER BY id;

-- ---------------------------------------------------------------------------
-- enqueue_batch: (id, inserted) per item in order; all or nothing.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'batch', 'b0', '{"i": 0}') AS b0 \gset
CREATE TEMP TABLE batch1 AS
SELECT r.ord, r.id, r.inserted FROM baton.enqueue_batch(:'a', '[
  {"target": "batch", "dedup_key": "b1", "payload": {"i": 1}},
  {"target": "batch", "dedup_key": "b0", "payload": {"i": 0}},
  {"target": "batch", "dedup_key": "b2", "payload": {"i": 2}, "binding": {"k": "v"}, "priority": 5,
   "max_attempts": 4, "run_after": "2000-01-01T00:00:00Z"},
  {"target": "batch", "dedup_key": "b1", "payload": {"i": 1}, "priority": 8},
  {"target": "batch", "dedup_key": "b3", "payload": null, "binding": null, "priority": null,
   "max_attempts": null, "run_after": null, "run_id": null}
]') WITH ORDINALITY AS r(id, inserted, ord);
SELECT r.ord, r.inserted, d.dedup_key, d.payload, d.binding, d.priority, d.max_attempts,
       d.run_after = '2000-01-01T00:00:00Z' AS run_after_2000, d.run_after <= now() AS due, d.status
  FROM batch1 r JOIN baton.deliveries d ON d.tenant = :'a' AND d.id = r.id ORDER BY r.ord;
SELECT (SELECT id FROM batch1 WHERE ord = 2) = :b0 AS item1_is_b0,
       (SELECT id FROM batch1 WHERE ord = 1) = (SELECT id FROM batch1 WHERE ord = 4) AS repeated_key_same_id,
       (SELECT id FROM batch1 WHERE ord = 1) < (SELECT id FROM batch1 WHERE ord = 3) AS ids_in_item_order;
SELECT count(*) AS batch_rows FROM baton.deliveries WHERE tenant = :'a' AND target = 'batch';
-- a bad item in the middle: an error naming the item, nothing inserted
SELECT * FROM baton.enqueue_batch(:'a', '[
  {"target": "batch", "dedup_key": "b4"},
  {"target": "batch", "dedup_key": "b5", "priority": "x"},
  {"target": "batch", "dedup_key": "b6"}]');
\echo :LAST_ERROR_SQLSTATE
-- a conflict found while writing, in the middle: the items before it are undone
SELECT * FROM baton.enqueue_batch(:'a', '[
  {"target": "batch", "dedup_key": "b4"},
  {"target": "batch", "dedup_key": "b0", "payload": {"i": 99}},
  {"target": "batch", "dedup_key": "b6"}]');
\echo :LAST_ERROR_SQLSTATE
-- a repeated key inside one batch with another payload is a conflict too
SELECT * FROM baton.enqueue_batch(:'a', '[
  {"target": "batch", "dedup_key": "b7", "payload": {"v": 1}},
  {"target": "batch", "dedup_key": "b7", "payload": {"v": 2}}]');
\echo :LAST_ERROR_SQLSTATE
-- an unknown run in the last item
SELECT * FROM baton.enqueue_batch(:'a', '[
  {"target": "batch", "dedup_key": "b4"},
  {"target": "batch", "dedup_key": "b6"},
  {"target": "batch", "dedup_key": "b8", "run_id": "00000000-0000-0000-0002-00000000ffff"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS batch_rows, string_agg(dedup_key, ',' ORDER BY id) AS keys
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'batch';
-- an empty batch does nothing
SELECT * FROM baton.enqueue_batch(:'a', '[]');

-- ---------------------------------------------------------------------------
-- claim: priority descending, then enqueue order; max_items; run_after; what it sets.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'order', 'o1', '{"o": 1}') IS NOT NULL AS o1;
SELECT baton.enqueue(:'a', 'order', 'o2', '{"o": 2}', priority => 5) IS NOT NULL AS o2;
SELECT baton.enqueue(:'a', 'order', 'o3', '{"o": 3}') IS NOT NULL AS o3;
SELECT baton.enqueue(:'a', 'order', 'o4', '{"o": 4}', priority => 5) IS NOT NULL AS o4;
SELECT baton.enqueue(:'a', 'order', 'o5', '{"o": 5}', priority => -1) IS NOT NULL AS o5;
-- enqueued last with an older run_after: enqueue order, not run_after, decides
SELECT baton.enqueue(:'a', 'order', 'o6', '{"o": 6}', run_after => now() - interval '1 hour') IS NOT NULL AS o6;
SELECT dedup_key, generation, attempt, lease_until = now() + interval '1 hour' AS lease_now_plus_1h,
       payload, binding, run_id
  FROM baton.claim(:'a', 'order', '1 hour', max_items => 2);
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'order', '1 hour');
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'order', '1 hour', 10);
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'order', '1 hour', 10);
SELECT dedup_key, status, generation, attempts, lease_until > now() AS leased
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'order' ORDER BY id;
-- run_after in the future: not claimable until it has passed
SELECT baton.enqueue(:'a', 'later', 'l1', run_after => now() + interval '1 hour') IS NOT NULL AS l1;
SELECT baton.enqueue(:'a', 'later', 'l2', run_after => clock_timestamp() + interval '500 milliseconds') IS NOT NULL AS l2;
SELECT dedup_key FROM baton.claim(:'a', 'later', '1 hour', 10);
SELECT pg_sleep(0.6);
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'later', '1 hour', 10);
SELECT dedup_key, status, generation, attempts FROM baton.deliveries
 WHERE tenant = :'a' AND target = 'later' ORDER BY id;

-- ---------------------------------------------------------------------------
-- claim with expected: every top-level field must equal the binding's.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'wake', 'w1', '{}',
       '{"cause": {"event": "user.deleted"}, "user": "u1", "scope": {"x": 1, "y": 2}, "extra": "e"}') IS NOT NULL AS w1;
SELECT baton.enqueue(:'a', 'wake', 'w2', '{}',
       '{"cause": {"event": "user.deleted"}, "user": "u2", "scope": {"x": 1, "y": 2}}', priority => 9) IS NOT NULL AS w2;
SELECT baton.enqueue(:'a', 'wake', 'w3', '{}', '{"user": "u3", "flag": null}') IS NOT NULL AS w3;
-- misses: zero rows, never another delivery
SELECT dedup_key FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"missing": "v"}');
SELECT dedup_key FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"user": "u9"}');
SELECT dedup_key FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"scope": {"x": 1}}');
SELECT dedup_key FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"cause": {"event": "forged"}}');
SELECT dedup_key FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"cause": {"event": "user.deleted"}, "user": "u9"}');
SELECT dedup_key FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"user": "u1", "absent": null}');
SELECT dedup_key FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"user": ["u1"]}');
SELECT dedup_key, status, generation, attempts FROM baton.deliveries
 WHERE tenant = :'a' AND target = 'wake' ORDER BY id;
-- hits: equal top-level fields; extra binding fields are fine
SELECT dedup_key, generation, attempt, binding
  FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"user": "u1", "scope": {"y": 2, "x": 1}}');
SELECT dedup_key, generation, attempt
  FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"cause": {"event": "user.deleted"}}');
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'wake', '1 hour', 10, '{"flag": null}');
SELECT dedup_key, status, generation, attempts FROM baton.deliveries
 WHERE tenant = :'a' AND target = 'wake' ORDER BY id;

-- ---------------------------------------------------------------------------
-- renew: extends the lease; fenced by generation.
-- ---------------------------------------------------------------------------
\set VERBOSITY sqlstate
SELECT baton.enqueue(:'a', 'lease', 'r1') AS r1 \gset
SELECT baton.enqueue(:'a', 'lease', 'r2', priority => -1) AS r2 \gset
SELECT dedup_key, generation, attempt, lease_until <= now() + interval '1 minute' AS short_lease
  FROM baton.claim(:'a', 'lease', '1 minute');
SELECT baton.renew(:'a', :r1, 1, '1 hour') = now() + interval '1 hour' AS renewed_to_now_plus_1h;
SELECT lease_until AS r1_lease FROM baton.delivery(:'a', :r1) \gset
SELECT lease_until > now() + interval '59 minutes' AS extended, status, generation, attempts
  FROM baton.delivery(:'a', :r1);
SELECT baton.renew(:'a', :r1, 1, '2 hours') AS r1_lease \gset
SELECT lease_until = :'r1_lease' AS returned_lease_stored, lease_until > now() + interval '119 minutes' AS extended
  FROM baton.delivery(:'a', :r1);
SELECT baton.renew(:'a', :r1, 0, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'a', :r1, 2, '2 hours');
\echo :LAST_ERROR_SQLSTATE
-- never claimed
SELECT baton.renew(:'a', :r2, 0, '2 hours');
\echo :LAST_ERROR_SQLSTATE
-- unknown id
SELECT baton.renew(:'a', -1, 1, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT dedup_key, status, generation, attempts, lease_until = :'r1_lease' AS r1_lease_kept, lease_until IS NULL AS no_lease
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'lease' ORDER BY id;
-- settled at the caller's generation: DU007; another generation: DU001
SELECT baton.finish(:'a', :r1, 1);
SELECT baton.renew(:'a', :r1, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'a', :r1, 0, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status, generation, lease_until IS NULL AS no_lease FROM baton.delivery(:'a', :r1);

-- Lease expiry alone does not fence: until a reap, the holder renews and finishes.
SELECT baton.enqueue(:'a', 'expiry', 'e1') AS e1 \gset
SELECT generation FROM baton.claim(:'a', 'expiry', '1 millisecond');
SELECT pg_sleep(0.01);
SELECT status, lease_until < now() AS expired FROM baton.delivery(:'a', :e1);
SELECT baton.renew(:'a', :e1, 1, '1 millisecond') = now() + interval '1 millisecond' AS renewed;
SELECT pg_sleep(0.01);
SELECT status, lease_until < now() AS expired FROM baton.delivery(:'a', :e1);
SELECT baton.finish(:'a', :e1, 1) AS finished;
SELECT status, generation, result, lease_until IS NULL AS no_lease FROM baton.delivery(:'a', :e1);

-- ---------------------------------------------------------------------------
-- finish: terminal once; the settling generation's repeats return the stored status.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'fin', 'f1') AS f1 \gset
SELECT baton.enqueue(:'a', 'fin', 'f2') AS f2 \gset
SELECT baton.enqueue(:'a', 'fin', 'f3') AS f3 \gset
SELECT dedup_key, generation FROM baton.claim(:'a', 'fin', '1 hour');
SELECT baton.finish(:'a', :f1, 1, 'finished', '{"ok": true}');
SELECT status, generation, attempts, result, lease_until IS NULL AS no_lease FROM baton.delivery(:'a', :f1);
SELECT row_text AS f1_row, row_xmin AS f1_xmin FROM a_row WHERE target = 'fin' AND dedup_key = 'f1' \gset
SELECT baton.finish(:'a', :f1, 1);
SELECT baton.finish(:'a', :f1, 1, 'failed', '{"other": 1}');
SELECT baton.retry(:'a', :f1, 1, 'late retry');
SELECT row_text = :'f1_row' AS row_unchanged, row_xmin = :'f1_xmin' AS not_rewritten
  FROM a_row WHERE target = 'fin' AND dedup_key = 'f1';
-- any other caller: DU001
SELECT baton.finish(:'a', :f1, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'a', :f1, 2, 'failed');
\echo :LAST_ERROR_SQLSTATE
-- never claimed: DU001
SELECT baton.finish(:'a', :f2, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'a', :f2, 1);
\echo :LAST_ERROR_SQLSTATE
-- unknown id: DU008
SELECT baton.finish(:'a', -1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT row_text = :'f1_row' AS f1_unchanged FROM a_row WHERE target = 'fin' AND dedup_key = 'f1';
SELECT status, generation, attempts, result FROM baton.delivery(:'a', :f2);
-- the 'failed' outcome; a result may be any JSON value
SELECT dedup_key, generation FROM baton.claim(:'a', 'fin', '1 hour', 2);
SELECT baton.finish(:'a', :f2, 1, result => '[1, "two"]');
SELECT baton.finish(:'a', :f3, 1, 'failed', '{"why": "bad input"}');
SELECT baton.finish(:'a', :f3, 1, 'finished');
SELECT baton.retry(:'a', :f3, 1, 'late retry');
SELECT dedup_key, status, generation, attempts, result, last_error, lease_until IS NULL AS no_lease
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'fin' ORDER BY id;
-- a settled delivery is not enqueued again while its row exists
SELECT baton.enqueue(:'a', 'fin', 'f1') = :f1 AS same_id;
SELECT row_text = :'f1_row' AS row_unchanged FROM a_row WHERE target = 'fin' AND dedup_key = 'f1';
SELECT dedup_key FROM baton.claim(:'a', 'fin', '1 hour', 10);

-- ---------------------------------------------------------------------------
-- retry: pending under generation + 1 after the delay (NULL: 1 s x 2^(attempts - 1),
-- at most 1 hour), or failed at the same generation once attempts are spent.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'rt', 'rt1', max_attempts => 20) AS rt1 \gset
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'rt', '1 hour');
SELECT baton.retry(:'a', :rt1, 1, 'boom');
SELECT status, generation, attempts, last_error, lease_until IS NULL AS no_lease,
       run_after - now() BETWEEN interval '0.5 seconds' AND interval '1.5 seconds' AS backoff_1s
  FROM baton.delivery(:'a', :rt1);
-- not claimable during the backoff
SELECT dedup_key FROM baton.claim(:'a', 'rt', '1 hour');
-- the old holder is fenced; generation 2 never claimed it
SELECT baton.finish(:'a', :rt1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'a', :rt1, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'a', :rt1, 1, 'again');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'a', :rt1, 2, 'again');
\echo :LAST_ERROR_SQLSTATE
SELECT status, generation, attempts, last_error FROM baton.delivery(:'a', :rt1);
-- second attempt: backoff 2 s
UPDATE baton.deliveries SET run_after = now() WHERE tenant = :'a' AND id = :rt1;
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'rt', '1 hour');
SELECT baton.retry(:'a', :rt1, 3, 'boom 2');
SELECT status, generation, attempts, last_error,
       run_after - now() BETWEEN interval '1.5 seconds' AND interval '2.5 seconds' AS backoff_2s
  FROM baton.delivery(:'a', :rt1);
-- an explicit delay
UPDATE baton.deliveries SET run_after = now() WHERE tenant = :'a' AND id = :rt1;
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'rt', '1 hour');
SELECT baton.retry(:'a', :rt1, 5, 'later', '10 minutes');
SELECT status, generation, attempts,
       run_after - now() BETWEEN interval '9 minutes 59 seconds' AND interval '10 minutes' AS delay_10min
  FROM baton.delivery(:'a', :rt1);
-- the twelfth attempt: 2^11 s; the thirteenth: capped at one hour
UPDATE baton.deliveries SET run_after = now(), attempts = 11 WHERE tenant = :'a' AND id = :rt1;
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'rt', '1 hour');
SELECT baton.retry(:'a', :rt1, 7, 'boom 12');
SELECT run_after - now() BETWEEN interval '2047 seconds' AND interval '2049 seconds' AS backoff_2048s
  FROM baton.delivery(:'a', :rt1);
UPDATE baton.deliveries SET run_after = now() WHERE tenant = :'a' AND id = :rt1;
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'rt', '1 hour');
SELECT baton.retry(:'a', :rt1, 9, 'boom 13');
SELECT run_after - now() BETWEEN interval '59 minutes 59 seconds' AND interval '1 hour' AS backoff_capped_1h
  FROM baton.delivery(:'a', :rt1);
-- a zero delay: claimable at once
SELECT baton.enqueue(:'a', 'rt0', 'z1', max_attempts => 2) AS z1 \gset
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'rt0', '1 hour');
SELECT baton.retry(:'a', :z1, 1, 'first', '0 seconds');
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'rt0', '1 hour');
-- spending the last attempt: failed at the same generation
SELECT baton.retry(:'a', :z1, 3, 'final');
SELECT status, generation, attempts, last_error, lease_until IS NULL AS no_lease FROM baton.delivery(:'a', :z1);
SELECT row_text AS z1_row FROM a_row WHERE target = 'rt0' AND dedup_key = 'z1' \gset
-- the same holder's repeats return 'failed' and write nothing
SELECT baton.retry(:'a', :z1, 3, 'again');
SELECT baton.finish(:'a', :z1, 3);
SELECT baton.finish(:'a', :z1, 3, 'failed');
SELECT baton.renew(:'a', :z1, 3, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'a', :z1, 2, 'stale');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'a', :z1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT row_text = :'z1_row' AS row_unchanged FROM a_row WHERE target = 'rt0' AND dedup_key = 'z1';
SELECT dedup_key FROM baton.claim(:'a', 'rt0', '1 hour');
-- retry of a delivery never claimed, or unknown
SELECT baton.enqueue(:'a', 'rt0', 'z2') AS z2 \gset
SELECT baton.retry(:'a', :z2, 0, 'never claimed');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'a', -1, 1, 'unknown');
\echo :LAST_ERROR_SQLSTATE
SELECT status, generation, attempts, last_error FROM baton.delivery(:'a', :z2);

-- ---------------------------------------------------------------------------
-- reap: expired leases, oldest expiry first, at most max_rows; bumps the generation.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'reap', 'rp1') AS rp1 \gset
SELECT baton.enqueue(:'a', 'reap', 'rp2', max_attempts => 1) AS rp2 \gset
SELECT baton.enqueue(:'a', 'reap', 'rp3') AS rp3 \gset
SELECT dedup_key, generation FROM baton.claim(:'a', 'reap', '1 millisecond');
SELECT dedup_key, generation FROM baton.claim(:'a', 'reap', '1 millisecond');
SELECT dedup_key, generation FROM baton.claim(:'a', 'reap', '1 millisecond');
SELECT pg_sleep(0.01);
SELECT baton.reap(1) AS reaped;
SELECT dedup_key, status, generation, attempts, last_error, lease_until IS NULL AS no_lease,
       run_after <= now() AS claimable_now
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'reap' ORDER BY id;
SELECT baton.reap(1) AS reaped;
SELECT baton.reap() AS reaped;
SELECT baton.reap() AS reaped;
SELECT dedup_key, status, generation, attempts, last_error, lease_until IS NULL AS no_lease
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'reap' ORDER BY id;
-- the prior holders are fenced
SELECT baton.finish(:'a', :rp1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'a', :rp1, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'a', :rp1, 1, 'too late');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'a', :rp2, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'a', :rp2, 1, 'too late');
\echo :LAST_ERROR_SQLSTATE
SELECT dedup_key, status, generation, last_error FROM baton.deliveries
 WHERE tenant = :'a' AND target = 'reap' ORDER BY id;
-- a reaped row is claimable at once
SELECT dedup_key, generation, attempt FROM baton.claim(:'a', 'reap', '1 hour', 10);
-- nothing is expired now
SELECT baton.reap() AS reaped;

-- ---------------------------------------------------------------------------
-- delivery(): the row; DU008 for an unknown id and for another tenant's id. No function
-- reaches another tenant's deliveries.
-- ---------------------------------------------------------------------------
SELECT baton.delivery(:'a', :k1)::text = (SELECT d::text FROM baton.deliveries d WHERE d.tenant = :'a' AND d.id = :k1)
       AS whole_row;
SELECT (baton.delivery(:'a', :k1)).dedup_key;
SELECT baton.delivery(:'a', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.delivery(:'b', :k1);
\echo :LAST_ERROR_SQLSTATE
-- a claimed delivery of tenant a (target order, generation 1), seen from tenant b
SELECT id AS o2 FROM baton.deliveries WHERE tenant = :'a' AND target = 'order' AND dedup_key = 'o2' \gset
SELECT row_text AS o2_row FROM a_row WHERE target = 'order' AND dedup_key = 'o2' \gset
SELECT baton.delivery(:'b', :o2);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'b', :o2, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'b', :o2, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'b', :o2, 1, 'not yours');
\echo :LAST_ERROR_SQLSTATE
SELECT row_text = :'o2_row' AS o2_unchanged FROM a_row WHERE target = 'order' AND dedup_key = 'o2';
-- tenant b claims only its own delivery of target mail; tenant a's stays pending
SELECT id = :k1_b AS own_delivery, dedup_key, payload FROM baton.claim(:'b', 'mail', '1 hour', 10);
SELECT status, generation FROM baton.delivery(:'a', :k1);
SELECT baton.finish(:'b', :k1_b, 1);
\set VERBOSITY default

-- ---------------------------------------------------------------------------
-- run_id names a run of the same tenant (DU008 otherwise); removing the run removes
-- its deliveries.
-- ---------------------------------------------------------------------------
INSERT INTO baton.runs (tenant, id, workflow, version, inputs_digest) VALUES (:'a', :'run_a', 'wf', 1, 'digest-a');
INSERT INTO baton.runs (tenant, id, workflow, version, inputs_digest) VALUES (:'b', :'run_b', 'wf', 1, 'digest-b');
SELECT baton.enqueue(:'a', 'runs', 'x1', run_id => :'no_run');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'a', 'runs', 'x1', run_id => :'run_b');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'a', '[{"target": "runs", "dedup_key": "x2", "run_id": "00000000-0000-0000-0002-00000000a001"},
                                          {"target": "runs", "dedup_key": "x3", "run_id": "00000000-0000-0000-0002-00000000b001"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS runs_rows FROM baton.deliveries WHERE tenant = :'a' AND target = 'runs';
SELECT baton.enqueue(:'a', 'runs', 'x1', run_id => :'run_a') AS x1 \gset
SELECT inserted FROM baton.enqueue_batch(:'a', '[{"target": "runs", "dedup_key": "x2", "run_id": "00000000-0000-0000-0002-00000000a001"}]');
SELECT dedup_key, run_id = :'run_a' AS of_run_a FROM baton.deliveries WHERE tenant = :'a' AND target = 'runs' ORDER BY id;
SELECT dedup_key, run_id = :'run_a' AS of_run_a FROM baton.claim(:'a', 'runs', '1 hour');
DELETE FROM baton.runs WHERE tenant = :'a' AND id = :'run_a';
SELECT count(*) AS runs_rows FROM baton.deliveries WHERE tenant = :'a' AND target = 'runs';
\set VERBOSITY sqlstate
SELECT baton.delivery(:'a', :x1);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT baton.enqueue(:'a', 'runs', 'x4', run_id => :'run_a');
\echo :LAST_ERROR_SQLSTATE

-- ---------------------------------------------------------------------------
-- Wake-ups: each enqueue that inserts sends NOTIFY on the channel of its (tenant,
-- target), with no payload, delivered at commit. psql's notice names the sending
-- backend's PID and the channel, which differs in every database: both are masked, the
-- channels as the names they are given here (ch1 to ch4).
-- ---------------------------------------------------------------------------
SELECT baton.wakeup_channel(:'a', 'notify') AS ch1, baton.wakeup_channel(:'a', 'notify2') AS ch2,
       baton.wakeup_channel(:'b', 'notify') AS ch3, baton.wakeup_channel(:'b', 'no"te\') AS ch4 \gset
-- "baton_" and 32 hex digits, one per (tenant, target), the same at every call
SELECT :'ch1' ~ '^baton_[0-9a-f]{32}$' AS well_formed,
       count(DISTINCT c) AS distinct_channels
  FROM unnest(ARRAY[:'ch1', :'ch2', :'ch3', :'ch4']) c;
SELECT baton.wakeup_channel(:'a', 'notify') = :'ch1' AS stable;
\setenv CH1 :ch1
\setenv CH2 :ch2
\setenv CH3 :ch3
\setenv CH4 :ch4
LISTEN :"ch1";
LISTEN :"ch2";
LISTEN :"ch4";
\o | sed -E -e 's/PID [0-9]+/PID N/' -e "s/$CH1/ch1/; s/$CH2/ch2/; s/$CH3/ch3/; s/$CH4/ch4/"
SELECT baton.enqueue(:'a', 'notify', 'n1') > 0 AS enqueued;
\o
-- a repeated enqueue inserts nothing and sends nothing
\o | sed -E -e 's/PID [0-9]+/PID N/' -e "s/$CH1/ch1/; s/$CH2/ch2/; s/$CH3/ch3/; s/$CH4/ch4/"
SELECT baton.enqueue(:'a', 'notify', 'n1') > 0 AS enqueued;
SELECT inserted FROM baton.enqueue_batch(:'a', '[{"target": "notify", "dedup_key": "n1"}]');
\o
-- a rolled-back enqueue sends nothing
\o | sed -E -e 's/PID [0-9]+/PID N/' -e "s/$CH1/ch1/; s/$CH2/ch2/; s/$CH3/ch3/; s/$CH4/ch4/"
BEGIN;
SELECT baton.enqueue(:'a', 'notify', 'n2') > 0 AS enqueued;
ROLLBACK;
\o
SELECT count(*) AS n2_rows FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'n2';
-- baton.notify = off sends nothing
SET baton.notify = off;
\o | sed -E -e 's/PID [0-9]+/PID N/' -e "s/$CH1/ch1/; s/$CH2/ch2/; s/$CH3/ch3/; s/$CH4/ch4/"
SELECT baton.enqueue(:'a', 'notify', 'n3') > 0 AS enqueued;
\o
RESET baton.notify;
-- a transaction, and a batch, wake each target once, at commit
\o | sed -E -e 's/PID [0-9]+/PID N/' -e "s/$CH1/ch1/; s/$CH2/ch2/; s/$CH3/ch3/; s/$CH4/ch4/"
BEGIN;
SELECT baton.enqueue(:'a', 'notify', 'n4') > 0 AS enqueued;
SELECT baton.enqueue(:'a', 'notify', 'n5') > 0 AS enqueued;
COMMIT;
SELECT inserted FROM baton.enqueue_batch(:'a', '[{"target": "notify", "dedup_key": "n6"},
                                                 {"target": "notify2", "dedup_key": "m1"},
                                                 {"target": "notify", "dedup_key": "n7"}]');
\o
-- another tenant's target of the same name has a channel of its own (ch3, not listened
-- to); a target with a quote and a backslash is named like any other (ch4)
\o | sed -E -e 's/PID [0-9]+/PID N/' -e "s/$CH1/ch1/; s/$CH2/ch2/; s/$CH3/ch3/; s/$CH4/ch4/"
SELECT baton.enqueue(:'b', 'notify', 'o1') > 0 AS enqueued;
SELECT baton.enqueue(:'b', 'no"te\', 'q1') > 0 AS enqueued;
\o
-- a new secret (TRUNCATE and a new row, as docs/guide/wakeups.md says) renames every channel,
-- in this session too: the old names hear nothing
BEGIN;
TRUNCATE baton.wakeup_key;
INSERT INTO baton.wakeup_key DEFAULT VALUES;
COMMIT;
SELECT baton.wakeup_channel(:'a', 'notify') <> :'ch1' AS renamed;
\o | sed -E -e 's/PID [0-9]+/PID N/' -e "s/$CH1/ch1/; s/$CH2/ch2/; s/$CH3/ch3/; s/$CH4/ch4/"
SELECT baton.enqueue(:'a', 'notify', 'n8') > 0 AS enqueued;
\o
UNLISTEN *;
SELECT dedup_key FROM baton.deliveries WHERE tenant = :'a' AND target LIKE 'notify%' ORDER BY id;

-- ---------------------------------------------------------------------------
-- baton.delivery_stats: per tenant and target.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'c', 'stats', 's' || i, '{}', jsonb_build_object('n', i)) IS NOT NULL AS enqueued
  FROM generate_series(1, 6) i;
SELECT baton.enqueue(:'c', 'stats-done', 'd1') IS NOT NULL AS enqueued;
SELECT dedup_key FROM baton.claim(:'c', 'stats', '1 hour', 1, '{"n": 3}');
SELECT d.dedup_key, baton.finish(:'c', d.id, d.generation) FROM baton.claim(:'c', 'stats', '1 hour', 1, '{"n": 4}') d;
SELECT d.dedup_key, baton.finish(:'c', d.id, d.generation, 'failed') FROM baton.claim(:'c', 'stats', '1 hour', 1, '{"n": 5}') d;
SELECT dedup_key FROM baton.claim(:'c', 'stats', '1 millisecond', 1, '{"n": 6}');
SELECT d.dedup_key, baton.finish(:'c', d.id, d.generation) FROM baton.claim(:'c', 'stats-done', '1 hour') d;
SELECT pg_sleep(0.01);
SELECT target, pending, claimed, finished, failed, expired_leases,
       oldest_pending_age IS NOT NULL AS has_pending_age, oldest_pending_age >= interval '0' AS age_not_negative
  FROM baton.delivery_stats WHERE tenant = :'c' ORDER BY target;
SELECT baton.reap() AS reaped;
SELECT target, pending, claimed, finished, failed, expired_leases
  FROM baton.delivery_stats WHERE tenant = :'c' ORDER BY target;
DROP VIEW a_row;
DROP TABLE batch1;

-- ===========================================================================
-- finish_batch (beyond the contract): finish for many deliveries in one statement,
-- one answer per (id, generation) pair, in the order given.
-- ===========================================================================
\set fb '00000000-0000-0000-0002-0000000000fb'
SELECT baton.create_tenant(:'fb');
SELECT count(*) FROM baton.enqueue_batch(:'fb',
  (SELECT jsonb_agg(jsonb_build_object('target', 'fb', 'dedup_key', 'fb-' || g) ORDER BY g) FROM generate_series(1, 5) g));
SELECT array_agg(id ORDER BY id) AS fb_ids, array_agg(generation ORDER BY id) AS fb_gens
  FROM baton.claim(:'fb', 'fb', '30 seconds', 3) \gset
-- The three claimed settle; a repeat answers the stored status and changes nothing.
SELECT f.id = ANY (:'fb_ids'::bigint[]) AS claimed_id, f.status FROM baton.finish_batch(:'fb', :'fb_ids', :'fb_gens') f;
SELECT f.status FROM baton.finish_batch(:'fb', :'fb_ids', :'fb_gens', 'failed') f;
SELECT dedup_key, status, generation, settled_at IS NOT NULL AS settled
  FROM baton.deliveries WHERE tenant = :'fb' ORDER BY id;
-- A stale generation, a never-claimed row and an unknown id answer per item; the good
-- pair in the same call still settles.
SELECT id AS fb_pending FROM baton.deliveries WHERE tenant = :'fb' AND dedup_key = 'fb-5' \gset
SELECT id AS fb_claim, generation AS fb_claim_gen FROM baton.claim(:'fb', 'fb', '30 seconds') \gset
SELECT f.status FROM baton.finish_batch(:'fb',
  ARRAY[(:'fb_ids'::bigint[])[1], :fb_pending, 987654321, :fb_claim]::bigint[],
  ARRAY[7, 0, 1, :fb_claim_gen]::bigint[]) f;
SELECT dedup_key, status FROM baton.deliveries WHERE tenant = :'fb' ORDER BY id;
-- Bad input: each a clear error that changes nothing.
SELECT * FROM baton.finish_batch(:'fb', ARRAY[1]::bigint[], ARRAY[1, 2]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.finish_batch(:'fb', ARRAY[]::bigint[], ARRAY[]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.finish_batch(:'fb', ARRAY[1, NULL]::bigint[], ARRAY[1, 2]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY terse
SELECT * FROM baton.finish_batch(:'fb', ARRAY[:fb_claim, :fb_claim]::bigint[], ARRAY[:fb_claim_gen, 0]::bigint[]);
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.finish_batch(:'fb', NULL, ARRAY[1]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.finish_batch(:'fb', ARRAY[1]::bigint[], ARRAY[1]::bigint[], 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.finish_batch(:'fb', (SELECT array_agg(g::bigint) FROM generate_series(1, 1001) g),
                                 (SELECT array_agg(1::bigint) FROM generate_series(1, 1001) g));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.set_tenant_state(:'fb', 'fenced');
SELECT * FROM baton.finish_batch(:'fb', ARRAY[1]::bigint[], ARRAY[1]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FILTER (WHERE status = 'finished') AS finished, count(*) FILTER (WHERE status = 'pending') AS pending
  FROM baton.deliveries WHERE tenant = :'fb';
