-- pg_baton 0.3.0: types, tables, indexes, views and function declarations.
-- Every function and trigger is C++ code in pg_baton.so; nothing here holds logic.
\echo Use "CREATE EXTENSION pg_baton" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Tables. Every table has the tenant first in its primary key, in every UNIQUE
-- constraint and in every foreign key (see docs/internals/architecture.md, "Scale-out").
-- ---------------------------------------------------------------------------

CREATE TABLE baton.tenants (
    tenant           uuid        NOT NULL PRIMARY KEY,
    state            text        NOT NULL DEFAULT 'active'
                     CHECK (state IN ('active', 'quiescing', 'fenced', 'deleted')),
    created_at       timestamptz NOT NULL DEFAULT now(),
    state_changed_at timestamptz NOT NULL DEFAULT now()
);

-- Targets bound to a role: only members of that role claim, renew, finish or
-- retry the target's deliveries.
CREATE TABLE baton.target_bindings (
    tenant     uuid        NOT NULL,
    target     text        NOT NULL,
    role       regrole     NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, target)
);

-- Workflow definitions: global (not per tenant), immutable per version. On Citus a
-- reference table.
CREATE TABLE baton.workflows (
    name       text         NOT NULL,
    version    integer      NOT NULL CHECK (version >= 1),
    definition jsonb        NOT NULL,
    decide     regprocedure,
    created_at timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (name, version)
);

-- Runs of workflows, owned through a lease fenced by generation.
CREATE TABLE baton.runs (
    tenant          uuid        NOT NULL,
    id              uuid        NOT NULL DEFAULT gen_random_uuid(),
    workflow        text        NOT NULL,
    version         integer     NOT NULL,
    status          text        NOT NULL DEFAULT 'submitted'
                    CHECK (status IN ('submitted', 'approved', 'running', 'completed', 'failed', 'cancelled')),
    inputs          jsonb       NOT NULL DEFAULT '{}',
    inputs_digest   text        NOT NULL,
    state           jsonb       NOT NULL DEFAULT '{}',
    owner           text,
    generation      bigint      NOT NULL DEFAULT 0,
    lease_until     timestamptz,
    idempotency_key text,
    approved_by     text,
    approved_at     timestamptz,
    reason          text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    UNIQUE (tenant, workflow, idempotency_key)
);
-- The primary key is created after the other tenant-leading unique index: before the
-- first ANALYZE the planner breaks a cost tie between them by taking the index created
-- last, and lookups by (tenant, id) must take the primary key.
ALTER TABLE baton.runs ADD PRIMARY KEY (tenant, id);

-- What acquire_next_run scans: runnable runs of one workflow, oldest first.
CREATE INDEX runs_runnable ON baton.runs (tenant, workflow, created_at)
    WHERE status IN ('approved', 'running');

-- Step entries (stages of runs, and entries of enter_step) share one id space per
-- tenant, so that any entry's id is a valid marker entry_id.
CREATE SEQUENCE baton.entry_id_seq AS bigint;

-- Stages: each entry of a run into one stage of its workflow, chained by predecessor_id.
CREATE TABLE baton.stages (
    tenant         uuid        NOT NULL,
    id             bigint      NOT NULL DEFAULT nextval('baton.entry_id_seq'),
    run_id         uuid        NOT NULL,
    stage          text        NOT NULL,
    entry_seq      integer     NOT NULL CHECK (entry_seq >= 1),
    predecessor_id bigint,
    is_current     boolean     NOT NULL DEFAULT true,
    status         text        NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    attempt        integer     NOT NULL DEFAULT 0,
    max_attempts   integer     NOT NULL DEFAULT 3,
    retry_delay    interval    NOT NULL DEFAULT '30 seconds',
    inputs         jsonb       NOT NULL DEFAULT '{}',
    result         jsonb,
    error          text,
    retry_at       timestamptz,
    transition     jsonb,
    created_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    completed_at   timestamptz,
    UNIQUE (tenant, run_id, stage, entry_seq),
    FOREIGN KEY (tenant, run_id) REFERENCES baton.runs (tenant, id) ON DELETE CASCADE
);
ALTER TABLE baton.stages ADD PRIMARY KEY (tenant, id);  -- last: see baton.runs

-- Step entries outside the workflow engine: the n-th entry of a subject into a step.
CREATE TABLE baton.step_entries (
    tenant     uuid        NOT NULL,
    id         bigint      NOT NULL DEFAULT nextval('baton.entry_id_seq'),
    subject    text        NOT NULL,
    step       text        NOT NULL,
    entry_seq  integer     NOT NULL CHECK (entry_seq >= 1),
    digest     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, subject, step, entry_seq)
);
ALTER TABLE baton.step_entries ADD PRIMARY KEY (tenant, id);  -- last: see baton.runs

