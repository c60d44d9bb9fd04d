-- bench/limits.sh: pg_baton in a fresh database, one tenant (bench_tenant(1), as
-- fair_setup.sql names it) binding target :'target' to the role pool, :backlog pending
-- deliveries enqueued with baton.enqueue_batch (10,000 a call), then the limit of the
-- variant, then VACUUM ANALYZE.
--   plain    no key;
--   keyed    keys 'k0' .. 'k<keys - 1>', round robin in enqueue order, no limit;
--   limited  the same keys, baton.limit_key(t, target, :limit) for every key (key NULL);
--   ordered  the same keys, baton.limit_key(t, target, 1, ordered => true) for every key;
--   paced    the same keys, baton.rate_limit_key(t, target, :rate, '1 second') for every key.
-- The limit is set after the enqueue: the change admits the keys' deliveries afresh (per
-- key, in the key's order, as many as fit; the rest wait in baton.key_waiting), the same
-- admitted and waiting deliveries as when the limit comes first, in one statement instead
-- of one lock of the key's row per delivery. The tables are ANALYZEd before it: without
-- statistics the change's statement joins baton.ready to the deliveries it counts by a
-- nested loop (minutes for 60,000 deliveries).
-- psql variables: variant, backlog, keys, limit, rate, target.
CREATE EXTENSION pg_baton;
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pool') AS no_pool \gset
\if :no_pool
CREATE ROLE pool NOLOGIN;
\endif
CREATE FUNCTION bench_tenant(i bigint) RETURNS uuid IMMUTABLE PARALLEL SAFE
    LANGUAGE sql AS $$ SELECT ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid $$;
SELECT baton.create_tenant(bench_tenant(1));
SELECT baton.bind_target(bench_tenant(1), :'target', 'pool');
SELECT :'variant' NOT IN ('plain', 'uncounted') AS keyed, :'variant' = 'limited' AS limited, :'variant' = 'ordered' AS ordered,
       :'variant' = 'paced' AS paced \gset
SET baton.notify = off;
SELECT sum(n) AS enqueued
  FROM generate_series(1, :backlog, 10000) lo,
       LATERAL (SELECT count(*) AS n
                  FROM baton.enqueue_batch(bench_tenant(1),
                         (SELECT jsonb_agg(jsonb_build_object('target', :'target', 'dedup_key', 's' || g)
                                           || CASE WHEN :'keyed'::boolean THEN jsonb_build_object('key', 'k' || (g - 1) % :keys)
                                                   ELSE '{}'::jsonb END ORDER BY g)
                            FROM generate_series(lo, least(lo + 9999, :backlog)) g))) b;
ANALYZE baton.deliveries, baton.ready;
\if :limited
SELECT baton.limit_key(bench_tenant(1), :'target', :limit);
\endif
\if :ordered
SELECT baton.limit_key(bench_tenant(1), :'target', 1, ordered => true);
\endif
\if :paced
SELECT baton.rate_limit_key(bench_tenant(1), :'target', :rate, '1 second');
\endif
-- What a claim sees: the claim order, the waiting, the keys' rows.
SELECT (SELECT count(*) FROM baton.ready) AS ready, (SELECT count(*) FROM baton.key_waiting) AS waiting,
       (SELECT count(*) FROM baton.key_slots) AS key_rows;
VACUUM ANALYZE;
