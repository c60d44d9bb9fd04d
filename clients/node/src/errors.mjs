// pg_baton's refusals as JavaScript errors, one class per SQLSTATE of the contract. The
// classes of DU001...DU009 bear the names of the contract's table of errors, but two:
// TenantNotWritable is tenant_fenced (DU002, also exported as TenantFenced) and
// DuplicateKey is dedup_conflict (DU009, also DedupConflict).
//
// Every pg_baton function refuses with ereport(ERROR) and a SQLSTATE; pg (node-postgres)
// rejects with a DatabaseError whose code, detail and hint carry them. fromPg() turns
// such an error into the class of its SQLSTATE, keeping the parts.

// A refusal of a pg_baton function: its SQLSTATE, message, detail and hint.
export class BatonError extends Error {
  static sqlstate = '';

  constructor(message, { sqlstate = '', detail = null, hint = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.sqlstate = sqlstate || new.target.sqlstate;
    this.detail = detail ?? null;
    this.hint = hint ?? null;
  }

  toString() {
    return this.sqlstate ? `${this.name} ${this.sqlstate}: ${this.message}` : `${this.name}: ${this.message}`;
  }
}

// DU001: the generation no longer holds the delivery or run (reaped, cancelled, claimed
// or acquired again).
export class LeaseLost extends BatonError { static sqlstate = 'DU001'; }
// DU002: the tenant does not exist or is not active (quiescing, fenced, deleted).
export class TenantNotWritable extends BatonError { static sqlstate = 'DU002'; }
// DU003: a decision names a stage outside the allowed ones, or is malformed.
export class TransitionNotAllowed extends BatonError { static sqlstate = 'DU003'; }
// DU004: a run's saved stages are inconsistent.
export class CorruptHistory extends BatonError { static sqlstate = 'DU004'; }
// DU005: the role is not a member of the role bound to the target.
export class TargetNotAuthorized extends BatonError { static sqlstate = 'DU005'; }
// DU006: an approval's digest differs from the run's inputs.
export class DigestMismatch extends BatonError { static sqlstate = 'DU006'; }
// DU007: the call is not valid in the object's current state.
export class InvalidState extends BatonError { static sqlstate = 'DU007'; }
// DU008: the run, delivery, stage, workflow or binding does not exist in that tenant.
export class NotFound extends BatonError { static sqlstate = 'DU008'; }
// DU009: an enqueue or submit reuses its key with another payload, binding or inputs.
export class DuplicateKey extends BatonError { static sqlstate = 'DU009'; }
// 22023 (or 22004, a NULL argument): bad input; nothing was changed.
export class InvalidArgument extends BatonError { static sqlstate = '22023'; }
// 42501: the role may not call this function.
export class PermissionDenied extends BatonError { static sqlstate = '42501'; }
// 25006: a write in a read-only transaction or on a standby.
export class ReadOnly extends BatonError { static sqlstate = '25006'; }

// The contract's names of the two classes named otherwise (tenant_fenced, dedup_conflict).
export const TenantFenced = TenantNotWritable;
export const DedupConflict = DuplicateKey;

export const BY_SQLSTATE = Object.freeze({
  ...Object.fromEntries([LeaseLost, TenantNotWritable, TransitionNotAllowed, CorruptHistory,
    TargetNotAuthorized, DigestMismatch, InvalidState, NotFound, DuplicateKey, InvalidArgument,
    PermissionDenied, ReadOnly].map((cls) => [cls.sqlstate, cls])),
  22004: InvalidArgument,
});

// True when `e` came from the server: pg's DatabaseError, with the message's severity and
// a five-character SQLSTATE. A Node.js system error (EPIPE, EPERM...) has a code but no
// severity. (By its fields rather than instanceof: the caller's pg may be another copy.)
export function isServerError(e) {
  return Boolean(e && typeof e.severity === 'string' && typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code));
}

// The BatonError of a server error's SQLSTATE (BatonError itself for any other SQLSTATE);
// anything that is not a server error (a lost connection, a bug) is returned as it is.
export function fromPg(e) {
  if (e instanceof BatonError || !isServerError(e)) return e;
  const cls = BY_SQLSTATE[e.code] ?? BatonError;
  return new cls(e.message, { sqlstate: e.code, detail: e.detail, hint: e.hint, cause: e });
}

// Runs client.query(sql, params) and returns its rows; a refusal rejects as its BatonError.
export async function query(client, sql, params = []) {
  try {
    return (await client.query(sql, params)).rows;
  } catch (e) {
    throw fromPg(e);
  }
}