-- At-most-once markers: one row per action (position) run on one step entry. A marker
-- of a stage records its run and the owner's generation when it was claimed, so a
-- takeover can find the actions left in doubt.
CREATE TABLE baton.markers (
    tenant              uuid        NOT NULL,
    entry_id            bigint      NOT NULL,
    "position"          integer     NOT NULL CHECK ("position" >= 0),
    kind                text        NOT NULL,
    operation_id        text,
    state               text        NOT NULL DEFAULT 'in_progress'
                        CHECK (state IN ('in_progress', 'done', 'failed', 'retry')),
    error               text,
    run_id              uuid,
    generation          bigint,
    claims              integer     NOT NULL DEFAULT 1,
    resolved_generation bigint,
    claimed_at          timestamptz NOT NULL DEFAULT now(),
    completed_at        timestamptz,
    PRIMARY KEY (tenant, entry_id, "position"),
    FOREIGN KEY (tenant, run_id) REFERENCES baton.runs (tenant, id) ON DELETE CASCADE
);

-- What markers_in_doubt scans: the markers of one run still in progress.
CREATE INDEX markers_in_progress ON baton.markers (tenant, run_id)
    WHERE state = 'in_progress' AND run_id IS NOT NULL;

-- At most one current stage per run: the transition finds it in one index probe, and
-- a second current stage cannot be written by any path.
CREATE UNIQUE INDEX stages_current ON baton.stages (tenant, run_id) WHERE is_current;

-- Deliveries: one unit of work for one target, leased under a fencing generation.
-- status (pending, claimed, finished, failed) and max_attempts (>= 1) are held by the
-- fence trigger, not CHECK constraints: Postgres re-reads a table's CHECK expressions
-- from the catalog for every statement that writes it, 14% of a claim and finish.
CREATE TABLE baton.deliveries (
    tenant       uuid        NOT NULL,
    id           bigint      GENERATED BY DEFAULT AS IDENTITY,
    target       text        NOT NULL,
    dedup_key    text        NOT NULL,
    status       text        NOT NULL DEFAULT 'pending',
    generation   bigint      NOT NULL DEFAULT 0,
    attempts     integer     NOT NULL DEFAULT 0,
    max_attempts integer     NOT NULL DEFAULT 3,
    priority     integer     NOT NULL DEFAULT 0,
    run_after    timestamptz NOT NULL DEFAULT now(),
    lease_until  timestamptz,
    payload      jsonb       NOT NULL DEFAULT '{}',
    binding      jsonb       NOT NULL DEFAULT '{}',
    result       jsonb,
    last_error   text,
    run_id       uuid,
    created_at   timestamptz NOT NULL DEFAULT now(),
    settled_at   timestamptz,
    UNIQUE (tenant, target, dedup_key),
    FOREIGN KEY (tenant, run_id) REFERENCES baton.runs (tenant, id) ON DELETE CASCADE
);
ALTER TABLE baton.deliveries ADD PRIMARY KEY (tenant, id);  -- last: see baton.runs
-- A queue table churns: every claim leaves a dead entry at the head of the claim index,
-- and claims walk over them until vacuum removes them. Vacuum it after 1% of its rows
-- changed rather than Postgres' default 20%.
ALTER TABLE baton.deliveries SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);

-- What claim scans: pending rows of one target, highest priority, then oldest.
CREATE INDEX deliveries_claimable ON baton.deliveries (tenant, target, priority DESC, id)
    WHERE status = 'pending';
-- What reap scans: leases in order of expiry.
CREATE INDEX deliveries_leases ON baton.deliveries (lease_until)
    WHERE status = 'claimed';
-- What removing a run scans.
CREATE INDEX deliveries_run ON baton.deliveries (tenant, run_id)
    WHERE run_id IS NOT NULL;
-- What purge scans: settled deliveries in order of settling, terminal runs in order of
-- finishing (settled_at and finished_at are set exactly when a row becomes terminal).
CREATE INDEX deliveries_settled ON baton.deliveries (settled_at)
    WHERE settled_at IS NOT NULL;
CREATE INDEX runs_finished ON baton.runs (finished_at)
    WHERE finished_at IS NOT NULL;

-- ---------------------------------------------------------------------------
-- The write fence: C triggers on every tenant-owned table.
-- ---------------------------------------------------------------------------

