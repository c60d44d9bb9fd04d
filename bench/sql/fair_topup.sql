-- bench/fair.sh, the shares run's producer: tops every tenant's pending deliveries of
-- target :'target' up to :depth (tenant 1, the noisy one: :first_depth), one
-- baton.enqueue_batch per tenant short of it, in one transaction. Prints one CSV line:
-- the epoch, how many tenants were found with nothing pending (a tenant that ran dry is
-- not backlogged: its share says nothing of the turns), the fewest pending found, and
-- how many deliveries were enqueued. psql variables: tenants, target, depth, first_depth.
SET baton.notify = off;
WITH p AS MATERIALIZED (
    SELECT w.t, w.want, h.have
      FROM generate_series(1, :tenants) i,
           LATERAL (SELECT bench_tenant(i) AS t, CASE WHEN i = 1 THEN :first_depth ELSE :depth END AS want) w,
           LATERAL (SELECT count(*) AS have FROM (SELECT FROM baton.ready r
                                                   WHERE r.target = :'target' AND r.tenant = w.t LIMIT w.want) x) h),
e AS (
    SELECT coalesce(sum(z.n), 0) AS n
      FROM p, LATERAL (SELECT count(*) AS n FROM baton.enqueue_batch(p.t,
                         (SELECT jsonb_agg(jsonb_build_object('target', :'target', 'dedup_key', 'k' || nextval('bench_keys')))
                            FROM generate_series(1, p.want - p.have) g))) z
     WHERE p.have < p.want)
SELECT extract(epoch FROM clock_timestamp())::numeric(16, 3), (SELECT count(*) FROM p WHERE p.have = 0),
       (SELECT min(p.have) FROM p), e.n
  FROM e;
