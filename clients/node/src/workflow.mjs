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
// (wait) or fails the run once its attempts are spent. Any error fails the stage (a
// pg_baton refusal too, e.g. a Producer's DuplicateKey), and so does a result JSON cannot
// hold (a BigInt, a cycle), but for LeaseLost and InDoubt: they end the walk. Inside a
// handler, stage.once(position, kind, action) runs action at most once for this entry of
// the stage (claim_marker, complete_marker): across crashes, owners and repeated handlers.
//
// Everything is fenced by the run's generation: a runner that lost its lease (another
// owner acquired the run after it expired) gets LeaseLost on its next call and drops the
// run. Any other end of a walk (the run finished or must wait, or an error) releases the
// run (release_run): acquire_next_run may offer it again without waiting for the lease
// to expire. Handlers should end within the lease; the runner renews it between stages.
// The client must not be inside a transaction: each call is its own. Ids and generations
// are bigints, kept as the strings pg gives.
import { BatonError, LeaseLost, query } from './errors.mjs';

// A marker claimed before by a call that did not complete it (its owner died): the
// action may or may not have run. Resolve it (docs/guide/markers.md) before going on.
// Raised by the runner itself, not by the server (no SQLSTATE).
export class InDoubt extends BatonError {}

// A handler's value as the text of complete_stage's jsonb result ({} for none). A value
// JSON cannot hold (a BigInt, a cycle) throws: the stage has failed, as if the handler threw.
function resultJson(value) {
  try {
    return JSON.stringify(value ?? {}) ?? '{}';
  } catch (e) {
    throw new TypeError(`the handler's result is not JSON: ${e.message}`, { cause: e });
  }
}

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
  // resolves with its run id, or null when no run was acquired. The run is released
  // afterwards, unless its lease was lost (another owner has it now); an error of the
  // walk rejects after the release.
  async runNext() {
    const rows = await query(this.client,
      'SELECT run_id, generation FROM baton.acquire_next_run($1, $2, $3, pg_catalog.make_interval(secs => $4))',
      [this.tenant, this.workflow, this.owner, this.lease]);
    if (rows.length === 0 || rows[0].run_id == null) return null;
    const { run_id: runId, generation } = rows[0];
    try {
      await this.walk(runId, generation);
    } catch (e) {
      if (e instanceof LeaseLost) return runId;
      await this.release(runId, generation).catch(() => {}); // the walk's error is the one to report
      throw e;
    }
    await this.release(runId, generation);
    return runId;
  }

  // Gives the run back (release_run); a lease lost meanwhile has nothing to give back.
  async release(runId, generation) {
    try {
      await this.one('SELECT baton.release_run($1, $2, $3) AS v', [this.tenant, runId, generation]);
    } catch (e) {
      if (!(e instanceof LeaseLost)) throw e;
    }
  }

  // Takes the run's stages until it finishes or must wait: 'finished' or 'wait'.
  async walk(runId, generation) {
    let previous = null;
    for (;;) {
      const [t] = await query(this.client,
        `SELECT kind, stage_id, stage, entry_seq, inputs, attempt, wait_until, run_status
           FROM baton.transition_stage($1, $2, $3, $4)`,
        [this.tenant, runId, generation, previous]);
      if (t.kind === 'finished') return 'finished';
      if (t.kind === 'wait') return 'wait';
      const stageId = t.stage_id;
      const handler = Object.hasOwn(this.handlers, t.stage) ? this.handlers[t.stage] : undefined;
      if (typeof handler !== 'function') throw new BatonError(`no handler for stage ${t.stage} of workflow ${this.workflow}`);
      const inputs = await this.one('SELECT baton.start_stage($1, $2, $3, $4) AS v', [this.tenant, runId, generation, stageId]);
      const stage = new Stage(this, {
        runId, stageId, name: t.stage, entrySeq: t.entry_seq, inputs: inputs ?? {}, attempt: (t.attempt ?? 0) + 1,
      });
      let result;
      let failure;
      let failed = false;
      try {
        result = resultJson(await handler(stage));
      } catch (e) {
        if (e instanceof LeaseLost || e instanceof InDoubt) throw e;
        failure = e;
        failed = true;
      }
      if (failed) {
        await this.one('SELECT baton.fail_stage($1, $2, $3, $4, $5, pg_catalog.make_interval(secs => $6)) AS v',
          [this.tenant, runId, generation, stageId,
            `${failure && failure.name ? failure.name : 'Error'}: ${failure && failure.message ? failure.message : failure}`,
            this.retryIn]);
      } else {
        await this.one('SELECT baton.complete_stage($1, $2, $3, $4, $5::jsonb) AS v',
          [this.tenant, runId, generation, stageId, result]);
      }
      await this.one('SELECT baton.renew_run($1, $2, $3, pg_catalog.make_interval(secs => $4)) AS v',
        [this.tenant, runId, generation, this.lease]);
      previous = stageId;
    }
  }
}
