// Every statement the console runs. Reads go through pg_baton's views and functions,
// and, for listings the functions do not offer, plain SELECTs on the tables by their
// indexes; writes only through pg_baton's functions.

// How many index entries one page of a filtered listing looks at, at most.
export const WINDOW = 10000;
// Counts above this show as "at least".
export const COUNT_CAP = 100000;

export async function health(db) {
    const r = await db.query('SELECT name, status, value, detail, hint FROM baton.health');
    return r.rows;
}

export async function counters(db) {
    const r = await db.query(`SELECT tenant::text AS tenant, target, enqueued, claimed, finished, failed,
            retried, cancelled, reaped, redriven
       FROM baton.delivery_counters ORDER BY tenant, target`);
    return r.rows;
}

// The tenants and targets that have counters or a binding, with their depth: pending
// (baton.ready, a row per pending delivery, read by its primary key (target, tenant, rank, id)),
// counted up to COUNT_CAP, the wait of the oldest due pending delivery (ready_due), and
// leased (baton.leases, a row per claimed delivery, each looked up by the primary key of
// baton.deliveries for its target; COUNT_CAP leases at most, then leasedCapped is set).
export async function queues(db) {
    const r = await db.query(`
        WITH pairs AS (
            SELECT c.tenant, c.target FROM baton.delivery_counters c
            UNION
            SELECT t.tenant, t.target FROM baton.targets t WHERE t.tenant IS NOT NULL)
        SELECT p.tenant::text AS tenant, p.target, tn.state, pend.n AS pending,
               EXTRACT(epoch FROM pg_catalog.now() OPERATOR(pg_catalog.-) oldest.run_after)::float8 AS oldest_wait
          FROM pairs p
          LEFT JOIN baton.tenants tn ON tn.tenant OPERATOR(pg_catalog.=) p.tenant
          CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS n FROM (
                SELECT 1 FROM baton.ready r
                 WHERE r.target OPERATOR(pg_catalog.=) p.target AND r.tenant OPERATOR(pg_catalog.=) p.tenant
                 LIMIT ${COUNT_CAP + 1}) s) pend
          LEFT JOIN LATERAL (SELECT r.run_after FROM baton.ready r
                 WHERE r.target OPERATOR(pg_catalog.=) p.target AND r.tenant OPERATOR(pg_catalog.=) p.tenant
                   AND r.run_after OPERATOR(pg_catalog.<=) pg_catalog.now()
                 ORDER BY r.run_after LIMIT 1) oldest ON true
         ORDER BY p.tenant, p.target`);
    const l = await db.query(`
        SELECT l.tenant::text AS tenant, d.target, pg_catalog.count(*) AS n
          FROM (SELECT l.tenant, l.id FROM baton.leases l LIMIT ${COUNT_CAP}) l
          CROSS JOIN LATERAL (SELECT d.target FROM baton.deliveries d
                 WHERE d.tenant OPERATOR(pg_catalog.=) l.tenant AND d.id OPERATOR(pg_catalog.=) l.id LIMIT 1) d
         GROUP BY l.tenant, d.target`);
    const leased = new Map(l.rows.map((x) => [`${x.tenant} ${x.target}`, Number(x.n)]));
    const total = l.rows.reduce((sum, x) => sum + Number(x.n), 0);
    for (const row of r.rows) row.leased = leased.get(`${row.tenant} ${row.target}`) || 0;
    return { rows: r.rows, leasedCapped: total >= COUNT_CAP };
}

export async function tenants(db) {
    const r = await db.query(`SELECT tenant::text AS tenant, state FROM baton.tenants ORDER BY tenant LIMIT 500`);
    return r.rows;
}

const DELIVERY_COLUMNS = `d.id::text AS id, d.tenant::text AS tenant, d.target, d.dedup_key, d.status,
    d.generation::text AS generation, d.attempts, d.max_attempts, d.priority, d.run_after, d.lease_until,
    d.payload, d.last_error, d.run_id::text AS run_id, d.created_at`;

async function fetchByIds(db, tenant, ids, order) {
    if (!ids.length) return [];
    const r = await db.query(`SELECT ${DELIVERY_COLUMNS} FROM baton.deliveries d
        WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) ANY ($2::bigint[])`, [tenant, ids]);
    const byId = new Map(r.rows.map((row) => [row.id, row]));
    return order.map((k) => byId.get(k)).filter(Boolean);
}

