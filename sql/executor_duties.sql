-- What the executor does on a write of baton.deliveries that the direct heap and index
-- path (src/pg/deliveries/delivery_direct.cpp) must do too, or leave to the SPI
-- statements (delivery_statements.cpp): a user's foreign key, deferrable unique and
-- exclusion constraints, domain constraints, the replica identity a publication needs,
-- and the privileges of the extension's owner. Each feature is set up, enqueue_batch,
-- claim and finish meet it, and it is removed again; a call that succeeds shows which
-- path took it (ed_took(): the direct path where it does the duty itself, the
-- statements where it leaves it to them). The file runs unchanged with
-- baton.direct_access off (the SPI statements alone), so both paths give these answers.
\set SHOW_CONTEXT never
\set VERBOSITY terse
SET client_min_messages = warning;
\set t 00000000-0000-0000-00ed-000000000001
SELECT baton.create_tenant(:'t');
-- Which path a call took is seen through the fence trigger, which the statements fire
-- and the direct path does not (as in direct_access.sql).
SET track_functions = 'all';
CREATE FUNCTION ed_fence_calls() RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions
   WHERE schemaname = 'baton' AND funcname = 'fence_row' $$;
-- Runs q: 'ok' and its rows, or the error's SQLSTATE; remembers whether the fence fired.
CREATE FUNCTION ed_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  before bigint := ed_fence_calls();
  answer text;
BEGIN
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', q) INTO answer;
  PERFORM set_config('ed.fired', (ed_fence_calls() > before)::text, false);
  RETURN 'ok ' || coalesce(answer, '');
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;
-- Whether the last call that succeeded took the path expected of it with direct access
-- on, 'direct' or 'statement' (with direct access off, every call takes the statements).
CREATE FUNCTION ed_took(expected text) RETURNS boolean LANGUAGE sql AS $$
  SELECT current_setting('ed.fired')::boolean =
         (expected = 'statement' OR current_setting('baton.direct_access')::boolean IS NOT TRUE) $$;
-- The id and generation of a delivery of the tenant by its dedup key.
CREATE FUNCTION ed_id(k text) RETURNS bigint LANGUAGE sql AS $$
  SELECT id FROM baton.deliveries WHERE tenant = '00000000-0000-0000-00ed-000000000001' AND dedup_key = k $$;
CREATE FUNCTION ed_gen(k text) RETURNS bigint LANGUAGE sql AS $$
  SELECT generation FROM baton.deliveries WHERE tenant = '00000000-0000-0000-00ed-000000000001' AND dedup_key = k $$;
-- enqueue_batch of one item per key; claim of one row; finish of a key's row.
CREATE FUNCTION ed_enqueue(target text, VARIADIC keys text[]) RETURNS text LANGUAGE sql AS $$
  SELECT ed_try(format('SELECT inserted FROM baton.enqueue_batch(%L, %L)', '00000000-0000-0000-00ed-000000000001',
                       (SELECT jsonb_agg(jsonb_build_object('target', target, 'dedup_key', k)) FROM unnest(keys) k))) $$;
CREATE FUNCTION ed_claim(target text) RETURNS text LANGUAGE sql AS $$
  SELECT ed_try(format('SELECT dedup_key, attempt FROM baton.claim(%L, %L, ''1 minute'')',
                       '00000000-0000-0000-00ed-000000000001', target)) $$;
CREATE FUNCTION ed_finish(k text, result jsonb DEFAULT NULL) RETURNS text LANGUAGE sql AS $$
  SELECT ed_try(format('SELECT baton.finish(%L, %s, %s, ''finished'', %L)', '00000000-0000-0000-00ed-000000000001',
                       ed_id(k), ed_gen(k), result)) $$;
CREATE FUNCTION ed_finish_batch(VARIADIC keys text[]) RETURNS text LANGUAGE sql AS $$
  SELECT ed_try(format('SELECT status FROM baton.finish_batch(%L, %L, %L)', '00000000-0000-0000-00ed-000000000001',
                       (SELECT array_agg(ed_id(k)) FROM unnest(keys) k),
                       (SELECT array_agg(ed_gen(k)) FROM unnest(keys) k))) $$;
-- The tenant's rows of a target.
CREATE FUNCTION ed_rows(t text) RETURNS TABLE(dedup_key text, status text, generation bigint) LANGUAGE sql AS $$
  SELECT dedup_key, status, generation FROM baton.deliveries
   WHERE tenant = '00000000-0000-0000-00ed-000000000001' AND target = t ORDER BY id $$;

