-- Bad input to every delivery function: each refusal with its SQLSTATE, and nothing
-- changed by it (the digest of tenant e's rows stays the same).
\set SHOW_CONTEXT never
\set e 00000000-0000-0000-0003-000000000001
\set f 00000000-0000-0000-0003-000000000002
\set tu 00000000-0000-0000-0003-0000000000ff
SELECT baton.create_tenant(:'e');
SELECT baton.create_tenant(:'f');
SELECT baton.enqueue(:'e', 'work', 'held') AS held \gset
SELECT baton.enqueue(:'f', 'work', 'fenced-one') AS fenced_one \gset
SELECT dedup_key, generation FROM baton.claim(:'e', 'work', '1 hour');
SELECT dedup_key, generation FROM baton.claim(:'f', 'work', '1 hour');
SELECT baton.set_tenant_state(:'f', 'fenced');
-- Every row of tenant e, digested; and the claimed row 'held' alone.
CREATE TEMP VIEW e_digest AS
SELECT count(*) AS n, md5(coalesce(string_agg(d::text, '|' ORDER BY d.id), '')) AS h
  FROM baton.deliveries d WHERE d.tenant = '00000000-0000-0000-0003-000000000001';
SELECT h AS h0 FROM e_digest \gset

-- ---------------------------------------------------------------------------
-- NULL for a required argument: 22004, explicit NULLs for defaulted arguments included.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(NULL, 'work', 'n');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', NULL, 'n');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'n', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'n', '{}', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'n', priority => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'n', max_attempts => NULL);
\echo :LAST_ERROR_SQLSTATE
-- a NULL is reported before an invalid value of another argument
SELECT baton.enqueue(:'e', '', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(NULL, '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(NULL, 'work', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', NULL, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '0 seconds', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(NULL, :held, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'e', NULL, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'e', :held, NULL, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'e', :held, 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(NULL, :held, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(NULL, :held, 1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'e', NULL, 1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'e', :held, NULL, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'e', :held, 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.reap(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.delivery(NULL, :held);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.delivery(:'e', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
SELECT status, generation, attempts, lease_until > now() AS leased FROM baton.delivery(:'e', :held);

-- ---------------------------------------------------------------------------
-- target (1 to 200 characters) and dedup_key (1 to 256 characters): 22023.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'e', '', 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', repeat('t', 201), 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', repeat('é', 201), 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', repeat('k', 257));
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', '', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', repeat('t', 201), '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
-- the limits themselves are accepted (characters, not bytes)
SELECT baton.enqueue(:'e', repeat('t', 200), repeat('k', 256)) > 0 AS accepted;
SELECT baton.enqueue(:'e', repeat('é', 200), repeat('ü', 256)) > 0 AS accepted;
SELECT length(target) AS target_chars, length(dedup_key) AS key_chars FROM baton.deliveries
 WHERE tenant = :'e' AND length(target) = 200 ORDER BY id;
SELECT h AS h0 FROM e_digest \gset

-- ---------------------------------------------------------------------------
-- payload and binding are JSON objects; binding.cause has exactly one known key.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'e', 'work', 'p', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'p', '1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'p', '"s"');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'p', 'null');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'p', '{}', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'p', '{}', '1');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'p', '{}', '"s"');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'p', '{}', 'null');
\echo :LAST_ERROR_SQLSTATE
-- cause: not an object
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": "user.deleted"}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": ["event"]}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": null}');
\echo :LAST_ERROR_SQLSTATE
-- cause: zero keys, two keys, an unknown key, a known key plus another
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"event": "a", "schedule": "2030-01-01T00:00:00Z"}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"manual": "x"}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"event": "a", "note": "x"}}');
\echo :LAST_ERROR_SQLSTATE
-- cause: values of the wrong kind
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"event": 42}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"event": null}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"schedule": "not a time"}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"schedule": 1700000000}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"schedule": "infinity"}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"schedule": "-infinity"}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"webhook": "not-a-uuid"}}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'c', '{}', '{"cause": {"webhook": 7}}');
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
-- valid causes are accepted and stored verbatim
SELECT baton.enqueue(:'e', 'work', 'c-event', '{}', '{"cause": {"event": "user.deleted"}, "user": "u1"}') > 0 AS accepted;
SELECT baton.enqueue(:'e', 'work', 'c-schedule', '{}', '{"cause": {"schedule": "2030-01-01T00:00:00Z"}}') > 0 AS accepted;
SELECT baton.enqueue(:'e', 'work', 'c-webhook', '{}', '{"cause": {"webhook": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}}') > 0 AS accepted;
SELECT baton.enqueue(:'e', 'work', 'c-none', '{}', '{"other": {"cause": "nested causes are not checked"}}') > 0 AS accepted;
SELECT dedup_key, binding FROM baton.deliveries WHERE tenant = :'e' AND dedup_key LIKE 'c-%' ORDER BY id;
SELECT h AS h0 FROM e_digest \gset

