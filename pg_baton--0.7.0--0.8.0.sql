-- pg_baton 0.7.0 -> 0.8.0: recurring schedules. The table baton.schedule_rows (the
-- rows behind the view baton.schedules), baton.schedule(), baton.unschedule() and
-- baton.fire_schedules() (docs/schedules.md).
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.8.0'" to load this file. \quit

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