-- ---------------------------------------------------------------------------
-- a. A user's foreign keys from baton.deliveries: a target that must be known (23503 for
-- an unknown one), and a status that must be listed (a claim's 'claimed' is not). NOT
-- VALID: the rows of the other tests are not checked, new rows are.
-- ---------------------------------------------------------------------------
CREATE TABLE ed_targets (name text PRIMARY KEY);
INSERT INTO ed_targets VALUES ('ed_a'), ('ed_a2');
CREATE TABLE ed_statuses (name text PRIMARY KEY);
INSERT INTO ed_statuses VALUES ('pending'), ('finished');
ALTER TABLE baton.deliveries ADD CONSTRAINT ed_target_fk FOREIGN KEY (target) REFERENCES ed_targets (name) NOT VALID;
SELECT ed_enqueue('ed_unknown', 'a0');
SELECT ed_enqueue('ed_a', 'a1', 'a2');
SELECT ed_took('statement');
ALTER TABLE baton.deliveries ADD CONSTRAINT ed_status_fk FOREIGN KEY (status) REFERENCES ed_statuses (name) NOT VALID;
SELECT ed_claim('ed_a');
SELECT * FROM ed_rows('ed_a');
ALTER TABLE baton.deliveries DROP CONSTRAINT ed_status_fk;
SELECT ed_claim('ed_a');
SELECT ed_took('statement');
-- the claimed row finished, the foreign key on target still in place
SELECT ed_finish('a1');
SELECT ed_took('statement');
ALTER TABLE baton.deliveries DROP CONSTRAINT ed_target_fk;
DROP TABLE ed_targets, ed_statuses;

-- ---------------------------------------------------------------------------
-- b. Deferrable unique and exclusion constraints, checked at the end of the statement
-- (INITIALLY IMMEDIATE): 23505 for two new rows of one key in one enqueue_batch, 23P01
-- for a second claimed and a second finished row of the target.
-- ---------------------------------------------------------------------------
ALTER TABLE baton.deliveries ADD COLUMN ed_k int;
ALTER TABLE baton.deliveries ALTER COLUMN ed_k SET DEFAULT 1;
ALTER TABLE baton.deliveries ADD CONSTRAINT ed_unique UNIQUE (ed_k) DEFERRABLE;
SELECT ed_enqueue('ed_b', 'b1', 'b2');
SELECT count(*) AS stored FROM baton.deliveries WHERE ed_k = 1;
ALTER TABLE baton.deliveries DROP CONSTRAINT ed_unique;
ALTER TABLE baton.deliveries DROP COLUMN ed_k;
SELECT ed_enqueue('ed_b', 'b1', 'b2', 'b3');
SELECT ed_took('direct');
ALTER TABLE baton.deliveries ADD CONSTRAINT ed_exclude
  EXCLUDE USING btree (tenant WITH =, status WITH =) WHERE (target = 'ed_b' AND status <> 'pending') DEFERRABLE;
SELECT ed_claim('ed_b');
SELECT ed_took('statement');
SELECT ed_claim('ed_b');
SELECT ed_finish('b1');
SELECT ed_took('statement');
SELECT ed_claim('ed_b');
SELECT ed_finish('b2');
SELECT * FROM ed_rows('ed_b');
ALTER TABLE baton.deliveries DROP CONSTRAINT ed_exclude;
-- the same exclusion constraint, not deferrable: checked as each entry is inserted
SELECT ed_finish_batch('b2');
SELECT ed_enqueue('ed_b', 'b4');
ALTER TABLE baton.deliveries ADD CONSTRAINT ed_exclude
  EXCLUDE USING btree (tenant WITH =, status WITH =) WHERE (target = 'ed_b' AND status = 'claimed');
SELECT ed_claim('ed_b');
SELECT ed_took('direct');
SELECT ed_claim('ed_b');
ALTER TABLE baton.deliveries DROP CONSTRAINT ed_exclude;

-- ---------------------------------------------------------------------------
-- c. Domain constraints: payload and result of a jsonb domain that refuses a marked
-- value (23514), on an enqueue_batch and on a finish; a claim, which assigns neither,
-- succeeds.
-- ---------------------------------------------------------------------------
CREATE DOMAIN ed_json AS jsonb CHECK (VALUE IS NULL OR NOT VALUE ? 'ed_refused');
ALTER TABLE baton.deliveries ALTER COLUMN payload TYPE ed_json, ALTER COLUMN result TYPE ed_json;
SELECT ed_try($$SELECT inserted FROM baton.enqueue_batch('00000000-0000-0000-00ed-000000000001',
  '[{"target": "ed_c", "dedup_key": "c0", "payload": {"ed_refused": 1}}]')$$);
SELECT ed_enqueue('ed_c', 'c1', 'c2');
SELECT ed_took('direct');
SELECT ed_claim('ed_c');
SELECT ed_took('direct');
SELECT ed_finish('c1', '{"ed_refused": 1}');
SELECT ed_finish('c1', '{"fine": 1}');
SELECT ed_took('direct');
SELECT ed_claim('ed_c');
SELECT ed_finish_batch('c2');
SELECT ed_took('direct');
SELECT * FROM ed_rows('ed_c');
ALTER TABLE baton.deliveries ALTER COLUMN payload TYPE jsonb, ALTER COLUMN result TYPE jsonb;
DROP DOMAIN ed_json;

-- ---------------------------------------------------------------------------
-- d. A publication of baton.deliveries's updates needs a replica identity: without one
-- (REPLICA IDENTITY NOTHING) claims and finishes are refused (55000), an insert is not;
-- a row filter on a column outside the identity refuses them too.
-- ---------------------------------------------------------------------------
SELECT ed_enqueue('ed_d', 'd1', 'd2');
SELECT ed_claim('ed_d');
SET client_min_messages = error;  -- not the warning about wal_level
CREATE PUBLICATION ed_pub FOR TABLE baton.deliveries;
ALTER TABLE baton.deliveries REPLICA IDENTITY NOTHING;
SELECT ed_enqueue('ed_d', 'd3');
SELECT ed_took('direct');
SELECT ed_claim('ed_d');
SELECT ed_finish('d1');
SELECT ed_finish_batch('d1');
ALTER TABLE baton.deliveries REPLICA IDENTITY DEFAULT;
DROP PUBLICATION ed_pub;
CREATE PUBLICATION ed_pub FOR TABLE baton.deliveries WHERE (target <> 'ed_filtered');
SELECT ed_claim('ed_d');
SELECT ed_finish('d1');
DROP PUBLICATION ed_pub;
SET client_min_messages = warning;
SELECT * FROM ed_rows('ed_d');

-- ---------------------------------------------------------------------------
-- e. The calls act as the extension's owner (docs/guide/security.md): a privilege revoked from
-- it is missing in them (42501). The owner here is a role without superuser, for the
-- length of this section.
-- ---------------------------------------------------------------------------
SELECT extowner AS ed_was_owner FROM pg_extension WHERE extname = 'pg_baton' \gset
CREATE ROLE ed_owner NOLOGIN;
GRANT USAGE ON SCHEMA baton TO ed_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA baton TO ed_owner;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA baton TO ed_owner;
UPDATE pg_extension SET extowner = 'ed_owner'::regrole WHERE extname = 'pg_baton';
-- (the GRANT above invalidated the table, which makes each backend read the owner again)
SELECT ed_enqueue('ed_e', 'e1', 'e2', 'e3');
SELECT ed_took('direct');
SELECT ed_claim('ed_e');
SELECT ed_took('direct');
REVOKE UPDATE ON baton.deliveries FROM ed_owner;
SELECT ed_claim('ed_e');
SELECT ed_finish('e1');
SELECT ed_finish_batch('e1');
GRANT UPDATE ON baton.deliveries TO ed_owner;
REVOKE SELECT ON baton.deliveries FROM ed_owner;
SELECT ed_claim('ed_e');
SELECT ed_finish('e1');
SELECT ed_finish_batch('e1');
GRANT SELECT ON baton.deliveries TO ed_owner;
REVOKE INSERT ON baton.deliveries FROM ed_owner;
SELECT ed_enqueue('ed_e', 'e4');
GRANT INSERT ON baton.deliveries TO ed_owner;
SELECT ed_finish('e1');
SELECT ed_took('direct');
SELECT * FROM ed_rows('ed_e');
UPDATE pg_extension SET extowner = :ed_was_owner WHERE extname = 'pg_baton';
DROP OWNED BY ed_owner;
DROP ROLE ed_owner;

DROP FUNCTION ed_fence_calls(), ed_took(text), ed_try(text), ed_id(text), ed_gen(text), ed_enqueue(text, text[]), ed_claim(text),
  ed_finish(text, jsonb), ed_finish_batch(text[]), ed_rows(text);
