-- Step entries and at-most-once markers: every rule of "Step entries and at-most-once
-- markers" in docs/internals/contract.md, its Precise readings, and "Step entries and markers" in
-- docs/internals/choices.md, including markers_in_doubt and resolve_marker. Every refusal shows
-- its SQLSTATE; refusals whose message names an id (not stable across runs) are shown
-- with VERBOSITY sqlstate. Ids and run uuids are never printed: they are compared.
\set SHOW_CONTEXT never
\set VERBOSITY default
\set a  00000000-0000-0000-0009-000000000001
\set b  00000000-0000-0000-0009-000000000002
\set c  00000000-0000-0000-0009-000000000003
\set tu 00000000-0000-0000-0009-0000000000ff
\set ru 00000000-0000-0000-0009-0000000000aa
SELECT baton.create_tenant(:'a');
SELECT baton.create_tenant(:'b');
SELECT baton.create_tenant(:'c');

-- One workflow: a single stage "charge" that finishes the run.
SELECT baton.define_workflow('mk_pay', '{"start": "charge", "stages": {"charge": {"next": ["@finish"]}}}');

-- Every marker of this file's tenants, as text (to show "nothing changed").
CREATE TEMP VIEW mk_markers AS
SELECT m.tenant, m.entry_id, m."position", m.state, m.kind, m.operation_id, m.error,
       m.generation, m::text AS row_text, m.xmin::text AS row_xmin
  FROM baton.markers m
 WHERE m.tenant IN ('00000000-0000-0000-0009-000000000001', '00000000-0000-0000-0009-000000000002',
                    '00000000-0000-0000-0009-000000000003');
CREATE TEMP VIEW mk_digest AS
SELECT (SELECT count(*) FROM mk_markers) AS markers,
       (SELECT count(*) FROM baton.step_entries e
         WHERE e.tenant IN ('00000000-0000-0000-0009-000000000001', '00000000-0000-0000-0009-000000000002',
                            '00000000-0000-0000-0009-000000000003')) AS entries,
       md5(concat_ws('|',
         (SELECT string_agg(row_text || row_xmin, ',' ORDER BY tenant, entry_id, "position") FROM mk_markers),
         (SELECT string_agg(e::text || e.xmin::text, ',' ORDER BY e.tenant, e.id) FROM baton.step_entries e
           WHERE e.tenant IN ('00000000-0000-0000-0009-000000000001', '00000000-0000-0000-0009-000000000002',
                              '00000000-0000-0000-0009-000000000003')))) AS h;

-- ---------------------------------------------------------------------------
-- enter_step numbers the entries of (tenant, subject, step) from 1.
-- ---------------------------------------------------------------------------
SELECT entry_id AS e1, entry_seq FROM baton.enter_step(:'a', 'user:1', 'onboard', 'd1') \gset
SELECT :entry_seq AS first_seq;
SELECT entry_id AS e2, entry_seq FROM baton.enter_step(:'a', 'user:1', 'onboard', 'd2') \gset
SELECT :entry_seq AS second_seq, :e2 > :e1 AS new_id;
-- the same digest again is another entry (the digest is recorded, not a dedup key)
SELECT entry_id AS e3, entry_seq FROM baton.enter_step(:'a', 'user:1', 'onboard', 'd2') \gset
SELECT :entry_seq AS third_seq, :e3 NOT IN (:e1, :e2) AS new_id;
-- per step, per subject, per tenant: each pair counts on its own
SELECT entry_seq AS other_step_seq FROM baton.enter_step(:'a', 'user:1', 'verify', 'd1');
SELECT entry_seq AS other_subject_seq FROM baton.enter_step(:'a', 'user:2', 'onboard', 'd1');
SELECT entry_id AS eb, entry_seq AS other_tenant_seq FROM baton.enter_step(:'b', 'user:1', 'onboard', 'd1') \gset
SELECT :other_tenant_seq AS other_tenant_seq;
SELECT entry_seq AS fourth_seq FROM baton.enter_step(:'a', 'user:1', 'onboard', 'd4');
SELECT entry_seq AS verify_second FROM baton.enter_step(:'a', 'user:1', 'verify', 'd2');
-- subject and step are case- and byte-exact
SELECT entry_seq AS upper_subject_seq FROM baton.enter_step(:'a', 'USER:1', 'onboard', 'd1');
SELECT e.subject, e.step, e.entry_seq, e.digest, e.tenant = :'a' AS in_a
  FROM baton.step_entries e WHERE e.tenant IN (:'a', :'b') ORDER BY e.id;
