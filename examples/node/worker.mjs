#!/usr/bin/env node
// A pg_baton worker in Node.js: copy this directory, replace handle(), run it.
//
//     npm ci
//     BATON_TENANT=<uuid> BATON_TARGET=email PGHOST=... PGDATABASE=... node worker.mjs
//     BATON_FAIR=1 BATON_TARGET=email PGHOST=... PGDATABASE=... node worker.mjs
//
// Needs Node.js 18 or later and pg (node-postgres) from npm. What it does, in a loop:
//
//   1. LISTEN on the wake-up channel of (tenant, target), named by
//      baton.wakeup_channel() (before the first claim, so no wake-up falls in between);
//   2. claim up to BATON_BATCH deliveries of (tenant, target) with a lease of
//      BATON_LEASE_SECONDS; while any come back, work them one by one (step 3), then claim
//      again;
//   3. await handle(item, signal) while a timer renews every held lease every lease/3;
//      then finish (the handler resolved) or retry (it threw: the row is pending again
//      after the backoff, or failed once its attempts are spent). DU001 (lease lost:
//      reaped or claimed by someone else) drops the item and aborts `signal`;
//   4. when the queue is empty, wait until a notification for (tenant, target) arrives or
//      BATON_POLL_SECONDS pass (the fallback, which also catches retries and run_after
//      items, which send no notification), calling baton.reap() on each fallback wake-up;
//   5. on SIGINT or SIGTERM: stop claiming, give the running handler up to
//      BATON_SHUTDOWN_GRACE_SECONDS (a second signal cuts it short), abort its signal,
//      then release every lease still held with retry(..., delay => 0): the item is
//      pending again at once instead of waiting for its lease to expire. The interrupted
//      attempt counts (the contract has no release that gives it back; see
//      docs/guide/wakeups.md), so an item on its last attempt is failed;
//   6. a lost connection is reopened (with backoff) and the interrupted call repeated:
//      renew, finish and retry are fenced by generation, not by session, so held leases
//      survive a reconnect.
//
// With BATON_FAIR=1 the worker serves the target for every tenant instead of one: it
// claims with baton.claim_fair(target, lease, BATON_BATCH), which leases deliveries of
// each tenant that binds the target (baton.bind_target) to a role the worker's user is a
// member of, is active and has not paused it, tenant after tenant in turns of each
// binding's weight (docs/guide/fairness.md). Each item carries its tenant, and every renew,
// finish, retry and release names the item's tenant. A fair pool has no wake-up channel:
// step 1 is skipped and step 4 waits BATON_POLL_SECONDS (poll only). BATON_TENANT must
// not be set then (the worker refuses to start: it would not be the tenant served).
//
// Configuration (environment):
//   connection      libpq-style PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (read by
//                   pg), or BATON_DSN (a postgresql:// URL)
//   BATON_TENANT    tenant uuid (required, unless BATON_FAIR=1; refused with it)
//   BATON_TARGET    target (required)
//   BATON_FAIR                     1: claim_fair over every tenant served, poll only; 0 (default): one tenant
//   BATON_LEASE_SECONDS            lease of a claim (default 30)
//   BATON_BATCH                    max_items of a claim (default 10)
//   BATON_POLL_SECONDS             fallback poll when no notification comes (default 10)
//   BATON_LISTEN                   1 (default): LISTEN; 0: poll only (BATON_FAIR=1: always poll only)
//   BATON_SHUTDOWN_GRACE_SECONDS   how long a shutdown waits for the running handler (default 10)
//   BATON_REAP                     1 (default): call baton.reap() on each fallback wake-up
//
// Every event is logged as one line on stdout: "worker[node] EVENT key=value ..."; with
// BATON_FAIR=1 an item's lines name its tenant (tenant=<uuid> before id=).
import pg from 'pg';

// YOUR WORK GOES HERE. Resolve with a JSON-able result (stored by finish; undefined or
// null stores none), or throw to retry. item.tenant is the delivery's tenant (always
// BATON_TENANT, unless BATON_FAIR=1). `signal` aborts when the lease is lost (DU001) or
// the worker shuts down: stop early if you can, the result will not be stored. This demo
// handler does what the payload says: waits payload.sleep seconds, and throws while the
// attempt is at most payload.fail_attempts.
export async function handle(item, signal) {
  const ms = Number(item.payload.sleep ?? 0) * 1000;
  await new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
  if (item.attempt <= Number(item.payload.fail_attempts ?? 0)) {
    throw new Error(`demo failure on attempt ${item.attempt}`);
  }
  return { handled_by: 'node', attempt: item.attempt };
}

