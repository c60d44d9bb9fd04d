-- pg_baton 0.7.0 -> 0.8.0: private wake-ups, and baton.health.
-- Wake-ups: each (tenant, target) has a NOTIFY channel of its own, named by a keyed hash
-- that baton.wakeup_channel() gives to whoever may claim there; the single channel
-- baton_enqueue, on which any role could listen, is gone.
-- Health: baton.health, one row per check of what keeps pg_baton well
-- (docs/operations.md, "Health"), and the index its oldest_pending check walks.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.8.0'" to load this file. \quit

-- 32 random bytes, the default of baton.wakeup_key.secret.
CREATE FUNCTION baton.new_wakeup_secret() RETURNS bytea
    LANGUAGE C VOLATILE AS 'MODULE_PATHNAME', 'baton_new_wakeup_secret';
REVOKE ALL ON FUNCTION baton.new_wakeup_secret() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION baton.new_wakeup_secret() TO @extowner@ WITH GRANT OPTION;

-- The secret that names the wake-up channels: one row, readable by the extension's
-- owner only. Not dumped: a restored database gets a new secret, and its workers ask
-- for their channels again when they reconnect. To change it (as a superuser):
-- TRUNCATE baton.wakeup_key; INSERT INTO baton.wakeup_key DEFAULT VALUES; the TRUNCATE
-- makes every session read the new one.
CREATE TABLE baton.wakeup_key (
    singleton boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    secret    bytea   NOT NULL DEFAULT baton.new_wakeup_secret()
);
REVOKE ALL ON baton.wakeup_key FROM PUBLIC;
GRANT SELECT ON baton.wakeup_key TO @extowner@;
INSERT INTO baton.wakeup_key DEFAULT VALUES;

-- The channel a worker LISTENs on for (tenant, target).
CREATE FUNCTION baton.wakeup_channel(tenant uuid, target text) RETURNS text
    LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'baton_wakeup_channel';
REVOKE ALL ON FUNCTION baton.wakeup_channel(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION baton.wakeup_channel(uuid, text) TO @extowner@ WITH GRANT OPTION;

COMMENT ON FUNCTION baton.wakeup_channel(uuid, text) IS
    'The NOTIFY channel on which enqueues of (tenant, target) wake workers: LISTEN on it, then claim.';

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