-- an entry in a transaction that rolls back is not counted: the next one takes its number
BEGIN;
SELECT entry_seq AS rolled_back_seq FROM baton.enter_step(:'a', 'user:1', 'onboard', 'd5');
ROLLBACK;
SELECT entry_seq AS after_rollback_seq FROM baton.enter_step(:'a', 'user:1', 'onboard', 'd5');
-- a refused entry is not counted either
SELECT * FROM baton.enter_step(:'a', 'user:1', 'onboard', '');
\echo :LAST_ERROR_SQLSTATE
SELECT entry_seq AS after_refusal_seq FROM baton.enter_step(:'a', 'user:1', 'onboard', 'd6');
SELECT e.entry_seq, e.digest FROM baton.step_entries e
 WHERE e.tenant = :'a' AND e.subject = 'user:1' AND e.step = 'onboard' ORDER BY e.entry_seq;

-- ---------------------------------------------------------------------------
-- Entry ids and stage ids come from one sequence: they never collide, and a stage's
-- id is a valid entry_id.
-- ---------------------------------------------------------------------------
SELECT baton.submit(:'a', 'mk_pay', '{"amount": 42}', 'ids') AS r_ids \gset
SELECT baton.acquire_run(:'a', :'r_ids', 'w0', '1 hour') AS g_ids \gset
SELECT entry_id AS before_stage FROM baton.enter_step(:'a', 'ids', 'probe', 'x') \gset
SELECT stage_id AS s_ids, stage FROM baton.transition_stage(:'a', :'r_ids', :g_ids) \gset
SELECT entry_id AS after_stage FROM baton.enter_step(:'a', 'ids', 'probe', 'x') \gset
SELECT :'stage' AS stage, :before_stage < :s_ids AS entry_then_stage, :s_ids < :after_stage AS stage_then_entry;
SELECT count(*) AS colliding_ids
  FROM baton.stages s JOIN baton.step_entries e ON e.tenant = s.tenant AND e.id = s.id;
SELECT count(*) AS colliding_ids_any_tenant
  FROM baton.stages s JOIN baton.step_entries e ON e.id = s.id;
-- the stage's id works as entry_id
SELECT baton.claim_marker(:'a', :s_ids, 0, 'probe') AS stage_claim;
SELECT state, kind, operation_id, error, claimed_at <= now() AS claimed, completed_at
  FROM baton.marker(:'a', :s_ids, 0);
SELECT m.run_id = :'r_ids' AS records_run, m.generation = :g_ids AS records_generation
  FROM baton.markers m WHERE m.tenant = :'a' AND m.entry_id = :s_ids;
-- a step entry's marker has no run
SELECT baton.claim_marker(:'a', :before_stage, 0, 'probe') AS entry_claim;
SELECT m.run_id IS NULL AS no_run, m.generation IS NULL AS no_generation
  FROM baton.markers m WHERE m.tenant = :'a' AND m.entry_id = :before_stage;

-- ---------------------------------------------------------------------------
-- claim_marker: true from absent, false when any row exists; marker().
-- ---------------------------------------------------------------------------
-- never claimed: zero rows
SELECT count(*) AS never_claimed FROM baton.marker(:'a', :e1, 0);
SELECT baton.claim_marker(:'a', :e1, 0, 'email', 'welcome-1') AS first_claim;
SELECT state, kind, operation_id, error, claimed_at <= now() AS claimed, completed_at
  FROM baton.marker(:'a', :e1, 0);
SELECT row_text AS m0_row, row_xmin AS m0_xmin FROM mk_markers WHERE entry_id = :e1 AND "position" = 0 \gset
-- a second claim, with the same or other labels: false, and the marker is untouched
SELECT baton.claim_marker(:'a', :e1, 0, 'email', 'welcome-1') AS second_claim;
SELECT baton.claim_marker(:'a', :e1, 0, 'sms', 'other-op') AS third_claim;
SELECT baton.claim_marker(:'a', :e1, 0, 'email') AS fourth_claim;
SELECT row_text = :'m0_row' AS row_unchanged, row_xmin = :'m0_xmin' AS not_rewritten
  FROM mk_markers WHERE entry_id = :e1 AND "position" = 0;