CREATE FUNCTION baton.fence_row() RETURNS trigger
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_fence_row';
CREATE FUNCTION baton.refuse_truncate() RETURNS trigger
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_refuse_truncate';
CREATE FUNCTION baton.tenant_state_guard() RETURNS trigger
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_tenant_state_guard';

CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.deliveries
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row();
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.runs
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row();
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.target_bindings
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row();
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.stages
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row();
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.markers
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row();
CREATE TRIGGER fence BEFORE INSERT OR UPDATE OR DELETE ON baton.step_entries
    FOR EACH ROW EXECUTE FUNCTION baton.fence_row();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.runs
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.target_bindings
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.stages
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.markers
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER fence_truncate BEFORE TRUNCATE ON baton.step_entries
    FOR EACH STATEMENT EXECUTE FUNCTION baton.refuse_truncate();
CREATE TRIGGER state_guard BEFORE UPDATE OR DELETE ON baton.tenants
    FOR EACH ROW EXECUTE FUNCTION baton.tenant_state_guard();
CREATE TRIGGER state_guard_truncate BEFORE TRUNCATE ON baton.tenants
    FOR EACH STATEMENT EXECUTE FUNCTION baton.tenant_state_guard();

-- ---------------------------------------------------------------------------
-- Tenants.
-- ---------------------------------------------------------------------------

CREATE FUNCTION baton.create_tenant(tenant uuid) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_create_tenant';
CREATE FUNCTION baton.set_tenant_state(tenant uuid, state text) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_set_tenant_state';
CREATE FUNCTION baton.tenant_write_allowed(tenant uuid) RETURNS boolean
    LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'baton_tenant_write_allowed';

-- ---------------------------------------------------------------------------
-- Deliveries.
-- ---------------------------------------------------------------------------

CREATE FUNCTION baton.enqueue(tenant uuid, target text, dedup_key text,
                              payload jsonb DEFAULT '{}', binding jsonb DEFAULT '{}',
                              run_after timestamptz DEFAULT NULL, priority int DEFAULT 0,
                              max_attempts int DEFAULT 3, run_id uuid DEFAULT NULL)
    RETURNS bigint
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_enqueue';

CREATE FUNCTION baton.enqueue_batch(tenant uuid, items jsonb)
    RETURNS TABLE(id bigint, inserted boolean)
    LANGUAGE C ROWS 100 AS 'MODULE_PATHNAME', 'baton_enqueue_batch';

CREATE FUNCTION baton.claim(tenant uuid, target text, lease interval,
                            max_items int DEFAULT 1, expected jsonb DEFAULT NULL)
    RETURNS TABLE(id bigint, generation bigint, lease_until timestamptz, dedup_key text,
                  payload jsonb, binding jsonb, attempt int, run_id uuid)
    LANGUAGE C ROWS 1 AS 'MODULE_PATHNAME', 'baton_claim';

CREATE FUNCTION baton.renew(tenant uuid, id bigint, generation bigint, lease interval)
    RETURNS timestamptz
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_renew';

CREATE FUNCTION baton.finish(tenant uuid, id bigint, generation bigint,
                             outcome text DEFAULT 'finished', result jsonb DEFAULT NULL)
    RETURNS text
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_finish';

-- Beyond the contract: finish many deliveries in one statement, an answer per item.
CREATE FUNCTION baton.finish_batch(tenant uuid, ids bigint[], generations bigint[],
                                   outcome text DEFAULT 'finished')
    RETURNS TABLE(id bigint, status text)
    LANGUAGE C ROWS 50 AS 'MODULE_PATHNAME', 'baton_finish_batch';

CREATE FUNCTION baton.retry(tenant uuid, id bigint, generation bigint, error text,
                            delay interval DEFAULT NULL)
    RETURNS text
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_retry';

CREATE FUNCTION baton.reap(max_rows int DEFAULT 1000) RETURNS integer
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_reap';

-- Retention: removes settled deliveries and terminal runs (with their stages, markers
-- and deliveries) older than a bound, in batches that skip locked rows and fenced tenants.
CREATE FUNCTION baton.purge(older_than interval, max_rows int DEFAULT 1000) RETURNS integer
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_purge';

CREATE FUNCTION baton.delivery(tenant uuid, id bigint) RETURNS baton.deliveries
    LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'baton_delivery';

-- ---------------------------------------------------------------------------
-- Workflows and runs.
-- ---------------------------------------------------------------------------

CREATE FUNCTION baton.define_workflow(name text, definition jsonb) RETURNS integer
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_define_workflow';
CREATE FUNCTION baton.submit(tenant uuid, workflow text, inputs jsonb DEFAULT '{}',
                             idempotency_key text DEFAULT NULL) RETURNS uuid
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_submit';
CREATE FUNCTION baton.inputs_digest(tenant uuid, run_id uuid) RETURNS text
    LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'baton_inputs_digest';
