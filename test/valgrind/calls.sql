-- The calls that read and write baton.deliveries through direct heap and index access
-- (claim, finish, finish_batch) and their statements' fallback, in one single-user
-- backend under valgrind memcheck (test/valgrind/run.sh). psql-less: one statement a line.
CREATE EXTENSION IF NOT EXISTS pg_baton;
SELECT baton.create_tenant('00000000-0000-0000-0000-0000000000aa') WHERE NOT EXISTS (SELECT 1 FROM baton.tenants WHERE tenant = '00000000-0000-0000-0000-0000000000aa');
SELECT count(*) FROM (SELECT baton.enqueue('00000000-0000-0000-0000-0000000000aa', 'w', 'k' || g || '-' || txid_current(), jsonb_build_object('n', g, 'pad', repeat('x', g * 40)), '{}', NULL, g % 3) FROM generate_series(1, 60) g) e;
SELECT id, generation, dedup_key, payload FROM baton.claim('00000000-0000-0000-0000-0000000000aa', 'w', '1 minute');
SELECT count(*) FROM baton.claim('00000000-0000-0000-0000-0000000000aa', 'w', '1 minute', 5);
SELECT baton.finish('00000000-0000-0000-0000-0000000000aa', d.id, d.generation, 'finished', '{"r": 1}') FROM baton.deliveries d WHERE d.status = 'claimed' ORDER BY d.id LIMIT 1;
SELECT count(*) FROM baton.finish_batch('00000000-0000-0000-0000-0000000000aa', (SELECT array_agg(id) FROM baton.deliveries WHERE status = 'claimed'), (SELECT array_agg(generation) FROM baton.deliveries WHERE status = 'claimed'), 'failed');
SELECT count(*) FROM baton.finish_batch('00000000-0000-0000-0000-0000000000aa', ARRAY[1, 2, 999999], ARRAY[1, 5, 1]);
SELECT count(*) FROM baton.claim('00000000-0000-0000-0000-0000000000aa', 'w', '1 minute', 20);
SELECT count(*) FROM baton.claim('00000000-0000-0000-0000-0000000000aa', 'w', '1 minute', 20, '{"x": 1}');
SELECT count(*) FROM (SELECT baton.finish('00000000-0000-0000-0000-0000000000aa', d.id, d.generation) FROM baton.deliveries d WHERE d.status = 'claimed') f;
SELECT count(*), status FROM baton.deliveries GROUP BY status ORDER BY 2;
