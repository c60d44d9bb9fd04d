-- One backend, many pg_baton calls: a mix of successes and caught errors, measured after
-- a thousand calls and after :total_calls calls (test/memory/run.sh; psql variables: tenant,
-- total_calls). Prints "MEM phase calls context_bytes rss_anon_bytes" after each phase:
-- context_bytes is the sum of pg_backend_memory_contexts.total_bytes, rss_anon_bytes
-- RssAnon from /proc/self/status of this backend.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SELECT set_config('mem.tenant', :'tenant', false) \gset

-- mem_cycle(k): one round of the delivery calls on a new item, successes and failures;
-- returns the number of pg_baton calls it made (every call is counted, failed or not).
--   enqueue, enqueue again (the same id), claim, renew, finish at a wrong generation
--   (DU001, caught), retry (pending again), claim, renew, finish, finish again (the
--   stored answer), renew of the settled row (DU007, caught), delivery, delivery of no
--   row (DU008, caught), enqueue with a payload that is not an object (22023, caught),
--   claim with a NULL target (22004, caught), retry at a stale generation (DU001, caught)
--   and 4 reads.
CREATE FUNCTION pg_temp.mem_cycle(k bigint) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    t uuid := current_setting('mem.tenant');
    id bigint;
    id2 bigint;
    g bigint;
    r record;
    calls int := 0;
    caught int := 0;
BEGIN
    id := baton.enqueue(t, 'mem', 'k' || k, '{"n": 1}');
    id2 := baton.enqueue(t, 'mem', 'k' || k, '{"n": 1}');
    calls := calls + 2;
    IF id IS DISTINCT FROM id2 THEN RAISE EXCEPTION 'enqueue is not idempotent'; END IF;
    SELECT c.id, c.generation INTO STRICT r FROM baton.claim(t, 'mem', '30 seconds') AS c;
    PERFORM baton.renew(t, r.id, r.generation, '1 minute');
    calls := calls + 2;
    BEGIN
        calls := calls + 1;
        PERFORM baton.finish(t, r.id, r.generation + 7);
    EXCEPTION WHEN sqlstate 'DU001' THEN caught := caught + 1;
    END;
    IF baton.retry(t, r.id, r.generation, 'again', '0 seconds') <> 'pending' THEN
        RAISE EXCEPTION 'retry did not give the item back';
    END IF;
    SELECT c.id, c.generation INTO STRICT r FROM baton.claim(t, 'mem', '30 seconds') AS c;
    g := r.generation;
    PERFORM baton.renew(t, r.id, g, '1 minute');
    PERFORM baton.finish(t, r.id, g, 'finished', '{"ok": true}');
    IF baton.finish(t, r.id, g) <> 'finished' THEN RAISE EXCEPTION 'finish repeat differs'; END IF;
    calls := calls + 5;
    BEGIN
        calls := calls + 1;
        PERFORM baton.renew(t, r.id, g, '1 minute');
    EXCEPTION WHEN sqlstate 'DU007' THEN caught := caught + 1;
    END;
    PERFORM baton.delivery(t, r.id);
    calls := calls + 1;
    BEGIN
        calls := calls + 1;
        PERFORM baton.delivery(t, -k);
    EXCEPTION WHEN sqlstate 'DU008' THEN caught := caught + 1;
    END;
    BEGIN
        calls := calls + 1;
        PERFORM baton.enqueue(t, 'mem', 'bad' || k, '"text"');
    EXCEPTION WHEN sqlstate '22023' THEN caught := caught + 1;
    END;
    BEGIN
        calls := calls + 1;
        PERFORM * FROM baton.claim(t, NULL, '1 minute');
    EXCEPTION WHEN sqlstate '22004' THEN caught := caught + 1;
    END;
    BEGIN
        calls := calls + 1;
        PERFORM baton.retry(t, r.id, g - 1, 'stale');
    EXCEPTION WHEN sqlstate 'DU001' THEN caught := caught + 1;
    END;
    PERFORM count(baton.delivery(t, r.id)) FROM generate_series(1, 4);
    calls := calls + 4;
    IF caught <> 6 THEN RAISE EXCEPTION 'expected 6 caught errors, got %', caught; END IF;
    RETURN calls;
END $$;

-- rounds(first, n): n rounds from item number first, a COMMIT every 50 rounds; the calls
-- made are added to mem.calls.
CREATE PROCEDURE pg_temp.rounds(first bigint, n bigint) LANGUAGE plpgsql AS $$
DECLARE
    calls bigint := current_setting('mem.calls')::bigint;
BEGIN
    FOR k IN first .. first + n - 1 LOOP
        calls := calls + pg_temp.mem_cycle(k);
        IF (k - first + 1) % 50 = 0 THEN
            PERFORM set_config('mem.calls', calls::text, false);
            COMMIT;
        END IF;
    END LOOP;
    PERFORM set_config('mem.calls', calls::text, false);
    COMMIT;
END $$;

SELECT set_config('mem.calls', '0', false) \gset
\set measure 'SELECT current_setting(''mem.calls'') AS calls, sum(total_bytes) AS ctx, (regexp_match(pg_read_file(''/proc/self/status''), ''RssAnon:\\s+(\\d+) kB''))[1]::bigint * 1024 AS rss FROM pg_backend_memory_contexts'

-- Phase 1: a thousand calls (50 rounds of 20 calls).
CALL pg_temp.rounds(1, 50);
:measure \gset
\echo MEM thousand :calls :ctx :rss

-- Phase 2: up to :total_calls calls in all, in statements of 500 rounds.
SELECT format('CALL pg_temp.rounds(%s, 500)', 51 + 500 * g)
  FROM generate_series(0, greatest(0, ceil((:total_calls - 1000) / 10000.0)::bigint - 1)) AS g \gexec
:measure \gset
\echo MEM million :calls :ctx :rss