// One line per event on stdout, so that a supervisor or a test can read it.
function log(event, fields = {}) {
  const parts = Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' ');
  process.stdout.write(`worker[node] ${event}${parts ? ' ' + parts : ''}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A non-negative number from the environment, or the default.
function envNumber(name, fallback) {
  const raw = process.env[name] ?? '';
  if (raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return v;
}

export function configFromEnv() {
  const tenant = process.env.BATON_TENANT ?? '';
  const target = process.env.BATON_TARGET ?? '';
  const fair = !['', '0'].includes(process.env.BATON_FAIR ?? '0');
  if (fair && tenant) {
    console.error('worker: BATON_TENANT must not be set with BATON_FAIR=1'
      + ' (a fair worker serves every tenant that binds the target to its role)');
    process.exit(2);
  }
  if (fair && !target) {
    console.error('worker: BATON_TARGET is required');
    process.exit(2);
  }
  if (!fair && (!tenant || !target)) {
    console.error('worker: BATON_TENANT and BATON_TARGET are required');
    process.exit(2);
  }
  return {
    dsn: process.env.BATON_DSN || undefined,
    tenant: tenant.toLowerCase(), // the canonical form ('' when fair)
    target,
    fair,
    lease: Math.max(1, envNumber('BATON_LEASE_SECONDS', 30)),
    batch: Math.max(1, Math.floor(envNumber('BATON_BATCH', 10))),
    poll: Math.max(0.1, envNumber('BATON_POLL_SECONDS', 10)),
    listen: (process.env.BATON_LISTEN ?? '1') !== '0' && !fair, // a fair pool has no channel
    grace: envNumber('BATON_SHUTDOWN_GRACE_SECONDS', 10),
    reap: (process.env.BATON_REAP ?? '1') !== '0',
  };
}

class LeaseLost extends Error {}

// The key of a held lease: ids are unique per tenant, and a fair worker holds leases of
// many tenants.
const heldKey = (tenant, id) => `${tenant}/${id}`;

// True when an error means the connection is gone (not a refusal by the server).
function isConnectionError(e) {
  const code = e && e.code;
  if (!code) return /terminated|connection|closed|socket/i.test(String(e && e.message)); // "Connection terminated unexpectedly"...
  if (/^E[A-Z]+$/.test(code)) return true; // ECONNRESET, EPIPE, ECONNREFUSED, ENOENT...
  return code.startsWith('08') || code.startsWith('57P');
}

export class Worker {
  constructor(config, handler = handle) {
    this.config = config;
    this.handler = handler;
    this.client = null;
    this.broken = false;
    this.woken = false; // a notification for our (tenant, target) arrived
    this.channel = ''; // our wake-up channel, from baton.wakeup_channel()
    this.held = new Map(); // key(tenant, id) -> { tenant, id, gen } of every lease we hold
    this.signals = 0;
    this.wakeup = null; // resolves the current wait
    this.stopped = new Promise((resolve) => { this.onStop = resolve; });
    this.hardStopped = new Promise((resolve) => { this.onHardStop = resolve; });
    // Resolves when a running handler is to be abandoned: grace seconds after the first
    // signal, or at the second.
    this.graceOver = Promise.race([
      this.stopped.then(() => sleep(this.config.grace * 1000)),
      this.hardStopped,
    ]).then(() => ({ abandoned: true }));
  }

  get stopping() { return this.signals > 0; }

  // First signal: stop after the grace period. Second: stop now.
  onSignal(name) {
    this.signals += 1;
    log('signal', { name, grace: this.signals > 1 ? 0 : this.config.grace });
    this.onStop();
    if (this.signals > 1) this.onHardStop();
    this.wake();
  }

  wake() {
    if (this.wakeup) this.wakeup();
  }

  // --- connection -------------------------------------------------------------------------
  // Only enqueues for our (tenant, target) notify our channel.
  onNotification(msg) {
    if (msg.channel !== this.channel) return;
    this.woken = true;
    this.wake();
  }

  // Opens the connection (each statement is its own transaction) and LISTENs.
  async connect() {
    let delay = 200;
    let tries = 0;
    for (;;) {
      const client = new pg.Client({ connectionString: this.config.dsn, application_name: 'baton-worker-node' });
      client.on('error', (e) => { if (this.client === client) this.dropConnection(e); });
      client.on('end', () => { if (this.client === client) this.dropConnection(new Error('connection ended')); });
      client.on('notification', (msg) => this.onNotification(msg));
      try {
        await client.connect();
        if (this.config.listen) {
          // The channel's name is private to roles that may claim here; it is asked
          // for on every connect (a changed secret renames it).
          const r = await client.query('SELECT baton.wakeup_channel($1, $2) AS channel',
            [this.config.tenant, this.config.target]);
          this.channel = r.rows[0].channel;
          await client.query(`LISTEN ${client.escapeIdentifier(this.channel)}`);
        }
        const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        this.client = client;
        this.broken = false;
        log('connected', { pid, listen: this.config.listen ? 1 : 0 });
        this.woken = true; // anything enqueued while we were away notified nobody
        return;
      } catch (e) {
        client.end().catch(() => {});
        log('connect_failed', { error: JSON.stringify(String(e.message)), retry_in: delay / 1000 });
        tries += 1;
        if (this.stopping && (this.signals > 1 || tries > 3)) throw e;
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  dropConnection(why) {
    if (this.broken) return;
    this.broken = true;
    log('connection_lost', { error: JSON.stringify(String(why && why.message)) });
    const c = this.client;
    this.client = null;
    if (c) c.end().catch(() => {});
    this.wake();
  }

  // Runs one statement; on a lost connection reconnects and runs it again. Repeating is
  // safe for renew, finish and retry (fenced by generation; a repeated finish or retry
  // answers the stored status). A claim whose answer was lost leaves its rows claimed
  // until their leases expire and someone reaps them.
  async call(sql, params = []) {
    for (;;) {
      if (!this.client || this.broken) await this.connect();
      const client = this.client;
      try {
        return (await client.query(sql, params)).rows;
      } catch (e) {
        if (e.code === 'DU001') throw new LeaseLost(e.message);
        if (this.client !== client || this.broken || isConnectionError(e)) {
          if (this.client === client) this.dropConnection(e);
          continue;
        }
        throw e;
      }
    }
  }

  // --- the lease calls ----------------------------------------------------------------------
  // The tenant= field of an item's log lines: fair mode only (one tenant otherwise).
  who(tenant) {
    return this.config.fair ? { tenant } : {};
  }

  async claim() {
    const c = this.config;
    if (c.fair) {
      return this.call(
        `SELECT tenant, id, generation, lease_until, dedup_key, payload, binding, attempt, run_id
           FROM baton.claim_fair($1, $2 * interval '1 second', $3)`,
        [c.target, c.lease, c.batch]);
    }
    const rows = await this.call(
      `SELECT id, generation, lease_until, dedup_key, payload, binding, attempt, run_id
         FROM baton.claim($1, $2, $3 * interval '1 second', $4)`,
      [c.tenant, c.target, c.lease, c.batch]);
    return rows.map((r) => ({ tenant: c.tenant, ...r }));
  }

  // Renews every held lease; a DU001 drops that item and aborts its handler.
  async renewAll(aborts) {
    for (const [key, { tenant, id, gen }] of [...this.held]) {
      try {
        await this.call("SELECT baton.renew($1, $2, $3, $4 * interval '1 second')",
          [tenant, id, gen, this.config.lease]);
        log('renewed', { ...this.who(tenant), id, generation: gen });
      } catch (e) {
        if (!(e instanceof LeaseLost) && e.code !== 'DU007') throw e;
        // DU007: settled at our generation between the timer and the call; nothing to do.
        if (e instanceof LeaseLost && this.held.get(key)?.gen === gen) {
          log('lease_lost', { ...this.who(tenant), id, generation: gen, during: 'renew' });
          this.held.delete(key);
          aborts.get(key)?.abort();
        }
      }
    }
  }

  // finish after success, retry after a throw; DU001 drops the item.
  async settle(item, outcome) {
    const key = heldKey(item.tenant, item.id);
    const who = this.who(item.tenant);
    const gen = this.held.get(key)?.gen;
    this.held.delete(key);
    if (gen === undefined) {
      log('dropped', { ...who, id: item.id, generation: item.generation, reason: 'lease_lost' });
      return;
    }
    try {
      if (outcome.ok) {
        const [row] = await this.call("SELECT baton.finish($1, $2, $3, 'finished', $4) AS status",
          [item.tenant, item.id, gen, outcome.result == null ? null : JSON.stringify(outcome.result)]);
        log('finished', { ...who, id: item.id, generation: gen, attempt: item.attempt, status: row.status });
      } else {
        const err = outcome.error;
        const text = `${err && err.name ? err.name : 'Error'}: ${err && err.message ? err.message : String(err)}`;
        const [row] = await this.call('SELECT baton.retry($1, $2, $3, $4) AS status',
          [item.tenant, item.id, gen, text]);
        log('retried', { ...who, id: item.id, generation: gen, attempt: item.attempt, status: row.status,
          error: JSON.stringify(String(err && err.message)) });
      }
    } catch (e) {
      if (!(e instanceof LeaseLost)) throw e;
      log('lease_lost', { ...who, id: item.id, generation: gen, during: outcome.ok ? 'finish' : 'retry' });
    }
  }

  // Shutdown: gives every held lease back at once (retry with a zero delay), each with
  // its own tenant.
  async releaseHeld() {
    for (const [key, { tenant, id, gen }] of [...this.held]) {
      try {
        const [row] = await this.call(
          "SELECT baton.retry($1, $2, $3, 'released: worker shutting down', interval '0') AS status",
          [tenant, id, gen]);
        log('released', { ...this.who(tenant), id, generation: gen, status: row.status });
      } catch (e) {
        log(e instanceof LeaseLost ? 'lease_lost' : 'release_failed',
          { ...this.who(tenant), id, generation: gen, error: JSON.stringify(String(e.message)) });
      }
      this.held.delete(key);
    }
  }

  // --- working ------------------------------------------------------------------------------
  // Works a claimed batch one item at a time, renewing all held leases every lease/3.
  async work(items) {
    for (const it of items) {
      this.held.set(heldKey(it.tenant, it.id), { tenant: it.tenant, id: it.id, gen: it.generation });
    }
    const aborts = new Map();
    let renewing = Promise.resolve();
    const timer = setInterval(() => {
      renewing = renewing.then(() => this.renewAll(aborts))
        .catch((e) => log('renew_failed', { error: JSON.stringify(String(e.message)) }));
    }, (this.config.lease / 3) * 1000);
    try {
      for (const item of items) {
        if (this.stopping) break;
        const key = heldKey(item.tenant, item.id);
        const who = this.who(item.tenant);
        if (!this.held.has(key)) {
          log('dropped', { ...who, id: item.id, generation: item.generation, reason: 'lease_lost' });
          continue;
        }
        log('claimed', { ...who, id: item.id, generation: item.generation, attempt: item.attempt });
        const ac = new AbortController();
        aborts.set(key, ac);
        const outcome = Promise.resolve()
          .then(() => this.handler(item, ac.signal))
          .then((result) => ({ ok: true, result }), (error) => ({ ok: false, error }));
        const done = await Promise.race([outcome, this.graceOver]);
        if (done.abandoned) {
          ac.abort();
          log('abandoned', { ...who, id: item.id, generation: item.generation });
          return; // releaseHeld gives the lease back
        }
        await renewing; // a renew in flight finishes before the lease is settled
        await this.settle(item, done);
      }
    } finally {
      clearInterval(timer);
      await renewing;
    }
  }

  // Waits for a notification for us, the poll timeout, a signal or a lost connection.
  async waitForWakeup() {
    if (this.woken || this.stopping) {
      this.woken = false;
      return this.stopping ? 'stop' : 'notify';
    }
    let timer;
    const why = await new Promise((resolve) => {
      timer = setTimeout(() => resolve('poll'), this.config.poll * 1000);
      this.wakeup = () => resolve('wake');
    });
    clearTimeout(timer);
    this.wakeup = null;
    if (this.stopping) return 'stop';
    if (this.woken) { this.woken = false; return 'notify'; }
    return why === 'poll' ? 'poll' : 'reconnect';
  }

  async run() {
    process.on('SIGINT', () => this.onSignal('SIGINT'));
    process.on('SIGTERM', () => this.onSignal('SIGTERM'));
    const c = this.config;
    log('starting', { ...(c.fair ? { fair: 1 } : { tenant: c.tenant }), target: c.target, lease: c.lease,
      batch: c.batch, poll: c.poll });
    try {
      await this.connect();
      while (!this.stopping) {
        try {
          const items = await this.claim();
          if (items.length > 0) {
            await this.work(items);
            continue;
          }
          log('idle');
          const why = await this.waitForWakeup();
          if (why === 'poll' && c.reap) {
            const [row] = await this.call('SELECT baton.reap() AS n');
            if (row.n > 0) log('reaped', { rows: row.n });
          }
        } catch (e) {
          if (e instanceof LeaseLost || !e.code) throw e;
          // A refusal (e.g. DU002: the tenant is fenced): wait, then try again.
          log('error', { sqlstate: e.code, error: JSON.stringify(String(e.message)) });
          this.woken = false;
          await this.waitForWakeup();
        }
      }
    } finally {
      await this.releaseHeld();
      const client = this.client;
      this.client = null; // a closing connection is not a lost one
      if (client) await client.end().catch(() => {});
      log('stopped');
    }
    return 0;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  new Worker(configFromEnv()).run().then(
    (code) => process.exit(code), // an abandoned handler may still hold timers
    (e) => { console.error(e); process.exit(1); });
}