-- ---------------------------------------------------------------------------
-- Sizes: payload, binding and result at most baton.max_payload_bytes (default 1 MiB).
-- ---------------------------------------------------------------------------
SHOW baton.max_payload_bytes;
SELECT baton.enqueue(:'e', 'work', 'big', jsonb_build_object('x', repeat('a', 1048576)));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'big', '{}', jsonb_build_object('x', repeat('a', 1048576)));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, 1, 'finished', jsonb_build_object('x', repeat('a', 1048576)));
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
-- the limit is configurable (by a superuser)
SET baton.max_payload_bytes = 2048;
SHOW baton.max_payload_bytes;
SELECT baton.enqueue(:'e', 'work', 'mid', jsonb_build_object('x', repeat('a', 3000)));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'mid', '{}', jsonb_build_object('x', repeat('a', 3000)));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, 1, 'finished', jsonb_build_object('x', repeat('a', 3000)));
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
SELECT baton.enqueue(:'e', 'work', 'mid', jsonb_build_object('x', repeat('a', 1000))) > 0 AS accepted;
-- (the SQLSTATE alone: PostgreSQL 18 words the range with its unit, 15 without)
\set VERBOSITY sqlstate
SET baton.max_payload_bytes = 100;
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
RESET baton.max_payload_bytes;
SHOW baton.max_payload_bytes;
SELECT baton.enqueue(:'e', 'work', 'large', jsonb_build_object('x', repeat('a', 3000))) > 0 AS accepted;
SELECT h AS h0 FROM e_digest \gset

-- ---------------------------------------------------------------------------
-- max_attempts 1 to 1000; run_after NULL or finite.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'e', 'work', 'm', max_attempts => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'm', max_attempts => -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'm', max_attempts => 1001);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'm', run_after => 'infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'e', 'work', 'm', run_after => '-infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
SELECT baton.enqueue(:'e', 'work', 'm1', max_attempts => 1) > 0 AS accepted;
SELECT baton.enqueue(:'e', 'work', 'm1000', max_attempts => 1000, run_after => NULL, run_id => NULL) > 0 AS accepted;
SELECT dedup_key, max_attempts, run_after <= now() AS due FROM baton.deliveries
 WHERE tenant = :'e' AND dedup_key IN ('m1', 'm1000') ORDER BY id;
SELECT h AS h0 FROM e_digest \gset

-- ---------------------------------------------------------------------------
-- claim: lease more than zero and at most 365 days (a month is 30 days); max_items 1
-- to 10000; expected NULL or a non-empty object.
-- ---------------------------------------------------------------------------
SELECT * FROM baton.claim(:'e', 'work', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '366 days');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '12 months 6 days');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', 10001);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', 1, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', 1, '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', 1, '1');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', 1, '"user"');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'e', 'work', '1 hour', 1, 'null');
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
-- the limits themselves are accepted (on a target with nothing to claim)
SELECT count(*) AS claimed FROM baton.claim(:'e', 'empty', '365 days', 10000);
SELECT count(*) AS claimed FROM baton.claim(:'e', 'empty', '12 months 5 days');
SELECT count(*) AS claimed FROM baton.claim(:'e', 'empty', '1 microsecond', 1, NULL);