-- each position is its own marker; operation_id may be omitted (NULL)
SELECT baton.claim_marker(:'a', :e1, 1, 'email') AS position_1_claim;
SELECT state, kind, operation_id FROM baton.marker(:'a', :e1, 1);
SELECT baton.claim_marker(:'a', :e1, 2, 'email', NULL) AS position_2_claim;
SELECT count(*) AS unclaimed_position FROM baton.marker(:'a', :e1, 3);
-- each entry is its own marker space
SELECT baton.claim_marker(:'a', :e2, 0, 'email') AS other_entry_claim;
-- another tenant neither sees nor shares the marker
SELECT count(*) AS seen_by_b FROM baton.marker(:'b', :e1, 0);
SELECT baton.claim_marker(:'b', :eb, 0, 'email') AS tenant_b_claim;
SELECT count(*) AS a_markers_unchanged FROM mk_markers WHERE tenant = :'a' AND entry_id = :e1;

-- false once done, and once failed
SELECT baton.complete_marker(:'a', :e1, 1, 'done') AS completed;
SELECT baton.claim_marker(:'a', :e1, 1, 'email') AS claim_done;
SELECT baton.complete_marker(:'a', :e1, 2, 'failed', 'smtp 550') AS completed;
SELECT baton.claim_marker(:'a', :e1, 2, 'email') AS claim_failed;
SELECT "position", state, error FROM mk_markers WHERE entry_id = :e1 ORDER BY "position";

-- unknown entry: DU008 (a made-up id; another tenant's entry; another tenant's stage)
\set VERBOSITY sqlstate
SELECT baton.claim_marker(:'a', 9000000000000000000, 0, 'email');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', :eb, 5, 'email');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'b', :e1, 5, 'email');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'b', :s_ids, 5, 'email');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT count(*) AS no_marker_written FROM mk_markers WHERE "position" = 5;

-- ---------------------------------------------------------------------------
-- complete_marker: done/failed once; never creates a row.
-- ---------------------------------------------------------------------------
SELECT entry_id AS ec FROM baton.enter_step(:'a', 'order:7', 'ship', 'dc') \gset
SELECT baton.claim_marker(:'a', :ec, 0, 'label', 'label-7') AS claimed;
SELECT baton.complete_marker(:'a', :ec, 0, 'done') AS first_complete;
SELECT state, error, kind, operation_id, completed_at >= claimed_at AS completed
  FROM baton.marker(:'a', :ec, 0);
SELECT completed_at::text AS ec_done_at FROM baton.marker(:'a', :ec, 0) \gset
SELECT row_text AS ec_row, row_xmin AS ec_xmin FROM mk_markers WHERE entry_id = :ec \gset
SELECT pg_sleep(0.01);
-- again, as done or as failed: false, and nothing changed
SELECT baton.complete_marker(:'a', :ec, 0, 'done') AS again_done;
SELECT baton.complete_marker(:'a', :ec, 0, 'failed', 'late report') AS again_failed;
SELECT state, error, completed_at::text = :'ec_done_at' AS completed_at_unchanged FROM baton.marker(:'a', :ec, 0);
SELECT row_text = :'ec_row' AS row_unchanged, row_xmin = :'ec_xmin' AS not_rewritten
  FROM mk_markers WHERE entry_id = :ec;
-- failed, with an error; then again: false
SELECT baton.claim_marker(:'a', :ec, 1, 'label') AS claimed;
SELECT baton.complete_marker(:'a', :ec, 1, 'failed', 'carrier down') AS failed_complete;
SELECT state, error, completed_at IS NOT NULL AS completed FROM baton.marker(:'a', :ec, 1);
SELECT completed_at::text AS ec1_at FROM baton.marker(:'a', :ec, 1) \gset
SELECT pg_sleep(0.01);
SELECT baton.complete_marker(:'a', :ec, 1, 'done') AS again_done;
SELECT state, error, completed_at::text = :'ec1_at' AS completed_at_unchanged FROM baton.marker(:'a', :ec, 1);
-- an absent marker: false, and no row is created
SELECT baton.complete_marker(:'a', :ec, 2, 'done') AS absent_done;
SELECT baton.complete_marker(:'a', :ec, 2, 'failed', 'x') AS absent_failed;
SELECT count(*) AS absent_rows FROM baton.marker(:'a', :ec, 2);
SELECT count(*) AS absent_table_rows FROM mk_markers WHERE entry_id = :ec AND "position" = 2;
-- ... also on an unknown entry, and on another tenant's marker
SELECT baton.complete_marker(:'a', 9000000000000000000, 0, 'done') AS unknown_entry;
SELECT baton.complete_marker(:'b', :ec, 0, 'failed') AS other_tenant;
SELECT state FROM baton.marker(:'a', :ec, 0);
-- an error of exactly 65536 bytes is accepted
SELECT baton.claim_marker(:'a', :ec, 3, 'label') AS claimed;
SELECT baton.complete_marker(:'a', :ec, 3, 'failed', repeat('x', 65536)) AS long_error;
SELECT state, octet_length(error) AS error_bytes FROM baton.marker(:'a', :ec, 3);

