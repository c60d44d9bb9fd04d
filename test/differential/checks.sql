-- The judges of one run's database (test/differential/run.sh), created after its
-- workload (functions only: no row of a baton table changes, nothing is decoded).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- Every row of every baton table as JSON, and the names of their timestamptz columns
-- (run.sh ranks those values: normalise.py). baton.wakeup_key is left out: each
-- database makes a secret of its own (docs/guide/wakeups.md).
CREATE FUNCTION dw.rows(OUT tbl text, OUT j text) RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
  rel text;
BEGIN
  FOR rel IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = 'baton' AND c.relkind = 'r' AND c.relname <> 'wakeup_key' ORDER BY 1 LOOP
    RETURN QUERY EXECUTE format('SELECT %L::text, to_jsonb(t)::text FROM baton.%I t', rel, rel);
  END LOOP;
END $$;
CREATE FUNCTION dw.time_columns(OUT tbl text, OUT col text) RETURNS SETOF record LANGUAGE sql AS $$
  SELECT c.relname::text, a.attname::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'baton' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
     AND a.atttypid = 'timestamptz'::regtype ORDER BY 1, 2 $$;

-- The planner forced onto one access path for the rest of the transaction.
CREATE FUNCTION dw.only(path text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('enable_seqscan', (path = 'seq')::text, true);
  PERFORM set_config('enable_indexscan', (path = 'index')::text, true);
  PERFORM set_config('enable_indexonlyscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', (path = 'bitmap')::text, true);
  PERFORM set_config('enable_tidscan', 'off', true);
  PERFORM set_config('enable_sort', (path <> 'index')::text, true);
END $$;
-- The query q's plan (EXPLAIN, costs off) as one line.
CREATE FUNCTION dw.plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  plan text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    plan := plan || btrim(line) || '; ';
  END LOOP;
  RETURN plan;
END $$;
-- How many rows q returns and a digest of their (tenant, id), in that order.
CREATE FUNCTION dw.digest(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  answer text;
BEGIN
  EXECUTE format('SELECT count(*) || '' '' || coalesce(md5(string_agg(tenant || ''/'' || id, '','' ORDER BY tenant, id)), ''-'') FROM (%s) s', q)
    INTO answer;
  RETURN answer;
END $$;

-- Each btree index of baton.deliveries read whole by an index scan (its predicate as
-- the query's, its keys as the order, sorting disabled) against a sequential scan of the
-- same query: the same rows. amcheck's heapallindexed finds a row its index lacks; this
-- finds an entry too many as well (a live row in a partial index whose predicate it no
-- longer meets, an expression entry of a key the row does not have), which an index
-- scan returns without checking.
CREATE FUNCTION dw.index_scans(OUT index_name text, OUT used_index boolean, OUT by_index text, OUT by_seq text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
  idx record;
  q text;
BEGIN
  FOR idx IN SELECT i.indexrelid, c.relname,
                    (SELECT string_agg(pg_get_indexdef(i.indexrelid, k, true), ', ' ORDER BY k)
                       FROM generate_series(1, i.indnkeyatts) k) AS keys,
                    pg_get_expr(i.indpred, i.indrelid, true) AS pred
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
              WHERE i.indrelid = 'baton.deliveries'::regclass AND a.amname = 'btree' ORDER BY c.relname LOOP
    q := format('SELECT tenant, id FROM baton.deliveries %s ORDER BY %s',
                CASE WHEN idx.pred IS NULL THEN '' ELSE 'WHERE ' || idx.pred END, idx.keys);
    index_name := idx.relname;
    PERFORM dw.only('index');
    used_index := position(format('Index Scan using %s ', idx.relname) IN dw.plan(format('SELECT * FROM (%s) s', q))) > 0;
    by_index := dw.digest(q);
    PERFORM dw.only('seq');
    by_seq := dw.digest(q);
    RETURN NEXT;
  END LOOP;
END $$;

-- dx_brin against a sequential scan: for each of its columns, IS NULL, IS NOT NULL, and
-- for every value a row holds, =, >= and <= that value, each read by a bitmap scan of
-- dx_brin alone and by a sequential scan. A summary an update left unwidened (its row's
-- new value outside its page's range) makes the bitmap scan skip that page.
CREATE FUNCTION dw.brin_scans(OUT predicates int, OUT mismatched int, OUT used_brin boolean, OUT first_mismatch text)
LANGUAGE plpgsql AS $$
DECLARE
  col text;
  v text;
  pred text;
  preds text[] := '{}';
  a text;
  b text;
BEGIN
  FOREACH col IN ARRAY ARRAY['settled_at', 'lease_until'] LOOP
    preds := preds || format('%I IS NULL', col) || format('%I IS NOT NULL', col);
    FOR v IN EXECUTE format('SELECT DISTINCT %I::text FROM baton.deliveries WHERE %I IS NOT NULL ORDER BY 1', col, col) LOOP
      preds := preds || format('%I = %L', col, v) || format('%I >= %L', col, v) || format('%I <= %L', col, v);
    END LOOP;
  END LOOP;
  predicates := 0;
  mismatched := 0;
  PERFORM dw.only('bitmap');
  used_brin := position('Bitmap Index Scan on dx_brin' IN dw.plan('SELECT tenant, id FROM baton.deliveries WHERE settled_at IS NOT NULL')) > 0
           AND position('Bitmap Index Scan on dx_brin' IN dw.plan('SELECT tenant, id FROM baton.deliveries WHERE lease_until IS NOT NULL')) > 0;
  FOREACH pred IN ARRAY preds LOOP
    predicates := predicates + 1;
    PERFORM dw.only('bitmap');
    a := dw.digest('SELECT tenant, id FROM baton.deliveries WHERE ' || pred);
    PERFORM dw.only('seq');
    b := dw.digest('SELECT tenant, id FROM baton.deliveries WHERE ' || pred);
    IF a IS DISTINCT FROM b THEN
      mismatched := mismatched + 1;
      first_mismatch := coalesce(first_mismatch, format('%s: bitmap %s rows, seq %s rows', pred, split_part(a, ' ', 1), split_part(b, ' ', 1)));
    END IF;
  END LOOP;
END $$;

-- dx_brin's summaries (pageinspect): per summarized heap range (one page), per column,
-- its bounds; placeholders and all-NULL summaries have none.
CREATE FUNCTION dw.brin_summaries(OUT blknum bigint, OUT attnum int, OUT allnulls boolean, OUT placeholder boolean,
                                  OUT lo timestamptz, OUT hi timestamptz)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
  p int;
  r record;
BEGIN
  FOR p IN 0 .. pg_relation_size('baton.dx_brin') / current_setting('block_size')::int - 1 LOOP
    CONTINUE WHEN brin_page_type(get_raw_page('baton.dx_brin', p)) <> 'regular';
    FOR r IN SELECT * FROM brin_page_items(get_raw_page('baton.dx_brin', p), 'baton.dx_brin') LOOP
      blknum := r.blknum;
      attnum := r.attnum;
      allnulls := r.allnulls;
      placeholder := r.placeholder;
      lo := NULL;
      hi := NULL;
      IF r.value IS NOT NULL AND NOT r.allnulls THEN
        lo := split_part(btrim(r.value, '{}'), ' .. ', 1)::timestamptz;
        hi := split_part(btrim(r.value, '{}'), ' .. ', 2)::timestamptz;
      END IF;
      RETURN NEXT;
    END LOOP;
  END LOOP;
END $$;

-- The settled deliveries whose live version is a heap-only tuple (pageinspect: its
-- t_infomask2 has HEAP_ONLY_TUPLE, 0x8000): written by an update that changed
-- settled_at, a column of dx_brin, and stayed on its page (on 16 and later, a
-- summarizing update). summarized: those whose page's range dx_brin summarizes with
-- bounds that hold their settled_at (the update's entry widened them); the workload
-- summarized every range before it settled anything.
CREATE FUNCTION dw.hot_settled(OUT heap_only int, OUT summarized int) LANGUAGE sql AS $$
  WITH live AS (
    SELECT d.tenant, d.id, d.settled_at, (d.ctid::text::point)[0]::bigint AS blk, (d.ctid::text::point)[1]::int AS lp
      FROM baton.deliveries d WHERE d.settled_at IS NOT NULL),
  flags AS (
    SELECT l.*, (h.t_infomask2 & 32768) <> 0 AS hot
      FROM live l, LATERAL heap_page_items(get_raw_page('baton.deliveries', l.blk::int)) h
     WHERE h.lp = l.lp),
  summaries AS (SELECT * FROM dw.brin_summaries() WHERE attnum = 1 AND NOT placeholder)
  SELECT count(*) FILTER (WHERE hot)::int,
         count(*) FILTER (WHERE hot AND EXISTS (SELECT FROM summaries s WHERE s.blknum = f.blk
                                                  AND f.settled_at BETWEEN s.lo AND s.hi))::int
    FROM flags f $$;

-- Where a ready row says its delivery was written (row_tid, written by a direct
-- enqueue_batch): rows with one, and of those the ones whose delivery is there now
-- (the workload never updates a pending delivery in place before it is claimed).
CREATE FUNCTION dw.row_tids(OUT with_tid int, OUT at_delivery int) LANGUAGE sql AS $$
  SELECT count(*) FILTER (WHERE r.row_tid IS NOT NULL)::int,
         count(*) FILTER (WHERE r.row_tid IS NOT NULL AND d.ctid = r.row_tid)::int
    FROM baton.ready r LEFT JOIN baton.deliveries d ON d.tenant = r.tenant AND d.id = r.id $$;
