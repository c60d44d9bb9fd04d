-- pg_baton 0.13.0 -> 0.14.0
--
-- Keys and their limits: a delivery may carry a key (a customer, an external API, a
-- run), given by baton.enqueue_keyed or an enqueue_batch item's "key". A limit per
-- (tenant, target, key), or per (tenant, target) for every key, caps how many of the
-- key's deliveries are admitted at once (pending in baton.ready or leased), admits one
-- at a time in enqueue order (ordered), or paces the key's claims (rate per `per`, with
-- a burst). The deliveries a limit holds back wait in baton.key_waiting, outside the
-- claim order, until the key has room.
\echo Use "ALTER EXTENSION pg_baton UPDATE TO '0.14.0'" to load this file. \quit

-- The key a delivery carries (NULL: none). Written once, at enqueue.
ALTER TABLE baton.deliveries ADD COLUMN key text COLLATE "C";

-- The limits: key '' is every key of the target without a limit of its own.
CREATE TABLE baton.key_limits (
    tenant     uuid     NOT NULL,
    target     text     COLLATE "C" NOT NULL,
    key        text     COLLATE "C" NOT NULL,
    max_leased integer  CONSTRAINT key_limits_max_leased_check CHECK (max_leased BETWEEN 1 AND 1000000),
    ordered    boolean  NOT NULL DEFAULT false,
    rate       integer  CONSTRAINT key_limits_rate_check CHECK (rate BETWEEN 1 AND 1000000),
    per        interval CONSTRAINT key_limits_per_check CHECK (per > '0' AND per <= '1 day'),
    burst      integer  CONSTRAINT key_limits_burst_check CHECK (burst BETWEEN 1 AND 1000000),
    CONSTRAINT key_limits_ordered_check CHECK (NOT ordered OR max_leased = 1),
    CONSTRAINT key_limits_pace_check CHECK ((rate IS NULL) = (per IS NULL) AND (rate IS NULL) = (burst IS NULL)),
    CONSTRAINT key_limits_some_check CHECK (max_leased IS NOT NULL OR rate IS NOT NULL),
    PRIMARY KEY (tenant, target, key)
);
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.key_limits
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('key_limits');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.key_limits
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
COMMENT ON TABLE baton.key_limits IS
    'Limits per (tenant, target, key): at most max_leased of the key''s deliveries admitted (pending in baton.ready or leased) at once; ordered: one at a time, in enqueue order; at most rate claims per per, burst at once. Key '''' is every key. Set with baton.limit_key and baton.rate_limit_key.';

-- How many deliveries of each limited key are admitted (pending in baton.ready, or
-- leased) and not yet claimed, and a paced key's bucket: its tokens as of `at`.
-- Written with the deliveries' writes; its row lock orders the admissions of one key.
CREATE TABLE baton.key_slots (
    tenant   uuid             NOT NULL,
    target   text             COLLATE "C" NOT NULL,
    key      text             COLLATE "C" NOT NULL,
    admitted integer          NOT NULL,
    ready    integer          NOT NULL,
    tokens   double precision NOT NULL,
    at       timestamptz      NOT NULL,
    PRIMARY KEY (tenant, target, key)
);
COMMENT ON TABLE baton.key_slots IS
    'How many deliveries of each limited key are admitted (pending in baton.ready, or leased) and not yet claimed, and a paced key''s tokens. Kept with the deliveries'' writes; not dumped: a restore counts them again.';

-- The pending deliveries a limit holds back, in the order they are admitted: rank (the
-- priority negated, 0 for an ordered key), then id.
CREATE TABLE baton.key_waiting (
    tenant    uuid        NOT NULL,
    target    text        COLLATE "C" NOT NULL,
    key       text        COLLATE "C" NOT NULL,
    rank      bigint      NOT NULL,
    id        bigint      NOT NULL,
    priority  integer     NOT NULL,
    run_after timestamptz NOT NULL,
    since     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (tenant, target, key, rank, id)
);
CREATE UNIQUE INDEX key_waiting_id ON baton.key_waiting (tenant, id);
CREATE INDEX key_waiting_since ON baton.key_waiting (since);
-- Written by pg_baton with a delivery's row, as baton.ready is; the fence refuses any
-- other write of a tenant that is not active.
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.key_slots
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('key_slots');
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.key_waiting
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row('key_waiting');
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.key_slots
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.key_waiting
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
COMMENT ON TABLE baton.key_waiting IS
    'The pending deliveries a key''s limit holds back, outside the claim order until a slot of the key frees. Kept with the deliveries'' writes; not dumped: a restore sorts them again.';

-- Each key with deliveries admitted or waiting: the limit that applies to it (its own,
-- else its target's for every key), how many are admitted and not yet claimed, how many
-- wait, and since when the one waiting longest has waited.
CREATE VIEW baton.limited_keys AS
SELECT s.tenant, s.target, s.key, l.max_leased, l.ordered, l.rate, l.per, l.burst, s.admitted,
       s.ready AS unclaimed, w.waiting, w.waiting_since
  FROM baton.key_slots s
  LEFT JOIN LATERAL (SELECT l.max_leased, l.ordered, l.rate, l.per, l.burst FROM baton.key_limits l
                      WHERE l.tenant OPERATOR(pg_catalog.=) s.tenant AND l.target OPERATOR(pg_catalog.=) s.target
                        AND l.key OPERATOR(pg_catalog.=) ANY (ARRAY[s.key, ''::pg_catalog.text])
                      ORDER BY l.key DESC LIMIT 1) l ON true
  LEFT JOIN LATERAL (SELECT pg_catalog.count(*) AS waiting, pg_catalog.min(w.since) AS waiting_since
                       FROM baton.key_waiting w
                      WHERE w.tenant OPERATOR(pg_catalog.=) s.tenant AND w.target OPERATOR(pg_catalog.=) s.target
                        AND w.key OPERATOR(pg_catalog.=) s.key) w ON true;

CREATE FUNCTION baton.enqueue_keyed(tenant uuid, target text, dedup_key text, key text,
                                    payload jsonb DEFAULT '{}', binding jsonb DEFAULT '{}',
                                    run_after timestamptz DEFAULT NULL, priority int DEFAULT 0,
                                    max_attempts int DEFAULT 3, run_id uuid DEFAULT NULL) RETURNS bigint
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_enqueue_keyed';
CREATE FUNCTION baton.limit_key(tenant uuid, target text, max_leased int, key text DEFAULT NULL,
                                ordered boolean DEFAULT false) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_limit_key';
CREATE FUNCTION baton.rate_limit_key(tenant uuid, target text, rate int, per interval,
                                     burst int DEFAULT NULL, key text DEFAULT NULL) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_rate_limit_key';
-- The bound on how long a delivery waits behind higher priorities: the background reaper
-- calls it each round (baton.priority_aging).
CREATE FUNCTION baton.age_pending(max_rows int DEFAULT 1000) RETURNS integer
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_age_pending';
CREATE FUNCTION baton.unlimit_key(tenant uuid, target text, key text DEFAULT NULL) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_unlimit_key';
COMMENT ON FUNCTION baton.enqueue_keyed(uuid, text, text, text, jsonb, jsonb, timestamptz, int, int, uuid) IS
    'baton.enqueue with a key: the delivery counts against the key''s limit (baton.limit_key).';
COMMENT ON FUNCTION baton.limit_key(uuid, text, int, text, boolean) IS
    'Sets the limit of a key of the target (NULL: every key without a limit of its own): at most max_leased admitted at once; ordered: one at a time, in enqueue order.';
COMMENT ON FUNCTION baton.rate_limit_key(uuid, text, int, interval, int, text) IS
    'Paces the claims of a key of the target (NULL: every key without a limit of its own): at most rate per per, burst (default: rate) at once.';
COMMENT ON FUNCTION baton.age_pending(int) IS
    'Raises each due pending delivery without a key that has waited longer than baton.priority_aging behind higher priorities to the highest priority pending in its tenant and target; returns how many.';
COMMENT ON FUNCTION baton.unlimit_key(uuid, text, text) IS
    'Removes the limits of a key of the target (NULL: the limits for every key), concurrency and pace; true when there were any.';

REVOKE ALL ON baton.key_limits, baton.key_slots, baton.key_waiting, baton.limited_keys FROM PUBLIC;
REVOKE ALL ON FUNCTION baton.enqueue_keyed(uuid, text, text, text, jsonb, jsonb, timestamptz, int, int, uuid),
                       baton.limit_key(uuid, text, int, text, boolean), baton.rate_limit_key(uuid, text, int, interval, int, text), baton.unlimit_key(uuid, text, text),
                       baton.age_pending(int) FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON baton.key_limits, baton.key_slots, baton.key_waiting TO @extowner@;
GRANT SELECT ON baton.limited_keys TO @extowner@ WITH GRANT OPTION;
GRANT EXECUTE ON FUNCTION baton.enqueue_keyed(uuid, text, text, text, jsonb, jsonb, timestamptz, int, int, uuid),
                          baton.limit_key(uuid, text, int, text, boolean), baton.rate_limit_key(uuid, text, int, interval, int, text), baton.unlimit_key(uuid, text, text),
                          baton.age_pending(int) TO @extowner@ WITH GRANT OPTION;

-- Configuration in PostgreSQL's sense: pg_dump dumps the limits; the slots and the
-- waiting deliveries are made again from the deliveries a restore loads.
SELECT pg_catalog.pg_extension_config_dump('baton.key_limits', '');