-- ---------------------------------------------------------------------------
-- renew, finish, retry, reap: argument values; the claimed row 'held' is untouched.
-- ---------------------------------------------------------------------------
SELECT baton.renew(:'e', :held, 1, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'e', :held, 1, '-5 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'e', :held, 1, '400 days');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, 1, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, 1, 'FINISHED');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, 1, 'pending');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'e', :held, 1, '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'e', :held, 1, 'boom', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'e', :held, 1, 'boom', '366 days');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'e', :held, 1, repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
-- bytes, not characters: 32769 two-byte characters are 65538 bytes
SELECT baton.retry(:'e', :held, 1, repeat('é', 32769));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.reap(0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.reap(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.reap(100001);
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
SELECT status, generation, attempts, last_error, result FROM baton.delivery(:'e', :held);
SELECT baton.reap(100000) >= 0 AS accepted;
-- an error of exactly 65536 bytes is accepted
SELECT baton.retry(:'e', :held, 1, repeat('x', 65536), '0 seconds');
SELECT status, generation, octet_length(last_error) AS error_bytes FROM baton.delivery(:'e', :held);
SELECT h AS h0 FROM e_digest \gset

-- ---------------------------------------------------------------------------
-- The order of checks: values (22023) before the fence (DU002) before existence (DU008).
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'f', '', 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'tu', 'work', 'k', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.claim(:'tu', 'work', '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'f', -1, 1, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'f', -1, 1, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'f', -1, 1, 'boom', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'f', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.renew(:'f', -1, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'f', -1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'f', -1, 1, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'f', 'work', 'k', run_id => :'tu');
\echo :LAST_ERROR_SQLSTATE
SELECT status, generation FROM baton.delivery(:'f', :fenced_one);

-- ---------------------------------------------------------------------------
-- enqueue_batch: a JSON array of at most 10000 objects with known keys; each item
-- follows enqueue's rules; the detail names the item by its index from 0.
-- ---------------------------------------------------------------------------
SELECT * FROM baton.enqueue_batch(:'e', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '{"target": "work", "dedup_key": "b"}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '"items"');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '1');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', 'null');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[1]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0"}, "s"]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0"}, []]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[null]');
\echo :LAST_ERROR_SQLSTATE
-- unknown keys
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "prio": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0"}, {"target": "work", "dedup_key": "b1", "tenant": "00000000-0000-0000-0003-000000000002"}]');
\echo :LAST_ERROR_SQLSTATE
-- missing target or dedup_key (a JSON null counts as absent)
SELECT * FROM baton.enqueue_batch(:'e', '[{"dedup_key": "b0"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": null, "dedup_key": "b0"}]');
\echo :LAST_ERROR_SQLSTATE
-- values of the wrong kind
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": 5, "dedup_key": "b0"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": true}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "priority": "x"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "priority": 1.5}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "priority": 3000000000}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "max_attempts": "3"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "max_attempts": 2.5}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "run_after": "not a date"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "run_after": 1700000000}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "run_id": "nope"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "run_id": 7}]');
\echo :LAST_ERROR_SQLSTATE
-- enqueue's own rules, item by item
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "", "dedup_key": "b0"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": ""}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "payload": []}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "binding": "s"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0"}, {"target": "work", "dedup_key": "b1", "binding": {"cause": {"event": "a", "webhook": "x"}}}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "max_attempts": 0}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "max_attempts": 1001}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e', '[{"target": "work", "dedup_key": "b0", "run_after": "infinity"}]');
\echo :LAST_ERROR_SQLSTATE
SET baton.max_payload_bytes = 1024;
SELECT * FROM baton.enqueue_batch(:'e', jsonb_build_array(
  jsonb_build_object('target', 'work', 'dedup_key', 'b0'),
  jsonb_build_object('target', 'work', 'dedup_key', 'b1'),
  jsonb_build_object('target', 'work', 'dedup_key', 'b2', 'payload', jsonb_build_object('x', repeat('a', 2000)))));