// One page of a tenant's target's deliveries, newest first, through the primary key
// (tenant, id): WINDOW ids at a time, the matches among them up to limit.
// Returns { rows, next } where next is the cursor of the following page or null.
async function byId(db, { tenant, target, state, limit, after }) {
    const r = await db.query(`
        WITH w AS (SELECT d.id, d.target, d.status FROM baton.deliveries d
                    WHERE d.tenant OPERATOR(pg_catalog.=) $1
                      AND ($4::bigint IS NULL OR d.id OPERATOR(pg_catalog.<) $4)
                    ORDER BY d.id DESC LIMIT ${WINDOW}),
             m AS (SELECT w.id FROM w WHERE w.target OPERATOR(pg_catalog.=) $2
                      AND ($3::text IS NULL OR w.status OPERATOR(pg_catalog.=) $3)
                    ORDER BY w.id DESC LIMIT $5)
        SELECT (SELECT pg_catalog.array_agg(m.id::text ORDER BY m.id DESC) FROM m) AS ids,
               (SELECT pg_catalog.count(*) FROM w) AS scanned, (SELECT pg_catalog.min(w.id)::text FROM w) AS last`,
        [tenant, target, state, after ? after[0] : null, limit]);
    const { ids, scanned, last } = r.rows[0];
    const found = ids || [];
    let next = null;
    if (found.length === limit) next = [found[found.length - 1]];
    else if (Number(scanned) === WINDOW) next = [last];
    return { rows: await fetchByIds(db, tenant, found, found), next, order: 'id, newest first' };
}

// Dedup keys that start with prefix, in key order, through the unique index
// (tenant, dedup_key, target): WINDOW entries at a time.
async function byPrefix(db, { tenant, target, state, prefix, upper, limit, after }) {
    const r = await db.query(`
        WITH w AS (SELECT d.id, d.target, d.status, d.dedup_key FROM baton.deliveries d
                    WHERE d.tenant OPERATOR(pg_catalog.=) $1
                      AND d.dedup_key OPERATOR(pg_catalog.>=) $4
                      AND ($5::text IS NULL OR d.dedup_key OPERATOR(pg_catalog.<) $5)
                      AND ($6::text IS NULL OR (d.dedup_key, d.target) OPERATOR(pg_catalog.>) ($6, $7))
                    ORDER BY d.dedup_key, d.target LIMIT ${WINDOW}),
             m AS (SELECT w.id, w.dedup_key FROM w WHERE w.target OPERATOR(pg_catalog.=) $2
                      AND ($3::text IS NULL OR w.status OPERATOR(pg_catalog.=) $3)
                      AND w.dedup_key OPERATOR(pg_catalog.^@) $4
                    ORDER BY w.dedup_key LIMIT $8)
        SELECT (SELECT pg_catalog.array_agg(m.id::text ORDER BY m.dedup_key) FROM m) AS ids,
               (SELECT pg_catalog.array_agg(m.dedup_key ORDER BY m.dedup_key) FROM m) AS keys,
               (SELECT pg_catalog.count(*) FROM w) AS scanned,
               (SELECT ARRAY[w.dedup_key, w.target] FROM w ORDER BY w.dedup_key DESC, w.target DESC LIMIT 1) AS last`,
        [tenant, target, state, prefix, upper, after ? after[0] : null, after ? after[1] : null, limit]);
    const { ids, keys, scanned, last } = r.rows[0];
    const found = ids || [];
    let next = null;
    if (found.length === limit) next = [keys[keys.length - 1], target];
    else if (Number(scanned) === WINDOW) next = last;
    return { rows: await fetchByIds(db, tenant, found, found), next, order: 'dedup key' };
}

// Pending deliveries in claim order (priority, then enqueue order), through baton.ready.
async function pending(db, { tenant, target, limit, after }) {
    const r = await db.query(`
        SELECT r.rank::text AS rank, r.id::text AS id FROM baton.ready r
         WHERE r.target OPERATOR(pg_catalog.=) $2 AND r.tenant OPERATOR(pg_catalog.=) $1
           AND ($3::bigint IS NULL OR (r.rank, r.id) OPERATOR(pg_catalog.>) ($3, $4::bigint))
         ORDER BY r.rank, r.id LIMIT $5`,
        [tenant, target, after ? after[0] : null, after ? after[1] : null, limit]);
    const ids = r.rows.map((x) => x.id);
    const last = r.rows[r.rows.length - 1];
    const rows = (await fetchByIds(db, tenant, ids, ids)).filter((d) => d.status === 'pending');
    return { rows, next: r.rows.length === limit ? [last.rank, last.id] : null, order: 'claim order' };
}

// The listing a filter asks for, and the shape of its cursor. Claimed deliveries are
// found by id as the settled ones are: baton.leases' only index leads with the expiry,
// so a tenant's leases could not be found there without reading every lease.
export function deliveryListing(filter) {
    if (filter.prefix !== null) return { run: byPrefix, cursor: ['s', 's'] };
    if (filter.state === 'pending') return { run: pending, cursor: ['i', 'i'] };
    return { run: byId, cursor: ['i'] };
}

