import { readFileSync } from 'node:fs';

// pg_baton's client side for Node.js: the worker, a producer, the workflow runner, the
// errors of the contract's SQLSTATEs and a tenant's node on Citus (see README.md).
export {
  BatonError, BY_SQLSTATE, CorruptHistory, DedupConflict, DigestMismatch, DuplicateKey, InvalidArgument, InvalidState,
  LeaseLost, NotFound, PermissionDenied, ReadOnly, TargetNotAuthorized, TenantFenced, TenantNotWritable,
  TransitionNotAllowed, fromPg, isServerError, query,
} from './errors.mjs';
export { Producer } from './producer.mjs';
export { Worker } from './worker.mjs';
export { ConfigError, configFromEnv, handlersFor, isUuid, main } from './env.mjs';
export { InDoubt, Runner, Stage } from './workflow.mjs';
export { formatLine, streamLogger } from './log.mjs';
export { tenantNode } from './citus.mjs';

// The package's version, which is the extension's default_version (pg_baton.control;
// build.sh checks it).
export const version = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