\echo :LAST_ERROR_SQLSTATE
RESET baton.max_payload_bytes;
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
-- at most 10000 items: 10001 is refused; 10000 pass the count (the last one is bad)
SELECT * FROM baton.enqueue_batch(:'e',
  (SELECT jsonb_agg(jsonb_build_object('target', 'bulk', 'dedup_key', 'k' || i)) FROM generate_series(1, 10001) i));
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enqueue_batch(:'e',
  (SELECT jsonb_agg(jsonb_build_object('target', 'bulk', 'dedup_key', 'k' || i)
                    || CASE WHEN i = 10000 THEN '{"max_attempts": 0}'::jsonb ELSE '{}'::jsonb END)
     FROM generate_series(1, 10000) i));
\echo :LAST_ERROR_SQLSTATE
SELECT n, h = :'h0' AS nothing_changed FROM e_digest;
DROP VIEW e_digest;
-- Direct SQL is held to the row rules of baton.deliveries by its trigger "fence" (23514
-- naming the delivery, the column and the value; the hint names the trigger): a status
-- among the four, max_attempts >= 1.
SELECT baton.enqueue(:'e', 'rules', 'r1') > 0 AS enqueued;
UPDATE baton.deliveries SET status = 'done' WHERE tenant = :'e' AND dedup_key = 'r1';
\echo :LAST_ERROR_SQLSTATE
UPDATE baton.deliveries SET max_attempts = 0 WHERE tenant = :'e' AND dedup_key = 'r1';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.deliveries (tenant, target, dedup_key, status) VALUES (:'e', 'rules', 'r2', 'Pending');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO baton.deliveries (tenant, target, dedup_key, max_attempts) VALUES (:'e', 'rules', 'r2', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT dedup_key, status, max_attempts FROM baton.deliveries WHERE tenant = :'e' AND target = 'rules';
-- The fields a client reads to find the rule: schema, table, column, and as constraint
-- name the trigger that holds the rules (\d baton.deliveries lists it; no CHECK
-- constraint of that name exists, none of the old names either).
DO $$
DECLARE sqlstate_ text; schema_ text; table_ text; column_ text; constraint_ text;
BEGIN
    UPDATE baton.deliveries SET status = 'done' WHERE target = 'rules' AND dedup_key = 'r1';
EXCEPTION WHEN check_violation THEN
    GET STACKED DIAGNOSTICS sqlstate_ = RETURNED_SQLSTATE, schema_ = SCHEMA_NAME, table_ = TABLE_NAME,
                            column_ = COLUMN_NAME, constraint_ = CONSTRAINT_NAME;
    RAISE NOTICE 'sqlstate %, schema %, table %, column %, constraint %', sqlstate_, schema_, table_, column_, constraint_;
END $$;
DO $$
DECLARE column_ text; constraint_ text;
BEGIN
    UPDATE baton.deliveries SET max_attempts = 0 WHERE target = 'rules' AND dedup_key = 'r1';
EXCEPTION WHEN check_violation THEN
    GET STACKED DIAGNOSTICS column_ = COLUMN_NAME, constraint_ = CONSTRAINT_NAME;
    RAISE NOTICE 'column %, constraint %', column_, constraint_;
END $$;
SELECT t.tgname, t.tgrelid::regclass AS "table", pg_catalog.obj_description(t.oid, 'pg_trigger') AS rules
  FROM pg_catalog.pg_trigger t
 WHERE t.tgrelid = 'baton.deliveries'::regclass AND t.tgname = 'fence';
SELECT count(*) AS check_constraints FROM pg_catalog.pg_constraint
 WHERE conrelid = 'baton.deliveries'::regclass AND contype = 'c';
-- Where \d+ shows the rules: the descriptions of the table and of its ruled columns.
SELECT a.attname, pg_catalog.col_description(a.attrelid, a.attnum) AS description
  FROM pg_catalog.pg_attribute a
 WHERE a.attrelid = 'baton.deliveries'::regclass AND a.attname IN ('status', 'max_attempts')
 ORDER BY a.attnum;
SELECT pg_catalog.obj_description('baton.deliveries'::regclass, 'pg_class') AS table_description;
