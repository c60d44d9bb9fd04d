-- ===========================================================================
-- baton.cancel_delivery(tenant, id, reason) and baton.redrive(tenant, target, ids,
-- max_rows) (0.7.0): the cancelled status, the fence of a cancelled delivery's holder,
-- redrive of failed and cancelled deliveries, their refusals, delivery_stats, purge and
-- the grants.
-- ===========================================================================
\set a '00000000-0000-0000-0c07-00000000000a'
\set b '00000000-0000-0000-0c07-00000000000b'
\set f '00000000-0000-0000-0c07-00000000000f'
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');
SELECT baton.create_tenant(:'f');

-- ---------------------------------------------------------------------------
-- Cancel a pending delivery: cancelled, settled, the reason in last_error, the
-- generation one up; a repeat answers the same and changes nothing.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'job', 'p1') AS p1 \gset
SELECT baton.cancel_delivery(:'a', :p1, 'not needed');
SELECT status, generation, attempts, last_error, settled_at IS NOT NULL AS settled, lease_until
  FROM baton.delivery(:'a', :p1);
SELECT settled_at AS p1_settled FROM baton.delivery(:'a', :p1) \gset
SELECT baton.cancel_delivery(:'a', :p1, 'another reason');
SELECT baton.cancel_delivery(:'a', :p1);
SELECT status, generation, last_error, settled_at = :'p1_settled' AS same_settled_at
  FROM baton.delivery(:'a', :p1);
-- A cancelled delivery is never claimed.
SELECT count(*) AS claimed FROM baton.claim(:'a', 'job', '1 hour', 10);
-- An enqueue with its key returns its id and does not revive it.
SELECT baton.enqueue(:'a', 'job', 'p1') = :p1 AS same_id;
SELECT status FROM baton.delivery(:'a', :p1);

-- ---------------------------------------------------------------------------
-- Cancel a claimed delivery: its holder is fenced (renew, finish, retry: DU001).
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'job', 'c1') AS c1 \gset
SELECT generation AS c1_gen FROM baton.claim(:'a', 'job', '1 hour') \gset
SELECT baton.cancel_delivery(:'a', :c1);
SELECT status, generation = :c1_gen + 1 AS bumped, lease_until, last_error, attempts
  FROM baton.delivery(:'a', :c1);
