-- Hostile arguments to every function of the extension, generated from the catalog:
-- each input argument of each function in schema baton is replaced, one at a time, by
-- every hostile value of its type (NULL, empty and blank names, SQL in names, quotes,
-- unicode, over-long text, extreme integers, extreme intervals, infinite timestamps,
-- JSON of every wrong shape, huge and deeply nested JSON, random and zero uuids,
-- another tenant's ids), the other arguments keeping values that name live objects.
-- Each call runs in its own subtransaction and is rolled back afterwards, so that the
-- cases do not depend on each other; each reports its SQLSTATE and message (or "ok"
-- and its row count) and whether it changed any row of the extension's tables. A new
-- function or argument joins the sweep by itself.
\set SHOW_CONTEXT never
\set VERBOSITY default
\set t  00000000-0000-0000-00a1-000000000001
\set o  00000000-0000-0000-00a1-000000000002
\set fz 00000000-0000-0000-00a1-000000000003
SELECT gen_random_uuid() AS rand \gset
SELECT baton.create_tenant(:'t');
SELECT baton.create_tenant(:'o');
SELECT baton.create_tenant(:'fz');
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'baton_hx_role') THEN
        CREATE ROLE baton_hx_role NOLOGIN;
    END IF;
END $$;

-- Ids the messages name are made predictable: the sequences start far from the ids
-- of the other test files.
SELECT setval('baton.entry_id_seq', 7100000) IS NOT NULL AS entry_ids_set;
SELECT setval(pg_get_serial_sequence('baton.deliveries', 'id'), 7200000) IS NOT NULL AS delivery_ids_set;

-- The live objects. Tenant t: delivery D claimed at generation 1 and a pending one;
-- run R held by owner1 at generation G, its stage S running with a marker at
-- position 0; run R2 taken over (generation G2) so that the marker of its stage S2 is
-- in doubt; run RG waiting for approval with digest DG; step entry E with a marker.
-- Tenant o (another tenant) has objects of its own: Do, Ro, So, Eo. Tenant fz is fenced.
SELECT baton.define_workflow('hx_flow', '{"start": "a", "stages": {"a": {"next": ["@finish"]}}}');
SELECT baton.define_workflow('hx_gated', '{"start": "a", "requires_approval": true, "stages": {"a": {"next": ["@finish"]}}}');
SELECT baton.enqueue(:'t', 'work', 'held') AS "D" \gset
SELECT baton.enqueue(:'t', 'work', 'waiting') AS "Dp" \gset
SELECT id = :D AS claimed_d, generation FROM baton.claim(:'t', 'work', '1 hour');
SELECT baton.submit(:'t', 'hx_flow', '{"n": 1}', 'r1') AS "R" \gset
SELECT baton.acquire_run(:'t', :'R', 'owner1', '1 hour') AS "G" \gset
SELECT stage_id AS "S" FROM baton.transition_stage(:'t', :'R', :G) \gset
SELECT baton.start_stage(:'t', :'R', :G, :S);
SELECT baton.claim_marker(:'t', :S, 0, 'k');
SELECT baton.submit(:'t', 'hx_flow', '{"n": 2}', 'r2') AS "R2" \gset
SELECT baton.acquire_run(:'t', :'R2', 'owner1', '1 hour') AS g2a \gset
SELECT stage_id AS "S2" FROM baton.transition_stage(:'t', :'R2', :g2a) \gset
SELECT baton.start_stage(:'t', :'R2', :g2a, :S2);
SELECT baton.claim_marker(:'t', :S2, 0, 'k');
SELECT baton.acquire_run(:'t', :'R2', 'owner1', '1 hour') AS "G2" \gset
SELECT baton.submit(:'t', 'hx_gated', '{"n": 3}', 'rg') AS "RG" \gset
SELECT baton.inputs_digest(:'t', :'RG') AS "DG" \gset
SELECT entry_id AS "E" FROM baton.enter_step(:'t', 'subj', 'st', 'dg') \gset
SELECT baton.claim_marker(:'t', :E, 0, 'k');
SELECT baton.enqueue(:'o', 'work', 'theirs') AS "Do" \gset
SELECT id = :Do AS claimed_do FROM baton.claim(:'o', 'work', '1 hour');
SELECT baton.submit(:'o', 'hx_flow', '{"n": 4}', 'ro') AS "Ro" \gset
SELECT baton.acquire_run(:'o', :'Ro', 'owner1', '1 hour') AS "Go" \gset
SELECT stage_id AS "So" FROM baton.transition_stage(:'o', :'Ro', :Go) \gset
SELECT entry_id AS "Eo" FROM baton.enter_step(:'o', 'subj', 'st', 'dg') \gset
SELECT baton.claim_marker(:'o', :Eo, 0, 'k');
SELECT baton.enqueue(:'fz', 'work', 'frozen') AS "Dz" \gset
-- The binding that pause, resume and set_weight change, and claim_fair serves.
SELECT baton.bind_target(:'t', 'work', 'baton_hx_role');
SELECT baton.set_tenant_state(:'fz', 'fenced');
-- The ids, as the sequences made them (the messages below name them).
SELECT :D AS d, :Dp AS dp, :Do AS do_, :S AS s, :S2 AS s2, :So AS so, :E AS e, :Eo AS eo, :G AS g, :G2 AS g2;

