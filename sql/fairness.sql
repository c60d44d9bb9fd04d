-- ===========================================================================
-- baton.claim_fair(target, lease, max_items), baton.set_weight, baton.pause and
-- baton.resume, baton.pause_everywhere and baton.resume_everywhere (0.13.0): the
-- tenants a fair claim serves, the turns of each binding's weight, order within a
-- tenant, pauses, the refusals, the view baton.targets, the health row, the grants.
-- ===========================================================================
\set a '00000000-0000-0000-0f13-00000000000a'
\set b '00000000-0000-0000-0f13-00000000000b'
\set c '00000000-0000-0000-0f13-00000000000c'
\set d '00000000-0000-0000-0f13-00000000000d'
\set q '00000000-0000-0000-0f13-00000000000e'
SELECT baton.create_tenant(t::uuid) FROM unnest(ARRAY[:'a', :'b', :'c', :'d', :'q']) t;
CREATE ROLE baton_fair_pool;
CREATE ROLE baton_fair_other;
CREATE ROLE baton_fair_worker;
GRANT baton_fair_pool TO baton_fair_worker;
CREATE ROLE baton_fair_admin;
SELECT baton.grant_worker('baton_fair_worker');
SELECT baton.grant_admin('baton_fair_admin');
-- a, b, c and q bind target mail to the pool; d binds it to another role.
SELECT baton.bind_target(t::uuid, 'mail', 'baton_fair_pool') FROM unnest(ARRAY[:'a', :'b', :'c', :'q']) t;
SELECT baton.bind_target(:'d', 'mail', 'baton_fair_other');

-- A worker's deliveries as tenant:dedup_key (the tenant by the last letter of its id; q
-- is e), in the order it got them.
CREATE FUNCTION pg_temp.fair(n int) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(right(c.tenant::text, 1) || ':' || c.dedup_key, ' '), '-')
      FROM baton.claim_fair('mail', '1 hour', n) c $$;

-- ---------------------------------------------------------------------------
-- Turns of one item each (the default weight) over the tenants with work, in order of
-- their id; each row names its tenant and has a lease at generation 1.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'mail', 'a' || g) FROM generate_series(1, 4) g;
SELECT baton.enqueue(:'b', 'mail', 'b' || g) FROM generate_series(1, 2) g;
SELECT baton.enqueue(:'c', 'mail', 'c' || g) FROM generate_series(1, 1) g;
SET ROLE baton_fair_worker;
SELECT tenant = :'a' AS tenant_a, dedup_key, generation, attempt, lease_until > now() AS leased
  FROM baton.claim_fair('mail', '1 hour');
