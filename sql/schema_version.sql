-- ===========================================================================
-- The library serves the schema of its own version only (docs/guide/versions.md): on a
-- schema older than pg_baton.control's default_version, every call and every write
-- that passes pg_baton's triggers is refused with 55000 and the hint to update; after
-- ALTER EXTENSION pg_baton UPDATE the same calls work. Recreates the extension.
-- ===========================================================================
DROP EXTENSION pg_baton CASCADE;
CREATE EXTENSION pg_baton VERSION '0.10.0';
SELECT extversion FROM pg_extension WHERE extname = 'pg_baton';
\set t '00000000-0000-0000-5c4e-000000000001'

-- What a refusal says: its SQLSTATE, whether its message names the installed version
-- and the library's (the control file's default_version), its hint.
CREATE FUNCTION pg_temp.refusal(call text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text;
    message text;
    hint text;
    library text := (SELECT default_version FROM pg_available_extensions WHERE name = 'pg_baton');
BEGIN
    EXECUTE call;
    RETURN 'no refusal';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
    RETURN state || ' | names both versions: '
        || (message = format('extension "pg_baton" is installed at version 0.10.0, older than its library''s version %s', library))
        || ' | ' || hint;
END $$;

-- A function of the contract, a write by direct SQL (the fence's trigger), a read.
SELECT pg_temp.refusal(format('SELECT baton.create_tenant(%L)', :'t'));
SELECT pg_temp.refusal(format('INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (%L, ''w'', ''k'')', :'t'));
SELECT pg_temp.refusal(format('SELECT baton.tenant_write_allowed(%L)', :'t'));
SELECT pg_temp.refusal('SELECT baton.reap()');
-- As a client sees it (its SQLSTATE alone: the message names the library's version).
\set VERBOSITY sqlstate
SELECT baton.create_tenant(:'t');
\set VERBOSITY default
-- Nothing was written.
SELECT count(*) AS tenants FROM baton.tenants;
SELECT count(*) AS deliveries FROM baton.deliveries;

-- The update: the same calls work.
ALTER EXTENSION pg_baton UPDATE;
SELECT extversion = default_version AS updated FROM pg_extension, pg_available_extensions
 WHERE extname = 'pg_baton' AND name = 'pg_baton';
SELECT pg_temp.refusal(format('SELECT baton.create_tenant(%L)', :'t'));
SELECT pg_temp.refusal(format('INSERT INTO baton.deliveries (tenant, target, dedup_key) VALUES (%L, ''w'', ''k'')', :'t'));
SELECT baton.tenant_write_allowed(:'t');
SELECT id, generation, dedup_key FROM baton.claim(:'t', 'w', '1 minute');
SELECT baton.reap();

-- The answer kept for this backend follows the extension dropped and created again: at
-- an older version refused, at the library's served.
DROP EXTENSION pg_baton CASCADE;
CREATE EXTENSION pg_baton VERSION '0.10.0';
SELECT pg_temp.refusal(format('SELECT baton.create_tenant(%L)', :'t'));
DROP EXTENSION pg_baton CASCADE;
CREATE EXTENSION pg_baton;
SELECT baton.create_tenant(:'t');
SELECT baton.tenant_write_allowed(:'t');
