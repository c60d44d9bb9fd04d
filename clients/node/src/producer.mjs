// Producing work: baton.enqueue, baton.enqueue_keyed and baton.enqueue_batch, with the
// refusals as the errors of errors.mjs.
import { query } from './errors.mjs';

// A JSON value as a query parameter of type jsonb (pg sends arrays as Postgres arrays).
const json = (v) => JSON.stringify(v ?? {});

export class Producer {
  // `client`: a pg Client or Pool (anything with query()); each call runs in the
  // client's transaction, if the caller opened one, else as its own.
  constructor(client) {
    this.client = client;
  }

  // Enqueues one delivery; resolves with what baton.enqueue returns, its id (a bigint,
  // which pg gives as a string): a new one, or the one that holds dedupKey already
  // (DuplicateKey when that one carries another payload, binding or key). Options:
  // payload, binding, runAfter (a Date or an ISO string), priority, maxAttempts, runId,
  // key (baton.enqueue_keyed).
  async enqueue(tenant, target, dedupKey, {
    payload = {}, binding = {}, runAfter = null, priority = 0, maxAttempts = 3, runId = null, key = null,
  } = {}) {
    const args = [tenant, target, dedupKey, json(payload), json(binding), runAfter, priority, maxAttempts, runId];
    const rows = key == null
      ? await query(this.client,
        'SELECT baton.enqueue($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7, $8, $9) AS id', args)
      : await query(this.client,
        'SELECT baton.enqueue_keyed($1, $2, $3, $10, $4::jsonb, $5::jsonb, $6, $7, $8, $9) AS id', [...args, key]);
    return rows[0].id;
  }

  // Enqueues the items in one call, all or nothing (baton.enqueue_batch): each an object
  // of target, dedup_key and the optional payload, binding, run_after, priority,
  // max_attempts, run_id, key (the contract's field names). Resolves with [{ id,
  // inserted }] per item, in order (id a string; inserted: false when the key held one
  // already).
  async enqueueBatch(tenant, items) {
    const rows = await query(this.client,
      'SELECT id, inserted FROM baton.enqueue_batch($1, $2::jsonb) WITH ORDINALITY AS b(id, inserted, n) ORDER BY n',
      [tenant, JSON.stringify(items)]);
    return rows.map((r) => ({ id: r.id, inserted: r.inserted }));
  }
}
