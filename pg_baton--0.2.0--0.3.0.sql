-- pg_baton 0.2.0 -> 0.3.0: pg_dump keeps pg_baton's rows.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.3.0'" to load this file. \quit

-- Every table and sequence of the extension is configuration in PostgreSQL's sense: its
-- rows are the application's, so pg_dump dumps them (all of them) and pg_restore loads
-- them after CREATE EXTENSION has made the empty tables (docs/operations.md, "Backups").
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
