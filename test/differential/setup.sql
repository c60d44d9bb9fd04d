-- The database of one run of the differential workload (test/differential/run.sh), as a
-- user would set it up before any delivery exists: pg_baton, the judges (amcheck,
-- pageinspect), the workload's helpers in schema dw, a domain column, a publication, and
-- four indexes of the user's own on baton.deliveries over columns that claim and finish write, so that the direct
-- path (src/pg/deliveries/delivery_direct.cpp, write_indexes()) must give each the entries the
-- executor would.
--
-- Which columns: a claim writes status, generation, attempts and lease_until; a finish
-- status, lease_until, settled_at and result. The btree indexes below cover generation
-- and attempts, so every claim is a non-HOT update that needs an entry in every index;
-- none covers status, lease_until, settled_at or result, so on PostgreSQL 16 and later
-- a finish that stays on its page is a heap-only update whose only index entry is the
-- BRIN one (TU_Summarizing, compat::IndexUpdate::kSummarizing). On 15 the BRIN columns
-- block HOT like any indexed column, and the same finish needs every index's entry.
-- The partial index's predicate therefore reads attempts, not status: a predicate on
-- status would make every claim and finish non-HOT and leave the summarizing case
-- unreached.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION pg_baton;
CREATE EXTENSION amcheck;
CREATE EXTENSION pageinspect;

-- BRIN over the columns a finish writes, one heap page a range: the workload summarizes
-- every range once the deliveries are enqueued (dw.summarize()), so a later update that
-- stays on its page must widen its page's summary, or a bitmap scan misses the row.
CREATE INDEX dx_brin ON baton.deliveries USING brin (settled_at, lease_until) WITH (pages_per_range = 1);
-- Partial: the deliveries worked more than once (a claim after a retry or a reap moves
-- a row in; a redrive, which sets attempts to 0, moves it out).
CREATE INDEX dx_retried ON baton.deliveries (tenant, target, id) WHERE attempts >= 2;
-- Expression: the lease token a worker reports, "id:generation".
CREATE INDEX dx_token ON baton.deliveries (tenant, (id::text || ':' || generation::text));
-- Unique on a written column: the workload never gives two targets of a tenant the same
-- dedup key, so (tenant, dedup_key, generation) stays unique; every claim changes its
-- key, so each of its entries is checked for uniqueness.
CREATE UNIQUE INDEX dx_key_generation ON baton.deliveries (tenant, dedup_key, generation);
-- A domain on result, which a finish assigns: the direct path checks each value against
-- it (domain_check) as the executor does, and stays direct.
CREATE DOMAIN dw_result AS jsonb CHECK (VALUE IS NULL OR octet_length(VALUE::text) < 100000);
ALTER TABLE baton.deliveries ALTER COLUMN result TYPE dw_result;
-- A publication of the table's changes: its replica identity (the primary key) lets the
-- updates through CheckCmdReplicaIdentity on both paths.
CREATE PUBLICATION dx_pub FOR TABLE baton.deliveries;

CREATE SCHEMA dw;
-- The workload's tenants: a, the busiest; b, fenced halfway; c, reaped alongside a.
CREATE FUNCTION dw.a() RETURNS uuid LANGUAGE sql IMMUTABLE AS $$ SELECT '00000000-0000-0000-00df-00000000000a'::uuid $$;
CREATE FUNCTION dw.b() RETURNS uuid LANGUAGE sql IMMUTABLE AS $$ SELECT '00000000-0000-0000-00df-00000000000b'::uuid $$;
CREATE FUNCTION dw.c() RETURNS uuid LANGUAGE sql IMMUTABLE AS $$ SELECT '00000000-0000-0000-00df-00000000000c'::uuid $$;
-- A delivery's id by its key (a worker would keep it from its claim), and the ids of a
-- tenant's deliveries with these keys, in the keys' order, as finish_batch and redrive
-- take them.
CREATE FUNCTION dw.id(t uuid, k text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT id FROM baton.deliveries WHERE tenant = t AND dedup_key = k $$;
CREATE FUNCTION dw.ids(t uuid, keys text[]) RETURNS bigint[] LANGUAGE sql STABLE AS $$
  SELECT array_agg(d.id ORDER BY k.n) FROM unnest(keys) WITH ORDINALITY k(key, n)
    JOIN baton.deliveries d ON d.tenant = t AND d.dedup_key = k.key $$;
-- An UPDATE of a tenant's deliveries by the user's own SQL (a step's query is a
-- subquery, which cannot hold the UPDATE itself): their ids.
CREATE FUNCTION dw.reprioritize(t uuid, p int) RETURNS SETOF bigint LANGUAGE sql AS $$
  UPDATE baton.deliveries SET priority = p WHERE tenant = t RETURNING id $$;
-- A batch of n items of target tgt, keys prefix1..prefixn, fixed payloads of about 100
-- bytes; every fifth item priority 2, every seventh a single attempt.
CREATE FUNCTION dw.items(tgt text, prefix text, n int, first int DEFAULT 1) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_agg(jsonb_build_object('target', tgt, 'dedup_key', prefix || g,
                                      'payload', jsonb_build_object('n', g, 'pad', repeat(md5(prefix || g), 3)),
                                      'priority', CASE WHEN g % 5 = 0 THEN 2 ELSE 0 END,
                                      'max_attempts', CASE WHEN g % 7 = 0 THEN 1 ELSE 3 END) ORDER BY g)
    FROM generate_series(first, first + n - 1) g $$;

-- Calls of the fence trigger so far in this transaction (track_functions = 'all'): the
-- statements fire it for every delivery row they write, the direct path never does.
CREATE FUNCTION dw.fence_calls() RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions
   WHERE schemaname = 'baton' AND funcname = 'fence_row' $$;
-- Heap-only updates of baton.deliveries so far in this transaction.
CREATE FUNCTION dw.hot_updates() RETURNS bigint LANGUAGE sql AS $$
  SELECT n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relid = 'baton.deliveries'::regclass $$;
-- One step of the workload: runs q (its rows as text, in the order returned; NULL for
-- none; its error as 'SQLSTATE: message'), numbered in the order run. kind: 'direct'
-- when q calls only functions that have a direct path (claim without `expected`,
-- finish, finish_batch, enqueue_batch), 'mixed' when such a call takes the statements
-- on both paths for this input, else 'sql'; fired: the fence trigger's calls meanwhile;
-- hot: the heap-only updates of baton.deliveries meanwhile. Each step is a transaction
-- of its own (psql autocommit), its query run in the subtransaction of the block that
-- catches its error.
CREATE FUNCTION dw.step(kind text, label text, q text, OUT n bigint, OUT step_kind text, OUT fired bigint,
                        OUT hot bigint, OUT step_label text, OUT answer text)
LANGUAGE plpgsql AS $$
DECLARE
  fired_before bigint := dw.fence_calls();
  hot_before bigint := dw.hot_updates();
BEGIN
  n := nextval('pg_temp.dw_steps');
  step_kind := kind;
  step_label := label;
  BEGIN
    EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', q) INTO answer;
  EXCEPTION WHEN OTHERS THEN
    answer := SQLSTATE || ': ' || SQLERRM;
  END;
  fired := dw.fence_calls() - fired_before;
  hot := dw.hot_updates() - hot_before;
END $$;
-- Summarizes every range of dx_brin (the user's maintenance), returning how many.
CREATE FUNCTION dw.summarize() RETURNS integer LANGUAGE sql AS $$
  SELECT brin_summarize_new_values('baton.dx_brin'::regclass) $$;
