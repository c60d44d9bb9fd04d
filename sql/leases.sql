-- baton.leases: the expiry of every lease held, a row per lease, written with the
-- delivery that takes it and removed with the write that ends it (pg/deliveries/
-- side_rows.hpp). A claim (by the direct path or by the statements: this file sets
-- baton.direct_access for each), a renew and a row claimed by direct SQL each add a row;
-- a finish, a retry, a renew and a reap remove the row of the lease they end; reap
-- returns the deliveries whose lease expired, and deletes an expired row no delivery
-- holds (one a write that passed no trigger left behind).
\set SHOW_CONTEXT never
\set t 00000000-0000-0000-0110-000000000001
SELECT baton.create_tenant(:'t');
SELECT count(*) AS enqueued FROM generate_series(1, 4) g, baton.enqueue(:'t', 'w', 'k' || g);
-- The lease rows of tenant t: generation, whether the row's delivery holds it (claimed
-- at that generation with that lease_until), expired or not; in delivery order.
\set lease_rows 'SELECT d.dedup_key, l.generation, d.status = ''claimed'' AND d.generation = l.generation AND d.lease_until = l.lease_until AS live, l.lease_until < now() AS expired FROM baton.leases l JOIN baton.deliveries d ON d.tenant = l.tenant AND d.id = l.id WHERE l.tenant = ''00000000-0000-0000-0110-000000000001'' ORDER BY d.id, l.lease_until'

-- A claim by each path adds one live row per delivery claimed.
SET baton.direct_access = on;
SELECT count(*) AS claimed FROM baton.claim(:'t', 'w', '1 hour', 1);
SET baton.direct_access = off;
SELECT count(*) AS claimed FROM baton.claim(:'t', 'w', '1 hour', 1);
RESET baton.direct_access;
:lease_rows;

-- A renew replaces the lease's row; a finish removes it, by each path.
SELECT id AS k1, generation AS g1 FROM baton.deliveries WHERE tenant = :'t' AND dedup_key = 'k1' \gset
SELECT id AS k2, generation AS g2 FROM baton.deliveries WHERE tenant = :'t' AND dedup_key = 'k2' \gset
SELECT baton.renew(:'t', :k1, :g1, '2 hours') > now() + interval '90 minutes' AS renewed;
SET baton.direct_access = on;
SELECT baton.finish(:'t', :k2, :g2) AS finished;
RESET baton.direct_access;
:lease_rows;
SELECT count(*) AS k2_rows FROM baton.leases WHERE tenant = :'t' AND id = :k2;

-- A row claimed by direct SQL gets its lease row too (the fence trigger writes it);
-- an update that changes neither its generation nor its lease adds none.
UPDATE baton.deliveries SET status = 'claimed', generation = generation + 1, attempts = attempts + 1,
       lease_until = now() - interval '1 minute'
 WHERE tenant = :'t' AND dedup_key = 'k3';
UPDATE baton.deliveries SET last_error = 'touched' WHERE tenant = :'t' AND dedup_key = 'k3';
:lease_rows;

-- The renewed lease of k1 made to expire by direct SQL: its row replaced by an expired one.
UPDATE baton.deliveries SET lease_until = now() - interval '2 minutes'
 WHERE tenant = :'t' AND dedup_key = 'k1';
-- reap returns k1 and k3, oldest expiry first, and their rows go: none is left.
SELECT baton.reap() AS reaped;
SELECT dedup_key, status, generation, last_error FROM baton.deliveries WHERE tenant = :'t' ORDER BY id;
:lease_rows;
-- Nothing left to reap.
SELECT baton.reap() AS reaped;

-- A stale row (as a write that passed no trigger leaves one: k2 is finished) stays
-- until it expires, then the next reap deletes it though nothing is reaped.
INSERT INTO baton.leases (tenant, id, generation, lease_until) VALUES
  (:'t', :k2, :g2, now() + interval '1 hour'), (:'t', :k2, :g2, now() - interval '1 second');
SELECT baton.reap() AS reaped;
:lease_rows;

-- A lease written twice: a renew back to the lease_until of the claim, in the claim's own
-- transaction (now() is the same), is the row already there, not a second one.
BEGIN;
SELECT id AS c, generation AS cg FROM baton.claim(:'t', 'w', '1 hour', 1) \gset
SELECT baton.renew(:'t', :c, :cg, '2 hours') = now() + interval '2 hours' AS renewed;
SELECT baton.renew(:'t', :c, :cg, '1 hour') = now() + interval '1 hour' AS renewed_back;
COMMIT;
-- The claim's generation has one row: its lease, held (the renew's two hours went with
-- the renew back).
SELECT l.lease_until - d.lease_until AS after_the_lease, d.status = 'claimed' AS claimed
  FROM baton.leases l JOIN baton.deliveries d ON d.tenant = l.tenant AND d.id = l.id
 WHERE l.tenant = :'t' AND l.id = :c AND l.generation = :cg ORDER BY l.lease_until;
