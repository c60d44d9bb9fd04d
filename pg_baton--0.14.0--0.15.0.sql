-- pg_baton 0.14.0 -> 0.15.0
--
-- baton.schedule() returns the schedule's next slot (its next_fire_at; NULL when it has
-- none), as the contract says; the deliveries' counters (baton.delivery_counters).
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.15.0'" to load this file. \quit

-- A function's result type cannot be changed by CREATE OR REPLACE, and DROP FUNCTION
-- then CREATE FUNCTION would lose the EXECUTE that baton.grant_producer and
-- baton.grant_admin gave roles since the install (and pg_dump's record of them). The
-- result type is therefore set in the catalogue: void and timestamptz are both pinned
-- types (no dependency row names either), and the function keeps its oid, grants,
-- comment and Citus' distribution.
UPDATE pg_catalog.pg_proc SET prorettype = 'pg_catalog.timestamptz'::pg_catalog.regtype
 WHERE oid OPERATOR(pg_catalog.=) 'baton.schedule(uuid, text, text, text, jsonb, jsonb, text)'::pg_catalog.regprocedure;

-- The deliveries' counters per tenant and target: each committed enqueue, claim, finish,
-- failure, retry, cancel, reap and redrive, counted from the deliveries' writes. Written
-- by the reaper (baton.flush_counts(): part 0) and, without the preload, by the
-- committing transactions themselves (parts 0 to 7, by backend). Purge leaves them. The
-- fence refuses any write of a tenant that is not active; the reaper keeps such a
-- tenant's counts in shared memory until it is active again.
CREATE TABLE baton.event_counts (
    tenant    uuid    NOT NULL,
    target    text    COLLATE "C" NOT NULL,
    part      integer NOT NULL CONSTRAINT event_counts_part_check CHECK (part BETWEEN 0 AND 7),
    enqueued  bigint  NOT NULL DEFAULT 0,
    claimed   bigint  NOT NULL DEFAULT 0,
    finished  bigint  NOT NULL DEFAULT 0,
    failed    bigint  NOT NULL DEFAULT 0,
    retried   bigint  NOT NULL DEFAULT 0,
    cancelled bigint  NOT NULL DEFAULT 0,
    reaped    bigint  NOT NULL DEFAULT 0,
    redriven  bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, target, part)
);

CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.event_counts
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('event_counts');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.event_counts
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();

-- One row per (tenant, target): the counts since the install, monotonic.
CREATE VIEW baton.delivery_counters AS
SELECT c.tenant, c.target,
       pg_catalog.sum(c.enqueued)::bigint AS enqueued, pg_catalog.sum(c.claimed)::bigint AS claimed,
       pg_catalog.sum(c.finished)::bigint AS finished, pg_catalog.sum(c.failed)::bigint AS failed,
       pg_catalog.sum(c.retried)::bigint AS retried, pg_catalog.sum(c.cancelled)::bigint AS cancelled,
       pg_catalog.sum(c.reaped)::bigint AS reaped, pg_catalog.sum(c.redriven)::bigint AS redriven
  FROM baton.event_counts c
 GROUP BY c.tenant, c.target;

CREATE FUNCTION baton.flush_counts() RETURNS integer
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_flush_counts';
COMMENT ON FUNCTION baton.flush_counts() IS
    'Moves the delivery counts committed transactions left in shared memory into baton.event_counts (the reaper calls it each round); returns the rows written.';
COMMENT ON VIEW baton.delivery_counters IS
    'Monotonic counts of each tenant''s and target''s deliveries enqueued, claimed, finished, failed, retried, cancelled, reaped and redriven, since the install.';

REVOKE ALL ON baton.event_counts, baton.delivery_counters FROM PUBLIC;
REVOKE ALL ON FUNCTION baton.flush_counts() FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON baton.event_counts TO @extowner@;
GRANT SELECT ON baton.delivery_counters TO @extowner@ WITH GRANT OPTION;
GRANT EXECUTE ON FUNCTION baton.flush_counts() TO @extowner@ WITH GRANT OPTION;

-- Configuration in PostgreSQL's sense: pg_dump dumps the counts, so a restore goes on
-- from them.
SELECT pg_catalog.pg_extension_config_dump('baton.event_counts', '');