-- Every row a call could change, digested: all tenants and workflows, and every row
-- of the tenants a case names (t, o, fz, the random and the zero uuid).
CREATE TEMP TABLE hx_tenants (tenant uuid PRIMARY KEY);
INSERT INTO hx_tenants VALUES (:'t'), (:'o'), (:'fz'), (:'rand'), ('00000000-0000-0000-0000-000000000000');
CREATE FUNCTION pg_temp.hx_digest() RETURNS text LANGUAGE sql AS $$
SELECT md5(concat_ws('#',
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant) FROM baton.tenants x),
    (SELECT string_agg(x::text, '|' ORDER BY x.name, x.version) FROM baton.workflows x),
    (SELECT string_agg(x::text, '|' ORDER BY x.target) FROM baton.paused_targets x),
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant, x.target) FROM baton.target_bindings x
      WHERE x.tenant IN (SELECT tenant FROM hx_tenants)),
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant, x.target, x.key) FROM baton.key_limits x
      WHERE x.tenant IN (SELECT tenant FROM hx_tenants)),
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant, x.id) FROM baton.runs x
      WHERE x.tenant IN (SELECT tenant FROM hx_tenants)),
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant, x.id) FROM baton.stages x
      WHERE x.tenant IN (SELECT tenant FROM hx_tenants)),
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant, x.id) FROM baton.step_entries x
      WHERE x.tenant IN (SELECT tenant FROM hx_tenants)),
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant, x.entry_id, x."position") FROM baton.markers x
      WHERE x.tenant IN (SELECT tenant FROM hx_tenants)),
    (SELECT string_agg(x::text, '|' ORDER BY x.tenant, x.id) FROM baton.deliveries x
      WHERE x.tenant IN (SELECT tenant FROM hx_tenants))))
$$;
SELECT pg_temp.hx_digest() AS h0 \gset
SELECT md5(concat_ws('#', (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.runs x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.stages x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.step_entries x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.markers x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.target_bindings x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.deliveries x))) AS all0 \gset

