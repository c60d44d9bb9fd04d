// The limits of keys (see key_admission.hpp).
#include "pg/deliveries/claim_hints.hpp"
#include "pg/deliveries/key_admission.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/locks.hpp"

namespace baton::pg::key_admission {

namespace {

// A statement prepared on first use and kept for the backend's life, run by SPI without
// a C++ frame in between (every caller here is Postgres code).
struct Plan {
    const char* sql;
    int nargs;
    Oid types[8];
    SPIPlanPtr plan;
};

// Runs `p` inside the caller's SPI connection: its row count.
std::uint64_t run(Plan& p, Datum* values, const char* nulls) {
    if (p.plan == nullptr) {
        SPIPlanPtr plan = SPI_prepare(p.sql, p.nargs, p.types);
        if (plan == nullptr) elog(ERROR, "pg_baton could not prepare a statement: %s", SPI_result_code_string(SPI_result));
        if (SPI_keepplan(plan) != 0) elog(ERROR, "pg_baton could not keep a prepared statement");
        p.plan = plan;
    }
    int rc = SPI_execute_plan(p.plan, values, nulls, false, 0);
    if (rc < 0) elog(ERROR, "pg_baton could not run a statement of key limits: %s", SPI_result_code_string(rc));
    return SPI_processed;
}

void connect() {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton could not connect to SPI");
}

std::int32_t int32_at(std::uint64_t row, int col) {
    bool isnull = false;
    Datum d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
    return isnull ? 0 : DatumGetInt32(d);
}

// The lock of (tenant, target)'s limits: every admission shares it until its
// transaction ends, a change of a limit (set()) takes it alone, so that no admission
// reads a limit that a change in flight is about to replace.
void lock_limits(const pg_uuid_t* tenant, const text* target, LOCKMODE mode) {
    uint64 h = hash_bytes_extended(tenant->data, UUID_LEN, 0);
    h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(target)),
                            static_cast<int>(VARSIZE_ANY_EXHDR(target)), h);
    LOCKTAG tag = locks::tag(locks::Purpose::kKeyLimits, h);
    (void)LockAcquire(&tag, mode, false, false);
}

// The place of a waiting delivery: 0 for an ordered key (enqueue order alone), else the
// claim order's rank (the priority negated).
std::int64_t waiting_rank(const Limit& limit, std::int32_t priority) {
    return limit.ordered ? 0 : side_rows::rank_of(priority);
}

#define KEY_IS(ALIAS)                                                                             \
    ALIAS ".tenant OPERATOR(pg_catalog.=) $1 AND " ALIAS ".target OPERATOR(pg_catalog.=) $2 AND " \
    ALIAS ".key OPERATOR(pg_catalog.=) $3"

