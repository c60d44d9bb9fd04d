-- The state a sweep pass calls pg_baton's functions against (test/sweep/sweep.sh): a tenant
-- of its own, deliveries held under long leases, a run acquired and started, a second run,
-- a step entry. Each value is kept in a psql variable that calls.sql writes into the calls,
-- so that they reach their code paths: the first call of a write changes something, and
-- most of the repeats that follow answer as repeats do (the same id, the status stored).
-- psql variables in: t (the tenant), wf (the workflow sweep_prepare defined).
\set ON_ERROR_STOP 1
SELECT baton.create_tenant(:'t');
SELECT baton.enqueue(:'t', 'sweep-pool', 'p1');
SELECT baton.enqueue(:'t', 'sweep-pool', 'p2');
SELECT baton.enqueue(:'t', 'sweep-pool', 'p3');
SELECT baton.enqueue(:'t', 'sweep', 'sweep-key');
-- One delivery per write that settles or moves it, each claimed for an hour.
SELECT baton.enqueue(:'t', 'sweep-renew', 'r');
SELECT id AS d_claimed, generation AS g_claimed FROM baton.claim(:'t', 'sweep-renew', '1 hour') \gset
SELECT baton.enqueue(:'t', 'sweep-finish', 'f');
SELECT id AS d_fin, generation AS g_fin FROM baton.claim(:'t', 'sweep-finish', '1 hour') \gset
SELECT baton.enqueue(:'t', 'sweep-batch', 'b');
SELECT id AS d_fb, generation AS g_fb FROM baton.claim(:'t', 'sweep-batch', '1 hour') \gset
SELECT baton.enqueue(:'t', 'sweep-retry', 'y', max_attempts => 100);
SELECT id AS d_retry, generation AS g_retry FROM baton.claim(:'t', 'sweep-retry', '1 hour') \gset
SELECT baton.enqueue(:'t', 'sweep-cancel', 'x') AS d_cancel \gset
-- A run acquired, its start stage started; a second run for the calls that end or take one.
SELECT baton.submit(:'t', :'wf', '{}', 'sweep-run') AS run \gset
SELECT baton.acquire_run(:'t', :'run', 'sweeper', '1 hour') AS rgen \gset
SELECT stage_id AS stage FROM baton.transition_stage(:'t', :'run', :rgen) \gset
SELECT baton.start_stage(:'t', :'run', :rgen, :stage) IS NOT NULL;
SELECT baton.submit(:'t', :'wf', '{}', 'sweep-run-b') AS run_b \gset
SELECT entry_id AS entry FROM baton.enter_step(:'t', 'sweep-subject', 'sweep-step', 'sweep-digest') \gset