-- The valid value of each argument: by function and name, else by name alone ('*').
CREATE TEMP TABLE hx_valid (fn text, arg text, expr text, PRIMARY KEY (fn, arg));
INSERT INTO hx_valid VALUES
    ('*', 'tenant', quote_literal(:'t') || '::uuid'),
    ('*', 'target', '''work'''),
    ('*', 'dedup_key', '''k-new'''),
    ('*', 'payload', '''{}''::jsonb'),
    ('*', 'binding', '''{}''::jsonb'),
    ('*', 'run_after', 'NULL::timestamptz'),
    ('*', 'priority', '0'),
    ('*', 'max_attempts', '3'),
    ('*', 'items', '''[{"target": "work", "dedup_key": "b-new"}]''::jsonb'),
    ('*', 'lease', '''1 hour''::interval'),
    ('*', 'max_items', '1'),
    ('*', 'expected', 'NULL::jsonb'),
    ('*', 'id', :'D' || '::bigint'),
    ('*', 'generation', '1::bigint'),
    ('*', 'outcome', '''finished'''),
    ('*', 'result', 'NULL::jsonb'),
    ('*', 'error', '''boom'''),
    ('*', 'delay', 'NULL::interval'),
    ('*', 'max_rows', '10'),
    ('*', 'older_than', '''1 day''::interval'),
    ('*', 'ids', 'ARRAY[' || :'D' || ']::bigint[]'),
    ('*', 'generations', 'ARRAY[1]::bigint[]'),
    ('*', 'name', '''hx_flow'''),
    ('*', 'definition', '''{"start": "a", "stages": {"a": {"next": ["@finish"]}}}''::jsonb'),
    ('*', 'workflow', '''hx_flow'''),
    ('*', 'inputs', '''{}''::jsonb'),
    ('*', 'idempotency_key', 'NULL::text'),
    ('*', 'run_id', quote_literal(:'R') || '::uuid'),
    ('*', 'approver', '''me'''),
    ('*', 'digest', quote_literal(:'DG')),
    ('*', 'reason', '''why'''),
    ('*', 'owner', '''owner1'''),
    ('*', 'previous_stage_id', 'NULL::bigint'),
    ('*', 'stage_id', :'S' || '::bigint'),
    ('*', 'retry_in', 'NULL::interval'),
    ('*', 'subject', '''subj'''),
    ('*', 'step', '''st'''),
    ('*', 'entry_id', :'E' || '::bigint'),
    ('*', 'position', '0'),
    ('*', 'kind', '''k'''),
    ('*', 'operation_id', 'NULL::text'),
    ('*', 'state', '''done'''),
    ('*', 'role', '''baton_hx_role''::regrole'),
    ('*', 'spec', '''@daily'''),
    ('*', 'time_zone', '''UTC'''),
    ('*', 'weight', '2'),
    ('*', 'key', '''acme'''),
    ('*', 'max_leased', '2'),
    ('*', 'ordered', 'false'),
    ('*', 'rate', '5'),
    ('*', 'per', '''1 second''::interval'),
    ('*', 'burst', 'NULL::int'),
    ('set_tenant_state', 'state', '''active'''),
    ('enqueue', 'run_id', 'NULL::uuid'),
    ('enqueue_keyed', 'run_id', 'NULL::uuid'),
    ('approve', 'run_id', quote_literal(:'RG') || '::uuid'),
    ('enter_step', 'digest', '''dg'''),
    ('transition_stage', 'generation', :'G' || '::bigint'),
    ('start_stage', 'generation', :'G' || '::bigint'),
    ('complete_stage', 'generation', :'G' || '::bigint'),
    ('complete_stage', 'result', '''{}''::jsonb'),
    ('fail_stage', 'generation', :'G' || '::bigint'),
    ('renew_run', 'generation', :'G' || '::bigint'),
    ('release_run', 'generation', :'G' || '::bigint'),
    ('markers_in_doubt', 'run_id', quote_literal(:'R2') || '::uuid'),
    ('resolve_marker', 'entry_id', :'S2' || '::bigint'),
    ('resolve_marker', 'generation', :'G2' || '::bigint'),
    ('resolve_marker', 'outcome', '''done''');

-- The hostile values: by type ('*' name) or, for ids, by argument name.
CREATE TEMP TABLE hx_hostile (type text, arg text, label text, expr text);
INSERT INTO hx_hostile VALUES
    ('uuid', '*', 'null', 'NULL::uuid'),
    ('uuid', '*', 'zero uuid', '''00000000-0000-0000-0000-000000000000''::uuid'),
    ('uuid', '*', 'random uuid', quote_literal(:'rand') || '::uuid'),
    ('uuid', 'tenant', 'other tenant', quote_literal(:'o') || '::uuid'),
    ('uuid', 'tenant', 'fenced tenant', quote_literal(:'fz') || '::uuid'),
    ('uuid', 'run_id', 'other tenant''s run', quote_literal(:'Ro') || '::uuid'),
    ('text', '*', 'null', 'NULL::text'),
    ('text', '*', 'empty', ''''''),
    ('text', '*', 'blank', '''   '''),
    ('text', '*', 'tab and newline', 'E''\t\n'''),
    ('text', '*', 'sql', '''x''''; drop table baton.deliveries; --'''),
    ('text', '*', 'quoted', '''"quoted"'''),
    ('text', '*', 'unicode', '''Ünïcødé ✓ 😀'''),
    ('text', '*', '200 emoji', 'repeat(''😀'', 200)'),
    ('text', '*', '201 characters', 'repeat(''x'', 201)'),
    ('text', '*', '70000 bytes', 'repeat(''y'', 70000)'),
    ('int4', '*', 'null', 'NULL::int'),
    ('int4', '*', 'zero', '0'),
    ('int4', '*', 'minus one', '-1'),
    ('int4', '*', 'int min', '(-2147483647 - 1)'),
    ('int4', '*', 'int max', '2147483647'),
    ('int8', '*', 'null', 'NULL::bigint'),
    ('int8', '*', 'zero', '0::bigint'),
    ('int8', '*', 'minus one', '-1::bigint'),
    ('int8', '*', 'bigint min', '(-9223372036854775807 - 1)::bigint'),
    ('int8', '*', 'bigint max', '9223372036854775807::bigint'),
    ('int8', 'id', 'other tenant''s id', :'Do' || '::bigint'),
    ('int8', 'stage_id', 'other tenant''s id', :'So' || '::bigint'),
    ('int8', 'previous_stage_id', 'other tenant''s id', :'So' || '::bigint'),
    ('int8', 'entry_id', 'other tenant''s id', :'Eo' || '::bigint'),
    ('interval', '*', 'null', 'NULL::interval'),
    ('interval', '*', 'minus one second', '''-1 s''::interval'),
    ('interval', '*', 'zero', '''0''::interval'),
    ('interval', '*', 'one microsecond', '''1 microsecond''::interval'),
    ('interval', '*', '365 days 1 us', '''365 days 0.000001 s''::interval'),
    ('interval', '*', '1000 years', '''1000 years''::interval'),
    ('interval', '*', 'interval max', '''178000000 years''::interval'),
    ('interval', '*', 'interval min', '''-178000000 years''::interval'),
    ('interval', '*', '1 mon -30 days', '''1 mon -30 days''::interval'),
    ('jsonb', '*', 'null', 'NULL::jsonb'),
    ('jsonb', '*', 'json null', '''null''::jsonb'),
    ('jsonb', '*', 'string', '''"s"''::jsonb'),
    ('jsonb', '*', 'number', '''-1e308''::jsonb'),
    ('jsonb', '*', 'array', '''[{}]''::jsonb'),
    ('jsonb', '*', 'empty object', '''{}''::jsonb'),
    ('jsonb', '*', 'sql keys', '''{"x''''; drop table baton.deliveries; --": "\"quoted\""}''::jsonb'),
    ('jsonb', '*', 'nested 10000', '(''{"d": '' || repeat(''['', 10000) || repeat('']'', 10000) || ''}'')::jsonb'),
    ('jsonb', '*', 'over 1 MiB', 'jsonb_build_object(''big'', repeat(''x'', 1048576))'),
    ('timestamptz', '*', 'null', 'NULL::timestamptz'),
    ('timestamptz', '*', 'infinity', '''infinity''::timestamptz'),
    ('timestamptz', '*', 'minus infinity', '''-infinity''::timestamptz'),
    ('timestamptz', '*', 'latest', '''294276-12-31 23:59:59+00''::timestamptz'),
    ('timestamptz', '*', 'earliest', '''4714-11-24 00:00:00+00 BC''::timestamptz'),
    ('_int8', '*', 'null', 'NULL::bigint[]'),
    ('_int8', '*', 'empty array', '''{}''::bigint[]'),
    ('_int8', '*', 'null element', '''{NULL}''::bigint[]'),
    ('_int8', '*', 'two dimensions', '''{{1},{2}}''::bigint[]'),
    ('_int8', '*', 'bigint max', 'ARRAY[9223372036854775807]::bigint[]'),
    ('_int8', '*', '1001 items', 'array_fill(1::bigint, ARRAY[1001])'),
    ('bool', '*', 'null', 'NULL::boolean'),
    ('regrole', '*', 'null', 'NULL::regrole'),
    ('regrole', '*', 'oid 0', '0::oid::regrole'),
    ('regrole', '*', 'superuser', '''postgres''::regrole'),
    ('regrole', '*', 'pg_database_owner', '''pg_database_owner''::regrole');

-- The input arguments of every function of the schema (trigger functions excluded).
CREATE TEMP VIEW hx_args AS
SELECT p.proname AS fn, a.ordinal_position AS n, a.parameter_name AS arg, a.udt_name AS type
  FROM pg_proc p
  JOIN information_schema.parameters a ON a.specific_schema = 'baton'
   AND a.specific_name = p.proname || '_' || p.oid
 WHERE p.pronamespace = 'baton'::regnamespace AND a.parameter_mode = 'IN'
   AND p.prorettype <> 'trigger'::regtype;

-- The cases: one valid call per function, then one call per argument and hostile value.
CREATE TEMP TABLE hx_cases AS
WITH fns AS (SELECT DISTINCT fn FROM hx_args),
subst AS (
    SELECT f.fn, NULL::text AS arg, 'valid' AS label, NULL::text AS expr, 0 AS n FROM fns f
    UNION ALL
    SELECT a.fn, a.arg, h.label, h.expr, a.n
      FROM hx_args a JOIN hx_hostile h ON h.type = a.type AND h.arg IN ('*', a.arg)
)
SELECT row_number() OVER (ORDER BY s.fn, s.n, s.label) AS case_no, s.fn, s.arg, s.label,
       format('SELECT * FROM baton.%I(%s)', s.fn,
              (SELECT string_agg(format('%I => %s', a.arg,
                                        CASE WHEN a.arg = s.arg THEN s.expr
                                             ELSE coalesce(v.expr, f.expr) END), ', ' ORDER BY a.n)
                 FROM hx_args a
                 LEFT JOIN hx_valid v ON v.fn = a.fn AND v.arg = a.arg
                 LEFT JOIN hx_valid f ON f.fn = '*' AND f.arg = a.arg
                WHERE a.fn = s.fn)) AS stmt
  FROM subst s;
SELECT count(*) AS functions FROM (SELECT DISTINCT fn FROM hx_cases) f;
SELECT count(*) AS cases FROM hx_cases;
-- every argument has a valid value
SELECT fn, arg FROM hx_args a
 WHERE NOT EXISTS (SELECT FROM hx_valid v WHERE v.arg = a.arg AND v.fn IN ('*', a.fn));

-- Runs one case in a subtransaction that is always rolled back: its SQLSTATE and
-- message ('ok' and the row count when it succeeds) and whether it changed any row.
CREATE FUNCTION pg_temp.hx_try(stmt text, OUT code text, OUT message text, OUT wrote boolean)
LANGUAGE plpgsql AS $$
DECLARE
    before text := pg_temp.hx_digest();
    n bigint;
BEGIN
    BEGIN
        EXECUTE format('SELECT count(*) FROM (%s) x', stmt) INTO n;
        RAISE EXCEPTION USING ERRCODE = 'HX000', MESSAGE = format('%s row(s)', n),
                              DETAIL = (pg_temp.hx_digest() IS DISTINCT FROM before)::text;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
        IF code = 'HX000' THEN
            code := 'ok';
            GET STACKED DIAGNOSTICS wrote = PG_EXCEPTION_DETAIL;
        END IF;
    END;
    wrote := coalesce(wrote, false) OR pg_temp.hx_digest() IS DISTINCT FROM before;
END $$;

CREATE TEMP TABLE hx_results AS
SELECT c.case_no, c.fn, c.arg, c.label, r.code,
       replace(replace(replace(replace(left(r.message, 160), :'rand', '<random uuid>'),
               :'R', '<R>'), :'Ro', '<Ro>'), :'RG', '<RG>') AS message, r.wrote
  FROM hx_cases c, LATERAL pg_temp.hx_try(c.stmt) r;

-- Every case, in order: function, argument, hostile value, SQLSTATE, message.
\pset format unaligned
\pset fieldsep ' | '
SELECT fn, coalesce(arg, '-') AS arg, label, code, message,
       CASE WHEN wrote THEN 'WROTE' ELSE '' END AS wrote
  FROM hx_results ORDER BY case_no;
\pset format aligned

-- The rules, checked over all cases:
-- no internal error (XX000) or any class-XX or class-58 code, and no crash (this runs);
SELECT fn, arg, label, code, message FROM hx_results WHERE code ~ '^(XX|58)';
-- a NULL for an argument without a default, or with a default that is not NULL, is
-- 22004 (the defaults that are NULL are documented results);
SELECT r.fn, r.arg, r.code, r.message
  FROM hx_results r JOIN information_schema.parameters p
    ON p.specific_schema = 'baton' AND p.parameter_name = r.arg
   AND p.specific_name LIKE r.fn || '\_%' AND p.parameter_mode = 'IN'
 WHERE r.label = 'null' AND coalesce(p.parameter_default, '') NOT LIKE 'NULL::%' AND r.code <> '22004';
-- every refusal's message names something: it is longer than a bare phrase and is
-- lowercase at its start;
SELECT fn, arg, label, code, message FROM hx_results
 WHERE code <> 'ok' AND (message !~ '^[a-z]' OR length(message) < 12);
-- every refusal uses a code of the contract (22004, 22023, DU0xx, 42501) or one that
-- Postgres raises for the argument before the function runs (22008 datetime out of
-- range for a timestamptz the function computes, 22P02, 42704);
SELECT code, count(*) FROM hx_results GROUP BY code ORDER BY code;
-- the calls that succeeded and wrote (then rolled back) are the ones that should write.
SELECT fn, arg, label FROM hx_results WHERE wrote ORDER BY case_no;

-- Nothing changed, after all the cases: the digest above, and every row of every
-- table (taken before the cases as well).
SELECT pg_temp.hx_digest() = :'h0' AS nothing_changed;
SELECT md5(concat_ws('#', (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.runs x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.stages x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.step_entries x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.markers x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.target_bindings x),
    (SELECT string_agg(x::text, '|' ORDER BY x::text) FROM baton.deliveries x))) = :'all0' AS no_row_of_any_tenant_changed;
DROP ROLE baton_hx_role;