CREATE FUNCTION baton.approve(tenant uuid, run_id uuid, approver text, digest text) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_approve';
CREATE FUNCTION baton.cancel(tenant uuid, run_id uuid, reason text) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_cancel';
CREATE FUNCTION baton.acquire_run(tenant uuid, run_id uuid, owner text, lease interval) RETURNS bigint
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_acquire_run';
CREATE FUNCTION baton.acquire_next_run(tenant uuid, workflow text, owner text, lease interval)
    RETURNS TABLE(run_id uuid, generation bigint)
    LANGUAGE C ROWS 1 AS 'MODULE_PATHNAME', 'baton_acquire_next_run';
CREATE FUNCTION baton.renew_run(tenant uuid, run_id uuid, generation bigint, lease interval)
    RETURNS timestamptz
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_renew_run';
CREATE FUNCTION baton.release_run(tenant uuid, run_id uuid, generation bigint) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_release_run';
CREATE FUNCTION baton.transition_stage(tenant uuid, run_id uuid, generation bigint,
                                       previous_stage_id bigint DEFAULT NULL)
    RETURNS TABLE(kind text, stage_id bigint, stage text, entry_seq int, inputs jsonb,
                  attempt int, wait_until timestamptz, run_status text)
    LANGUAGE C ROWS 1 AS 'MODULE_PATHNAME', 'baton_transition_stage';
CREATE FUNCTION baton.start_stage(tenant uuid, run_id uuid, generation bigint, stage_id bigint)
    RETURNS jsonb
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_start_stage';
CREATE FUNCTION baton.complete_stage(tenant uuid, run_id uuid, generation bigint, stage_id bigint,
                                     result jsonb DEFAULT '{}') RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_complete_stage';
CREATE FUNCTION baton.fail_stage(tenant uuid, run_id uuid, generation bigint, stage_id bigint,
                                 error text, retry_in interval DEFAULT NULL) RETURNS timestamptz
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_fail_stage';
CREATE FUNCTION baton.run(tenant uuid, run_id uuid) RETURNS baton.runs
    LANGUAGE C STABLE AS 'MODULE_PATHNAME', 'baton_run';
CREATE FUNCTION baton.run_history(tenant uuid, run_id uuid) RETURNS SETOF baton.stages
    LANGUAGE C STABLE ROWS 20 AS 'MODULE_PATHNAME', 'baton_run_history';

-- ---------------------------------------------------------------------------
-- Step entries and at-most-once markers.
-- ---------------------------------------------------------------------------

CREATE FUNCTION baton.enter_step(tenant uuid, subject text, step text, digest text)
    RETURNS TABLE(entry_id bigint, entry_seq int)
    LANGUAGE C ROWS 1 AS 'MODULE_PATHNAME', 'baton_enter_step';
CREATE FUNCTION baton.claim_marker(tenant uuid, entry_id bigint, "position" int, kind text,
                                   operation_id text DEFAULT NULL) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_claim_marker';
CREATE FUNCTION baton.complete_marker(tenant uuid, entry_id bigint, "position" int, state text,
                                      error text DEFAULT NULL) RETURNS boolean
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_complete_marker';
CREATE FUNCTION baton.marker(tenant uuid, entry_id bigint, "position" int)
    RETURNS TABLE(state text, error text, kind text, operation_id text,
                  claimed_at timestamptz, completed_at timestamptz)
    LANGUAGE C STABLE ROWS 1 AS 'MODULE_PATHNAME', 'baton_marker';
CREATE FUNCTION baton.markers_in_doubt(tenant uuid, run_id uuid)
    RETURNS TABLE(entry_id bigint, "position" int, stage text, kind text, operation_id text,
                  generation bigint, claimed_at timestamptz)
    LANGUAGE C STABLE ROWS 10 AS 'MODULE_PATHNAME', 'baton_markers_in_doubt';
CREATE FUNCTION baton.resolve_marker(tenant uuid, entry_id bigint, "position" int,
                                     generation bigint, outcome text) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_resolve_marker';

