-- pg_baton 0.10.0 -> 0.11.0: a workflow's decide function named by its schema-qualified
-- signature (text), no longer by its oid (regprocedure). pg_upgrade keeps no function's
-- oid and refuses every table with a reg* column other than regclass, regrole and
-- regtype; pg_dump already carried the column as the function's name. A transition
-- finds the function by that name (docs/guide/versions.md, "pg_upgrade and pg_dump across
-- majors"). The oid of a function dropped since its workflow was defined becomes a name
-- that finds nothing (in pg_catalog, where only a superuser can make a function), so its
-- runs still stop at the decision with 42883.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.11.0'" to load this file. \quit

ALTER TABLE baton.workflows
    ALTER COLUMN decide TYPE text
    USING CASE WHEN decide IS NOT NULL THEN COALESCE(
        (pg_catalog.pg_identify_object('pg_catalog.pg_proc'::pg_catalog.regclass, decide, 0)).identity,
        pg_catalog.format('pg_catalog.%I(pg_catalog.jsonb)', 'dropped function ' OPERATOR(pg_catalog.||) decide::pg_catalog.oid)) END;
