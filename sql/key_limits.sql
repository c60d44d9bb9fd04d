-- ===========================================================================
-- Keys and their limits (0.14.0): baton.enqueue_keyed and enqueue_batch's "key",
-- baton.limit_key, baton.rate_limit_key and
-- baton.unlimit_key; a key's admitted deliveries never more than its limit on any path
-- (claim, claim_fair, finish, retry, cancel, reap, redrive, direct SQL), ordered keys one
-- at a time in enqueue order, limits for every key, paced keys (baton.rate_limit_key), a
-- limit changed or removed with deliveries in flight, the refusals and the grants.
-- ===========================================================================
\set a '00000000-0000-0000-0f15-00000000000a'
\set b '00000000-0000-0000-0f15-00000000000b'
SELECT baton.create_tenant(t::uuid) FROM unnest(ARRAY[:'a', :'b']) t;
CREATE ROLE baton_keys_worker NOLOGIN;
CREATE ROLE baton_keys_admin NOLOGIN;
CREATE ROLE baton_keys_producer NOLOGIN;
SELECT baton.grant_worker('baton_keys_worker');
SELECT baton.grant_admin('baton_keys_admin');
SELECT baton.grant_producer('baton_keys_producer');
-- a binds target mail, b target news (the fair claim of news serves b alone).
SELECT baton.bind_target(:'a', 'mail', 'baton_keys_worker');
SELECT baton.bind_target(:'b', 'news', 'baton_keys_worker');

-- The deliveries a claim gets, as dedup keys in claim order.
CREATE FUNCTION pg_temp.take(tenant uuid, n int) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(c.dedup_key, ' ' ORDER BY c.id), '-')
      FROM baton.claim(tenant, 'mail', '1 hour', n) c $$;
-- Where each pending or leased delivery of the tenant stands: leased, admitted (in the
-- claim order) or waiting (held back by its key's limit).
CREATE FUNCTION pg_temp.seats(tenant uuid) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(d.dedup_key || '=' || CASE
             WHEN d.status = 'claimed' THEN 'leased'
             WHEN EXISTS (SELECT 1 FROM baton.key_waiting w WHERE w.tenant = d.tenant AND w.id = d.id) THEN 'waiting'
             WHEN EXISTS (SELECT 1 FROM baton.ready r WHERE r.tenant = d.tenant AND r.id = d.id) THEN 'ready'
             ELSE 'lost' END, ' ' ORDER BY d.id), '-')
      FROM baton.deliveries d WHERE d.tenant = seats.tenant AND d.status IN ('pending', 'claimed') $$;
-- A key's count as baton.key_slots keeps it, against the deliveries themselves.
CREATE FUNCTION pg_temp.counted(tenant uuid) RETURNS TABLE(key text, admitted int, actual bigint) LANGUAGE sql AS $$
    SELECT s.key, s.admitted, (SELECT count(*) FROM baton.deliveries d WHERE d.tenant = s.tenant
             AND d.target = s.target AND d.key = s.key AND (d.status = 'claimed' OR (d.status = 'pending'
             AND NOT EXISTS (SELECT 1 FROM baton.key_waiting w WHERE w.tenant = d.tenant AND w.id = d.id))))
      FROM baton.key_slots s WHERE s.tenant = counted.tenant ORDER BY s.key $$;