-- Per tenant and target: counts by status, the oldest pending age, expired leases, and
-- the deliveries settled in the last minutes (throughput).
CREATE VIEW baton.delivery_stats AS
SELECT d.tenant,
       d.target,
       count(*) FILTER (WHERE d.status = 'pending')  AS pending,
       count(*) FILTER (WHERE d.status = 'claimed')  AS claimed,
       count(*) FILTER (WHERE d.status = 'finished') AS finished,
       count(*) FILTER (WHERE d.status = 'failed')   AS failed,
       now() - min(d.created_at) FILTER (WHERE d.status = 'pending') AS oldest_pending_age,
       count(*) FILTER (WHERE d.status = 'claimed' AND d.lease_until < now()) AS expired_leases,
       count(*) FILTER (WHERE d.status = 'finished' AND d.settled_at >= now() - interval '1 minute') AS finished_last_1m,
       count(*) FILTER (WHERE d.status = 'finished' AND d.settled_at >= now() - interval '5 minutes') AS finished_last_5m,
       count(*) FILTER (WHERE d.status = 'failed' AND d.settled_at >= now() - interval '5 minutes') AS failed_last_5m
  FROM baton.deliveries d
 GROUP BY d.tenant, d.target;

-- Per tenant and workflow: runs by status, runs waiting on a failed stage's retry
-- deadline, stuck runs (an owner whose lease expired), the oldest unfinished run's age
-- and the runs finished in the last minutes.
CREATE VIEW baton.run_stats AS
SELECT r.tenant,
       r.workflow,
       count(*) FILTER (WHERE r.status = 'submitted') AS submitted,
       count(*) FILTER (WHERE r.status = 'approved')  AS approved,
       count(*) FILTER (WHERE r.status = 'running')   AS running,
       count(*) FILTER (WHERE r.status = 'completed') AS completed,
       count(*) FILTER (WHERE r.status = 'failed')    AS failed,
       count(*) FILTER (WHERE r.status = 'cancelled') AS cancelled,
       count(*) FILTER (WHERE r.status IN ('approved', 'running') AND s.status = 'failed'
                          AND s.attempt < s.max_attempts AND s.retry_at > now()) AS waiting_retry,
       count(*) FILTER (WHERE r.status IN ('approved', 'running') AND r.owner IS NOT NULL
                          AND r.lease_until < now()) AS stuck,
       now() - min(r.created_at) FILTER (WHERE r.status IN ('submitted', 'approved', 'running'))
           AS oldest_unfinished_age,
       count(*) FILTER (WHERE r.status = 'completed' AND r.finished_at >= now() - interval '5 minutes')
           AS completed_last_5m,
       count(*) FILTER (WHERE r.status = 'failed' AND r.finished_at >= now() - interval '5 minutes')
           AS failed_last_5m
  FROM baton.runs r
  LEFT JOIN baton.stages s
         ON s.tenant = r.tenant AND s.run_id = r.id AND s.is_current
 GROUP BY r.tenant, r.workflow;

-- ---------------------------------------------------------------------------
-- Authorization.
-- ---------------------------------------------------------------------------

CREATE FUNCTION baton.bind_target(tenant uuid, target text, role regrole) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_bind_target';
CREATE FUNCTION baton.grant_producer(role regrole) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_grant_producer';
CREATE FUNCTION baton.grant_worker(role regrole) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_grant_worker';
CREATE FUNCTION baton.grant_admin(role regrole) RETURNS void
    LANGUAGE C AS 'MODULE_PATHNAME', 'baton_grant_admin';

-- Nothing is granted to PUBLIC: roles get what the grant_* helpers give them.
REVOKE ALL ON SCHEMA baton FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA baton FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA baton FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA baton FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Backups.
-- ---------------------------------------------------------------------------

-- One row once this database's pg_baton has been written to (docs/guide/operations.md,
-- "Backups"). Not dumped: a restored database has no row until its first write, and
-- until then the fence lets the restore's COPY statements load every tenant's rows.
CREATE TABLE baton.in_use (
    singleton boolean     NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    since     timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON baton.in_use FROM PUBLIC;

-- Every table and sequence of the extension but in_use is configuration in PostgreSQL's
-- sense: its rows are the application's, so pg_dump dumps them (all of them) and
-- pg_restore loads them after CREATE EXTENSION has made the empty tables.
SELECT pg_catalog.pg_extension_config_dump('baton.tenants', '');
SELECT pg_catalog.pg_extension_config_dump('baton.target_bindings', '');
SELECT pg_catalog.pg_extension_config_dump('baton.workflows', '');
SELECT pg_catalog.pg_extension_config_dump('baton.runs', '');
SELECT pg_catalog.pg_extension_config_dump('baton.stages', '');
SELECT pg_catalog.pg_extension_config_dump('baton.step_entries', '');
SELECT pg_catalog.pg_extension_config_dump('baton.markers', '');
SELECT pg_catalog.pg_extension_config_dump('baton.deliveries', '');
SELECT pg_catalog.pg_extension_config_dump('baton.entry_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('baton.deliveries_id_seq', '');
