// Walking workflow runs: acquire a run, take its stages one by one with
// baton.transition_stage, run each stage's handler, save its result or its failure, and
// guard side effects with at-most-once markers.
//
//   const runner = new Runner(client, tenant, 'user_deletion', 'worker-7',
//                             { gate_user: gate, purge_db: purge });
//   while (await runner.runNext()) {}     // one run at a time, as far as it can go now
//
// A handler takes a Stage and resolves with the stage's result (a JSON object) or throws:
// the stage is then failed (fail_stage), and transition_stage says when it may run again
// (wait) or fails the run once its attempts are spent. Inside a handler,
// stage.once(position, kind, action) runs action at most once for this entry of the
// stage (claim_marker, complete_marker): across crashes, owners and repeated handlers.
//
// Everything is fenced by the run's generation: a runner that lost its lease (another
// owner acquired the run after it expired) gets LeaseLost on its next call and drops the
// run. Handlers should end within the lease; the runner renews it between stages. The
// client must not be inside a transaction: each call is its own.
import { BatonError, LeaseLost, query } from './errors.mjs';

// A marker claimed before by a call that did not complete it (its owner died): the
// action may or may not have run. Resolve it (docs/guide/markers.md) before going on.
// Raised by the runner itself, not by the server (no SQLSTATE).
export class InDoubt extends BatonError {}

// The stage transition_stage handed out, and what its handler may use.
export class Stage {
  constructor(runner, { runId, stageId, name, entrySeq, inputs, attempt }) {
    Object.defineProperty(this, 'runner', { value: runner });
    this.runId = runId;
    this.stageId = stageId;
    this.name = name;
    this.entrySeq = entrySeq;
    this.inputs = inputs;
    this.attempt = attempt;
  }

  // Runs action at most once for (this stage's entry, position): resolves true when it ran
  // now, false when it had run to its end before (done or failed). Rejects with InDoubt
  // when an earlier claim never completed. A failing action marks the marker failed and
  // rethrows.
  async once(position, kind, action, operationId = null) {
    const r = this.runner;
    const claimed = await r.one('SELECT baton.claim_marker($1, $2, $3, $4, $5) AS v',
      [r.tenant, this.stageId, position, kind, operationId]);
    if (!claimed) {
      const state = await r.one('SELECT state AS v FROM baton.marker($1, $2, $3)', [r.tenant, this.stageId, position]);
      if (state === 'in_progress') {
        throw new InDoubt(`marker ${position} of stage ${this.name} (${kind}) is in progress from an earlier claim`, {
          detail: 'The action may or may not have run.',
          hint: 'Check its effect, then baton.resolve_marker (docs/guide/markers.md).',
        });
      }
      return false;
    }
    try {
      await action();
    } catch (e) {
      await r.one("SELECT baton.complete_marker($1, $2, $3, 'failed', $4) AS v",
        [r.tenant, this.stageId, position, `${e && e.name ? e.name : 'Error'}: ${e && e.message ? e.message : e}`]);
      throw e;
    }
    await r.one("SELECT baton.complete_marker($1, $2, $3, 'done') AS v", [r.tenant, this.stageId, position]);
    return true;
  }
}

// Acquires the runs of one workflow of a tenant and walks their stages.
export class Runner {
  // client: a pg Client (or Pool); handlers: { stage: async (stage) => result };
  // lease and retryIn in seconds.
  constructor(client, tenant, workflow, owner, handlers, { lease = 60, retryIn = 30 } = {}) {
    this.client = client;
    this.tenant = tenant;
    this.workflow = workflow;
    this.owner = owner;
    this.handlers = handlers;
    this.lease = lease;
    this.retryIn = retryIn;
  }

  // The first column of the first row (null without one).
  async one(sql, params) {
    const rows = await query(this.client, sql, params);
    return rows.length === 0 ? null : rows[0].v;
  }

  // Acquires the next run that needs an owner and walks it as far as it goes now:
  // resolves with its run id, or null when no run was acquired.
  async runNext() {
    const rows = await query(this.client,
      "SELECT run_id, generation FROM baton.acquire_next_run($1, $2, $3, $4 * interval '1 second')",
      [this.tenant, this.workflow, this.owner, this.lease]);
    if (rows.length === 0 || rows[0].run_id == null) return null;
    const runId = rows[0].run_id;
    try {
      await this.walk(runId, Number(rows[0].generation));
    } catch (e) {
      if (!(e instanceof LeaseLost)) throw e; // another owner has it now
    }
    return runId;
  }

  // Takes the run's stages until it finishes or must wait: 'finished' or 'wait'. Releases
  // the run when it waits, so that acquire_next_run offers it again later.
  async walk(runId, generation) {
    let previous = null;
    for (;;) {
      const [t] = await query(this.client,
        `SELECT kind, stage_id, stage, entry_seq, inputs, attempt, wait_until, run_status
           FROM baton.transition_stage($1, $2, $3, $4)`,
        [this.tenant, runId, generation, previous]);
      if (t.kind === 'finished') return 'finished';
      if (t.kind === 'wait') {
        await this.one('SELECT baton.release_run($1, $2, $3) AS v', [this.tenant, runId, generation]);
        return 'wait';
      }
      const stageId = Number(t.stage_id);
      const handler = this.handlers[t.stage];
      if (typeof handler !== 'function') throw new BatonError(`no handler for stage ${t.stage} of workflow ${this.workflow}`);
      const inputs = await this.one('SELECT baton.start_stage($1, $2, $3, $4) AS v', [this.tenant, runId, generation, stageId]);
      const stage = new Stage(this, {
        runId, stageId, name: t.stage, entrySeq: t.entry_seq, inputs: inputs ?? {}, attempt: (t.attempt ?? 0) + 1,
      });
      let result;
      let failure = null;
      try {
        result = await handler(stage);
      } catch (e) {
        if (e instanceof BatonError) throw e;
        failure = e;
      }
      if (failure) {
        await this.one("SELECT baton.fail_stage($1, $2, $3, $4, $5, $6 * interval '1 second') AS v",
          [this.tenant, runId, generation, stageId,
            `${failure && failure.name ? failure.name : 'Error'}: ${failure && failure.message ? failure.message : failure}`,
            this.retryIn]);
      } else {
        await this.one('SELECT baton.complete_stage($1, $2, $3, $4, $5::jsonb) AS v',
          [this.tenant, runId, generation, stageId, JSON.stringify(result ?? {})]);
      }
      await this.one("SELECT baton.renew_run($1, $2, $3, $4 * interval '1 second') AS v",
        [this.tenant, runId, generation, this.lease]);
      previous = stageId;
    }
  }
}
