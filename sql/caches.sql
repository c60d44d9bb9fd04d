-- ===========================================================================
-- The per-backend caches (src/pg/runtime/cache.hpp) past their caps: the fence keeps
-- the reads of one transaction, and the authorization cache the tenants found writable,
-- for at most 1,024 tenants each; the next new tenant empties the table. A backend that
-- wrote to more tenants than that, in one transaction and in one transaction each,
-- still refuses a tenant fenced after it wrote there (DU002), and writes to the others.
-- The writes are runs (submit): deliveries would take a claim hint for each tenant, and
-- the hints' shared table (baton.claim_hint_targets, 1,024) lives as long as the server.
-- ===========================================================================
\set tfirst '00000000-0000-0000-0cac-000000000001'
\set tlast '00000000-0000-0000-0cac-000000001100'
SELECT count(baton.create_tenant(('00000000-0000-0000-0cac-' || lpad(i::text, 12, '0'))::uuid)) AS created
  FROM generate_series(1, 1100) AS i;
SELECT baton.define_workflow('caches_wf', '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}') AS version;

-- One statement, one transaction: each tenant twice, in turn.
SELECT count(baton.submit(('00000000-0000-0000-0cac-' || lpad((1 + i % 1100)::text, 12, '0'))::uuid,
                          'caches_wf')) AS submitted
  FROM generate_series(0, 2199) AS i;

-- One transaction each.
DO $$
BEGIN
    FOR i IN 1..1100 LOOP
        PERFORM baton.submit(('00000000-0000-0000-0cac-' || lpad(i::text, 12, '0'))::uuid, 'caches_wf');
        COMMIT;
    END LOOP;
END $$;
SELECT count(*) AS runs FROM baton.runs WHERE tenant::text LIKE '00000000-0000-0000-0cac-%';

-- The first tenant fenced: refused; the last one still written.
SELECT baton.set_tenant_state(:'tfirst', 'fenced');
SELECT baton.submit(:'tfirst', 'caches_wf');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.submit(:'tlast', 'caches_wf') IS NOT NULL AS written;
-- and in one transaction that wrote it first
BEGIN;
SELECT baton.submit(:'tlast', 'caches_wf') IS NOT NULL AS written;
SELECT baton.set_tenant_state(:'tlast', 'fenced');
SELECT baton.submit(:'tlast', 'caches_wf');
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
-- Active again: written.
SELECT baton.set_tenant_state(:'tfirst', 'active');
SELECT baton.submit(:'tfirst', 'caches_wf') IS NOT NULL AS written;
SELECT count(*) AS runs FROM baton.runs WHERE tenant::text LIKE '00000000-0000-0000-0cac-%';