-- ---------------------------------------------------------------------------
-- Transactions: the action's own writes and complete_marker commit or roll back together.
-- ---------------------------------------------------------------------------
CREATE TABLE mk_effects (op text PRIMARY KEY, note text);
SELECT entry_id AS et FROM baton.enter_step(:'a', 'invoice:9', 'book', 'dt') \gset
SELECT baton.claim_marker(:'a', :et, 0, 'ledger', 'book-9') AS claimed;
-- the action and its completion roll back together: the marker stays in_progress
BEGIN;
INSERT INTO mk_effects VALUES ('book-9', 'first try');
SELECT baton.complete_marker(:'a', :et, 0, 'done') AS completed_in_txn;
SELECT state FROM baton.marker(:'a', :et, 0);
ROLLBACK;
SELECT state, completed_at FROM baton.marker(:'a', :et, 0);
SELECT count(*) AS effects FROM mk_effects;
-- ... and commit together: the effect and done
BEGIN;
INSERT INTO mk_effects VALUES ('book-9', 'second try');
SELECT baton.complete_marker(:'a', :et, 0, 'done') AS completed_in_txn;
COMMIT;
SELECT state, completed_at IS NOT NULL AS completed FROM baton.marker(:'a', :et, 0);
SELECT op, note FROM mk_effects;
-- a claim that rolls back leaves no marker: it can be claimed again
BEGIN;
SELECT baton.claim_marker(:'a', :et, 1, 'ledger', 'book-9b') AS claimed_in_txn;
SELECT state FROM baton.marker(:'a', :et, 1);
ROLLBACK;
SELECT count(*) AS after_rollback FROM baton.marker(:'a', :et, 1);
SELECT baton.claim_marker(:'a', :et, 1, 'ledger', 'book-9b') AS claimed_again;
SELECT baton.claim_marker(:'a', :et, 1, 'ledger', 'book-9b') AS and_only_once;
-- a claim, the action and the completion in one transaction: exactly once
BEGIN;
SELECT baton.claim_marker(:'a', :et, 2, 'ledger', 'book-9c') AS claimed;
INSERT INTO mk_effects VALUES ('book-9c', 'one transaction');
SELECT baton.complete_marker(:'a', :et, 2, 'done') AS completed;
COMMIT;
BEGIN;
SELECT baton.claim_marker(:'a', :et, 2, 'ledger', 'book-9c') AS claimed_again;
ROLLBACK;
SELECT op, note FROM mk_effects ORDER BY op;
SELECT "position", state, operation_id FROM mk_markers WHERE entry_id = :et ORDER BY "position";

