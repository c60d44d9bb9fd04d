// pg_baton's worker: claims deliveries of one or more targets, runs each target's handler
// on them under renewed leases, finishes or retries them, waits for the wake-up, and
// releases what it holds on shutdown.
//
//   1. LISTEN on the wake-up channel of each (tenant, target), named by
//      baton.wakeup_channel() (before the first claim, so no wake-up falls in between);
//   2. when a handler slot is free and no claimed item waits for one, claim up to `batch`
//      deliveries of a woken target (the targets in turns) with a lease of `lease`
//      seconds; a target whose claim returns nothing is not claimed from again until its
//      notification or the next fallback poll. Claimed items wait in order for a slot;
//   3. run up to `concurrency` handlers at once, handler(item, signal), while a timer
//      renews every held lease (running or waiting for a slot) every lease/3; then finish
//      (the handler resolved: its value is the result) or retry (it threw, or resolved
//      with a value JSON cannot hold: the row is pending again after the backoff, or
//      failed once its attempts are spent). DU001 (lease lost: reaped, cancelled or
//      claimed by someone else) drops the item and aborts its `signal`: its new holder
//      owns it now;
//   4. with nothing to claim, wait for a notification, a free slot, a stop, or the
//      fallback poll: every `poll` seconds every target counts as woken (this catches
//      retries and run_after items, which send no notification) and baton.reap() is
//      called (a refused reap is logged as reap_failed; claiming goes on);
//   5. on stop() (SIGINT, SIGTERM): stop claiming, release the items waiting for a slot
//      at once, give the running handlers up to `grace` seconds (a second stop cuts it
//      short) and settle those that end, abort the others' signals, then release every
//      lease still held with retry(..., delay => 0): the item is pending again at once.
//      The interrupted attempt counts, so an item on its last attempt is failed;
//   6. a lost connection is reopened (with backoff) and the interrupted call repeated:
//      renew, finish and retry are fenced by generation, not by session, so held leases
//      survive a reconnect.
//
// With `fair` the worker serves its targets for every tenant instead of one: it claims
// with baton.claim_fair(target, lease, batch), which leases deliveries of each tenant that
// binds the target to a role the worker's user is a member of, tenant after tenant in
// turns. Each item carries its tenant, and every renew, finish, retry and release names
// it. A fair pool has no wake-up channel: it polls.
import pg from 'pg';

import { BatonError, LeaseLost, fromPg, isServerError } from './errors.mjs';
import { quoted, streamLogger } from './log.mjs';

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// The key of a held lease: ids are unique per tenant, and a fair worker holds leases of
// many tenants. Ids and generations are bigints, kept as the strings pg gives.
const heldKey = (tenant, id) => `${tenant}/${id}`;

// A handler's value as the text of finish's jsonb result (null for none). A value JSON
// cannot hold (a BigInt, a cycle) throws: the attempt has failed, as if the handler threw.
function resultJson(value) {
  if (value == null) return null;
  try {
    return JSON.stringify(value) ?? null;
  } catch (e) {
    throw new TypeError(`the handler's result is not JSON: ${e.message}`, { cause: e });
  }
}

// True when an error means the connection is gone, not a refusal by the server.
function isConnectionError(e) {
  const code = e && e.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true; // ECONNRESET, EPIPE...
  if (isServerError(e)) return (code.startsWith('08') && code !== '08P01') || code.startsWith('57P');
  return /terminated|connection|closed|socket|ended/i.test(String(e && e.message));
}

const DEFAULTS = {
  fair: false, lease: 30, batch: 10, concurrency: 1, poll: 10, listen: true, grace: 10, reap: true,
};

