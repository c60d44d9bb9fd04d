-- Hostile JSON and bytes through the whole workflow path: JSON nested deeper than
-- pg_baton reads into the core's tree (200, src/pg/runtime/jsonb.cpp) and as deep as jsonb takes
-- (10000), payloads just over
-- baton.max_payload_bytes at its largest setting, decisions too deep, too large or
-- not UTF-8, and a SQL_ASCII database, where text can hold bytes that are not UTF-8.
-- Each refusal with its SQLSTATE; nothing changed by any of them.
\set SHOW_CONTEXT never
\set VERBOSITY default
\set t 00000000-0000-0000-00a2-000000000001
SELECT baton.create_tenant(:'t');
CREATE SCHEMA hj_app;
-- Decide functions that return hostile decisions.
CREATE FUNCTION hj_app.deep_state(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT ('{"next": "b", "state": {"d": ' || repeat('[', 300) || repeat(']', 300) || '}}')::jsonb $$;
CREATE FUNCTION hj_app.deepest(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT ('{"next": "b", "inputs": {"d": ' || repeat('[', 10000) || repeat(']', 10000) || '}}')::jsonb $$;
CREATE FUNCTION hj_app.big_inputs(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('next', 'b', 'inputs', jsonb_build_object('big', repeat('x', 2000000))) $$;
-- Passes the context through: the successor's inputs are what the decide function saw.
CREATE FUNCTION hj_app.echo(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('next', 'b', 'inputs', jsonb_build_object('depth_seen',
        length(ctx #>> '{stage,result,d}'))) $$;

CREATE TEMP VIEW hj_digest AS
SELECT md5(concat_ws('#',
    (SELECT string_agg(x::text, '|' ORDER BY x.name, x.version) FROM baton.workflows x WHERE x.name LIKE 'hj\_%'),
    (SELECT string_agg(x::text, '|' ORDER BY x.id) FROM baton.runs x WHERE x.tenant = '00000000-0000-0000-00a2-000000000001'),
    (SELECT string_agg(x::text, '|' ORDER BY x.id) FROM baton.stages x WHERE x.tenant = '00000000-0000-0000-00a2-000000000001'),
    (SELECT string_agg(x::text, '|' ORDER BY x.id) FROM baton.deliveries x WHERE x.tenant = '00000000-0000-0000-00a2-000000000001'))) AS h;

-- ---------------------------------------------------------------------------
-- Definitions: pg_baton reads 200 levels of jsonb into the core's tree; jsonb takes 10000.
-- ---------------------------------------------------------------------------
SELECT h AS h0 FROM hj_digest \gset
SELECT baton.define_workflow('hj_deep',
    ('{"start": "a", "stages": {"a": {"next": ["@finish"], "x": ' || repeat('[', 10000) || repeat(']', 10000) || '}}}')::jsonb);
-- a definition over baton.max_payload_bytes
SELECT baton.define_workflow('hj_big', jsonb_build_object('start', 'a',
    'stages', jsonb_build_object('a', jsonb_build_object('next', jsonb_build_array('@finish'))),
    'pad', repeat('x', 1048576)));
-- deeper than jsonb itself takes: Postgres refuses it before pg_baton runs (54001)
\set VERBOSITY sqlstate
SELECT baton.define_workflow('hj_deep', (repeat('[', 100000) || repeat(']', 100000))::jsonb);
\set VERBOSITY default
SELECT h = :'h0' AS nothing_changed FROM hj_digest;

-- ---------------------------------------------------------------------------
-- Deep inputs and results travel through the run untouched (jsonb carries them; the
-- core never reads them): 10000 levels in, 10000 levels out.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('hj_flow', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.submit(:'t', 'hj_flow', ('{"d": ' || repeat('[', 10000) || repeat(']', 10000) || '}')::jsonb, 'deep') AS r \gset
SELECT baton.acquire_run(:'t', :'r', 'w', '1 hour') AS g \gset
SELECT stage_id AS s FROM baton.transition_stage(:'t', :'r', :g) \gset
SELECT length(baton.start_stage(:'t', :'r', :g, :s)::text) AS inputs_length;
SELECT baton.complete_stage(:'t', :'r', :g, :s, ('{"d": ' || repeat('{"a": ', 10000) || '1' || repeat('}', 10000) || '}')::jsonb);
SELECT kind, stage, length(inputs::text) AS inputs_length, run_status FROM baton.transition_stage(:'t', :'r', :g);
-- the same through a decide function that reads the deep result
SELECT baton.define_workflow('hj_echo', '{"start": "a", "decide": "hj_app.echo", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.submit(:'t', 'hj_echo', '{}', 'echo') AS r \gset
SELECT baton.acquire_run(:'t', :'r', 'w', '1 hour') AS g \gset
SELECT stage_id AS s FROM baton.transition_stage(:'t', :'r', :g) \gset
SELECT baton.start_stage(:'t', :'r', :g, :s);
SELECT baton.complete_stage(:'t', :'r', :g, :s, ('{"d": ' || repeat('[', 10000) || repeat(']', 10000) || '}')::jsonb);
SELECT kind, stage, inputs, run_status FROM baton.transition_stage(:'t', :'r', :g);

-- ---------------------------------------------------------------------------
-- Decisions too deep for the core's tree are malformed (DU003), and nothing is written:
-- the run stays on its completed stage, and a later transition meets the same answer.
-- ---------------------------------------------------------------------------
SELECT baton.define_workflow('hj_deep_state', '{"start": "a", "decide": "hj_app.deep_state", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('hj_deepest', '{"start": "a", "decide": "hj_app.deepest", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('hj_big_inputs', '{"start": "a", "decide": "hj_app.big_inputs", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
CREATE TEMP TABLE hj_runs (wf text, r uuid, g bigint, s bigint);
DO $$
DECLARE
    t uuid := '00000000-0000-0000-00a2-000000000001';
    wf text;
    r uuid; g bigint; s bigint;
BEGIN
    FOREACH wf IN ARRAY ARRAY['hj_deep_state', 'hj_deepest', 'hj_big_inputs'] LOOP
        r := baton.submit(t, wf, '{}', wf);
        g := baton.acquire_run(t, r, 'w', '1 hour');
        SELECT x.stage_id INTO s FROM baton.transition_stage(t, r, g) x;
        PERFORM baton.start_stage(t, r, g, s);
        PERFORM baton.complete_stage(t, r, g, s, '{}');
        INSERT INTO hj_runs VALUES (wf, r, g, s);
    END LOOP;
END $$;
SELECT h AS h0 FROM hj_digest \gset
SELECT r AS r1, g AS g1 FROM hj_runs WHERE wf = 'hj_deep_state' \gset
SELECT * FROM baton.transition_stage(:'t', :'r1', :g1);
SELECT r AS r2, g AS g2 FROM hj_runs WHERE wf = 'hj_deepest' \gset
SELECT * FROM baton.transition_stage(:'t', :'r2', :g2);
SELECT r AS r3, g AS g3 FROM hj_runs WHERE wf = 'hj_big_inputs' \gset
SELECT * FROM baton.transition_stage(:'t', :'r3', :g3);
SELECT h = :'h0' AS nothing_changed FROM hj_digest;
SELECT w.wf, s.stage, s.status, s.is_current, s.transition
  FROM hj_runs w JOIN baton.stages s ON s.tenant = :'t' AND s.run_id = w.r ORDER BY w.wf, s.id;

-- ---------------------------------------------------------------------------
-- Payloads just over the limit, at the default (1 MiB) and at the largest setting
-- (64 MiB, with a 100 MB payload): 22023, before the fence and before any write.
-- ---------------------------------------------------------------------------
SELECT h AS h0 FROM hj_digest \gset
SHOW baton.max_payload_bytes;
SELECT baton.enqueue(:'t', 'hj', 'big', jsonb_build_object('p', repeat('x', 1048576 - 16)));
SELECT baton.enqueue('00000000-0000-0000-00a2-0000000000ff', 'hj', 'big', jsonb_build_object('p', repeat('x', 1048576)));
SET baton.max_payload_bytes = '64MB';
SELECT baton.enqueue(:'t', 'hj', 'huge', jsonb_build_object('p', repeat('x', 100 * 1024 * 1024)));
SELECT * FROM baton.enqueue_batch(:'t', jsonb_build_array(jsonb_build_object('target', 'hj', 'dedup_key', 'huge',
    'payload', jsonb_build_object('p', repeat('x', 64 * 1024 * 1024)))));
-- the limit cannot go past 64 MiB, and only a superuser sets it
-- (the SQLSTATE alone: PostgreSQL 18 words the range with its unit, 15 without)
\set VERBOSITY sqlstate
SET baton.max_payload_bytes = '65MB';
\set VERBOSITY default
RESET baton.max_payload_bytes;
SELECT h = :'h0' AS nothing_changed FROM hj_digest;

-- ---------------------------------------------------------------------------
-- Invalid UTF-8. In a UTF8 database no text or jsonb value can hold it: Postgres
-- refuses it on the way in (22021), before pg_baton runs.
-- ---------------------------------------------------------------------------
\set VERBOSITY sqlstate
SELECT baton.enqueue(:'t', convert_from('\xff'::bytea, 'UTF8'), 'k');
SELECT baton.enqueue(:'t', 'hj', 'k', '{"k": "\udc00"}');
\set VERBOSITY default

-- A SQL_ASCII database stores any bytes in text and jsonb strings. pg_baton takes
-- names and errors as the bytes they are (limits count bytes there); what it reads as
-- UTF-8 (a definition, the inputs whose digest it takes, a decision) must be UTF-8.
\set hj_home :DBNAME
CREATE DATABASE hj_ascii ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C';
\c hj_ascii
\set SHOW_CONTEXT never
\set VERBOSITY default
SET client_encoding = 'SQL_ASCII';
CREATE EXTENSION pg_baton;
-- Numbered run ids, as setup.sql makes them: messages name the run.
CREATE SEQUENCE regress_run_ids;
ALTER TABLE baton.runs ALTER COLUMN id
    SET DEFAULT ('00000000-0000-4000-8000-' || lpad(nextval('regress_run_ids')::text, 12, '0'))::uuid;
\set t 00000000-0000-0000-00a2-000000000001
SELECT baton.create_tenant(:'t');
CREATE FUNCTION public.bad_state(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('next', 'b', 'state', jsonb_build_object('k', E'\xff')) $$;
CREATE VIEW digest AS
SELECT md5(concat_ws('#', (SELECT string_agg(x::text, '|' ORDER BY x.name) FROM baton.workflows x),
                          (SELECT string_agg(x::text, '|' ORDER BY x.id) FROM baton.runs x),
                          (SELECT string_agg(x::text, '|' ORDER BY x.id) FROM baton.stages x),
                          (SELECT string_agg(x::text, '|' ORDER BY x.id) FROM baton.deliveries x))) AS h;
-- names and keys with bytes that are not UTF-8 are stored as given (shown in hex)
SELECT baton.enqueue(:'t', E'bad\xff\xfetarget', E'k\xc3') AS d \gset
SELECT encode(convert_to(dedup_key, 'SQL_ASCII'), 'hex') AS key_hex, generation
  FROM baton.claim(:'t', E'bad\xff\xfetarget', '1 hour');
SELECT baton.retry(:'t', :d, 1, E'err\xff', '0');
SELECT encode(convert_to(last_error, 'SQL_ASCII'), 'hex') AS error_hex, status FROM baton.delivery(:'t', :d);
SELECT baton.enqueue(:'t', 'work', 'p1', jsonb_build_object(E'k\xff', E'v\xfe')) > 0 AS payload_stored;
-- a limit of 200 characters is 200 bytes here: 101 two-byte characters are 202
SELECT baton.enqueue(:'t', repeat(E'\xc3\xa9', 101), 'k');
SELECT baton.define_workflow('flow', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('bad_state', '{"start": "a", "decide": "public.bad_state", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT h AS h0 FROM digest \gset
-- a definition, inputs or a decision that is not UTF-8: 22023 / DU003 naming it
SELECT baton.define_workflow('bad', jsonb_build_object('start', 'a',
    'stages', jsonb_build_object('a', jsonb_build_object('next', jsonb_build_array('@finish'))), E'x\xff', 1));
SELECT baton.define_workflow('bad', jsonb_build_object('start', E'\xff',
    'stages', jsonb_build_object(E'\xff', jsonb_build_object('next', jsonb_build_array('@finish')))));
SELECT baton.submit(:'t', 'flow', jsonb_build_object('k', E'\xff'));
-- (22023 comes before the fence: an unknown tenant is not reached)
SELECT baton.submit('00000000-0000-0000-00a2-0000000000ff', 'flow', jsonb_build_object('k', E'\xff'));
SELECT h = :'h0' AS nothing_changed FROM digest;
SELECT baton.submit(:'t', 'bad_state', '{}') AS r \gset
SELECT baton.acquire_run(:'t', :'r', E'own\xff', '1 hour') AS g \gset
SELECT stage_id AS s FROM baton.transition_stage(:'t', :'r', :g) \gset
SELECT baton.start_stage(:'t', :'r', :g, :s);
SELECT h AS h0 FROM digest \gset
-- a result that is not UTF-8 would become the successor's inputs: refused
SELECT baton.complete_stage(:'t', :'r', :g, :s, jsonb_build_object(E'r\xff', E'\xfe'));
SELECT h = :'h0' AS nothing_changed FROM digest;
-- a decision that is not UTF-8 is malformed, and nothing is written
SELECT baton.complete_stage(:'t', :'r', :g, :s, '{"r": 1}');
SELECT h AS h0 FROM digest \gset
SELECT * FROM baton.transition_stage(:'t', :'r', :g);
SELECT h = :'h0' AS nothing_changed FROM digest;
\c :hj_home
DROP DATABASE hj_ascii;

-- A LATIN1 database: the inputs, results and decisions are converted to UTF-8 and
-- back, so a stage's inputs arrive as they were given (the digest is over UTF-8).
CREATE DATABASE hj_latin1 ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C';
\c hj_latin1
\set SHOW_CONTEXT never
\set VERBOSITY default
SET client_encoding = 'UTF8';
CREATE EXTENSION pg_baton;
-- Numbered run ids, as setup.sql makes them: messages name the run.
CREATE SEQUENCE regress_run_ids;
ALTER TABLE baton.runs ALTER COLUMN id
    SET DEFAULT ('00000000-0000-4000-8000-' || lpad(nextval('regress_run_ids')::text, 12, '0'))::uuid;
\set t 00000000-0000-0000-00a2-000000000001
SELECT baton.create_tenant(:'t');
SELECT baton.define_workflow('flow', '{"start": "a", "stages": {"a": {"next": ["b"]}, "b": {"next": ["@finish"]}}}');
SELECT baton.submit(:'t', 'flow', '{"k": "café"}') AS r \gset
SELECT baton.inputs_digest(:'t', :'r') = encode(sha256(convert_to('{"k": "café"}', 'UTF8')), 'hex') AS digest_of_utf8;
SELECT baton.acquire_run(:'t', :'r', 'wörker', '1 hour') AS g \gset
SELECT kind, stage, inputs FROM baton.transition_stage(:'t', :'r', :g);
SELECT stage_id AS s FROM baton.transition_stage(:'t', :'r', :g) \gset
SELECT baton.start_stage(:'t', :'r', :g, :s);
SELECT baton.complete_stage(:'t', :'r', :g, :s, '{"r": "naïve ÿ"}');
SELECT kind, stage, inputs FROM baton.transition_stage(:'t', :'r', :g);
-- text that LATIN1 cannot hold is refused by Postgres on the way in (22P05)
\set VERBOSITY sqlstate
SELECT baton.enqueue(:'t', 'work', 'k', '{"k": "✓"}');
\set VERBOSITY default
\c :hj_home
DROP DATABASE hj_latin1;
