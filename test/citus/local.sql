-- The workload of test/citus/local.sh: one tenant's calls on the worker that holds its
-- shards, each a statement and a transaction of its own, with baton.direct_access as
-- psql variable `direct` says (on: served from the worker's shards as one server; off:
-- every statement through Citus' planner). Tenant :'t'. Each step prints
-- `kind|fired|label|answer`: kind direct for the calls that have the direct path (a
-- claim, a finish, a batch of finishes), sql for the others (an enqueue_batch's insert
-- is Citus' statement on a distributed install);
-- fired, the fence trigger's calls in the step's transaction (the statements fire it
-- on the shards for every delivery row they write, the direct path never does). Ids
-- are shown past the first one this run took (:base), times relative to now().
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET track_functions = 'all';
SET baton.direct_access = :'direct';
-- The session's own functions (pg_temp) stay on this node.
SET citus.enable_ddl_propagation = off;
\pset format unaligned
\pset tuples_only on
\pset null '(null)'

CREATE FUNCTION pg_temp.fired() RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions
   WHERE schemaname = 'baton' AND funcname = 'fence_row' $$;
CREATE FUNCTION pg_temp.step(kind text, label text, q text, OUT step_kind text, OUT fired bigint,
                             OUT step_label text, OUT answer text)
LANGUAGE plpgsql AS $$
DECLARE
  before bigint := pg_temp.fired();
BEGIN
  step_kind := kind;
  step_label := label;
  BEGIN
    EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r', q) INTO answer;
  EXCEPTION WHEN OTHERS THEN
    answer := 'error ' || SQLSTATE || ': ' || SQLERRM;
  END;
  fired := pg_temp.fired() - before;
END $$;
CREATE FUNCTION pg_temp.items(tgt text, prefix text, n int, first int DEFAULT 1) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_object('target', tgt, 'dedup_key', prefix || g, 'payload', jsonb_build_object('n', g),
                                      'priority', CASE WHEN g % 5 = 0 THEN 2 ELSE 0 END,
                                      'max_attempts', CASE WHEN g % 7 = 0 THEN 1 ELSE 3 END) ORDER BY g)
    FROM generate_series(first, first + n - 1) g $$;

SELECT baton.enqueue(:'t', 'q', 's0', '{"n": "s0"}') - 1 AS base \gset
\set B :base
-- The tenant's claimed deliveries of target q, in id order: what the steps finish.
CREATE FUNCTION pg_temp.held(t uuid) RETURNS TABLE(id bigint, generation bigint) LANGUAGE sql AS $$
  SELECT id, generation FROM baton.deliveries WHERE tenant = t AND target = 'q' AND status = 'claimed' ORDER BY id $$;

SELECT * FROM pg_temp.step('sql', 'enqueue q: s1, s2 priority 5, s3 due long ago, s4 one attempt', format($q$
  SELECT baton.enqueue(%1$L::uuid, 'q', 's1', '{"n": "s1"}') - %2$s,
         baton.enqueue(%1$L::uuid, 'q', 's2', '{"n": "s2"}', priority => 5) - %2$s,
         baton.enqueue(%1$L::uuid, 'q', 's3', '{"n": "s3"}', run_after => '2000-01-01 00:00:00+00') - %2$s,
         baton.enqueue(%1$L::uuid, 'q', 's4', '{"n": "s4"}', max_attempts => 1) - %2$s $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'enqueue_batch q: q1..q30', format($q$
  SELECT id - %2$s, inserted FROM baton.enqueue_batch(%1$L::uuid, pg_temp.items('q', 'q', 30)) $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'enqueue_batch q: q29 q30 again, q31 q32 new', format($q$
  SELECT id - %2$s, inserted FROM baton.enqueue_batch(%1$L::uuid, pg_temp.items('q', 'q', 4, 29)) $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'enqueue_batch r: r1..r8', format($q$
  SELECT id - %2$s, inserted FROM baton.enqueue_batch(%1$L::uuid, pg_temp.items('r', 'r', 8)) $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'enqueue_batch q: q33 new, q1 with another payload', format($q$
  SELECT id - %2$s, inserted FROM baton.enqueue_batch(%1$L::uuid,
    pg_temp.items('q', 'q', 1, 33) || '[{"target": "q", "dedup_key": "q1", "payload": {"other": 1}}]') $q$, :'t', :B));

SELECT * FROM pg_temp.step('direct', 'claim q: the priority 5 one', format($q$
  SELECT id - %2$s, dedup_key, generation, attempt, payload FROM baton.claim(%1$L::uuid, 'q', '1 hour') $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'claim q 6', format($q$
  SELECT id - %2$s, dedup_key, generation, attempt FROM baton.claim(%1$L::uuid, 'q', '1 hour', 6) $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'finish the first held with a result', format($q$
  SELECT baton.finish(%1$L::uuid, id, generation, result => '{"ok": true}') FROM pg_temp.held(%1$L) LIMIT 1 $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'finish the priority 5 one (s2) at generation 1', format($q$
  SELECT baton.finish(%1$L::uuid, %2$s + 3, 1) $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'finish the first held with a stale generation: refused', format($q$
  SELECT baton.finish(%1$L::uuid, id, generation - 1) FROM pg_temp.held(%1$L) LIMIT 1 $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'finish_batch the held but the first two, and a stale pair', format($q$
  SELECT id - %2$s, status FROM baton.finish_batch(%1$L::uuid,
    ARRAY(SELECT id FROM pg_temp.held(%1$L) OFFSET 2) || ARRAY[%2$s + 3],
    ARRAY(SELECT generation FROM pg_temp.held(%1$L) OFFSET 2) || ARRAY[0]::bigint[]) $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'renew the first held', format($q$
  SELECT baton.renew(%1$L::uuid, id, generation, '2 hours') - now() > '1 hour' FROM pg_temp.held(%1$L) LIMIT 1 $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'retry the first held, due now', format($q$
  SELECT baton.retry(%1$L::uuid, id, generation, 'again', '0 seconds') FROM pg_temp.held(%1$L) LIMIT 1 $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'claim q 3: the retried first', format($q$
  SELECT id - %2$s, dedup_key, generation, attempt FROM baton.claim(%1$L::uuid, 'q', '1 hour', 3) $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'cancel a pending one, and a held one', format($q$
  SELECT baton.cancel_delivery(%1$L::uuid, %2$s + 6), baton.cancel_delivery(%1$L::uuid, (SELECT max(id) FROM pg_temp.held(%1$L))) $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'redrive the pending one cancelled', format($q$
  SELECT baton.redrive(%1$L::uuid, 'q', ARRAY[%2$s + 6]) $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'quiesce the tenant', format($q$
  SELECT baton.set_tenant_state(%1$L::uuid, 'quiescing') $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'claim while quiescing: refused', format($q$
  SELECT id FROM baton.claim(%1$L::uuid, 'q', '1 hour') $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'finish while quiescing: refused', format($q$
  SELECT baton.finish(%1$L::uuid, id, generation) FROM pg_temp.held(%1$L) LIMIT 1 $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'active again', format($q$
  SELECT baton.set_tenant_state(%1$L::uuid, 'active') $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'finish_batch the held', format($q$
  SELECT id - %2$s, status FROM baton.finish_batch(%1$L::uuid, ARRAY(SELECT id FROM pg_temp.held(%1$L)),
                                                  ARRAY(SELECT generation FROM pg_temp.held(%1$L))) $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'claim r 5 and finish them in the same statement', format($q$
  SELECT c.id - %2$s, baton.finish(%1$L::uuid, c.id, c.generation) FROM baton.claim(%1$L::uuid, 'r', '1 hour', 5) c $q$, :'t', :B));
SELECT * FROM pg_temp.step('sql', 'claim q with expected: nothing bound', format($q$
  SELECT id FROM baton.claim(%1$L::uuid, 'q', '1 hour', 1, '{"user": "u1"}') $q$, :'t', :B));
SELECT * FROM pg_temp.step('direct', 'claim q 50: the rest', format($q$
  SELECT count(*), min(generation), max(attempt) FROM baton.claim(%1$L::uuid, 'q', '1 hour', 50) $q$, :'t', :B));
