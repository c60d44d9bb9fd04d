-- Backend memory against the number of pg_baton calls, in ONE session. psql variables:
-- tenant, reads (baton.delivery calls in the long phase), fails (failing baton.finish
-- calls, caught), cycles_n (successful claim + finish pairs). Needs a fresh pg_baton with
-- the tenant and at least cycles + 100 pending deliveries of target 'bench'.
-- Prints "MEM phase calls context_bytes rss_anon_bytes" after each phase: context_bytes is
-- the sum of pg_backend_memory_contexts.total_bytes, rss_anon_bytes RssAnon from
-- /proc/self/status of the backend.
\set ON_ERROR_STOP on
SELECT set_config('bench.tenant', :'tenant', false) \gset
SELECT id AS did FROM baton.deliveries ORDER BY id DESC LIMIT 1 \gset
SELECT set_config('bench.did', :'did', false) \gset

-- failing(n): n failing baton.finish calls, each caught in its own subtransaction;
-- half lose the lease (DU001: a pending row at a wrong generation), half name no
-- delivery (DU008).
-- cycles(n): n successful claim + finish pairs, a COMMIT every 100.
\set failing 'DO $$ DECLARE t uuid := current_setting(''bench.tenant''); d bigint := current_setting(''bench.did''); BEGIN FOR i IN 1 .. current_setting(''bench.n'')::int LOOP BEGIN IF i % 2 = 0 THEN PERFORM baton.finish(t, d, -1); ELSE PERFORM baton.finish(t, -i, 1); END IF; RAISE EXCEPTION ''finish did not fail''; EXCEPTION WHEN sqlstate ''DU001'' OR sqlstate ''DU008'' THEN NULL; END; END LOOP; END $$'
\set cycles 'DO $$ DECLARE t uuid := current_setting(''bench.tenant''); r record; BEGIN FOR i IN 1 .. current_setting(''bench.n'')::int LOOP SELECT c.id, c.generation INTO STRICT r FROM baton.claim(t, ''bench'', ''30 seconds'') AS c; PERFORM baton.finish(t, r.id, r.generation); IF i % 100 = 0 THEN COMMIT; END IF; END LOOP; END $$'
\set measure 'SELECT sum(total_bytes) AS ctx, (regexp_match(pg_read_file(''/proc/self/status''), ''RssAnon:\\s+(\\d+) kB''))[1]::bigint * 1024 AS rss FROM pg_backend_memory_contexts'

-- Phase 1: a thousand calls (1,000 reads; 100 failing finishes; 100 claim + finish).
SELECT count(baton.delivery(:'tenant', :did)) AS n FROM generate_series(1, 1000) \gset
SELECT set_config('bench.n', '100', false) \gset
:failing;
:cycles;
:measure \gset
\echo MEM thousand 1200 :ctx :rss

-- Phase 2: about a million calls more (reads in statements of 10,000 calls).
SELECT format('SELECT count(baton.delivery(%L, %s)) AS n FROM generate_series(1, 10000)', :'tenant', :did)
  FROM generate_series(1, :reads / 10000) \gexec
SELECT set_config('bench.n', '10000', false) \gset
SELECT :'failing' FROM generate_series(1, :fails / 10000) \gexec
SELECT set_config('bench.n', :'cycles_n', false) \gset
:cycles;
:measure \gset
SELECT :reads + :fails + 2 * :cycles_n AS total \gset
\echo MEM million :total :ctx :rss
