-- pg_baton 0.6.0 -> 0.7.0: a new terminal status of deliveries, cancelled;
-- baton.cancel_delivery() and baton.redrive(), and a cancelled column in delivery_stats.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.7.0'" to load this file. \quit

-- Cancels a pending or claimed delivery (its holder is fenced); returns 'cancelled'.
CREATE FUNCTION baton.cancel_delivery(tenant uuid, id bigint, reason text DEFAULT NULL) RETURNS text
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_cancel_delivery';
REVOKE ALL ON FUNCTION baton.cancel_delivery(uuid, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION baton.cancel_delivery(uuid, bigint, text) TO @extowner@ WITH GRANT OPTION;

-- Sends failed and cancelled deliveries of a target back to pending; returns how many.
CREATE FUNCTION baton.redrive(tenant uuid, target text, ids bigint[] DEFAULT NULL,
                              max_rows int DEFAULT 1000) RETURNS bigint
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_redrive';
REVOKE ALL ON FUNCTION baton.redrive(uuid, text, bigint[], int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION baton.redrive(uuid, text, bigint[], int) TO @extowner@ WITH GRANT OPTION;

-- The same view with a cancelled column, appended: CREATE OR REPLACE VIEW keeps the
-- columns a reader already selects where they were, and the SELECT grants given on it
-- (the exporter's, grant_admin's), which a DROP and CREATE would lose.
CREATE OR REPLACE VIEW baton.delivery_stats AS
SELECT d.tenant,
       d.target,
       count(*) FILTER (WHERE d.status = 'pending')  AS pending,
       count(*) FILTER (WHERE d.status = 'claimed')  AS claimed,
       count(*) FILTER (WHERE d.status = 'finished') AS finished,
       count(*) FILTER (WHERE d.status = 'failed')   AS failed,
       now() - min(d.created_at) FILTER (WHERE d.status = 'pending') AS oldest_pending_age,
       count(*) FILTER (WHERE d.status = 'claimed' AND d.lease_until < now()) AS expired_leases,
       count(*) FILTER (WHERE d.status = 'finished' AND d.settled_at >= now() - interval '1 minute') AS finished_last_1m,
       count(*) FILTER (WHERE d.status = 'finished' AND d.settled_at >= now() - interval '5 minutes') AS finished_last_5m,
       count(*) FILTER (WHERE d.status = 'failed' AND d.settled_at >= now() - interval '5 minutes') AS failed_last_5m,
       count(*) FILTER (WHERE d.status = 'cancelled') AS cancelled
  FROM baton.deliveries d
 GROUP BY d.tenant, d.target;

-- The row rules of baton.deliveries admit the new status (the trigger "fence" checks
-- them; these comments describe them).
COMMENT ON TABLE baton.deliveries IS
    'pg_baton deliveries. Row rules, checked on every row written by the trigger "fence" (SQLSTATE 23514): status is one of pending, claimed, finished, failed, cancelled; max_attempts is at least 1. The tenant must be writable (DU002).';
COMMENT ON COLUMN baton.deliveries.status IS
    'Row rule (trigger "fence", 23514): one of pending, claimed, finished, failed, cancelled.';
COMMENT ON TRIGGER fence ON baton.deliveries IS
    'The tenant write fence (DU002) and the row rules of baton.deliveries (23514): status is one of pending, claimed, finished, failed, cancelled; max_attempts is at least 1.';