-- ---------------------------------------------------------------------------
-- A concurrency limit: at most 2 of key acme admitted; other keys and deliveries
-- without a key are not held up.
-- ---------------------------------------------------------------------------
SELECT baton.limit_key(:'a', 'mail', 2, 'acme');
SELECT count(baton.enqueue_keyed(:'a', 'mail', 'acme' || g, 'acme')) AS enqueued FROM generate_series(1, 4) g;
SELECT baton.enqueue_keyed(:'a', 'mail', 'zeta1', 'zeta') > 0 AS enqueued;
SELECT baton.enqueue(:'a', 'mail', 'plain1') > 0 AS enqueued;
SELECT pg_temp.seats(:'a');
SELECT * FROM pg_temp.counted(:'a');
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
SELECT pg_temp.seats(:'a');
-- A finish frees a slot: the next waiting delivery enters the claim order.
SELECT baton.finish(:'a', id, generation) FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'acme1';
SELECT pg_temp.seats(:'a');
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
-- A retry keeps its slot (the delivery waits for its deadline in the claim order)...
SELECT baton.retry(:'a', id, generation, 'busy', '1 hour') FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'acme2';
SELECT pg_temp.seats(:'a');
-- ...a failure (its last attempt) and a cancel free theirs.
UPDATE baton.deliveries SET max_attempts = 1 WHERE tenant = :'a' AND dedup_key = 'acme3';
SELECT baton.retry(:'a', id, generation, 'broken') FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'acme3';
SELECT pg_temp.seats(:'a');
SELECT baton.cancel_delivery(:'a', id) FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'acme2';
SELECT pg_temp.seats(:'a');
SELECT * FROM pg_temp.counted(:'a');
-- A cancel of a waiting delivery frees nothing: it held no slot.
SELECT count(baton.enqueue_keyed(:'a', 'mail', 'acme' || g, 'acme')) AS enqueued FROM generate_series(5, 7) g;
SELECT pg_temp.seats(:'a');
SELECT baton.cancel_delivery(:'a', id) FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'acme7';
SELECT pg_temp.seats(:'a');
SELECT * FROM pg_temp.counted(:'a');

-- ---------------------------------------------------------------------------
-- An expired lease: reap returns it to the claim order in its slot; a reap of its last
-- attempt frees the slot.
-- ---------------------------------------------------------------------------
UPDATE baton.deliveries SET lease_until = now() - interval '1 second'
 WHERE tenant = :'a' AND dedup_key = 'acme4';
SELECT baton.reap();
SELECT pg_temp.seats(:'a');
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
UPDATE baton.deliveries SET lease_until = now() - interval '1 second', max_attempts = attempts
 WHERE tenant = :'a' AND dedup_key = 'acme4';
SELECT baton.reap();
SELECT pg_temp.seats(:'a');
SELECT * FROM pg_temp.counted(:'a');

-- ---------------------------------------------------------------------------
-- An ordered key: one at a time, in enqueue order, whatever the priorities; a retry
-- keeps its place; a finish lets the next in.
-- ---------------------------------------------------------------------------
SELECT baton.limit_key(:'a', 'mail', 1, 'run-9', ordered => true);
SELECT count(baton.enqueue_keyed(:'a', 'mail', 'step' || g, 'run-9', priority => g)) AS enqueued FROM generate_series(1, 3) g;
SELECT pg_temp.seats(:'a');
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
SELECT baton.retry(:'a', id, generation, 'again', '0 seconds') FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'step1';
SELECT pg_temp.seats(:'a');
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
SELECT baton.finish(:'a', id, generation) FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'step1';
SELECT pg_temp.seats(:'a');
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
SELECT baton.finish(:'a', id, generation) FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'step2';
SELECT pg_temp.seats(:'a');

-- ---------------------------------------------------------------------------
-- A limit for every key of the target (key NULL): each key has its own count; a key's
-- own limit overrides it, and removing that one puts the key back under the target's.
-- The fair claim keeps the limits too.
-- ---------------------------------------------------------------------------
SELECT baton.limit_key(:'b', 'news', 1);
SELECT inserted FROM baton.enqueue_batch(:'b', '[{"target": "news", "dedup_key": "x1", "key": "x"},
                                   {"target": "news", "dedup_key": "x2", "key": "x"},
                                   {"target": "news", "dedup_key": "y1", "key": "y"},
                                   {"target": "news", "dedup_key": "y2", "key": "y"},
                                   {"target": "news", "dedup_key": "n1"}]');
