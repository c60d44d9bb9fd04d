-- pg_baton 0.14.0 -> 0.15.0
--
-- baton.schedule() returns the schedule's next slot (its next_fire_at; NULL when it has
-- none), as the contract says.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.15.0'" to load this file. \quit

-- A function's result type cannot be changed by CREATE OR REPLACE, and DROP FUNCTION
-- then CREATE FUNCTION would lose the EXECUTE that baton.grant_producer and
-- baton.grant_admin gave roles since the install (and pg_dump's record of them). The
-- result type is therefore set in the catalogue: void and timestamptz are both pinned
-- types (no dependency row names either), and the function keeps its oid, grants,
-- comment and Citus' distribution.
UPDATE pg_catalog.pg_proc SET prorettype = 'pg_catalog.timestamptz'::pg_catalog.regtype
 WHERE oid OPERATOR(pg_catalog.=) 'baton.schedule(uuid, text, text, text, jsonb, jsonb, text)'::pg_catalog.regprocedure;
