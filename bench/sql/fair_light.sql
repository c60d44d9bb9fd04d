-- bench/fair.sh, the light tenants' producer: each transaction enqueues :n deliveries,
-- one each to the next :n light tenants (2 .. :tenants) in turn, so that every light
-- tenant gets one every (:tenants - 1) / rate seconds. pgbench -R paces it; -D s=0
-- (the ticks so far).
\set s :s + 1
SELECT count(baton.enqueue(bench_tenant(2 + (:s::bigint * :n + j) % (:tenants - 1)), :target::text,
                           'l' || (:s::bigint * :n + j)::text))
  FROM generate_series(0, :n - 1) j;