SELECT pg_temp.seats(:'b');
SELECT baton.limit_key(:'b', 'news', 3, 'x');
SELECT pg_temp.seats(:'b');
SET ROLE baton_keys_worker;
SELECT coalesce(string_agg(c.dedup_key, ' ' ORDER BY c.id), '-') FROM baton.claim_fair('news', '1 hour', 10) c;
RESET ROLE;
SELECT pg_temp.seats(:'b');
SELECT * FROM pg_temp.counted(:'b');
-- Removing x's own limit: x falls under the target's 1; its two leases stay.
SELECT baton.unlimit_key(:'b', 'news', 'x');
SELECT baton.enqueue_keyed(:'b', 'news', 'x3', 'x') > 0 AS enqueued;
SELECT pg_temp.seats(:'b');
SELECT * FROM pg_temp.counted(:'b');
-- Removing the target's limit: every waiting delivery enters the claim order.
SELECT baton.unlimit_key(:'b', 'news');
SELECT baton.unlimit_key(:'b', 'news') AS again;
SELECT pg_temp.seats(:'b');
SELECT count(*) AS slots_left FROM baton.key_slots WHERE tenant = :'b';
SELECT * FROM baton.key_limits ORDER BY tenant, key;

-- ---------------------------------------------------------------------------
-- A paced key: at most 2 claims an hour, 2 at once. Two are claimable at once; the next
-- two are admitted as the first are claimed, each claimable from the moment its token
-- comes (half an hour apart); the fifth waits. A retry gives the delivery back to the
-- pace (it waits for a token like any other, first in line).
-- ---------------------------------------------------------------------------
SELECT baton.rate_limit_key(:'b', 'news', 2, '1 hour', key => 'p');
SELECT count(baton.enqueue_keyed(:'b', 'news', 'p' || g, 'p')) AS enqueued FROM generate_series(1, 5) g;
-- When each admitted delivery may be claimed, in minutes from now.
CREATE FUNCTION pg_temp.slots(tenant uuid) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(d.dedup_key || '@' || round(extract(epoch FROM r.run_after - now()) / 60),
                               ' ' ORDER BY d.id), '-')
      FROM baton.ready r JOIN baton.deliveries d ON d.tenant = r.tenant AND d.id = r.id
     WHERE r.tenant = slots.tenant AND d.key = 'p' $$;
SELECT pg_temp.seats(:'b'), pg_temp.slots(:'b');
SET ROLE baton_keys_worker;
SELECT coalesce(string_agg(c.dedup_key, ' ' ORDER BY c.id), '-') AS got FROM baton.claim(:'b', 'news', '1 hour', 10) c;
SELECT coalesce(string_agg(c.dedup_key, ' ' ORDER BY c.id), '-') AS got FROM baton.claim(:'b', 'news', '1 hour', 10) c;
RESET ROLE;
SELECT pg_temp.seats(:'b'), pg_temp.slots(:'b');
SELECT key, admitted, ready, round(tokens) AS tokens FROM baton.key_slots WHERE tenant = :'b' AND key = 'p';
SELECT baton.retry(:'b', id, generation, 'later', '0 seconds') FROM baton.deliveries WHERE tenant = :'b' AND dedup_key = 'p1';
SELECT pg_temp.seats(:'b'), pg_temp.slots(:'b');
-- Removing the pace: every delivery of the key is claimable again at its own run_after.
SELECT baton.unlimit_key(:'b', 'news', 'p');
SELECT pg_temp.seats(:'b'), pg_temp.slots(:'b');
SELECT count(*) AS slots_left FROM baton.key_slots WHERE tenant = :'b' AND key = 'p';
-- A concurrency limit and a pace on one key: both hold.
SELECT baton.limit_key(:'b', 'news', 1, 'q'), baton.rate_limit_key(:'b', 'news', 10, '1 second', 5, 'q');
SELECT key, max_leased, ordered, rate, per, burst FROM baton.key_limits WHERE tenant = :'b' AND key = 'q';

-- ---------------------------------------------------------------------------
-- Lowering a limit with deliveries in flight: leases stay (never undone), pending ones
-- past the new limit wait.
-- ---------------------------------------------------------------------------
SELECT baton.limit_key(:'a', 'mail', 1, 'acme');
SELECT pg_temp.seats(:'a');
SELECT * FROM pg_temp.counted(:'a');
-- ---------------------------------------------------------------------------
-- Direct SQL is admitted like a call: an insert with a key waits; a failed delivery
-- set pending again by UPDATE waits too; a cancel by UPDATE of a leased one frees its
-- slot.
-- ---------------------------------------------------------------------------
INSERT INTO baton.deliveries (tenant, target, dedup_key, key) VALUES (:'a', 'mail', 'acme8', 'acme');
UPDATE baton.deliveries SET status = 'pending', settled_at = NULL
 WHERE tenant = :'a' AND dedup_key = 'acme3';
