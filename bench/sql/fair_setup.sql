-- bench/fair.sh: pg_baton, fresh (its tables refuse TRUNCATE: the extension is dropped
-- and created again), with :tenants tenants, bench_tenant(1) .. bench_tenant(:tenants),
-- each binding target :'target' to the role pool; tenant 1 (the noisy one in the
-- noisy-neighbour runs) gets :first_backlog pending deliveries, every other tenant
-- :backlog, enqueued with baton.enqueue_batch (10,000 a call at most); with :weighted 1,
-- the tenants i % 10 = 3 weigh 2 and i % 10 = 7 weigh 3. The claim log (bench_claims:
-- what the workers of the noisy-neighbour runs claimed, and when) is emptied.
-- psql variables: tenants, target, backlog, first_backlog, weighted.
DROP EXTENSION IF EXISTS pg_baton CASCADE;
CREATE EXTENSION pg_baton;
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pool') AS no_pool \gset
\if :no_pool
CREATE ROLE pool NOLOGIN;
\endif
-- Tenant i's id: ids sort as their numbers do.
CREATE OR REPLACE FUNCTION bench_tenant(i bigint) RETURNS uuid IMMUTABLE PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid $$;
CREATE UNLOGGED TABLE IF NOT EXISTS bench_claims (tenant uuid, id bigint, claimed_at timestamptz);
TRUNCATE bench_claims;
CREATE SEQUENCE IF NOT EXISTS bench_keys;
-- Per-tenant calls in slices of 2,000 tenants, one transaction each (each call takes
-- a lock on its tenant, and a transaction holds only so many).
SELECT format('SELECT count(baton.create_tenant(bench_tenant(i))) FROM generate_series(%s, %s) i', lo, least(lo + 1999, :tenants))
  FROM generate_series(1, :tenants, 2000) lo \gexec
SELECT format('SELECT count(baton.bind_target(bench_tenant(i), %L, ''pool'')) FROM generate_series(%s, %s) i', :'target', lo, least(lo + 1999, :tenants))
  FROM generate_series(1, :tenants, 2000) lo \gexec
\if :weighted
SELECT count(baton.set_weight(bench_tenant(i), :'target', CASE i % 10 WHEN 3 THEN 2 ELSE 3 END)) AS weighted
  FROM generate_series(2, :tenants) i WHERE i % 10 IN (3, 7);
\endif
SET baton.notify = off;
SELECT format('SELECT count(*) FROM generate_series(%s, %s) i,
                      LATERAL (SELECT CASE WHEN i = 1 THEN %s ELSE %s END AS n) b,
                      LATERAL generate_series(1, b.n, 10000) lo,
                      LATERAL baton.enqueue_batch(bench_tenant(i),
                                (SELECT jsonb_agg(jsonb_build_object(''target'', %L, ''dedup_key'', ''s'' || g))
                                   FROM generate_series(lo, least(lo + 9999, b.n)) g))',
              lo, least(lo + 1999, :tenants), :first_backlog, :backlog, :'target')
  FROM generate_series(1, :tenants, 2000) lo \gexec
VACUUM ANALYZE;