SELECT baton.renew(:'a', :c1, :c1_gen, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.finish(:'a', :c1, :c1_gen);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.retry(:'a', :c1, :c1_gen, 'boom');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.finish_batch(:'a', ARRAY[:c1]::bigint[], ARRAY[:c1_gen]::bigint[]);
SELECT status FROM baton.delivery(:'a', :c1);

-- ---------------------------------------------------------------------------
-- Finished and failed deliveries are not cancelled (DU007); unknown ids are DU008,
-- also in another tenant; a fenced tenant is DU002.
-- ---------------------------------------------------------------------------
SELECT baton.enqueue(:'a', 'job', 'f1') AS f1 \gset
SELECT generation AS f1_gen FROM baton.claim(:'a', 'job', '1 hour') \gset
SELECT baton.finish(:'a', :f1, :f1_gen);
SELECT baton.cancel_delivery(:'a', :f1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'a', 'job', 'x1', max_attempts => 1) AS x1 \gset
SELECT generation AS x1_gen FROM baton.claim(:'a', 'job', '1 hour') \gset
SELECT baton.finish(:'a', :x1, :x1_gen, 'failed');
SELECT baton.cancel_delivery(:'a', :x1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM baton.delivery(:'a', :f1) UNION ALL SELECT status FROM baton.delivery(:'a', :x1);
SELECT baton.cancel_delivery(:'a', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel_delivery(:'b', :c1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'f', 'job', 'fenced') AS fenced \gset
SELECT baton.set_tenant_state(:'f', 'fenced');
SELECT baton.cancel_delivery(:'f', :fenced);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'f', 'job');
\echo :LAST_ERROR_SQLSTATE

-- ---------------------------------------------------------------------------
-- Argument checks: NULLs 22004 naming the argument; a reason longer than retry's error,
-- max_rows out of 1..100000, ids empty, too long, with NULLs or repeats, 22023.
-- ---------------------------------------------------------------------------
SELECT baton.cancel_delivery(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel_delivery(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.cancel_delivery(:'a', :p1, repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(NULL, 'job');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', NULL, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', max_rows => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', max_rows => 100001);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', ARRAY(SELECT pg_catalog.generate_series(1, 1001))::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', '{1,NULL}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', '{1,1}');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.redrive(:'a', 'job', '{{1},{2}}');
\echo :LAST_ERROR_SQLSTATE
-- A reason of exactly 65536 bytes is accepted.
SELECT baton.enqueue(:'a', 'job', 'long') AS long \gset
SELECT baton.cancel_delivery(:'a', :long, repeat('y', 65536));
SELECT length(last_error) FROM baton.delivery(:'a', :long);

-- ---------------------------------------------------------------------------
-- Redrive: failed and cancelled rows of the target, oldest settled first, back to
-- pending with attempts 0, due now, no lease, last_error and generation kept.
-- ---------------------------------------------------------------------------
SELECT id, status, generation, attempts, last_error IS NOT NULL AS has_error
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'job' ORDER BY id;
-- Another target and another tenant are untouched.
SELECT baton.enqueue(:'a', 'other', 'o1') AS o1 \gset
SELECT baton.cancel_delivery(:'a', :o1);
SELECT baton.enqueue(:'b', 'job', 'b1') AS b1 \gset
SELECT baton.cancel_delivery(:'b', :b1);
-- At most max_rows, the oldest settled first (p1 was cancelled first).
SELECT baton.redrive(:'a', 'job', max_rows => 1);
SELECT status, attempts, generation, run_after <= now() AS due, lease_until, settled_at, last_error
  FROM baton.delivery(:'a', :p1);
-- Then the rest: c1, x1 and long (failed and cancelled); f1 is finished and stays.
SELECT baton.redrive(:'a', 'job');
SELECT id, status, generation, attempts, settled_at IS NULL AS unsettled
  FROM baton.deliveries WHERE tenant = :'a' AND target = 'job' ORDER BY id;
SELECT baton.redrive(:'a', 'job');
SELECT status FROM baton.delivery(:'a', :o1) UNION ALL SELECT status FROM baton.delivery(:'b', :b1);
-- A redriven row is claimed under the next generation; the former holder stays fenced.
SELECT generation = :c1_gen + 2 AS next_generation, attempt
  FROM baton.claim(:'a', 'job', '1 hour', 10) WHERE id = :c1;
SELECT baton.finish(:'a', :c1, :c1_gen);
\echo :LAST_ERROR_SQLSTATE
-- By ids: only the failed and cancelled among them move; others, unknown ids and the
-- rows of another target are skipped.
SELECT baton.cancel_delivery(:'a', :c1, 'again');
SELECT baton.redrive(:'a', 'job', ARRAY[:c1, :f1, 0, :o1]::bigint[]);
SELECT status FROM baton.delivery(:'a', :c1) UNION ALL SELECT status FROM baton.delivery(:'a', :o1);
SELECT baton.redrive(:'a', 'other', ARRAY[:o1]::bigint[]);
SELECT status, last_error FROM baton.delivery(:'a', :o1);

-- ---------------------------------------------------------------------------
-- delivery_stats counts cancelled deliveries; purge removes them like settled ones.
-- ---------------------------------------------------------------------------
SELECT baton.cancel_delivery(:'b', baton.enqueue(:'b', 'job', 'b2'));
SELECT target, pending, claimed, finished, failed, cancelled
  FROM baton.delivery_stats WHERE tenant = :'b' ORDER BY target;
SELECT baton.purge('0 seconds') > 0 AS purged;
SELECT count(*) AS cancelled_left FROM baton.deliveries WHERE status = 'cancelled';

-- ---------------------------------------------------------------------------
-- Grants: producers and admins may cancel; only admins redrive; workers neither.
-- ---------------------------------------------------------------------------
CREATE ROLE baton_cancel_producer;
CREATE ROLE baton_cancel_worker;
CREATE ROLE baton_cancel_admin;
SELECT baton.grant_producer('baton_cancel_producer');
SELECT baton.grant_worker('baton_cancel_worker');
SELECT baton.grant_admin('baton_cancel_admin');
SELECT r.rolname, p.proname, has_function_privilege(r.oid, p.oid, 'EXECUTE') AS may
  FROM pg_roles r CROSS JOIN pg_proc p
 WHERE r.rolname LIKE 'baton_cancel_%' AND p.pronamespace = 'baton'::regnamespace
   AND p.proname IN ('cancel_delivery', 'redrive')
 ORDER BY 1, 2;
SELECT baton.enqueue(:'a', 'job', 'by-producer') AS bp \gset
SET ROLE baton_cancel_producer;
SELECT baton.cancel_delivery(:'a', :bp, 'by a producer');
SELECT baton.redrive(:'a', 'job');
RESET ROLE;
SET ROLE baton_cancel_admin;
SELECT baton.redrive(:'a', 'job', ARRAY[:bp]::bigint[]);
RESET ROLE;
DROP OWNED BY baton_cancel_producer, baton_cancel_worker, baton_cancel_admin;
DROP ROLE baton_cancel_producer, baton_cancel_worker, baton_cancel_admin;
