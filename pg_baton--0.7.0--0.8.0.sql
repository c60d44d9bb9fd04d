-- pg_baton 0.7.0 -> 0.8.0: baton.health, one row per check of what keeps pg_baton well
-- (docs/operations.md, "Health"), and the index its oldest_pending check walks.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.8.0'" to load this file. \quit

-- What oldest_pending reads: pending deliveries in order of becoming due (its first
-- entry, not a count of the queue).
CREATE INDEX deliveries_due ON baton.deliveries (run_after)
    WHERE status = 'pending';

-- The checks, judged under the session's baton.health_* thresholds.
CREATE FUNCTION baton.health_checks()
    RETURNS TABLE(name text, status text, value double precision, detail text, hint text)
    LANGUAGE C STABLE ROWS 8 AS 'MODULE_PATHNAME', 'baton_health_checks';
REVOKE ALL ON FUNCTION baton.health_checks() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION baton.health_checks() TO @extowner@ WITH GRANT OPTION;

-- The view admins and the exporter read (grant_admin grants it and its function).
CREATE VIEW baton.health AS SELECT * FROM baton.health_checks();
REVOKE ALL ON baton.health FROM PUBLIC;
GRANT SELECT ON baton.health TO @extowner@ WITH GRANT OPTION;
