-- ===========================================================================
-- The per-backend caches (src/pg/runtime/cache.hpp) past their caps: the fence keeps
-- the reads of one transaction, and the authorization cache the tenants found writable,
-- for at most 1,024 tenants each; the next new tenant empties the table. A backend that
-- wrote to more tenants than that, in one transaction and in one transaction each,
-- still refuses a tenant fenced after it wrote there (DU002), and writes to the others.
-- ===========================================================================
\set tfirst '00000000-0000-0000-0cac-000000000001'
\set tlast '00000000-0000-0000-0cac-000000001100'
SELECT count(baton.create_tenant(('00000000-0000-0000-0cac-' || lpad(i::text, 12, '0'))::uuid)) AS created
  FROM generate_series(1, 1100) AS i;

-- One statement, one transaction: each tenant twice, in turn.
SELECT count(baton.enqueue(('00000000-0000-0000-0cac-' || lpad((1 + i % 1100)::text, 12, '0'))::uuid,
                           'caches', 'one-' || i)) AS enqueued
  FROM generate_series(0, 2199) AS i;

-- One transaction each.
DO $$
BEGIN
    FOR i IN 1..1100 LOOP
        PERFORM baton.enqueue(('00000000-0000-0000-0cac-' || lpad(i::text, 12, '0'))::uuid, 'caches', 'each-' || i);
        COMMIT;
    END LOOP;
END $$;
SELECT count(*) AS deliveries FROM baton.deliveries WHERE target = 'caches';

-- The first tenant fenced: refused; the last one still written.
SELECT baton.set_tenant_state(:'tfirst', 'fenced');
SELECT baton.enqueue(:'tfirst', 'caches', 'after-fence');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.enqueue(:'tlast', 'caches', 'after-fence') IS NOT NULL AS written;
-- and in one transaction that wrote it first
BEGIN;
SELECT baton.enqueue(:'tlast', 'caches', 'before-fence-2') IS NOT NULL AS written;
SELECT baton.set_tenant_state(:'tlast', 'fenced');
SELECT baton.enqueue(:'tlast', 'caches', 'after-fence-2');
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- Active again: written.
SELECT baton.set_tenant_state(:'tfirst', 'active');
SELECT baton.enqueue(:'tfirst', 'caches', 'active-again') IS NOT NULL AS written;
SELECT count(*) AS deliveries FROM baton.deliveries WHERE target = 'caches';
