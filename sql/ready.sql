-- baton.ready: a row per pending delivery, in claim order, written with the delivery
-- (pg/deliveries/side_rows.hpp): added when a delivery becomes pending, removed when it stops being
-- one, whatever writes it (the calls, by the direct path or the statements: this file
-- sets baton.direct_access where it matters; direct SQL; a cascade).
\set SHOW_CONTEXT never
\set t 00000000-0000-0000-0111-000000000001
SELECT baton.create_tenant(:'t');
SELECT count(*) AS enqueued FROM generate_series(1, 6) g, baton.enqueue(:'t', 'w', 'k' || g);
-- The ready rows of tenant t against its pending deliveries: each pending delivery has
-- exactly one, in its place (target, priority, due time), and no other delivery has one.
\set ready_rows 'SELECT d.dedup_key, d.status, r.target, -r.rank AS priority, r.run_after = d.run_after AS due_as_row FROM baton.deliveries d LEFT JOIN baton.ready r ON r.tenant = d.tenant AND r.id = d.id WHERE d.tenant = ''00000000-0000-0000-0111-000000000001'' ORDER BY d.id, r.rank'
-- The dedup keys of the deliveries a claim took (ids: its ids, comma-separated).
\set claimed_keys 'SELECT d.dedup_key FROM baton.deliveries d WHERE d.tenant = ''00000000-0000-0000-0111-000000000001'' AND d.id = ANY (string_to_array(:''ids'', '','')::bigint[]) ORDER BY d.id'
\set in_step 'SELECT (SELECT count(*) FROM baton.ready r WHERE r.tenant = ''00000000-0000-0000-0111-000000000001'') AS ready, (SELECT count(*) FROM baton.deliveries d JOIN baton.ready r ON r.tenant = d.tenant AND r.id = d.id AND r.target = d.target AND r.rank = -d.priority AND r.run_after = d.run_after WHERE d.tenant = ''00000000-0000-0000-0111-000000000001'' AND d.status = ''pending'') AS matching, (SELECT count(*) FROM baton.deliveries d WHERE d.tenant = ''00000000-0000-0000-0111-000000000001'' AND d.status = ''pending'') AS pending'
:in_step;

-- A claim by each path removes the rows it takes.
SET baton.direct_access = on;
SELECT count(*) AS claimed FROM baton.claim(:'t', 'w', '1 hour', 1);
SET baton.direct_access = off;
SELECT count(*) AS claimed FROM baton.claim(:'t', 'w', '1 hour', 1);
RESET baton.direct_access;
:in_step;

-- A retry gives one back (a row again, due after the delay), a cancel takes one out.
SELECT id AS k1, generation AS g1 FROM baton.deliveries WHERE tenant = :'t' AND dedup_key = 'k1' \gset
SELECT id AS k3 FROM baton.deliveries WHERE tenant = :'t' AND dedup_key = 'k3' \gset
SELECT baton.retry(:'t', :k1, :g1, 'again', '1 hour') AS retried;
SELECT baton.cancel_delivery(:'t', :k3, 'not needed') AS cancelled;
:in_step;
-- The retried row waits: a claim does not take it before it is due.
SELECT coalesce(string_agg(c.id::text, ','), '') AS ids FROM baton.claim(:'t', 'w', '1 hour', 10) c \gset
:claimed_keys;
:in_step;

-- Direct SQL: a new priority moves the row in claim order, a new target too; a
-- redrive gives the cancelled one back.
UPDATE baton.deliveries SET run_after = now() - interval '1 second', priority = 5 WHERE tenant = :'t' AND dedup_key = 'k1';
SELECT baton.redrive(:'t', 'w') AS redriven;
:ready_rows;
:in_step;
-- The claim takes the highest priority first.
SELECT coalesce(string_agg(c.id::text, ','), '') AS ids FROM baton.claim(:'t', 'w', '1 hour', 1) c \gset
:claimed_keys;

-- A reap gives expired leases back: rows again.
UPDATE baton.deliveries SET lease_until = now() - interval '1 second' WHERE tenant = :'t' AND status = 'claimed';
SELECT baton.reap() AS reaped;
:in_step;

-- A delete (by direct SQL, or a run's cascade) takes the row out.
DELETE FROM baton.deliveries WHERE tenant = :'t' AND dedup_key = 'k6';
:in_step;

-- A write that passes no trigger (session_replication_role = replica, as a logical
-- replica applies rows) leaves the ready row behind: a claim skips it, its delivery not
-- pending, and once the delivery is pending again its row is replaced, not doubled.
SET session_replication_role = replica;
UPDATE baton.deliveries SET status = 'failed', settled_at = now() WHERE tenant = :'t' AND dedup_key = 'k4';
RESET session_replication_role;
SELECT count(*) AS ready_left_behind FROM baton.ready r JOIN baton.deliveries d ON d.tenant = r.tenant AND d.id = r.id
 WHERE r.tenant = :'t' AND d.status <> 'pending';
SET baton.direct_access = on;
SELECT coalesce(string_agg(c.id::text, ','), '') AS ids FROM baton.claim(:'t', 'w', '1 hour', 10) c \gset
RESET baton.direct_access;
:claimed_keys;
UPDATE baton.deliveries SET status = 'pending', settled_at = NULL WHERE tenant = :'t' AND dedup_key = 'k4';
:in_step;
SELECT coalesce(string_agg(c.id::text, ','), '') AS ids FROM baton.claim(:'t', 'w', '1 hour', 10) c \gset
:claimed_keys;
:in_step;
