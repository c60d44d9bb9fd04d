-- enqueue_batch inserts the items whose keys are free in one statement (after the
-- other files: its ten thousand ids would move the ids they print). What it returns,
-- the ids it uses and the error it raises are those of a call per item.
SET client_min_messages = warning;
SELECT '00000000-0000-0000-0002-00000000b7c0' AS sb \gset
SELECT baton.create_tenant(:'sb');
SELECT baton.enqueue(:'sb', 'sb', 'old', '{"o": 1}') AS sb_old \gset
-- 10,000 new items: inserted, their ids consecutive in item order
CREATE TEMP TABLE sb_items AS
SELECT jsonb_agg(jsonb_build_object('target', 'sb', 'dedup_key', 'n' || i) ORDER BY i) AS items
  FROM generate_series(1, 10000) i;
CREATE TEMP TABLE sb1 AS
SELECT r.ord, r.id, r.inserted FROM baton.enqueue_batch(:'sb', (SELECT items FROM sb_items))
  WITH ORDINALITY AS r(id, inserted, ord);
SELECT count(*) AS n, bool_and(inserted) AS all_inserted, bool_and(id = :sb_old + ord) AS ids_in_item_order FROM sb1;
-- the same batch again: every item returns its id, nothing is inserted
SELECT count(*) AS n, bool_and(NOT r.inserted) AS none_inserted, bool_and(r.id = s.id) AS same_ids
  FROM baton.enqueue_batch(:'sb', (SELECT items FROM sb_items)) WITH ORDINALITY AS r(id, inserted, ord)
  JOIN sb1 s USING (ord);
-- a new key, a taken one, a new key used twice (the same payload, written otherwise),
-- another new key: each item used one id, as a call per item (the batch above too)
SELECT r.ord, r.inserted, CASE WHEN r.id = :sb_old THEN 'old' ELSE (r.id - :sb_old - 20000)::text END AS id
  FROM baton.enqueue_batch(:'sb', '[
  {"target": "sb", "dedup_key": "m1"},
  {"target": "sb", "dedup_key": "old", "payload": {"o": 1}},
  {"target": "sb", "dedup_key": "m2", "payload": {"a": 1, "b": 2.0}},
  {"target": "sb", "dedup_key": "m2", "payload": {"b": 2.00, "a": 1}},
  {"target": "sb", "dedup_key": "m3"}]') WITH ORDINALITY AS r(id, inserted, ord) ORDER BY r.ord;
SELECT baton.enqueue(:'sb', 'sb', 'after') - :sb_old AS after_offset;
-- DU009 at item 1 is raised before DU008 at item 2; nothing is inserted
SELECT * FROM baton.enqueue_batch(:'sb', '[{"target": "sb", "dedup_key": "e1"},
  {"target": "sb", "dedup_key": "old", "payload": {"o": 2}},
  {"target": "sb", "dedup_key": "e2", "run_id": "00000000-0000-0000-0002-00000000ffff"}]');
\echo :LAST_ERROR_SQLSTATE
-- DU008 at item 1 is raised before DU009 at item 2
SELECT * FROM baton.enqueue_batch(:'sb', '[{"target": "sb", "dedup_key": "e1"},
  {"target": "sb", "dedup_key": "e2", "run_id": "00000000-0000-0000-0002-00000000ffff"},
  {"target": "sb", "dedup_key": "old", "payload": {"o": 2}}]');
\echo :LAST_ERROR_SQLSTATE
-- a key used again later in the batch with another binding: DU009 naming the later item
SELECT * FROM baton.enqueue_batch(:'sb', '[{"target": "sb", "dedup_key": "e3", "binding": {"k": 1}},
  {"target": "sb", "dedup_key": "e4"},
  {"target": "sb", "dedup_key": "e3", "binding": {"k": 2}}]');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS e_rows FROM baton.deliveries WHERE tenant = :'sb' AND dedup_key LIKE 'e%';
-- a failed batch's ids are spent, as a failed statement's are: the first batch (keys
-- distinct) took one per item before its insert found "old" taken (2), then went item
-- by item up to the item that failed (2); the other two as calls per item (1 and 3)
SELECT baton.enqueue(:'sb', 'sb', 'after2') - :sb_old AS after2_offset;
-- items of several targets, with runs and the other fields: inserted in item order
INSERT INTO baton.runs (tenant, id, workflow, version, inputs_digest)
  VALUES (:'sb', '00000000-0000-0000-0002-00000000b7c1', 'wf', 1, 'digest-sb');
CREATE TEMP TABLE sb2 AS
SELECT r.ord, r.id, r.inserted FROM baton.enqueue_batch(:'sb', '[
  {"target": "sb-x", "dedup_key": "t1", "run_id": "00000000-0000-0000-0002-00000000b7c1"},
  {"target": "sb-y", "dedup_key": "t1", "priority": 3, "max_attempts": 7, "run_after": "2030-01-01T00:00:00Z"},
  {"target": "sb-x", "dedup_key": "t2", "run_id": "00000000-0000-0000-0002-00000000b7c1"}]')
  WITH ORDINALITY AS r(id, inserted, ord);
SELECT r.ord, r.inserted, r.id - :sb_old AS id_offset, d.target, d.dedup_key, d.run_id IS NOT NULL AS has_run,
       d.priority, d.max_attempts, d.run_after = '2030-01-01T00:00:00Z' AS later
  FROM sb2 r JOIN baton.deliveries d ON d.tenant = :'sb' AND d.id = r.id ORDER BY r.ord;

-- The dedup key (0.10.0): unique on (tenant, target, dedup_key), compared in byte order
-- (COLLATE "C"), its index keyed (tenant, dedup_key, target). Keys that differ in
-- case or by a trailing space are different keys; one key in two targets is two
-- deliveries; a repeat is the same id. A lookup by the key, written as a user writes it,
-- uses the index; the column's collation is "C" (the last query: this database's own,
-- C.UTF-8, orders these keys as bytes do, so the ORDER BY alone could not tell).
\set dk 00000000-0000-0000-0002-0000000000dc
SELECT baton.create_tenant(:'dk');
SELECT count(DISTINCT e) AS ids, count(*) AS calls FROM (VALUES
  (baton.enqueue(:'dk', 'x', 'key')), (baton.enqueue(:'dk', 'x', 'Key')), (baton.enqueue(:'dk', 'x', 'key ')),
  (baton.enqueue(:'dk', 'y', 'key')), (baton.enqueue(:'dk', 'x', 'key'))) v(e);
SELECT r.inserted, r.id = (SELECT id FROM baton.deliveries WHERE tenant = :'dk' AND target = 'y' AND dedup_key = 'key') AS same
  FROM baton.enqueue_batch(:'dk', '[{"target": "y", "dedup_key": "key"}, {"target": "y", "dedup_key": "Zed"}]') r;
SELECT target, dedup_key FROM baton.deliveries WHERE tenant = :'dk' ORDER BY dedup_key, target;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM baton.deliveries WHERE tenant = :'dk' AND target = 'x' AND dedup_key = 'key';
RESET enable_seqscan;
SELECT pg_catalog.pg_get_constraintdef(c.oid), a.attcollation::regcollation
  FROM pg_constraint c, pg_attribute a
 WHERE c.conrelid = 'baton.deliveries'::regclass AND c.contype = 'u'
   AND a.attrelid = c.conrelid AND a.attname = 'dedup_key';
