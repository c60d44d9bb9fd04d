#!/usr/bin/env node
// A pg_baton worker in Node.js: copy this directory, replace handle(), run it.
//
//     npm ci
//     BATON_TENANT=<uuid> BATON_TARGET=email PGHOST=... PGDATABASE=... node worker.mjs
//     BATON_FAIR=1 BATON_TARGET=email PGHOST=... PGDATABASE=... node worker.mjs
//
// The loop is the pg-baton library's (clients/node; see its README.md): LISTEN for the
// wake-up, claim in batches, run handle() under a renewed lease, finish or retry, a
// fallback poll that also reaps, release on SIGTERM/SIGINT, reconnect after a lost
// connection; with BATON_FAIR=1, baton.claim_fair over every tenant that binds the
// target to the worker's role (poll only). Here the library is a file: dependency,
// installed as a copy (.npmrc: install-links=true, so that pg is installed beside it);
// outside this repository, depend on the tarball clients/node/build.sh makes instead.
//
// Configuration (environment): PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD or
// BATON_DSN; BATON_TENANT, BATON_TARGET (several: comma-separated), BATON_FAIR,
// BATON_LEASE_SECONDS, BATON_BATCH, BATON_CONCURRENCY, BATON_POLL_SECONDS, BATON_LISTEN,
// BATON_SHUTDOWN_GRACE_SECONDS, BATON_REAP (clients/node/src/env.mjs has their defaults).
// Every event is one line on stdout: "TIMESTAMP worker[node] EVENT key=value ...".
import { main } from 'pg-baton';

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

if (import.meta.url === `file://${process.argv[1]}`) main(handle);