// One delivery by id, through the contract's baton.delivery().
export async function delivery(db, tenant, id) {
    const r = await db.query(`SELECT ${DELIVERY_COLUMNS}, d.binding, d.result
        FROM baton.delivery($1, $2) d`, [tenant, id]);
    return r.rows[0];
}

export async function cancelDelivery(db, tenant, id, reason) {
    const r = await db.query('SELECT baton.cancel_delivery($1, $2, $3) AS status', [tenant, id, reason]);
    return `cancel_delivery returned ${r.rows[0].status}`;
}

export async function redrive(db, tenant, target, id) {
    const r = await db.query('SELECT baton.redrive($1, $2, ARRAY[$3::bigint]) AS moved', [tenant, target, id]);
    return `redrive moved ${r.rows[0].moved} delivery(ies) to pending`;
}

// An operator's retry: gives a claimed delivery's attempt back now, fenced by the
// generation the page showed (a holder that changed since is DU001).
export async function retryNow(db, tenant, id, generation, error) {
    const r = await db.query(`SELECT baton.retry($1, $2, $3, $4, '0 seconds'::interval) AS status`,
        [tenant, id, generation, error]);
    return `retry returned ${r.rows[0].status}`;
}

export async function runs(db, { tenant, state, limit, after }) {
    const r = await db.query(`
        WITH w AS (SELECT u.id, u.status FROM baton.runs u
                    WHERE u.tenant OPERATOR(pg_catalog.=) $1
                      AND ($3::uuid IS NULL OR u.id OPERATOR(pg_catalog.>) $3)
                    ORDER BY u.id LIMIT ${WINDOW}),
             m AS (SELECT w.id FROM w WHERE $2::text IS NULL OR w.status OPERATOR(pg_catalog.=) $2
                    ORDER BY w.id LIMIT $4)
        SELECT (SELECT pg_catalog.array_agg(m.id::text ORDER BY m.id) FROM m) AS ids,
               (SELECT pg_catalog.count(*) FROM w) AS scanned,
               (SELECT w.id::text FROM w ORDER BY w.id DESC LIMIT 1) AS last`,
        [tenant, state, after ? after[0] : null, limit]);
    const found = r.rows[0].ids || [];
    let next = null;
    if (found.length === limit) next = [found[found.length - 1]];
    else if (Number(r.rows[0].scanned) === WINDOW) next = [r.rows[0].last];
    if (!found.length) return { rows: [], next };
    const rows = await db.query(`
        SELECT u.id::text AS id, u.workflow, u.version, u.status, u.owner, u.generation::text AS generation,
               u.lease_until, u.created_at, u.finished_at
          FROM baton.runs u WHERE u.tenant OPERATOR(pg_catalog.=) $1 AND u.id OPERATOR(pg_catalog.=) ANY ($2::uuid[])
         ORDER BY u.id`, [tenant, found]);
    return { rows: rows.rows, next };
}

export async function run(db, tenant, id) {
    const r = await db.query(`SELECT u.id::text AS id, u.workflow, u.version, u.status, u.inputs, u.state,
            u.owner, u.generation::text AS generation, u.lease_until, u.created_at
       FROM baton.run($1, $2) u`, [tenant, id]);
    return r.rows[0];
}

export async function runHistory(db, tenant, id) {
    const r = await db.query(`SELECT s.id::text AS id, s.stage, s.entry_seq, s.predecessor_id::text AS predecessor_id,
            s.is_current, s.status, s.attempt, s.max_attempts, s.inputs, s.result, s.error, s.retry_at,
            s.transition, s.created_at, s.started_at, s.completed_at
       FROM baton.run_history($1, $2) s`, [tenant, id]);
    return r.rows;
}

export async function markersInDoubt(db, tenant, id) {
    const r = await db.query(`SELECT m.entry_id::text AS entry_id, m."position", m.stage, m.kind, m.operation_id,
            m.generation::text AS generation, m.claimed_at
       FROM baton.markers_in_doubt($1, $2) m`, [tenant, id]);
    return r.rows;
}

export async function schedules(db, { tenant, limit, after }) {
    const r = await db.query(`
        SELECT s.tenant::text AS tenant, s.name, s.target, s.spec, s.time_zone, s.next_fire_at,
               s.last_fired_at, s.last_delivery_id::text AS last_delivery_id
          FROM baton.schedules s
         WHERE ($1::uuid IS NULL OR s.tenant OPERATOR(pg_catalog.=) $1)
           AND ($2::uuid IS NULL OR (s.tenant, s.name) OPERATOR(pg_catalog.>) ($2::uuid, $3::text))
         ORDER BY s.tenant, s.name LIMIT $4`,
        [tenant, after ? after[0] : null, after ? after[1] : null, limit]);
    const last = r.rows[r.rows.length - 1];
    return { rows: r.rows, next: r.rows.length === limit ? [last.tenant, last.name] : null };
}
