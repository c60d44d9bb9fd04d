-- The same stage step in plain SQL statements, ONE transaction, as a strong user would
-- run it client-side: lock the run checking owner generation and status; find the
-- current stage; it is completed, so decide (the definition lives in the application:
-- "step" -> "step"), clear the current flag and save the decision, insert the successor
-- with the completed stage's result as inputs and the next entry_seq; start it; complete
-- it. A wrong generation makes the first \gset fail (zero rows), which fails the run.
-- pgbench -D loaded=0; each client looks its run up once.
\if :loaded = 0
SELECT run, gen, 1 AS loaded FROM wf_clients WHERE client = :client_id \gset
\endif
BEGIN;
SELECT r.id AS locked FROM wf_runs r
 WHERE r.id = :run AND r.generation = :gen AND r.status = 'running' FOR UPDATE \gset
SELECT s.id AS cur, (s.status = 'completed')::int AS done, s.result AS cur_result
  FROM wf_stages s WHERE s.run_id = :run AND s.is_current \gset
\if :done = 1
UPDATE wf_stages SET is_current = false, transition = '{"next": "step"}' WHERE id = :cur;
INSERT INTO wf_stages (run_id, stage, entry_seq, predecessor_id, inputs)
VALUES (:run, 'step',
        (SELECT coalesce(max(p.entry_seq), 0) + 1 FROM wf_stages p WHERE p.run_id = :run AND p.stage = 'step'),
        :cur, :cur_result)
RETURNING id AS sid \gset
\else
SELECT s.id AS sid FROM wf_stages s WHERE s.id = :cur \gset
\endif
UPDATE wf_stages SET status = 'running', attempt = attempt + 1, started_at = now()
 WHERE id = :sid AND run_id = :run AND is_current AND status IN ('pending', 'running')
RETURNING inputs;
UPDATE wf_stages SET status = 'completed', result = '{"ok": true}', completed_at = now()
 WHERE id = :sid AND run_id = :run AND status = 'running';
COMMIT;
