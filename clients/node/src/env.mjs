// A worker configured from the environment, as the example worker runs it:
//
//   connection      libpq-style PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD (read by
//                   pg), or BATON_DSN (a postgresql:// URL)
//   BATON_TENANT    tenant uuid (required, unless BATON_FAIR=1; refused with it)
//   BATON_TARGET    target, or several separated by commas (default: every target that
//                   main() has a handler for)
//   BATON_FAIR                     1: claim_fair over every tenant served, poll only
//   BATON_LEASE_SECONDS            lease of a claim (default 30)
//   BATON_BATCH                    max_items of a claim (default 10)
//   BATON_CONCURRENCY              handlers running at once (default 1)
//   BATON_POLL_SECONDS             fallback poll when no notification comes (default 10)
//   BATON_LISTEN                   1 (default): LISTEN; 0: poll only
//   BATON_SHUTDOWN_GRACE_SECONDS   how long a shutdown waits for running handlers (default 10)
//   BATON_REAP                     1 (default): call baton.reap() on each fallback poll
import { Worker } from './worker.mjs';

export class ConfigError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// True when `text` is a uuid in its hyphenated form (any case), as a tenant is given.
export const isUuid = (text) => typeof text === 'string' && UUID.test(text);

// A non-negative number from the environment, or the default.
function envNumber(env, name, fallback) {
  const raw = env[name] ?? '';
  if (raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0) throw new ConfigError(`${name} must be a non-negative number`);
  return v;
}

// The Worker options the environment sets (all but the handlers), and its targets.
export function configFromEnv(env = process.env) {
  const tenant = env.BATON_TENANT ?? '';
  const targets = (env.BATON_TARGET ?? '').split(',').map((t) => t.trim()).filter((t) => t !== '');
  const fair = !['', '0'].includes(env.BATON_FAIR ?? '0');
  if (fair && tenant) {
    throw new ConfigError('BATON_TENANT must not be set with BATON_FAIR=1'
      + ' (a fair worker serves every tenant that binds the target to its role)');
  }
  if (!fair && !tenant) throw new ConfigError('BATON_TENANT and BATON_TARGET are required');
  if (tenant && !isUuid(tenant)) throw new ConfigError(`BATON_TENANT is not a uuid: ${tenant}`);
  return {
    connection: env.BATON_DSN ? { connectionString: env.BATON_DSN } : {},
    tenant: fair ? '' : tenant.toLowerCase(), // the canonical form
    targets,
    fair,
    lease: Math.max(1, envNumber(env, 'BATON_LEASE_SECONDS', 30)),
    batch: Math.max(1, Math.floor(envNumber(env, 'BATON_BATCH', 10))),
    concurrency: Math.max(1, Math.floor(envNumber(env, 'BATON_CONCURRENCY', 1))),
    poll: Math.max(0.1, envNumber(env, 'BATON_POLL_SECONDS', 10)),
    listen: (env.BATON_LISTEN ?? '1') !== '0' && !fair,
    grace: envNumber(env, 'BATON_SHUTDOWN_GRACE_SECONDS', 10),
    reap: (env.BATON_REAP ?? '1') !== '0',
  };
}

// The handler of each target: `handlers` is one function (for every target of
// BATON_TARGET) or an object { target: function } (BATON_TARGET, if set, picks some).
export function handlersFor(targets, handlers) {
  if (typeof handlers === 'function') {
    if (targets.length === 0) throw new ConfigError('BATON_TARGET is required');
    return Object.fromEntries(targets.map((t) => [t, handlers]));
  }
  const chosen = targets.length > 0 ? targets : Object.keys(handlers ?? {});
  if (chosen.length === 0) throw new ConfigError('BATON_TARGET is required');
  for (const t of chosen) {
    if (!Object.hasOwn(handlers, t) || typeof handlers[t] !== 'function') {
      throw new ConfigError(`BATON_TARGET: no handler for target ${t}`);
    }
  }
  return Object.fromEntries(chosen.map((t) => [t, handlers[t]]));
}

// Runs a worker configured from the environment with `handlers`, then exits the process
// with its status (a configuration error: 2, a crash: 1). `options` are passed to the
// Worker (e.g. log, name) over the environment's.
export function main(handlers, options = {}) {
  const { env = process.env, ...rest } = options;
  let worker;
  try {
    const { targets, ...config } = configFromEnv(env);
    worker = new Worker({ ...config, handlers: handlersFor(targets, handlers), ...rest });
  } catch (e) {
    if (!(e instanceof ConfigError || e instanceof TypeError)) throw e;
    process.stderr.write(`worker: ${e.message}\n`);
    process.exit(2);
  }
  return worker.run().then(
    (code) => process.exit(code), // an abandoned handler may still hold timers
    (e) => { process.stderr.write(`worker: ${e.stack || e}\n`); process.exit(1); });
}