// The key's own limit, else the target's for every key ('' sorts first).
Plan g_find = {
    "SELECT l.max_leased, l.ordered FROM baton.key_limits l WHERE l.tenant OPERATOR(pg_catalog.=) $1 "
    "AND l.target OPERATOR(pg_catalog.=) $2 AND l.key OPERATOR(pg_catalog.=) ANY (ARRAY[$3, ''::pg_catalog.text]) "
    "ORDER BY l.key DESC LIMIT 1",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

// One more admitted when the key has a free slot and nothing waits before it ($5: in any
// case); the key's row stays locked either way (ON CONFLICT DO UPDATE locks the row it
// meets).
Plan g_admit = {
    "INSERT INTO baton.key_slots AS s (tenant, target, key, admitted) VALUES ($1, $2, $3, 1) "
    "ON CONFLICT (tenant, target, key) DO UPDATE SET admitted = s.admitted OPERATOR(pg_catalog.+) 1 "
    "WHERE $5 OR (s.admitted OPERATOR(pg_catalog.<) $4 AND NOT EXISTS (SELECT 1 FROM baton.key_waiting w WHERE "
    KEY_IS("w") ")) RETURNING s.admitted",
    5, {UUIDOID, TEXTOID, TEXTOID, INT4OID, BOOLOID}, nullptr};

Plan g_wait = {
    "INSERT INTO baton.key_waiting (tenant, target, key, rank, id, priority, run_after) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7)",
    7, {UUIDOID, TEXTOID, TEXTOID, INT8OID, INT8OID, INT4OID, TIMESTAMPTZOID}, nullptr};

Plan g_unwait = {
    "DELETE FROM baton.key_waiting w WHERE w.tenant OPERATOR(pg_catalog.=) $1 AND w.id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, INT8OID}, nullptr};

Plan g_release = {
    "UPDATE baton.key_slots s SET admitted = s.admitted OPERATOR(pg_catalog.-) 1 WHERE " KEY_IS("s")
    " RETURNING s.admitted",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

// A key with nothing admitted and nothing waiting keeps no row.
Plan g_forget = {
    "DELETE FROM baton.key_slots s WHERE " KEY_IS("s") " AND s.admitted OPERATOR(pg_catalog.=) 0 "
    "AND NOT EXISTS (SELECT 1 FROM baton.key_waiting w WHERE " KEY_IS("w") ")",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

// The first $4 waiting deliveries of the key, in its order, into baton.ready; their
// count onto the key's admitted. Returns them (id, priority, run_after).
Plan g_promote = {
    "WITH w AS (DELETE FROM baton.key_waiting w WHERE w.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT x.ctid FROM baton.key_waiting x WHERE " KEY_IS("x") " ORDER BY x.rank, x.id LIMIT $4)) "
    "RETURNING w.id, w.priority, w.run_after), "
    "r AS (INSERT INTO baton.ready (tenant, target, rank, id, run_after) "
    "SELECT $1, $2, OPERATOR(pg_catalog.-) w.priority::pg_catalog.int8, w.id, w.run_after FROM w), "
    "s AS (UPDATE baton.key_slots s SET admitted = s.admitted OPERATOR(pg_catalog.+) "
    "(SELECT pg_catalog.count(*) FROM w)::pg_catalog.int4 WHERE " KEY_IS("s") ") "
    "SELECT w.id, w.priority, w.run_after FROM w",
    4, {UUIDOID, TEXTOID, TEXTOID, INT8OID}, nullptr};

// Which keys of (tenant, target) a limit of key $3 covers: $3 itself, or for '' every
// key without a limit of its own.
#define COVERED(ALIAS)                                                                                     \
    "(" ALIAS ".key OPERATOR(pg_catalog.=) $3 OR ($3 OPERATOR(pg_catalog.=) '' AND NOT EXISTS (SELECT 1 " \
    "FROM baton.key_limits l WHERE l.tenant OPERATOR(pg_catalog.=) $1 AND l.target OPERATOR(pg_catalog.=) $2 " \
    "AND l.key OPERATOR(pg_catalog.=) " ALIAS ".key AND l.key OPERATOR(pg_catalog.<>) '')))"

// Every waiting delivery the limit covers into baton.ready; returns them.
Plan g_unwait_all = {
    "WITH w AS (DELETE FROM baton.key_waiting w WHERE w.tenant OPERATOR(pg_catalog.=) $1 "
    "AND w.target OPERATOR(pg_catalog.=) $2 AND " COVERED("w") " RETURNING w.id, w.priority, w.run_after), "
    "r AS (INSERT INTO baton.ready (tenant, target, rank, id, run_after) "
    "SELECT $1, $2, OPERATOR(pg_catalog.-) w.priority::pg_catalog.int8, w.id, w.run_after FROM w) "
    "SELECT w.id, w.priority, w.run_after FROM w",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

Plan g_forget_all = {
    "DELETE FROM baton.key_slots s WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.target OPERATOR(pg_catalog.=) $2 "
    "AND " COVERED("s"),
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

// The deliveries of every covered key admitted afresh under max_leased $4 (ordered $5):
// in each key, the leased ones first, then the pending ones in the key's order; the
// pending ones past the limit leave baton.ready for baton.key_waiting; each key's count
// into baton.key_slots.
Plan g_admit_all = {
    "WITH r AS (SELECT d.id, d.key, d.priority, d.run_after, d.status OPERATOR(pg_catalog.=) 'claimed' AS leased, "
    "pg_catalog.row_number() OVER (PARTITION BY d.key ORDER BY d.status OPERATOR(pg_catalog.=) 'claimed' DESC, "
    "CASE WHEN $5 THEN 0 ELSE OPERATOR(pg_catalog.-) d.priority::pg_catalog.int8 END, d.id) AS n "
    "FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.target OPERATOR(pg_catalog.=) $2 "
    "AND d.key IS NOT NULL AND d.status OPERATOR(pg_catalog.=) ANY ('{pending,claimed}'::pg_catalog.text[]) "
    "AND " COVERED("d") "), "
    "o AS (DELETE FROM baton.ready y USING r WHERE y.tenant OPERATOR(pg_catalog.=) $1 "
    "AND y.target OPERATOR(pg_catalog.=) $2 AND y.id OPERATOR(pg_catalog.=) r.id "
    "AND y.rank OPERATOR(pg_catalog.=) OPERATOR(pg_catalog.-) r.priority::pg_catalog.int8 "
    "AND NOT r.leased AND r.n OPERATOR(pg_catalog.>) $4), "
    "w AS (INSERT INTO baton.key_waiting (tenant, target, key, rank, id, priority, run_after) "
    "SELECT $1, $2, r.key, CASE WHEN $5 THEN 0 ELSE OPERATOR(pg_catalog.-) r.priority::pg_catalog.int8 END, "
    "r.id, r.priority, r.run_after FROM r WHERE NOT r.leased AND r.n OPERATOR(pg_catalog.>) $4) "
    "INSERT INTO baton.key_slots (tenant, target, key, admitted) "
    "SELECT $1, $2, r.key, pg_catalog.count(*)::pg_catalog.int4 FROM r "
    "WHERE r.leased OR r.n OPERATOR(pg_catalog.<=) $4 GROUP BY r.key",
    5, {UUIDOID, TEXTOID, TEXTOID, INT8OID, BOOLOID}, nullptr};

// Tells the claim hints of the rows the last statement returned (id, priority,
// run_after): they are pending in baton.ready now.
void told_pending(const pg_uuid_t* tenant, const text* target) {
    std::uint64_t n = SPI_processed;
    SPITupleTable* rows = SPI_tuptable;
    if (!claim_hints::enabled()) return;
    for (std::uint64_t i = 0; i < n; i++) {
        bool isnull = false;
        std::int64_t id = DatumGetInt64(SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull));
        std::int32_t priority = DatumGetInt32(SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull));
        TimestampTz run_after = DatumGetTimestampTz(SPI_getbinval(rows->vals[i], rows->tupdesc, 3, &isnull));
        claim_hints::row_pending(tenant, VARDATA_ANY(target), static_cast<int>(VARSIZE_ANY_EXHDR(target)),
                                 {priority, id}, run_after);
    }
}

Datum uuid_datum(const pg_uuid_t* u) { return UUIDPGetDatum(const_cast<pg_uuid_t*>(u)); }
Datum text_datum(const text* t) { return PointerGetDatum(const_cast<text*>(t)); }

}  // namespace

namespace {

// find() inside an SPI connection, under the lock of the limits.
Limit read_limit(const pg_uuid_t* tenant, const text* target, const text* key) {
    Datum values[3] = {uuid_datum(tenant), text_datum(target), text_datum(key)};
    Limit limit{false, 0, false};
    if (run(g_find, values, nullptr) == 1) {
        bool isnull = false;
        limit = {true, int32_at(0, 1),
                 DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull))};
    }
    return limit;
}

}  // namespace

Limit find(const pg_uuid_t* tenant, const text* target, const text* key) {
    lock_limits(tenant, target, ShareLock);
    connect();
    Limit limit = read_limit(tenant, target, key);
    SPI_finish();
    return limit;
}

bool admit(const pg_uuid_t* tenant, const text* target, const text* key, const Limit& limit, std::int32_t priority,
           std::int64_t id, TimestampTz run_after, bool force) {
    connect();
    Datum values[5] = {uuid_datum(tenant), text_datum(target), text_datum(key), Int32GetDatum(limit.max_leased),
                       BoolGetDatum(force)};
    bool admitted = run(g_admit, values, nullptr) == 1;
    SPI_finish();
    if (!admitted) wait(tenant, target, key, limit, priority, id, run_after);
    return admitted;
}

void wait(const pg_uuid_t* tenant, const text* target, const text* key, const Limit& limit, std::int32_t priority,
          std::int64_t id, TimestampTz run_after) {
    connect();
    Datum values[7] = {uuid_datum(tenant), text_datum(target), text_datum(key),
                       Int64GetDatum(waiting_rank(limit, priority)), Int64GetDatum(id), Int32GetDatum(priority),
                       TimestampTzGetDatum(run_after)};
    run(g_wait, values, nullptr);
    SPI_finish();
}

bool unwait(const pg_uuid_t* tenant, std::int64_t id) {
    connect();
    Datum values[2] = {uuid_datum(tenant), Int64GetDatum(id)};
    bool was = run(g_unwait, values, nullptr) > 0;
    SPI_finish();
    return was;
}

void release(const pg_uuid_t* tenant, const text* target, const text* key, const Limit& limit) {
    connect();
    Datum values[4] = {uuid_datum(tenant), text_datum(target), text_datum(key), 0};
    if (run(g_release, values, nullptr) == 1) {
        std::int32_t admitted = int32_at(0, 1);
        std::int64_t free = limit.ordered ? (admitted <= 0 ? 1 : 0) : limit.max_leased - admitted;
        if (free > 0) {
            values[3] = Int64GetDatum(free);
            if (run(g_promote, values, nullptr) > 0)
                told_pending(tenant, target);
            else if (admitted <= 0)
                run(g_forget, values, nullptr);
        }
    }
    SPI_finish();
}

void set(const pg_uuid_t* tenant, const text* target, const text* key, const Limit* given) {
    lock_limits(tenant, target, ExclusiveLock);
    connect();
    Limit limit{false, 0, false};
    if (given != nullptr) {
        limit = *given;
    } else if (VARSIZE_ANY_EXHDR(key) > 0) {
        text* every = cstring_to_text("");
        limit = read_limit(tenant, target, every);
    }
    Datum values[5] = {uuid_datum(tenant), text_datum(target), text_datum(key), Int64GetDatum(limit.max_leased),
                       BoolGetDatum(limit.ordered)};
    if (run(g_unwait_all, values, nullptr) > 0) told_pending(tenant, target);
    run(g_forget_all, values, nullptr);
    if (limit.limited) run(g_admit_all, values, nullptr);
    SPI_finish();
}

}  // namespace baton::pg::key_admission
