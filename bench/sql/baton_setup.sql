-- pg_baton, fresh: its tables refuse TRUNCATE, so the extension is dropped and created
-- again. Then one tenant and :rows pending deliveries of target 'bench', inserted
-- directly as superuser (the fence triggers run for every row).
-- psql variables: tenant, rows.
DROP EXTENSION IF EXISTS pg_baton CASCADE;
CREATE EXTENSION pg_baton;
SELECT baton.create_tenant(:'tenant');
INSERT INTO baton.deliveries (tenant, target, dedup_key)
SELECT :'tenant', 'bench', 'k' || g FROM generate_series(1, :rows) AS g;
VACUUM ANALYZE baton.deliveries;
