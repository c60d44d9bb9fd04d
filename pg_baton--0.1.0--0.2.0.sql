-- pg_baton 0.1.0 -> 0.2.0: retention (baton.purge), the views for monitoring, and the
-- rules of a delivery row held by its trigger instead of CHECK constraints.
-- pg_baton--0.2.0.sql holds the same objects for a fresh install; test/upgrade/run.sh
-- checks that both ways give the same schema.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.2.0'" to load this file. \quit

-- The rules of a delivery row (status among the four, max_attempts >= 1) move from CHECK
-- constraints, which Postgres re-reads from the catalog for every statement that writes
-- the table, to the fence trigger, which already sees every row written (0.2.0's library
-- checks them whichever version's schema is installed).
ALTER TABLE baton.deliveries DROP CONSTRAINT deliveries_status_check,
                             DROP CONSTRAINT deliveries_max_attempts_check;

-- What purge scans: settled deliveries in order of settling, terminal runs in order of
-- finishing (settled_at and finished_at are set exactly when a row becomes terminal).
CREATE INDEX deliveries_settled ON baton.deliveries (settled_at)
    WHERE settled_at IS NOT NULL;
CREATE INDEX runs_finished ON baton.runs (finished_at)
    WHERE finished_at IS NOT NULL;

-- Retention: removes settled deliveries and terminal runs (with their stages, markers
-- and deliveries) older than a bound, in batches that skip locked rows and fenced tenants.
CREATE FUNCTION baton.purge(older_than interval, max_rows int DEFAULT 1000) RETURNS integer
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_purge';

-- Per tenant and target: counts by status, the oldest pending age, expired leases, and
-- the deliveries settled in the last minutes (throughput).
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
       count(*) FILTER (WHERE d.status = 'failed' AND d.settled_at >= now() - interval '5 minutes') AS failed_last_5m
  FROM baton.deliveries d
 GROUP BY d.tenant, d.target;

-- Per tenant and workflow: runs by status, runs waiting on a failed stage's retry
-- deadline, stuck runs (an owner whose lease expired), the oldest unfinished run's age
-- and the runs finished in the last minutes.
CREATE VIEW baton.run_stats AS
SELECT r.tenant,
       r.workflow,
       count(*) FILTER (WHERE r.status = 'submitted') AS submitted,
       count(*) FILTER (WHERE r.status = 'approved')  AS approved,
       count(*) FILTER (WHERE r.status = 'running')   AS running,
       count(*) FILTER (WHERE r.status = 'completed') AS completed,
       count(*) FILTER (WHERE r.status = 'failed')    AS failed,
       count(*) FILTER (WHERE r.status = 'cancelled') AS cancelled,
       count(*) FILTER (WHERE r.status IN ('approved', 'running') AND s.status = 'failed'
                          AND s.attempt < s.max_attempts AND s.retry_at > now()) AS waiting_retry,
       count(*) FILTER (WHERE r.status IN ('approved', 'running') AND r.owner IS NOT NULL
                          AND r.lease_until < now()) AS stuck,
       now() - min(r.created_at) FILTER (WHERE r.status IN ('submitted', 'approved', 'running'))
           AS oldest_unfinished_age,
       count(*) FILTER (WHERE r.status = 'completed' AND r.finished_at >= now() - interval '5 minutes')
           AS completed_last_5m,
       count(*) FILTER (WHERE r.status = 'failed' AND r.finished_at >= now() - interval '5 minutes')
           AS failed_last_5m
  FROM baton.runs r
  LEFT JOIN baton.stages s
         ON s.tenant = r.tenant AND s.run_id = r.id AND s.is_current
 GROUP BY r.tenant, r.workflow;

REVOKE ALL ON FUNCTION baton.purge(interval, int) FROM PUBLIC;
REVOKE ALL ON baton.run_stats FROM PUBLIC;
