-- bench/fair.sh, the noisy tenant's producer: tops tenant 1's pending deliveries of
-- target :target up to :depth (pgbench -R paces it).
SELECT count(*) FROM baton.enqueue_batch(bench_tenant(1),
    coalesce((SELECT jsonb_agg(jsonb_build_object('target', :target::text, 'dedup_key', 'n' || nextval('bench_keys')))
                FROM generate_series(1, :depth - (SELECT count(*) FROM (SELECT FROM baton.ready r
                                                   WHERE r.target = :target AND r.tenant = bench_tenant(1)
                                                   LIMIT :depth) x))), '[]'));