export class Worker {
  // options:
  //   handlers     { target: async (item, signal) => result } — one handler per target;
  //                or `target` and `handler` for one
  //   tenant       the tenant's uuid (required unless fair)
  //   fair         claim with baton.claim_fair for every tenant served (no tenant; polls)
  //   connection   pg.Client's configuration (default: libpq's PG* environment)
  //   lease, batch, concurrency, poll, grace   seconds / counts (see the defaults above)
  //   listen       LISTEN for wake-ups (default true; never with fair)
  //   reap         call baton.reap() on each fallback poll (default true)
  //   log          (event, fields) => void; default: lines on stdout as worker[name]
  //   name         the log's worker[NAME] (default "node")
  //   signals      stop on SIGINT and SIGTERM while running (default true)
  constructor(options) {
    const given = Object.entries(options ?? {}).filter(([, v]) => v !== undefined);
    const o = { ...DEFAULTS, ...Object.fromEntries(given) };
    const handlers = o.handlers ?? (o.target !== undefined ? { [o.target]: o.handler } : {});
    this.targets = Object.keys(handlers);
    if (this.targets.length === 0) throw new TypeError('Worker: no target (handlers or target and handler)');
    for (const t of this.targets) {
      if (typeof handlers[t] !== 'function') throw new TypeError(`Worker: the handler of target ${t} is not a function`);
    }
    if (o.fair && o.tenant) throw new TypeError('Worker: a fair worker has no tenant (it serves every tenant bound to it)');
    if (!o.fair && !o.tenant) throw new TypeError('Worker: tenant is required (or fair)');
    this.handlers = handlers;
    this.config = {
      tenant: o.fair ? '' : String(o.tenant).toLowerCase(),
      fair: Boolean(o.fair),
      lease: Math.max(1, Number(o.lease)),
      batch: Math.max(1, Math.floor(Number(o.batch))),
      concurrency: Math.max(1, Math.floor(Number(o.concurrency))),
      poll: Math.max(0.1, Number(o.poll)),
      listen: Boolean(o.listen) && !o.fair, // a fair pool has no channel
      grace: Math.max(0, Number(o.grace)),
      reap: Boolean(o.reap),
    };
    this.connectionConfig = { application_name: 'baton-worker-node', ...(o.connection ?? {}) };
    this.log = o.log ?? streamLogger(o.name ?? 'node');
    this.useSignals = o.signals ?? true;

    this.client = null;
    this.connecting = null;
    this.channels = new Map(); // wake-up channel -> target
    this.held = new Map(); // key(tenant, id) -> { tenant, id, gen, target } of every lease held
    this.queue = []; // claimed items waiting for a handler slot
    this.running = new Map(); // key(tenant, id) -> { item, ac, task, handlerDone, abandoned }
    this.woken = new Set(); // targets that may have work: notified, or polled
    this.turn = 0; // the target whose claim comes first in the next round
    this.renewing = null; // the renewal under way
    this.stops = 0;
    this.closing = false;
    this.waiter = null;
    this.nudged = false;
    this.graceOver = new Promise((resolve) => { this.endGrace = resolve; });
  }

  get stopping() { return this.stops > 0; }

  // The first call stops claiming and starts the grace period; the second ends it.
  stop(reason = 'stop') {
    this.stops += 1;
    this.log('signal', { name: reason, grace: this.stops > 1 ? 0 : this.config.grace });
    if (this.stops === 1) {
      this.graceTimer = setTimeout(this.endGrace, this.config.grace * 1000);
    } else {
      clearTimeout(this.graceTimer);
      this.endGrace();
    }
    this.nudge();
  }

  // Wakes the main loop (a notification, a free slot, a stop, a lost connection); a nudge
  // while the loop is busy is kept for its next wait.
  nudge() {
    if (this.waiter) this.waiter();
    else this.nudged = true;
  }

