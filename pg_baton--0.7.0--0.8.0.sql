-- pg_baton 0.7.0 -> 0.8.0: private wake-ups, baton.health, and recurring schedules.
-- Wake-ups: each (tenant, target) has a NOTIFY channel of its own, named by a keyed hash
-- that baton.wakeup_channel() gives to whoever may claim there; the single channel
-- baton_enqueue, on which any role could listen, is gone.
-- Health: baton.health, one row per check of what keeps pg_baton well
-- (docs/guide/operations.md, "Health"), and the index its oldest_pending check walks.
-- Schedules: the table baton.schedule_rows (the rows behind the view baton.schedules),
-- baton.schedule(), baton.unschedule() and baton.fire_schedules() (docs/guide/schedules.md).
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

-- One row per schedule of a tenant: what it enqueues (target, payload, binding), when
-- (spec, read in time_zone), and where it stands: next_fire_at, the first slot not yet
-- fired (NULL: none is left), and the last slot fired with its delivery.
CREATE TABLE baton.schedule_rows (
    tenant           uuid        NOT NULL,
    name             text        NOT NULL,
    target           text        NOT NULL,
    spec             text        NOT NULL,
    time_zone        text        NOT NULL,
    payload          jsonb       NOT NULL DEFAULT '{}',
    binding          jsonb       NOT NULL DEFAULT '{}',
    next_fire_at     timestamptz,
    last_fired_at    timestamptz,
    last_delivery_id bigint,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, name)
);
-- What fire_schedules scans: the due rows, longest due first, and nothing else.
CREATE INDEX schedule_rows_due ON baton.schedule_rows (next_fire_at);

CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.schedule_rows
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('schedule_rows');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.schedule_rows
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();

-- The schedules of every tenant and where each stands.
CREATE VIEW baton.schedules AS
SELECT s.tenant, s.name, s.target, s.spec, s.time_zone, s.next_fire_at, s.last_fired_at, s.last_delivery_id
  FROM baton.schedule_rows s;

-- Creates or replaces the schedule `name` of a tenant.
CREATE FUNCTION baton.schedule(tenant uuid, name text, target text, spec text,
                               payload jsonb DEFAULT '{}', binding jsonb DEFAULT '{}',
                               time_zone text DEFAULT 'UTC') RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_schedule';
-- Removes it; false when there was none.
CREATE FUNCTION baton.unschedule(tenant uuid, name text) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_unschedule';
-- Enqueues the due slot of up to max_rows due schedules, fleet-wide; returns how many.
CREATE FUNCTION baton.fire_schedules(max_rows int DEFAULT 1000) RETURNS integer
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_fire_schedules';

-- Nothing to PUBLIC (as for every other object); the extension's owner gets what
-- pg_baton's calls use and hands the rest out with the grant_* helpers (0.4.0).
REVOKE ALL ON baton.schedule_rows, baton.schedules FROM PUBLIC;
REVOKE ALL ON FUNCTION baton.schedule(uuid, text, text, text, jsonb, jsonb, text),
                       baton.unschedule(uuid, text), baton.fire_schedules(int) FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON baton.schedule_rows TO @extowner@;
GRANT SELECT ON baton.schedules TO @extowner@ WITH GRANT OPTION;
GRANT EXECUTE ON FUNCTION baton.schedule(uuid, text, text, text, jsonb, jsonb, text),
                          baton.unschedule(uuid, text), baton.fire_schedules(int)
   TO @extowner@ WITH GRANT OPTION;

-- Configuration in PostgreSQL's sense, as every other table: pg_dump dumps its rows.
SELECT pg_catalog.pg_extension_config_dump('baton.schedule_rows', '');
