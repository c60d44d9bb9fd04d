// Checks of request parameters. A bad one throws BadRequest, which the server answers
// with 400 and the message.

export class BadRequest extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BIGINT_MAX = 9223372036854775807n;

export const DELIVERY_STATES = ['pending', 'claimed', 'finished', 'failed', 'cancelled'];
export const RUN_STATES = ['submitted', 'approved', 'running', 'completed', 'failed', 'cancelled'];

function one(q, name) {
    const all = q.getAll(name);
    if (all.length > 1) throw new BadRequest(`parameter "${name}" is given ${all.length} times`);
    const v = all[0];
    return v === undefined || v === '' ? null : v;
}

export function uuid(q, name, { required = false } = {}) {
    const v = one(q, name);
    if (v === null) {
        if (required) throw new BadRequest(`parameter "${name}" is required (a uuid)`);
        return null;
    }
    if (!UUID.test(v)) throw new BadRequest(`parameter "${name}" must be a uuid, not "${v}"`);
    return v.toLowerCase();
}

export function text(q, name, { required = false, max = 200 } = {}) {
    const v = one(q, name);
    if (v === null) {
        if (required) throw new BadRequest(`parameter "${name}" is required`);
        return null;
    }
    if ([...v].length > max) throw new BadRequest(`parameter "${name}" is longer than ${max} characters`);
    if (v.includes('\u0000')) throw new BadRequest(`parameter "${name}" holds a NUL character`);
    return v;
}

// A positive bigint, kept as a decimal string.
export function id(q, name) {
    const v = one(q, name);
    if (v === null) return null;
    if (!/^[0-9]{1,19}$/.test(v) || BigInt(v) < 1n || BigInt(v) > BIGINT_MAX) {
        throw new BadRequest(`parameter "${name}" must be a positive integer, not "${v}"`);
    }
    return v;
}

export function bigintAny(q, name) {
    const v = one(q, name);
    if (v === null) return null;
    if (!/^-?[0-9]{1,19}$/.test(v) || BigInt(v) > BIGINT_MAX || BigInt(v) < -BIGINT_MAX - 1n) {
        throw new BadRequest(`parameter "${name}" must be an integer, not "${v}"`);
    }
    return v;
}

export function limit(q, name = 'limit', { dflt = 50, max = 500 } = {}) {
    const v = one(q, name);
    if (v === null) return dflt;
    if (!/^-?[0-9]+$/.test(v)) throw new BadRequest(`parameter "${name}" must be an integer from 1 to ${max}, not "${v}"`);
    const n = Number(v);
    if (n < 1 || n > max) throw new BadRequest(`parameter "${name}" must be from 1 to ${max}, not ${v}`);
    return n;
}

export function oneOf(q, name, allowed) {
    const v = one(q, name);
    if (v === null) return null;
    if (!allowed.includes(v)) {
        throw new BadRequest(`parameter "${name}" must be one of ${allowed.join(', ')}, not "${v}"`);
    }
    return v;
}

// Only the names a page knows.
export function known(q, names) {
    for (const k of q.keys()) {
        if (!names.includes(k)) throw new BadRequest(`unknown parameter "${k}"; this page takes ${names.join(', ')}`);
    }
}

// A keyset cursor: base64url of a JSON array whose elements have the types given
// ('s' text, 'i' integer string).
export function cursor(q, name, shape) {
    const v = one(q, name);
    if (v === null) return null;
    let parsed;
    try {
        parsed = JSON.parse(Buffer.from(v, 'base64url').toString('utf8'));
    } catch {
        throw new BadRequest(`parameter "${name}" is not a cursor this page made`);
    }
    const fits = Array.isArray(parsed) && parsed.length === shape.length && parsed.every((x, i) =>
        typeof x === 'string' && (shape[i] === 's' || /^-?[0-9]{1,19}$/.test(x)));
    if (!fits) throw new BadRequest(`parameter "${name}" is not a cursor this page made`);
    return parsed;
}

export function makeCursor(values) {
    return Buffer.from(JSON.stringify(values.map(String)), 'utf8').toString('base64url');
}

// The smallest text above every text that starts with prefix, in code point order (which
// is the byte order of UTF-8, collation "C"); null when there is none.
export function prefixUpperBound(prefix) {
    const cps = [...prefix].map((c) => c.codePointAt(0));
    while (cps.length) {
        let last = cps.pop() + 1;
        if (last >= 0xd800 && last <= 0xdfff) last = 0xe000;
        if (last <= 0x10ffff) {
            cps.push(last);
            return String.fromCodePoint(...cps);
        }
    }
    return null;
}