  // Waits for a nudge ('nudge') or `seconds` ('timeout').
  waitEvent(seconds) {
    if (this.nudged) {
      this.nudged = false;
      return Promise.resolve('nudge');
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.waiter = null; resolve('timeout'); }, seconds * 1000);
      this.waiter = () => { clearTimeout(timer); this.waiter = null; resolve('nudge'); };
    });
  }

  // The fields before id= of an item's log lines: its tenant when fair, its target when
  // the worker serves several.
  who(tenant, target) {
    const fields = this.config.fair ? { tenant } : {};
    if (this.targets.length > 1) fields.target = target;
    return fields;
  }

  // --- the connection ------------------------------------------------------------------------
  // The open connection, or a new one (one connect at a time).
  connection() {
    if (this.client) return Promise.resolve(this.client);
    if (!this.connecting) this.connecting = this.connect().finally(() => { this.connecting = null; });
    return this.connecting;
  }

  // Opens the connection (each statement its own transaction) and LISTENs, with backoff.
  async connect() {
    let delay = 200;
    let tries = 0;
    for (;;) {
      const client = new pg.Client(this.connectionConfig);
      client.on('error', (e) => { if (this.client === client) this.dropConnection(e); });
      client.on('end', () => { if (this.client === client) this.dropConnection(new Error('connection ended')); });
      client.on('notification', (msg) => {
        const target = this.channels.get(msg.channel); // only enqueues for our targets notify our channels
        if (target === undefined) return;
        this.woken.add(target);
        this.nudge();
      });
      try {
        await client.connect();
        if (this.config.listen) {
          // The channel's name is private to roles that may claim here; it is asked for
          // on every connect (a changed secret renames it).
          this.channels.clear();
          for (const target of this.targets) {
            const r = await client.query('SELECT baton.wakeup_channel($1, $2) AS channel', [this.config.tenant, target]);
            this.channels.set(r.rows[0].channel, target);
            await client.query(`LISTEN ${client.escapeIdentifier(r.rows[0].channel)}`);
          }
        }
        const pid = (await client.query('SELECT pg_catalog.pg_backend_pid() AS pid')).rows[0].pid;
        this.client = client;
        this.log('connected', { pid, listen: this.config.listen ? 1 : 0 });
        for (const t of this.targets) this.woken.add(t); // anything enqueued while away notified nobody
        this.nudge();
        return client;
      } catch (e) {
        client.end().catch(() => {});
        if (isServerError(e) && !isConnectionError(e)) throw fromPg(e); // a refusal: not retried
        this.log('connect_failed', { error: quoted(e.message), retry_in: delay / 1000 });
        tries += 1;
        if (this.closing || (this.stopping && (this.stops > 1 || tries > 3))) throw e;
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  dropConnection(why) {
    const c = this.client;
    if (!c) return;
    this.client = null;
    this.log('connection_lost', { error: quoted(why && why.message) });
    c.end().catch(() => {});
    this.nudge();
  }

  // Runs one statement and resolves with its rows; a refusal rejects as its BatonError. On
  // a lost connection it reconnects and runs the statement again: safe for renew, finish
  // and retry, which are fenced by generation. A repeated finish answers the stored
  // status, and so does a repeated retry that spent the last attempt (failed at the same
  // generation); a repeated retry that had made the row pending again gets DU001 (the
  // generation moved on) and is logged as lease_lost. A claim whose answer was lost
  // leaves its rows claimed until their leases expire and someone reaps them. A statement
  // that loses ten fresh connections in a row is given up.
  async call(sql, params = []) {
    for (let tries = 1; ; tries++) {
      const client = await this.connection();
      try {
        return (await client.query(sql, params)).rows;
      } catch (e) {
        if (!isConnectionError(e)) throw fromPg(e);
        if (this.client === client) this.dropConnection(e);
        if ((this.closing && this.stops > 1) || tries >= 10) throw e;
      }
    }
  }

  // --- the lease calls -------------------------------------------------------------------------
  async claim(target) {
    const c = this.config;
    const rows = c.fair
      ? await this.call(
        `SELECT tenant, id, generation, lease_until, dedup_key, payload, binding, attempt, run_id
           FROM baton.claim_fair($1, pg_catalog.make_interval(secs => $2), $3)`,
        [target, c.lease, c.batch])
      : await this.call(
        `SELECT id, generation, lease_until, dedup_key, payload, binding, attempt, run_id
           FROM baton.claim($1, $2, pg_catalog.make_interval(secs => $3), $4)`,
        [c.tenant, target, c.lease, c.batch]);
    return rows.map((r) => ({ tenant: c.tenant, ...r, target })); // a fair row names its tenant
  }

  // Claims from the woken targets in turns: the first that has work gives the batch; one
  // that has none is not woken any more.
  async claimRound() {
    const n = this.targets.length;
    for (let i = 0; i < n; i++) {
      const target = this.targets[(this.turn + i) % n];
      if (!this.woken.has(target)) continue;
      this.woken.delete(target); // a notification from now on wakes it again
      const items = await this.claim(target);
      if (items.length > 0) {
        this.woken.add(target); // it may have more
        this.turn = (this.turn + i + 1) % n;
        for (const it of items) {
          this.held.set(heldKey(it.tenant, it.id), { tenant: it.tenant, id: it.id, gen: it.generation, target });
        }
        return items;
      }
    }
    return [];
  }

  // Starts a renewal of every held lease, unless one is still under way (its calls
  // waiting for a lost connection to come back).
  renewSoon() {
    if (this.renewing) return;
    this.renewing = this.renewAll()
      .catch((e) => this.log('renew_failed', { error: quoted(e.message) }))
      .finally(() => { this.renewing = null; });
  }

  // Renews every held lease; DU001 drops that item and aborts its handler.
  async renewAll() {
    for (const [key, h] of [...this.held]) {
      if (this.held.get(key) !== h) continue; // settled since
      const who = { ...this.who(h.tenant, h.target), id: h.id, generation: h.gen };
      try {
        await this.call('SELECT baton.renew($1, $2, $3, pg_catalog.make_interval(secs => $4))',
          [h.tenant, h.id, h.gen, this.config.lease]);
        this.log('renewed', who);
      } catch (e) {
        if (!(e instanceof BatonError)) throw e;
        if (this.held.get(key) !== h) continue; // settled at our generation meanwhile
        if (e instanceof LeaseLost) {
          this.log('lease_lost', { ...who, during: 'renew' });
          this.held.delete(key);
          this.running.get(key)?.ac.abort(e);
        } else { // e.g. DU002 (the tenant fenced): tried again next time
          this.log('renew_failed', { ...who, sqlstate: e.sqlstate, error: quoted(e.message) });
        }
      }
    }
  }

  // finish after success (outcome.result: the result's JSON text or null), retry after a
  // failure; DU001 drops the item.
  async settle(item, outcome) {
    const key = heldKey(item.tenant, item.id);
    const who = { ...this.who(item.tenant, item.target), id: item.id };
    const h = this.held.get(key);
    if (!h) {
      this.log('dropped', { ...who, generation: item.generation, reason: 'lease_lost' });
      return;
    }
    this.held.delete(key);
    try {
      if (outcome.ok) {
        const [row] = await this.call("SELECT baton.finish($1, $2, $3, 'finished', $4::jsonb) AS status",
          [item.tenant, item.id, h.gen, outcome.result]);
        this.log('finished', { ...who, generation: h.gen, attempt: item.attempt, status: row.status });
      } else {
        const err = outcome.error;
        const text = err instanceof Error ? `${err.name}: ${err.message}` : `Error: ${String(err)}`;
        const [row] = await this.call('SELECT baton.retry($1, $2, $3, $4) AS status',
          [item.tenant, item.id, h.gen, text]);
        this.log('retried', {
          ...who, generation: h.gen, attempt: item.attempt, status: row.status,
          error: quoted(err instanceof Error ? err.message : err),
        });
      }
    } catch (e) {
      if (e instanceof LeaseLost) {
        this.log('lease_lost', { ...who, generation: h.gen, during: outcome.ok ? 'finish' : 'retry' });
      } else { // e.g. DU002: the lease is left to expire and be reaped
        this.log('settle_failed', { ...who, generation: h.gen, sqlstate: e.sqlstate ?? e.code, error: quoted(e.message) });
      }
    }
  }

  // Gives one held lease back at once (retry with a zero delay), with its own tenant.
  async release(key) {
    const h = this.held.get(key);
    if (!h) return;
    this.held.delete(key);
    const who = { ...this.who(h.tenant, h.target), id: h.id, generation: h.gen };
    try {
      const [row] = await this.call(
        "SELECT baton.retry($1, $2, $3, 'released: worker shutting down', interval '0') AS status",
        [h.tenant, h.id, h.gen]);
      this.log('released', { ...who, status: row.status });
    } catch (e) {
      if (e instanceof LeaseLost) this.log('lease_lost', { ...who, during: 'release' });
      else this.log('release_failed', { ...who, error: quoted(e.message) });
    }
  }

  // --- working -------------------------------------------------------------------------------
  // Starts waiting items in the free handler slots, in claim order.
  startQueued() {
    while (!this.stopping && this.running.size < this.config.concurrency && this.queue.length > 0) {
      const item = this.queue.shift();
      const key = heldKey(item.tenant, item.id);
      const who = { ...this.who(item.tenant, item.target), id: item.id, generation: item.generation };
      if (!this.held.has(key)) { // lost while it waited for a slot
        this.log('dropped', { ...who, reason: 'lease_lost' });
        continue;
      }
      this.log('claimed', { ...who, attempt: item.attempt });
      const entry = { item, ac: new AbortController(), handlerDone: false, abandoned: false };
      this.running.set(key, entry);
      entry.task = this.runHandler(entry).finally(() => {
        this.running.delete(key);
        this.startQueued();
        this.nudge();
      });
    }
  }

  // Runs the item's handler, then settles the item (unless the shutdown abandoned it).
  async runHandler(entry) {
    const { item } = entry;
    let outcome;
    try {
      outcome = { ok: true, result: resultJson(await this.handlers[item.target](item, entry.ac.signal)) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    entry.handlerDone = true;
    if (!entry.abandoned) await this.settle(item, outcome);
  }

  // Every `poll` seconds: every target counts as woken, and baton.reap(). A refused reap
  // (e.g. 42501, 57014) is logged; the targets stay woken.
  async poll() {
    for (const t of this.targets) this.woken.add(t);
    if (!this.config.reap) return;
    try {
      const [row] = await this.call('SELECT baton.reap() AS n');
      if (row.n > 0) this.log('reaped', { rows: row.n });
    } catch (e) {
      if (!(e instanceof BatonError)) throw e;
      this.log('reap_failed', { sqlstate: e.sqlstate, error: quoted(e.message) });
    }
  }

  // Runs until stop(): resolves with the exit status (0).
  async run() {
    const c = this.config;
    const onSigint = () => this.stop('SIGINT');
    const onSigterm = () => this.stop('SIGTERM');
    if (this.useSignals) {
      process.on('SIGINT', onSigint);
      process.on('SIGTERM', onSigterm);
    }
    this.log('starting', {
      ...(c.fair ? { fair: 1 } : { tenant: c.tenant }), target: this.targets.join(','), lease: c.lease,
      batch: c.batch, concurrency: c.concurrency, poll: c.poll,
    });
    const renewTimer = setInterval(() => { if (this.held.size > 0) this.renewSoon(); }, (c.lease / 3) * 1000);
    let nextPoll = Date.now() + c.poll * 1000;
    let idle = false;
    try {
      await this.connection();
      while (!this.stopping) {
        try {
          if (!this.client) await this.connection(); // lost: reopen now, not at the next call
          if (Date.now() >= nextPoll) {
            nextPoll = Date.now() + c.poll * 1000;
            await this.poll();
          }
          this.startQueued();
          if (this.queue.length === 0 && this.running.size < c.concurrency && this.woken.size > 0) {
            const items = await this.claimRound();
            if (items.length > 0) {
              idle = false;
              this.queue.push(...items);
              continue;
            }
          }
          if (this.running.size === 0 && this.queue.length === 0 && this.woken.size === 0) {
            if (!idle) this.log('idle');
            idle = true;
          }
          // A notification, a free slot, a stop, a lost connection, or the next poll.
          await this.waitEvent(Math.max(0, nextPoll - Date.now()) / 1000);
        } catch (e) {
          if (!(e instanceof BatonError)) throw e;
          // A refusal (e.g. DU002: the tenant is fenced): wait for the next poll.
          this.log('error', { sqlstate: e.sqlstate, error: quoted(e.message) });
          this.woken.clear();
          await this.waitEvent(Math.max(0, nextPoll - Date.now()) / 1000);
        }
      }
    } finally {
      if (!this.stopping) this.stop('error');
      await this.shutdown();
      clearInterval(renewTimer);
      if (this.useSignals) {
        process.off('SIGINT', onSigint);
        process.off('SIGTERM', onSigterm);
      }
    }
    return 0;
  }

  // Releases the items waiting for a slot, waits for the running handlers up to the grace
  // period (settling those that end), abandons the rest, releases every lease still held,
  // closes the connection.
  async shutdown() {
    const entries = [...this.running.values()];
    this.log('stopping', { running: entries.length, waiting: this.queue.length, grace: this.stops > 1 ? 0 : this.config.grace });
    const waiting = this.queue;
    this.queue = [];
    for (const item of waiting) await this.release(heldKey(item.tenant, item.id)); // never started
    if (entries.length > 0) {
      await Promise.race([Promise.all(entries.map((e) => e.task)), this.graceOver]);
      for (const e of entries) {
        if (e.handlerDone) continue;
        e.abandoned = true;
        e.ac.abort(new Error('worker shutting down'));
        this.log('abandoned', { ...this.who(e.item.tenant, e.item.target), id: e.item.id, generation: e.item.generation });
      }
      await Promise.all(entries.filter((e) => !e.abandoned).map((e) => e.task)); // settling now
    }
    clearTimeout(this.graceTimer);
    this.closing = true;
    await this.renewing;
    for (const key of [...this.held.keys()]) await this.release(key);
    const client = this.client;
    this.client = null; // a closing connection is not a lost one
    if (client) await client.end().catch(() => {});
    this.log('stopped');
  }
}