SELECT pg_temp.seats(:'a');
UPDATE baton.deliveries SET status = 'cancelled', lease_until = NULL, settled_at = now()
 WHERE tenant = :'a' AND dedup_key = 'acme5';
SELECT pg_temp.seats(:'a');
SELECT * FROM pg_temp.counted(:'a');

-- The view of limited keys, and the health row of the deliveries waiting on a limit.
SELECT tenant = :'b' AS b, target, key, max_leased, ordered, rate, per, burst, admitted, unclaimed, waiting,
       waiting_since IS NOT NULL AS waits
  FROM baton.limited_keys WHERE tenant IN (:'a', :'b') ORDER BY tenant, key;
SELECT name, status, value > 0 AS some, detail ~ '^[0-9]+ deliver(y waits|ies wait) on a key''s limit; the longest, key' AS names_the_key
  FROM baton.health WHERE name = 'waiting_on_limits';


-- ---------------------------------------------------------------------------
-- The statement path (direct access off) keeps the same limits.
-- ---------------------------------------------------------------------------
SET baton.direct_access = off;
SELECT baton.limit_key(:'a', 'mail', 1, 'solo');
SELECT count(baton.enqueue_keyed(:'a', 'mail', 'solo' || g, 'solo')) AS enqueued FROM generate_series(1, 3) g;
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
SELECT baton.finish(:'a', id, generation) FROM baton.deliveries WHERE tenant = :'a' AND dedup_key = 'solo1';
SET ROLE baton_keys_worker;
SELECT pg_temp.take(:'a', 10);
RESET ROLE;
SELECT * FROM pg_temp.counted(:'a');
RESET baton.direct_access;

-- ---------------------------------------------------------------------------
-- Idempotence: the same dedup key with the same key is the same delivery; another key,
-- or none, is DU009.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue_keyed(:'a', 'mail', 'zeta1', 'zeta') = id AS same FROM baton.deliveries
 WHERE tenant = :'a' AND dedup_key = 'zeta1';
-- A producer's retry of a limited key's enqueue (one call, one batch) changes nothing:
-- no count, no row in the claim order or waiting without a delivery.
SELECT * FROM pg_temp.counted(:'a');
SELECT baton.enqueue_keyed(:'a', 'mail', 'acme8', 'acme') = id AS same FROM baton.deliveries
 WHERE tenant = :'a' AND dedup_key = 'acme8';
SELECT inserted FROM baton.enqueue_batch(:'a', '[{"target": "mail", "dedup_key": "acme8", "key": "acme"},
                                              {"target": "mail", "dedup_key": "acme3", "key": "acme"}]');
SELECT * FROM pg_temp.counted(:'a');
SELECT (SELECT count(*) FROM baton.ready r WHERE r.tenant = :'a'
         AND NOT EXISTS (SELECT 1 FROM baton.deliveries d WHERE d.tenant = r.tenant AND d.id = r.id)) AS ready_orphans,
       (SELECT count(*) FROM baton.key_waiting w WHERE w.tenant = :'a'
         AND NOT EXISTS (SELECT 1 FROM baton.deliveries d WHERE d.tenant = w.tenant AND d.id = w.id)) AS waiting_orphans;
-- Each refusal, then its SQLSTATE.
SELECT baton.enqueue_keyed(:'a', 'mail', 'zeta1', 'other');
\echo :SQLSTATE
SELECT baton.enqueue(:'a', 'mail', 'zeta1');
\echo :SQLSTATE
SELECT * FROM baton.enqueue_batch(:'a', '[{"target": "mail", "dedup_key": "zeta1"}]');
\echo :SQLSTATE