-- ---------------------------------------------------------------------------
-- In doubt: a stage's marker claimed under generation 1, then the run is taken over.
-- ---------------------------------------------------------------------------
-- Run r1: owner A holds generation 1; stage charge is running.
SELECT baton.submit(:'a', 'mk_pay', '{"amount": 100}', 'r1') AS r1 \gset
SELECT baton.acquire_run(:'a', :'r1', 'A', '1 hour') AS g1 \gset
SELECT :g1 AS g1;
SELECT stage_id AS s1, stage, entry_seq FROM baton.transition_stage(:'a', :'r1', :g1) \gset
SELECT :'stage' AS stage, :entry_seq AS entry_seq;
SELECT baton.start_stage(:'a', :'r1', :g1, :s1) AS inputs;
-- four actions under generation 1: 0, 1, 2 and 3 left in progress, 4 completed
SELECT baton.claim_marker(:'a', :s1, 0, 'payment', 'pay-100') AS claim_0;
SELECT baton.claim_marker(:'a', :s1, 1, 'email', 'receipt-100') AS claim_1;
SELECT baton.claim_marker(:'a', :s1, 2, 'webhook', 'notify-100') AS claim_2;
SELECT baton.claim_marker(:'a', :s1, 3, 'payment', 'refund-100') AS claim_3;
SELECT baton.claim_marker(:'a', :s1, 4, 'audit') AS claim_4;
SELECT baton.complete_marker(:'a', :s1, 4, 'done') AS complete_4;
-- nothing is in doubt while the generation that claimed them holds the run
SELECT count(*) AS in_doubt_before FROM baton.markers_in_doubt(:'a', :'r1');
-- resolving a marker claimed under the current generation: DU007
SELECT baton.resolve_marker(:'a', :s1, 0, :g1, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT state FROM baton.marker(:'a', :s1, 0);
-- A re-acquires its own run (a restarted A): a new generation
SELECT baton.acquire_run(:'a', :'r1', 'A', '1 hour') AS g2 \gset
SELECT :g2 AS g2, :g2 > :g1 AS newer;
-- the current stage is the same stage, still running
SELECT kind, stage_id = :s1 AS same_stage, stage, entry_seq FROM baton.transition_stage(:'a', :'r1', :g2);
-- a marker claimed under the new generation: not in doubt
SELECT baton.claim_marker(:'a', :s1, 5, 'email', 'late-100') AS claim_5;
-- in doubt: 0, 1, 2, 3 (in progress under generation 1); not 4 (done), not 5 (current)
SELECT entry_id = :s1 AS this_stage, "position", stage, kind, operation_id, generation,
       claimed_at <= now() AS claimed
  FROM baton.markers_in_doubt(:'a', :'r1');
-- the old generation may not resolve: DU001, nothing changed
SELECT baton.resolve_marker(:'a', :s1, 0, :g1, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 0, :g2 + 1, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT state FROM baton.marker(:'a', :s1, 0);
-- the current generation resolves: done
SELECT baton.resolve_marker(:'a', :s1, 0, :g2, 'done');
SELECT state, error, completed_at IS NOT NULL AS completed FROM baton.marker(:'a', :s1, 0);
-- failed
SELECT baton.resolve_marker(:'a', :s1, 1, :g2, 'failed');
SELECT state, error, completed_at IS NOT NULL AS completed FROM baton.marker(:'a', :s1, 1);
-- retry: the action did not happen; one later claim may take it again
SELECT baton.resolve_marker(:'a', :s1, 2, :g2, 'retry');
SELECT state, completed_at FROM baton.marker(:'a', :s1, 2);
SELECT "position", operation_id FROM baton.markers_in_doubt(:'a', :'r1');
-- a marker resolved as retry is neither in progress nor terminal: complete_marker writes nothing
SELECT baton.complete_marker(:'a', :s1, 2, 'done') AS complete_retry;
SELECT state FROM baton.marker(:'a', :s1, 2);
-- nor can it be resolved again: DU007
SELECT baton.resolve_marker(:'a', :s1, 2, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT state FROM baton.marker(:'a', :s1, 2);
SELECT baton.claim_marker(:'a', :s1, 2, 'webhook', 'notify-100') AS reclaim;
SELECT baton.claim_marker(:'a', :s1, 2, 'webhook', 'notify-100') AS reclaim_again;
SELECT state, kind, operation_id, completed_at FROM baton.marker(:'a', :s1, 2);
SELECT m.generation = :g2 AS under_new_generation FROM baton.markers m
 WHERE m.tenant = :'a' AND m.entry_id = :s1 AND m."position" = 2;
-- resolved markers are no longer in doubt; only 3 remains
SELECT "position", operation_id, generation FROM baton.markers_in_doubt(:'a', :'r1');
-- not in doubt: done (resolved or completed), failed, in progress under the current
-- generation (reclaimed, or claimed after the takeover): DU007
SELECT baton.resolve_marker(:'a', :s1, 0, :g2, 'retry');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 1, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 2, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 4, :g2, 'retry');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 5, :g2, 'failed');
\echo :LAST_ERROR_SQLSTATE
-- a marker of an entry made by enter_step has no run: DU007
SELECT baton.resolve_marker(:'a', :e1, 0, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT state FROM baton.marker(:'a', :e1, 0);
-- an unknown marker: DU008 (never claimed; unknown entry; another tenant's marker)
SELECT baton.resolve_marker(:'a', :s1, 9, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', 9000000000000000000, 0, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'b', :s1, 3, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS marker_9 FROM baton.marker(:'a', :s1, 9);
SELECT state, kind, operation_id FROM baton.marker(:'a', :s1, 3);
-- complete_marker takes no generation: the superseded owner may still report the truth
SELECT baton.complete_marker(:'a', :s1, 3, 'failed', 'declined by provider') AS old_owner_reports;
SELECT state, error FROM baton.marker(:'a', :s1, 3);
SELECT count(*) AS in_doubt_after FROM baton.markers_in_doubt(:'a', :'r1');
-- a second takeover: the reclaimed marker 2 and marker 5 (both under g2) are in doubt now
SELECT baton.acquire_run(:'a', :'r1', 'A', '1 hour') AS g3 \gset
SELECT "position", kind, operation_id, generation = :g2 AS claimed_under_g2
  FROM baton.markers_in_doubt(:'a', :'r1');
SELECT baton.resolve_marker(:'a', :s1, 2, :g2, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 2, :g3, 'done');
SELECT baton.resolve_marker(:'a', :s1, 5, :g3, 'failed');
SELECT count(*) AS in_doubt_end FROM baton.markers_in_doubt(:'a', :'r1');
SELECT "position", state FROM mk_markers WHERE entry_id = :s1 ORDER BY "position";
SELECT baton.complete_stage(:'a', :'r1', :g3, :s1, '{"charged": true}');
SELECT kind, run_status FROM baton.transition_stage(:'a', :'r1', :g3);

-- Run r2: the takeover by another owner after A's lease expires.
-- (In one transaction now() stands still, so A's short lease lasts until COMMIT.)
SELECT baton.submit(:'a', 'mk_pay', '{"amount": 200}', 'r2') AS r2 \gset
BEGIN;
SELECT baton.acquire_run(:'a', :'r2', 'A', '10 milliseconds') AS h1 \gset
SELECT stage_id AS s2 FROM baton.transition_stage(:'a', :'r2', :h1) \gset
SELECT baton.start_stage(:'a', :'r2', :h1, :s2) AS inputs;
SELECT baton.claim_marker(:'a', :s2, 0, 'payment', 'pay-200') AS claim_a;
-- B cannot take the run while A's lease lasts
SELECT baton.acquire_run(:'a', :'r2', 'B', '1 hour') IS NULL AS b_refused;
SELECT count(*) AS in_doubt_while_leased FROM baton.markers_in_doubt(:'a', :'r2');
COMMIT;
SELECT pg_sleep(0.05);
SELECT baton.acquire_run(:'a', :'r2', 'B', '1 hour') AS h2 \gset
SELECT :h2 > :h1 AS newer, (baton.run(:'a', :'r2')).owner;
SELECT kind, stage_id = :s2 AS same_stage, stage FROM baton.transition_stage(:'a', :'r2', :h2);
SELECT entry_id = :s2 AS this_stage, "position", stage, kind, operation_id, generation = :h1 AS claimed_under_a
  FROM baton.markers_in_doubt(:'a', :'r2');
-- A, superseded, may not resolve; B may
SELECT baton.resolve_marker(:'a', :s2, 0, :h1, 'retry');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s2, 0, :h2, 'retry');
SELECT baton.claim_marker(:'a', :s2, 0, 'payment', 'pay-200') AS b_claims;
SELECT baton.complete_marker(:'a', :s2, 0, 'done') AS b_completes;
SELECT state, operation_id FROM baton.marker(:'a', :s2, 0);
SELECT count(*) AS in_doubt_end FROM baton.markers_in_doubt(:'a', :'r2');
-- release_run moves the generation on too: what B left in progress is in doubt
SELECT baton.claim_marker(:'a', :s2, 2, 'email', 'receipt-200') AS b_claims;
SELECT baton.release_run(:'a', :'r2', :h2);
SELECT "position", operation_id, generation = :h2 AS claimed_under_b
  FROM baton.markers_in_doubt(:'a', :'r2');
SELECT baton.resolve_marker(:'a', :s2, 2, :h2, 'done');
\echo :LAST_ERROR_SQLSTATE
-- a run nobody holds has no generation that may resolve, not even the current one: DU001
SELECT (baton.run(:'a', :'r2')).generation = :h2 + 1 AS moved_on, (baton.run(:'a', :'r2')).owner;
SELECT baton.resolve_marker(:'a', :s2, 2, :h2 + 1, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT state FROM baton.marker(:'a', :s2, 2);
SELECT baton.acquire_run(:'a', :'r2', 'B', '1 hour') AS h3 \gset
SELECT baton.resolve_marker(:'a', :s2, 2, :h3, 'failed');
SELECT state FROM baton.marker(:'a', :s2, 2);
SELECT count(*) AS in_doubt_end FROM baton.markers_in_doubt(:'a', :'r2');
-- markers_in_doubt of an unknown run, or of another tenant's run: DU008
SELECT * FROM baton.markers_in_doubt(:'a', :'ru');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.markers_in_doubt(:'b', :'r2');
\echo :LAST_ERROR_SQLSTATE

-- ---------------------------------------------------------------------------
-- Bad input: 22004 for every required argument, 22023 for values; nothing changes.
-- ---------------------------------------------------------------------------
SELECT entry_id AS ex FROM baton.enter_step(:'a', 'bad', 'input', 'dx') \gset
SELECT baton.claim_marker(:'a', :ex, 0, 'k') AS claimed;
SELECT markers, entries, h AS h0 FROM mk_digest \gset
SELECT :markers AS markers, :entries AS entries;
-- enter_step
SELECT * FROM baton.enter_step(NULL, 's', 'st', 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', NULL, 'st', 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', 's', NULL, 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', 's', 'st', NULL);
\echo :LAST_ERROR_SQLSTATE
-- claim_marker
SELECT baton.claim_marker(NULL, :ex, 1, 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', NULL, 1, 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', :ex, NULL, 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', :ex, 1, NULL);
\echo :LAST_ERROR_SQLSTATE
-- complete_marker
SELECT baton.complete_marker(NULL, :ex, 0, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', NULL, 0, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', :ex, NULL, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', :ex, 0, NULL);
\echo :LAST_ERROR_SQLSTATE
-- marker
SELECT * FROM baton.marker(NULL, :ex, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.marker(:'a', NULL, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.marker(:'a', :ex, NULL);
\echo :LAST_ERROR_SQLSTATE
-- markers_in_doubt
SELECT * FROM baton.markers_in_doubt(NULL, :'r2');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.markers_in_doubt(:'a', NULL);
\echo :LAST_ERROR_SQLSTATE
-- resolve_marker
SELECT baton.resolve_marker(NULL, :s1, 3, :g3, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', NULL, 3, :g3, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, NULL, :g3, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 3, NULL, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 3, :g3, NULL);
\echo :LAST_ERROR_SQLSTATE
-- labels: 1 to 200 characters
SELECT * FROM baton.enter_step(:'a', '', 'st', 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', repeat('s', 201), 'st', 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', 's', '', 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', 's', repeat('t', 201), 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', 's', 'st', '');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'a', 's', 'st', repeat('d', 201));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', :ex, 1, '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', :ex, 1, repeat('k', 201));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', :ex, 1, 'k', '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'a', :ex, 1, 'k', repeat('o', 201));
\echo :LAST_ERROR_SQLSTATE
-- position: zero or more
SELECT baton.claim_marker(:'a', :ex, -1, 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', :ex, -1, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.marker(:'a', :ex, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, -1, :g3, 'done');
\echo :LAST_ERROR_SQLSTATE
-- state of complete_marker: done or failed; outcome of resolve_marker: done, failed, retry
SELECT baton.complete_marker(:'a', :ex, 0, 'ok');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', :ex, 0, 'in_progress');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', :ex, 0, 'retry');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', :ex, 0, 'DONE');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 3, :g3, 'maybe');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'a', :s1, 3, :g3, 'in_progress');
\echo :LAST_ERROR_SQLSTATE
-- error of complete_marker: at most 65536 bytes (two-byte characters count twice)
SELECT baton.complete_marker(:'a', :ex, 0, 'failed', repeat('x', 65537));
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'a', :ex, 0, 'failed', repeat('é', 32769));
\echo :LAST_ERROR_SQLSTATE
-- order of checks: NULL before values, values before the fence and existence
SELECT baton.claim_marker(:'a', NULL, -1, '');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'tu', 9000000000000000000, -1, 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'tu', :ex, 0, 'ok');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'tu', :s1, 3, :g3, 'maybe');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM baton.enter_step(:'tu', '', 'st', 'd');
\echo :LAST_ERROR_SQLSTATE
-- nothing changed
SELECT markers = :markers AS same_markers, entries = :entries AS same_entries, h = :'h0' AS unchanged
  FROM mk_digest;
-- the limits themselves are accepted: 200 characters (400 bytes of é), and position 0
SELECT entry_seq AS long_labels FROM baton.enter_step(:'a', repeat('é', 200), repeat('t', 200), repeat('d', 200));
SELECT baton.claim_marker(:'a', :ex, 1, repeat('k', 200), repeat('o', 200)) AS long_labels;
SELECT length(kind) AS kind_chars, length(operation_id) AS operation_id_chars FROM baton.marker(:'a', :ex, 1);

-- ---------------------------------------------------------------------------
-- The fence: an unknown or fenced tenant refuses the writes (DU002); reads answer.
-- ---------------------------------------------------------------------------
SELECT * FROM baton.enter_step(:'tu', 's', 'st', 'd');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'tu', 1, 0, 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'tu', 1, 0, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS unknown_tenant_marker FROM baton.marker(:'tu', 1, 0);
-- Tenant c: an entry with a claimed marker; a run whose marker is in doubt.
SELECT entry_id AS fe FROM baton.enter_step(:'c', 'user:9', 'onboard', 'df') \gset
SELECT baton.claim_marker(:'c', :fe, 0, 'email', 'welcome-9') AS claimed;
SELECT baton.submit(:'c', 'mk_pay', '{"amount": 300}', 'rc') AS rc \gset
SELECT baton.acquire_run(:'c', :'rc', 'A', '1 hour') AS k1 \gset
SELECT stage_id AS sc FROM baton.transition_stage(:'c', :'rc', :k1) \gset
SELECT baton.start_stage(:'c', :'rc', :k1, :sc) AS inputs;
SELECT baton.claim_marker(:'c', :sc, 0, 'payment', 'pay-300') AS claimed;
SELECT baton.acquire_run(:'c', :'rc', 'B', '1 hour') IS NULL AS b_refused;
SELECT baton.acquire_run(:'c', :'rc', 'A', '1 hour') AS k2 \gset
SELECT baton.set_tenant_state(:'c', 'fenced');
SELECT markers, entries, h AS h1 FROM mk_digest \gset
SELECT * FROM baton.enter_step(:'c', 'user:9', 'onboard', 'df');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'c', :fe, 1, 'email');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.claim_marker(:'c', :fe, 0, 'email');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.complete_marker(:'c', :fe, 0, 'done');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'c', :sc, 0, :k2, 'done');
\echo :LAST_ERROR_SQLSTATE
-- the fence comes before existence
SELECT baton.claim_marker(:'c', 9000000000000000000, 0, 'email');
\echo :LAST_ERROR_SQLSTATE
SELECT baton.resolve_marker(:'c', :sc, 7, :k2, 'done');
\echo :LAST_ERROR_SQLSTATE
-- reads still answer
SELECT state, kind, operation_id FROM baton.marker(:'c', :fe, 0);
SELECT "position", stage, kind, operation_id, generation = :k1 AS claimed_under_k1
  FROM baton.markers_in_doubt(:'c', :'rc');
SELECT markers = :markers AS same_markers, entries = :entries AS same_entries, h = :'h1' AS unchanged
  FROM mk_digest;
-- once active again, the new owner resolves the marker
SELECT baton.set_tenant_state(:'c', 'active');
SELECT baton.resolve_marker(:'c', :sc, 0, :k2, 'done');
SELECT state FROM baton.marker(:'c', :sc, 0);
SELECT entry_seq AS next_seq FROM baton.enter_step(:'c', 'user:9', 'onboard', 'df');

-- ---------------------------------------------------------------------------
-- Named notation: "position" must be quoted (Postgres treats position specially).
-- ---------------------------------------------------------------------------
SELECT entry_id AS en FROM baton.enter_step(tenant => :'a', subject => 'named', step => 'call', digest => 'dn') \gset
SELECT baton.claim_marker(tenant => :'a', entry_id => :en, "position" => 1, kind => 'k',
                          operation_id => 'op-n') AS named_claim;
SELECT baton.claim_marker(tenant => :'a', entry_id => :en, "position" => 1, kind => 'k') AS named_again;
SELECT state, kind, operation_id FROM baton.marker(tenant => :'a', entry_id => :en, "position" => 1);
SELECT baton.complete_marker(tenant => :'a', entry_id => :en, "position" => 1, state => 'failed',
                             error => 'named error') AS named_complete;
SELECT state, error FROM baton.marker(:'a', :en, 1);
SELECT baton.claim_marker(:'a', :s1, "position" => 6, kind => 'k') AS mixed_notation;
SELECT baton.claim_marker(:'a', :s2, "position" => 1, kind => 'payment', operation_id => 'pay-201') AS claimed;
SELECT baton.acquire_run(:'a', :'r2', 'B', '1 hour') AS h4 \gset
SELECT "position", operation_id FROM baton.markers_in_doubt(tenant => :'a', run_id => :'r2');
SELECT baton.resolve_marker(tenant => :'a', entry_id => :s2, "position" => 1, generation => :h4,
                            outcome => 'failed');
SELECT state FROM baton.marker(:'a', :s2, "position" => 1);
-- unquoted, position is a syntax error
SELECT baton.marker(tenant => :'a', entry_id => 1, position => 1);
\echo :LAST_ERROR_SQLSTATE
