-- pg_baton 0.12.0 -> 0.13.0: the fair claim across tenants, weights and pauses
-- (docs/guide/fairness.md).
-- baton.claim_fair(target, lease, max_items) leases work of a target from every tenant
-- whose binding of it the caller may serve, tenant after tenant in turns of each
-- binding's weight. A binding carries its weight and whether it is paused; a target can
-- be paused everywhere (baton.paused_targets). baton.ready's primary key leads with the
-- target, so that the tenants with work for a target are found in order of their id.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.13.0'" to load this file. \quit

-- A binding's share of the fair claim's turns, and the moment it was paused (NULL: it
-- is not): claims of a paused target return nothing, enqueues go on.
ALTER TABLE baton.target_bindings
    ADD COLUMN weight integer NOT NULL DEFAULT 1
        CONSTRAINT target_bindings_weight_check CHECK (weight BETWEEN 1 AND 10000),
    ADD COLUMN paused_at timestamptz;

-- The targets paused in every tenant. Not a tenant's row: no fence, but the trigger
-- that makes every backend forget the bindings it knows at the writer's commit.
CREATE TABLE baton.paused_targets (
    target    text        NOT NULL PRIMARY KEY,
    paused_at timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.paused_targets
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('paused_targets');
COMMENT ON TABLE baton.paused_targets IS
    'Targets paused in every tenant: no claim returns their deliveries until baton.resume_everywhere(target).';

-- Every binding with its weight and pause (paused: its own or its target's in every
-- tenant), and a row without a tenant for each target paused everywhere.
CREATE VIEW baton.targets AS
SELECT b.tenant, b.target, b.role, b.weight,
       b.paused_at IS NOT NULL OR p.target IS NOT NULL AS paused,
       b.paused_at, p.paused_at AS paused_everywhere_at
  FROM baton.target_bindings b
  LEFT JOIN baton.paused_targets p ON p.target OPERATOR(pg_catalog.=) b.target
UNION ALL
SELECT NULL, p.target, NULL, NULL, true, NULL, p.paused_at
  FROM baton.paused_targets p;

-- The claim order within (target, tenant) is unchanged; the fair claim walks the
-- tenants of one target in order.
ALTER TABLE baton.ready DROP CONSTRAINT ready_pkey,
    ADD CONSTRAINT ready_pkey PRIMARY KEY (target, tenant, rank, id);

CREATE FUNCTION baton.claim_fair(target text, lease interval, max_items int DEFAULT 1)
    RETURNS TABLE(tenant uuid, id bigint, generation bigint, lease_until timestamptz, dedup_key text,
                  payload jsonb, binding jsonb, attempt int, run_id uuid)
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_claim_fair';
CREATE FUNCTION baton.pause(tenant uuid, target text) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_pause';
CREATE FUNCTION baton.resume(tenant uuid, target text) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_resume';
CREATE FUNCTION baton.pause_everywhere(target text) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_pause_everywhere';
CREATE FUNCTION baton.resume_everywhere(target text) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_resume_everywhere';
CREATE FUNCTION baton.set_weight(tenant uuid, target text, weight int) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_set_weight';

COMMENT ON FUNCTION baton.claim_fair(text, interval, int) IS
    'Leases up to max_items deliveries of the target from the tenants whose binding of it the caller may serve, in turns of each binding''s weight.';

-- Nothing to PUBLIC (as for every other object); the extension's owner gets what
-- pg_baton's calls use and hands the rest out with the grant_* helpers.
REVOKE ALL ON baton.paused_targets, baton.targets FROM PUBLIC;
REVOKE ALL ON FUNCTION baton.claim_fair(text, interval, int), baton.pause(uuid, text), baton.resume(uuid, text),
                       baton.pause_everywhere(text), baton.resume_everywhere(text), baton.set_weight(uuid, text, int)
    FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON baton.paused_targets TO @extowner@;
GRANT SELECT ON baton.targets TO @extowner@ WITH GRANT OPTION;
GRANT EXECUTE ON FUNCTION baton.claim_fair(text, interval, int), baton.pause(uuid, text), baton.resume(uuid, text),
                          baton.pause_everywhere(text), baton.resume_everywhere(text), baton.set_weight(uuid, text, int)
    TO @extowner@ WITH GRANT OPTION;

-- Configuration in PostgreSQL's sense, as every other table: pg_dump dumps its rows.
SELECT pg_catalog.pg_extension_config_dump('baton.paused_targets', '');