-- ---------------------------------------------------------------------------
-- Refusals: bad input changes nothing.
-- ---------------------------------------------------------------------------
-- Each refusal, then its SQLSTATE.
SELECT baton.limit_key(:'a', 'mail', 0, 'acme');
\echo :SQLSTATE
SELECT baton.limit_key(:'a', 'mail', -3, 'acme');
\echo :SQLSTATE
SELECT baton.limit_key(:'a', 'mail', NULL, 'acme');
\echo :SQLSTATE
SELECT baton.limit_key(:'a', 'mail', 2, '');
\echo :SQLSTATE
SELECT baton.limit_key(:'a', 'mail', 2, 'acme', ordered => true);
\echo :SQLSTATE
SELECT baton.limit_key(:'a', 'nowhere', 2, 'acme');
\echo :SQLSTATE
SELECT baton.unlimit_key(:'a', 'nowhere', 'acme');
\echo :SQLSTATE
SELECT baton.limit_key('00000000-0000-0000-0f15-0000000000ff', 'mail', 2, 'acme');
\echo :SQLSTATE
SELECT baton.limit_key(:'a', 'mail', 2, 'acme', NULL);
\echo :SQLSTATE
SELECT baton.enqueue_keyed(:'a', 'mail', 'empty', '');
\echo :SQLSTATE
SELECT baton.enqueue_keyed(:'a', 'mail', 'none', NULL);
\echo :SQLSTATE
SELECT baton.rate_limit_key(:'a', 'mail', 0, '1 second', key => 'acme');
\echo :SQLSTATE
SELECT baton.rate_limit_key(:'a', 'mail', 5, '0 seconds', key => 'acme');
\echo :SQLSTATE
SELECT baton.rate_limit_key(:'a', 'mail', 5, '1 mon', key => 'acme');
\echo :SQLSTATE
SELECT baton.rate_limit_key(:'a', 'mail', 5, '25 hours', key => 'acme');
\echo :SQLSTATE
SELECT baton.rate_limit_key(:'a', 'mail', 5, '1 second', -1, 'acme');
\echo :SQLSTATE
SELECT baton.rate_limit_key(:'a', 'mail', 5, NULL, key => 'acme');
\echo :SQLSTATE
SELECT baton.enqueue_batch(:'a', '[{"target": "mail", "dedup_key": "k", "key": 7}]');
\echo :SQLSTATE
SELECT baton.enqueue_batch(:'a', '[{"target": "mail", "dedup_key": "k", "key": ""}]');
\echo :SQLSTATE
SELECT * FROM baton.key_limits WHERE tenant = :'a' ORDER BY key;
-- A role that is not an administrator may not set limits; a producer may enqueue with a key.
SET ROLE baton_keys_worker;
SELECT baton.limit_key(:'a', 'mail', 5, 'acme');
RESET ROLE;
SET ROLE baton_keys_producer;
SELECT baton.enqueue_keyed(:'a', 'mail', 'byproducer', 'acme') > 0 AS enqueued;
RESET ROLE;
SET ROLE baton_keys_admin;
SELECT baton.limit_key(:'a', 'mail', 5, 'acme');
RESET ROLE;
SELECT pg_temp.seats(:'a');
SELECT * FROM pg_temp.counted(:'a');

-- ---------------------------------------------------------------------------
-- A tenant that is not active: no limit changes, no keyed enqueue.
-- ---------------------------------------------------------------------------
SELECT baton.set_tenant_state(:'b', 'quiescing');
\set VERBOSITY terse
SELECT baton.limit_key(:'b', 'news', 2, 'x');
SELECT baton.enqueue_keyed(:'b', 'news', 'x9', 'x');
INSERT INTO baton.key_limits VALUES (:'b', 'news', 'q', 1, false);
\set VERBOSITY default
SELECT baton.set_tenant_state(:'b', 'active');

DROP FUNCTION pg_temp.take(uuid, int), pg_temp.seats(uuid), pg_temp.counted(uuid), pg_temp.slots(uuid);
-- The bindings name the role by oid: gone with it.
DELETE FROM baton.target_bindings WHERE tenant IN (:'a', :'b');
DROP OWNED BY baton_keys_worker, baton_keys_admin, baton_keys_producer;
DROP ROLE baton_keys_worker, baton_keys_admin, baton_keys_producer;
