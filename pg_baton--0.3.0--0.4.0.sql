-- pg_baton 0.3.0 -> 0.4.0: a trusted extension, so that a database owner who is not a
-- superuser can install it and restore a dump of it.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.4.0'" to load this file. \quit

-- pg_baton's functions, its restore check and its reaper act with the rights of the
-- extension's owner, the role that ran CREATE EXTENSION (docs/guide/security.md). When that
-- role is not a superuser, Postgres runs the install scripts as the bootstrap superuser,
-- who then owns every object; the owner gets exactly what pg_baton's calls and a
-- restore use: rows of the tables (no TRUNCATE, REFERENCES or TRIGGER, so no code of its
-- own runs inside pg_baton's writes), the sequences, and the grant option on the
-- functions and views that the grant_* helpers hand out. When the owner owns the
-- objects (a superuser installed pg_baton), these grants change nothing it can do.
GRANT SELECT, INSERT, UPDATE, DELETE
   ON baton.tenants, baton.target_bindings, baton.workflows, baton.runs, baton.stages,
      baton.step_entries, baton.markers, baton.deliveries, baton.in_use
   TO @extowner@;
GRANT SELECT, UPDATE, USAGE ON SEQUENCE baton.entry_id_seq, baton.deliveries_id_seq TO @extowner@;
GRANT SELECT ON baton.delivery_stats, baton.run_stats TO @extowner@ WITH GRANT OPTION;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA baton TO @extowner@ WITH GRANT OPTION;
