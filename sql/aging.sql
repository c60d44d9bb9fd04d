-- ===========================================================================
-- baton.age_pending(max_rows) and baton.priority_aging (0.14.0): a due pending delivery
-- that has waited longer than the setting behind higher priorities is raised to the
-- highest priority pending in its tenant and target, and then claimed before whatever
-- became due after it; deliveries with a key, recent ones and those of tenants that are
-- not active are left alone; the refusals and the grants.
-- ===========================================================================
\set t '00000000-0000-0000-0f16-000000000001'
\set f '00000000-0000-0000-0f16-000000000002'
SELECT baton.create_tenant(x::uuid) FROM unnest(ARRAY[:'t', :'f']) x;
CREATE ROLE baton_aging_worker NOLOGIN;
SELECT baton.grant_worker('baton_aging_worker');

-- A low-priority delivery due an hour ago, a stream of higher ones due now, a keyed one
-- due an hour ago, a low one due now; the same old one in a tenant that gets fenced.
SELECT baton.enqueue(:'t', 'jobs', 'old-low', run_after => now() - interval '1 hour') > 0 AS enqueued;
SELECT count(baton.enqueue(:'t', 'jobs', 'high-' || g, priority => 5)) AS enqueued FROM generate_series(1, 3) g;
SELECT baton.enqueue_keyed(:'t', 'jobs', 'old-keyed', 'k', run_after => now() - interval '1 hour') > 0 AS enqueued;
SELECT baton.enqueue(:'t', 'jobs', 'new-low') > 0 AS enqueued;
SELECT baton.enqueue(:'f', 'jobs', 'fenced-low', run_after => now() - interval '1 hour') > 0 AS enqueued;
SELECT baton.enqueue(:'f', 'jobs', 'fenced-high', priority => 5) > 0 AS enqueued;
SELECT baton.set_tenant_state(:'f', 'fenced');

-- Off: nothing is raised.
SET baton.priority_aging = 0;
SELECT baton.age_pending() AS raised;
-- Ten minutes: only old-low.
SET baton.priority_aging = '10min';
SELECT baton.age_pending() AS raised;
SELECT tenant = :'t' AS t, dedup_key, priority FROM baton.deliveries
 WHERE tenant IN (:'t', :'f') ORDER BY tenant, id;
-- The claim takes it first: the highest priority, and due before the others.
SELECT dedup_key FROM baton.claim(:'t', 'jobs', '1 minute', 2);
SELECT baton.age_pending() AS raised;

-- Refusals; who may call it.
\set VERBOSITY terse
SELECT baton.age_pending(0);
SELECT baton.age_pending(NULL);
SET ROLE baton_aging_worker;
SELECT baton.age_pending();
RESET ROLE;
\set VERBOSITY default
RESET baton.priority_aging;
SHOW baton.priority_aging;
DROP OWNED BY baton_aging_worker;
DROP ROLE baton_aging_worker;
