-- pg_baton 0.2.0 -> 0.3.0: pg_dump keeps pg_baton's rows, and a restore can load them.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.3.0'" to load this file. \quit

-- One row once this database's pg_baton has been written to (docs/guide/operations.md,
-- "Backups"). Not dumped: a restored database has no row until its first write, and
-- until then the fence lets the restore's COPY statements load every tenant's rows.
CREATE TABLE baton.in_use (
    singleton boolean     NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    since     timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON baton.in_use FROM PUBLIC;
-- A database being updated has been in use.
INSERT INTO baton.in_use DEFAULT VALUES;

-- Every table and sequence of the extension but in_use is configuration in PostgreSQL's
-- sense: its rows are the application's, so pg_dump dumps them (all of them) and
-- pg_restore loads them after CREATE EXTENSION has made the empty tables.
SELECT pg_catalog.pg_extension_config_dump('baton.tenants', '');
SELECT pg_catalog.pg_extension_config_dump('baton.target_bindings', '');
SELECT pg_catalog.pg_extension_config_dump('baton.workflows', '');
SELECT pg_catalog.pg_extension_config_dump('baton.runs', '');
SELECT pg_catalog.pg_extension_config_dump('baton.stages', '');
SELECT pg_catalog.pg_extension_config_dump('baton.step_entries', '');
SELECT pg_catalog.pg_extension_config_dump('baton.markers', '');
SELECT pg_catalog.pg_extension_config_dump('baton.deliveries', '');
SELECT pg_catalog.pg_extension_config_dump('baton.entry_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('baton.deliveries_id_seq', '');