SELECT pg_temp.fair(3);
-- The round goes on where the last call left it: c ran dry, so a again.
SELECT pg_temp.fair(10);
SELECT pg_temp.fair(10) AS nothing_left;
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Weights: a turn gives the tenant its binding's weight in items, across calls.
-- ---------------------------------------------------------------------------
SELECT baton.set_weight(:'a', 'mail', 3);
SELECT baton.set_weight(:'c', 'mail', 2);
SELECT baton.enqueue(:'a', 'mail', 'wa' || g) FROM generate_series(1, 6) g;
SELECT baton.enqueue(:'b', 'mail', 'wb' || g) FROM generate_series(1, 6) g;
SELECT baton.enqueue(:'c', 'mail', 'wc' || g) FROM generate_series(1, 6) g;
SET ROLE baton_fair_worker;
-- The first three calls are two whole rounds: a 6, b 2, c 4. Then a runs dry, and b and
-- c share what is left.
SELECT pg_temp.fair(4);
SELECT pg_temp.fair(4);
SELECT pg_temp.fair(4);
SELECT pg_temp.fair(6);
SELECT pg_temp.fair(20);
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Within a tenant the claim order holds: priority, then age; a delivery not yet due
-- waits.
-- ---------------------------------------------------------------------------
SELECT baton.set_weight(:'a', 'mail', 1);
SELECT baton.enqueue(:'a', 'mail', 'low', priority => 0);
SELECT baton.enqueue(:'a', 'mail', 'high', priority => 5);
SELECT baton.enqueue(:'a', 'mail', 'later', priority => 9, run_after => now() + interval '1 hour');
SELECT baton.enqueue(:'b', 'mail', 'b-only');
SET ROLE baton_fair_worker;
SELECT pg_temp.fair(10);
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Tenants a worker does not serve are passed over: another role's binding (d), a
-- target not bound (q's sms), a paused binding, a tenant quiescing or fenced. Their
-- deliveries stay pending.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(t::uuid, 'mail', 'x1') FROM unnest(ARRAY[:'a', :'b', :'c', :'d', :'q']) t;
SELECT baton.enqueue(:'q', 'sms', 'unbound');
SELECT baton.pause(:'b', 'mail') AS paused, baton.pause(:'b', 'mail') AS again;
SELECT baton.set_tenant_state(:'c', 'quiescing');
SELECT baton.set_tenant_state(:'q', 'fenced');
SET ROLE baton_fair_worker;
SELECT pg_temp.fair(10);
SELECT count(*) AS unbound_sms FROM baton.claim_fair('sms', '1 hour', 10);
RESET ROLE;
SELECT count(*) AS superuser_sms FROM baton.claim_fair('sms', '1 hour', 10);
SELECT right(tenant::text, 1) AS tenant, status FROM baton.deliveries
 WHERE dedup_key = 'x1' AND tenant IN (:'a', :'b', :'c', :'d', :'q') ORDER BY tenant;
-- The other role's pool serves d alone.
SELECT baton.grant_worker('baton_fair_other');
SET ROLE baton_fair_other;
SELECT pg_temp.fair(10) AS other_pool;
RESET ROLE;
SELECT baton.set_tenant_state(:'c', 'active');
SELECT baton.set_tenant_state(:'q', 'active');

-- ---------------------------------------------------------------------------
-- A paused binding: claim and claim_fair take nothing of it; enqueues go on; a lease
-- taken before the pause is renewed and finished as usual; resume gives it back.
-- ---------------------------------------------------------------------------
SELECT id AS held, generation AS held_gen FROM baton.claim(:'c', 'mail', '1 hour') \gset
SELECT baton.pause(:'c', 'mail');
SELECT baton.enqueue(:'c', 'mail', 'while-paused') IS NOT NULL AS enqueued;
SELECT count(*) AS claimed_while_paused FROM baton.claim(:'c', 'mail', '1 hour', 10);
SELECT baton.renew(:'c', :held, :held_gen, '2 hours') > now() AS renewed;
SELECT baton.finish(:'c', :held, :held_gen);
CREATE TEMP VIEW ours AS SELECT * FROM baton.targets
 WHERE tenant IS NULL OR tenant IN (:'a', :'b', :'c', :'d', :'q');
SELECT right(tenant::text, 1) AS tenant, target, role, weight, paused, paused_at IS NOT NULL AS since,
       paused_everywhere_at
  FROM ours WHERE paused ORDER BY tenant;
SELECT name, status, value, detail ~ '^2 bindings and 0 targets everywhere paused; the longest, target "mail" of tenant 00000000-0000-0000-0f13-00000000000b, for \d+ s$' AS detail
  FROM baton.health WHERE name = 'paused';
SELECT baton.resume(:'b', 'mail') AS resumed, baton.resume(:'b', 'mail') AS again, baton.resume(:'c', 'mail');
SELECT count(*) AS paused FROM ours WHERE paused;
SET ROLE baton_fair_worker;
SELECT pg_temp.fair(10);
RESET ROLE;

-- ---------------------------------------------------------------------------
-- A target paused in every tenant: no claim takes it (tenants bound later included);
-- its bindings stay as they were.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(t::uuid, 'mail', 'y1') FROM unnest(ARRAY[:'a', :'b']) t;
SELECT baton.pause_everywhere('mail') AS paused, baton.pause_everywhere('mail') AS again;
SET ROLE baton_fair_worker;
SELECT pg_temp.fair(10) AS while_paused;
SELECT count(*) AS claim_while_paused FROM baton.claim(:'a', 'mail', '1 hour', 10);
RESET ROLE;
SELECT right(tenant::text, 1) AS tenant, target, paused, paused_at, paused_everywhere_at IS NOT NULL AS since
  FROM ours WHERE paused ORDER BY tenant NULLS FIRST;
SELECT value, detail ~ '^0 bindings and 1 target everywhere paused; the longest, target "mail" in every tenant, for \d+ s$' AS detail
  FROM baton.health WHERE name = 'paused';
SELECT baton.resume_everywhere('mail') AS resumed, baton.resume_everywhere('mail') AS again;
SET ROLE baton_fair_worker;
SELECT pg_temp.fair(10) AS resumed;
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Refusals: a weight out of bounds (22023), a binding that does not exist (DU008), a
-- target nobody knows (DU008), a tenant not active (DU002); nothing changes.
-- ---------------------------------------------------------------------------
\set VERBOSITY default
SELECT baton.set_weight(:'a', 'mail', 0);
SELECT baton.set_weight(:'a', 'mail', 10001);
SELECT baton.set_weight(:'a', 'mail', NULL);
SELECT baton.set_weight(:'a', 'nope', 2);
SELECT baton.pause(:'a', 'nope');
SELECT baton.pause_everywhere('nope');
SELECT baton.set_tenant_state(:'q', 'fenced');
SELECT baton.pause(:'q', 'mail');
SELECT baton.set_tenant_state(:'q', 'active');
SELECT right(tenant::text, 1) AS tenant, weight, paused FROM ours WHERE weight <> 1 OR paused;
\set VERBOSITY terse
-- Direct SQL keeps to the same bounds.
UPDATE baton.target_bindings SET weight = -1 WHERE tenant = :'a';

-- ---------------------------------------------------------------------------
-- Who may: workers claim fairly, only admins set weights and pauses (42501).
-- ---------------------------------------------------------------------------
SET ROLE baton_fair_worker;
SELECT baton.pause(:'a', 'mail');
SELECT baton.set_weight(:'a', 'mail', 2);
SELECT baton.pause_everywhere('mail');
SELECT * FROM baton.targets;
RESET ROLE;
SET ROLE baton_fair_admin;
SELECT baton.pause(:'a', 'mail'), baton.set_weight(:'a', 'mail', 2), baton.resume(:'a', 'mail');
RESET ROLE;
SELECT right(tenant::text, 1) AS tenant, weight, paused FROM ours WHERE weight > 1 ORDER BY tenant;

-- ---------------------------------------------------------------------------
-- A call visits at most 256 tenants (each one it serves holds its fence lock until the
-- transaction ends); the next call goes on from there.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE wide AS
SELECT ('00000000-0000-0000-0f14-' || lpad(to_hex(g), 12, '0'))::uuid AS tenant FROM generate_series(1, 300) g;
SELECT count(baton.create_tenant(tenant)) AS tenants FROM wide;
SELECT count(baton.bind_target(tenant, 'wide', 'baton_fair_pool')) AS bound FROM wide;
SELECT count(baton.enqueue(tenant, 'wide', 'one')) AS enqueued FROM wide;
BEGIN;
SET LOCAL ROLE baton_fair_worker;
SELECT count(*) AS first_call, count(DISTINCT tenant) AS tenants FROM baton.claim_fair('wide', '1 hour', 1000);
RESET ROLE;
SELECT count(*) AS fence_locks_held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
COMMIT;
SET ROLE baton_fair_worker;
SELECT count(*) AS second_call FROM baton.claim_fair('wide', '1 hour', 1000);
RESET ROLE;
DELETE FROM baton.target_bindings WHERE tenant IN (SELECT tenant FROM wide);

DROP VIEW ours;
DROP FUNCTION pg_temp.fair(int);
-- The bindings name the roles by oid: gone with them.
DELETE FROM baton.target_bindings WHERE tenant IN (:'a', :'b', :'c', :'d', :'q');
DROP OWNED BY baton_fair_pool, baton_fair_other, baton_fair_worker, baton_fair_admin;
DROP ROLE baton_fair_pool, baton_fair_other, baton_fair_worker, baton_fair_admin;
