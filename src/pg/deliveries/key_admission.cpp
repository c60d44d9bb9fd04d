// The limits of keys (see key_admission.hpp).
#include <cstddef>
#include <cstring>

#include "core/key_limit.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/deliveries/key_admission.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/runtime/locks.hpp"
#include "pg/runtime/owner.hpp"
#include "pg/runtime/relations.hpp"

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

// While a transaction settles what it owes its keys (settle_all()), each statement reads
// the latest committed rows rather than the transaction's snapshot: under REPEATABLE READ
// too, the key's row a settle has locked is then the latest version, which the previous
// settle of the key committed before the lock was granted.
bool g_settling = false;

// Runs `p` inside the caller's SPI connection: its row count.
std::uint64_t run(Plan& p, Datum* values, const char* nulls) {
    if (p.plan == nullptr) {
        SPIPlanPtr plan = SPI_prepare(p.sql, p.nargs, p.types);
        if (plan == nullptr) elog(ERROR, "pg_baton could not prepare a statement: %s", SPI_result_code_string(SPI_result));
        if (SPI_keepplan(plan) != 0) elog(ERROR, "pg_baton could not keep a prepared statement");
        p.plan = plan;
    }
    int rc = g_settling ? SPI_execute_snapshot(p.plan, values, nulls, GetLatestSnapshot(), InvalidSnapshot, false,
                                               false, 0)
                        : SPI_execute_plan(p.plan, values, nulls, false, 0);
    if (rc < 0) elog(ERROR, "pg_baton could not run a statement of key limits: %s", SPI_result_code_string(rc));
    return SPI_processed;
}

void connect() {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "pg_baton could not connect to SPI");
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
    return limit.rule.ordered ? 0 : side_rows::rank_of(priority);
}

#define KEY_IS(ALIAS)                                                                             \
    ALIAS ".tenant OPERATOR(pg_catalog.=) $1 AND " ALIAS ".target OPERATOR(pg_catalog.=) $2 AND " \
    ALIAS ".key OPERATOR(pg_catalog.=) $3"

// The key's own limit, else the target's for every key ('' sorts first): max_leased
// (0: none), ordered, rate (0: none), per in microseconds, burst, whether it is the
// target's for every key.
Plan g_find = {
    "SELECT COALESCE(l.max_leased, 0), l.ordered, COALESCE(l.rate, 0), "
    "COALESCE((EXTRACT(EPOCH FROM l.per) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8, 0), "
    "COALESCE(l.burst, 0), l.key OPERATOR(pg_catalog.=) '' FROM baton.key_limits l WHERE l.tenant OPERATOR(pg_catalog.=) $1 "
    "AND l.target OPERATOR(pg_catalog.=) $2 AND l.key OPERATOR(pg_catalog.=) ANY (ARRAY[$3, ''::pg_catalog.text]) "
    "ORDER BY l.key DESC LIMIT 1",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

// The key's row, locked until the transaction ends (the latest version, under READ
// COMMITTED once a concurrent writer has committed); made first when there is none.
Plan g_lock = {
    "SELECT s.admitted, s.ready, s.tokens, s.at FROM baton.key_slots s WHERE " KEY_IS("s") " FOR UPDATE",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};
Plan g_create = {
    "INSERT INTO baton.key_slots (tenant, target, key, admitted, ready, tokens, at) VALUES ($1, $2, $3, 0, 0, $4, $5) "
    "ON CONFLICT (tenant, target, key) DO NOTHING",
    5, {UUIDOID, TEXTOID, TEXTOID, FLOAT8OID, TIMESTAMPTZOID}, nullptr};
Plan g_save = {
    "UPDATE baton.key_slots s SET admitted = $4, ready = $5, tokens = $6, at = $7 WHERE " KEY_IS("s"),
    7, {UUIDOID, TEXTOID, TEXTOID, INT4OID, INT4OID, FLOAT8OID, TIMESTAMPTZOID}, nullptr};
// A key whose state says nothing (key_limit::idle()) and that has nothing waiting keeps
// no row.
Plan g_forget = {
    "DELETE FROM baton.key_slots s WHERE " KEY_IS("s") " AND NOT EXISTS (SELECT 1 FROM baton.key_waiting w WHERE "
    KEY_IS("w") ")",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

Plan g_wait = {
    "INSERT INTO baton.key_waiting (tenant, target, key, rank, id, priority, run_after) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7)",
    7, {UUIDOID, TEXTOID, TEXTOID, INT8OID, INT8OID, INT4OID, TIMESTAMPTZOID}, nullptr};

Plan g_unwait = {
    "DELETE FROM baton.key_waiting w WHERE w.tenant OPERATOR(pg_catalog.=) $1 AND w.id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, INT8OID}, nullptr};

// The first waiting delivery of the key in its order, taken out: id, priority, run_after.
Plan g_next = {
    "DELETE FROM baton.key_waiting w WHERE w.ctid OPERATOR(pg_catalog.=) (SELECT x.ctid FROM baton.key_waiting x "
    "WHERE " KEY_IS("x") " ORDER BY x.rank, x.id LIMIT 1) RETURNING w.id, w.priority, w.run_after",
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

Plan g_any_waiting = {
    "SELECT 1 FROM baton.key_waiting w WHERE " KEY_IS("w") " LIMIT 1", 3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

// A key that is not paced, settled in one statement: its row locked (cur), its count
// moved by $5, and as many waiting deliveries as fit under $4 admitted moved into
// baton.ready in its order, their count added. Returns the deliveries moved (kind 0:
// id, priority, run_after) and the count written (kind 1); no kind 1 row when the key
// has no row yet (nothing moved then). An ordered key takes its waiting deliveries
// strictly in order (waiting for a row another transaction holds); any other passes
// over the rows a concurrent hand-over or cancel holds (LOCKING).
#define SETTLE_PLAIN(LOCKING)                                                                                 \
    "WITH cur AS (SELECT s.admitted FROM baton.key_slots s WHERE " KEY_IS("s") " FOR UPDATE), "             \
    "base AS (SELECT GREATEST(0, c.admitted OPERATOR(pg_catalog.+) $5) AS n FROM cur c), "                  \
    "w AS (DELETE FROM baton.key_waiting w WHERE w.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("                 \
    "SELECT x.ctid FROM baton.key_waiting x WHERE " KEY_IS("x") " ORDER BY x.rank, x.id "                    \
    "LIMIT COALESCE((SELECT GREATEST(0, $4 OPERATOR(pg_catalog.-) b.n) FROM base b), 0)" LOCKING ")) "      \
    "RETURNING w.id, w.priority, w.run_after), "                                                            \
    "r AS (INSERT INTO baton.ready (tenant, target, rank, id, run_after) "                                 \
    "SELECT $1, $2, OPERATOR(pg_catalog.-) w.priority::pg_catalog.int8, w.id, w.run_after FROM w), "       \
    "u AS (UPDATE baton.key_slots s SET admitted = (SELECT b.n FROM base b) OPERATOR(pg_catalog.+) "         \
    "(SELECT pg_catalog.count(*) FROM w)::pg_catalog.int4 WHERE " KEY_IS("s") " RETURNING s.admitted) "     \
    "SELECT 0, w.id, w.priority, w.run_after, NULL::pg_catalog.int4 FROM w "                                \
    "UNION ALL SELECT 1, NULL, NULL, NULL, u.admitted FROM u"
Plan g_settle_ordered = {SETTLE_PLAIN(""), 5, {UUIDOID, TEXTOID, TEXTOID, INT4OID, INT4OID}, nullptr};
Plan g_settle_plain = {SETTLE_PLAIN(" FOR UPDATE SKIP LOCKED"), 5, {UUIDOID, TEXTOID, TEXTOID, INT4OID, INT4OID},
                       nullptr};

// The slots that deliveries of keys of (tenant, target) freed, handed straight to the
// keys' next waiting deliveries, without the keys' rows: for each key $3[i], up to
// $4[i] (the slots freed) of its waiting deliveries in its order that no other
// transaction holds, moved into baton.ready, as far as the key's count read (not
// locked; none without a count) leaves room under $5[i] once those slots are free.
// Each delivery handed a slot takes the place of one that left, so the count stays as
// it is. Returns the deliveries moved: the key's ordinal (from 1), id, priority,
// run_after.
Plan g_hand_over = {
    "WITH k AS (SELECT k.key, k.n, k.most, k.i FROM ROWS FROM (pg_catalog.unnest($3::pg_catalog.text[]), "
    "pg_catalog.unnest($4::pg_catalog.int4[]), pg_catalog.unnest($5::pg_catalog.int4[])) WITH ORDINALITY AS k(key, n, most, i)), "
    "h AS (SELECT k.key, k.i, LEAST(k.n, GREATEST(0, k.most OPERATOR(pg_catalog.-) (SELECT s.admitted "
    "FROM baton.key_slots s WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.target OPERATOR(pg_catalog.=) $2 "
    "AND s.key OPERATOR(pg_catalog.=) k.key) OPERATOR(pg_catalog.+) k.n)) AS n FROM k), "
    "x AS (SELECT h.i, y.ctid FROM h CROSS JOIN LATERAL (SELECT y.ctid FROM baton.key_waiting y "
    "WHERE y.tenant OPERATOR(pg_catalog.=) $1 AND y.target OPERATOR(pg_catalog.=) $2 "
    "AND y.key OPERATOR(pg_catalog.=) h.key ORDER BY y.rank, y.id LIMIT h.n FOR UPDATE SKIP LOCKED) y), "
    "w AS (DELETE FROM baton.key_waiting w WHERE w.ctid OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT x.ctid FROM x)) "
    "RETURNING w.ctid, w.id, w.priority, w.run_after), "
    "r AS (INSERT INTO baton.ready (tenant, target, rank, id, run_after) "
    "SELECT $1, $2, OPERATOR(pg_catalog.-) w.priority::pg_catalog.int8, w.id, w.run_after FROM w) "
    "SELECT x.i, w.id, w.priority, w.run_after FROM w JOIN x ON x.ctid OPERATOR(pg_catalog.=) w.ctid",
    5, {UUIDOID, TEXTOID, TEXTARRAYOID, INT4ARRAYOID, INT4ARRAYOID}, nullptr};

Plan g_enter_ready = {
    "INSERT INTO baton.ready (tenant, target, rank, id, run_after) VALUES ($1, $2, $3, $4, $5)",
    5, {UUIDOID, TEXTOID, INT8OID, INT8OID, TIMESTAMPTZOID}, nullptr};

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

// The admitted deliveries of the covered keys claimable from their own run_after again:
// a slot of the pace the change replaces no longer holds them back.
Plan g_unpace_all = {
    "UPDATE baton.ready y SET run_after = d.run_after FROM baton.deliveries d "
    "WHERE y.tenant OPERATOR(pg_catalog.=) $1 AND y.target OPERATOR(pg_catalog.=) $2 "
    "AND d.tenant OPERATOR(pg_catalog.=) $1 AND d.id OPERATOR(pg_catalog.=) y.id AND d.key IS NOT NULL "
    "AND y.run_after OPERATOR(pg_catalog.>) d.run_after AND " COVERED("d"),
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

Plan g_forget_all = {
    "DELETE FROM baton.key_slots s WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.target OPERATOR(pg_catalog.=) $2 "
    "AND " COVERED("s"),
    3, {UUIDOID, TEXTOID, TEXTOID}, nullptr};

// The deliveries of every covered key admitted afresh: in each key, the leased ones
// first, then the pending ones in the key's order ($5: ordered, by id alone), as many
// pending ones as fit both under $4 admitted and $6 unclaimed; the rest leave
// baton.ready for baton.key_waiting. Each key's count into baton.key_slots, its bucket
// full but for the unclaimed admissions ($7: the burst; 0 for a key that is not paced,
// which counts no unclaimed admissions).
Plan g_admit_all = {
    "WITH r AS (SELECT d.id, d.key, d.priority, d.run_after, d.status OPERATOR(pg_catalog.=) 'claimed' AS leased, "
    "pg_catalog.count(*) FILTER (WHERE d.status OPERATOR(pg_catalog.=) 'claimed') OVER (PARTITION BY d.key) AS nleased, "
    "pg_catalog.row_number() OVER (PARTITION BY d.key ORDER BY d.status OPERATOR(pg_catalog.=) 'claimed' DESC, "
    "CASE WHEN $5 THEN 0 ELSE OPERATOR(pg_catalog.-) d.priority::pg_catalog.int8 END, d.id) AS n "
    "FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $1 AND d.target OPERATOR(pg_catalog.=) $2 "
    "AND d.key IS NOT NULL AND d.status OPERATOR(pg_catalog.=) ANY ('{pending,claimed}'::pg_catalog.text[]) "
    "AND " COVERED("d") "), "
    "k AS (SELECT r.*, NOT r.leased AND r.n OPERATOR(pg_catalog.-) r.nleased OPERATOR(pg_catalog.>) "
    "LEAST($4 OPERATOR(pg_catalog.-) r.nleased, $6) AS waits FROM r), "
    "o AS (DELETE FROM baton.ready y USING k WHERE y.tenant OPERATOR(pg_catalog.=) $1 "
    "AND y.target OPERATOR(pg_catalog.=) $2 AND y.id OPERATOR(pg_catalog.=) k.id "
    "AND y.rank OPERATOR(pg_catalog.=) OPERATOR(pg_catalog.-) k.priority::pg_catalog.int8 AND k.waits), "
    "w AS (INSERT INTO baton.key_waiting (tenant, target, key, rank, id, priority, run_after) "
    "SELECT $1, $2, k.key, CASE WHEN $5 THEN 0 ELSE OPERATOR(pg_catalog.-) k.priority::pg_catalog.int8 END, "
    "k.id, k.priority, k.run_after FROM k WHERE k.waits) "
    "INSERT INTO baton.key_slots (tenant, target, key, admitted, ready, tokens, at) "
    "SELECT $1, $2, k.key, pg_catalog.count(*) FILTER (WHERE NOT k.waits)::pg_catalog.int4, "
    "CASE WHEN $7 OPERATOR(pg_catalog.>) 0 THEN pg_catalog.count(*) FILTER (WHERE NOT k.waits AND NOT k.leased) "
    "ELSE 0 END::pg_catalog.int4, "
    "GREATEST(0, $7 OPERATOR(pg_catalog.-) pg_catalog.count(*) FILTER (WHERE NOT k.waits AND NOT k.leased)), "
    "pg_catalog.now() FROM k GROUP BY k.key",
    7, {UUIDOID, TEXTOID, TEXTOID, INT8OID, BOOLOID, INT8OID, FLOAT8OID}, nullptr};

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

Datum value_at(std::uint64_t row, int col) {
    bool isnull = false;
    return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);
}

// find() inside an SPI connection, under the lock of the limits.
Limit read_limit(const pg_uuid_t* tenant, const text* target, const text* key) {
    Datum values[3] = {uuid_datum(tenant), text_datum(target), text_datum(key)};
    Limit limit{false, {}, false};
    if (run(g_find, values, nullptr) == 1) {
        limit.limited = true;
        limit.rule.max_leased = DatumGetInt32(value_at(0, 1));
        limit.rule.ordered = DatumGetBool(value_at(0, 2));
        limit.rule.rate = DatumGetInt32(value_at(0, 3));
        limit.rule.per_usec = DatumGetInt64(value_at(0, 4));
        limit.rule.burst = DatumGetInt32(value_at(0, 5));
        limit.every = DatumGetBool(value_at(0, 6));
    }
    return limit;
}

// One key's row of baton.key_slots, locked and read, inside an SPI connection: what the
// public functions below change and write back.
struct Slots {
    Datum key[3];  // tenant, target, key
    const Limit* limit;
    TimestampTz now;
    key_limit::State state;
};

Slots lock(const Row& row, const Limit& limit) {
    Slots k{{uuid_datum(row.tenant), text_datum(row.target), text_datum(row.key)}, &limit, GetCurrentTimestamp(), {}};
    if (run(g_lock, k.key, nullptr) == 0) {
        key_limit::State fresh = key_limit::fresh(limit.rule, k.now);
        Datum values[5] = {k.key[0], k.key[1], k.key[2], Float8GetDatum(fresh.tokens), TimestampTzGetDatum(fresh.at)};
        run(g_create, values, nullptr);
        if (run(g_lock, k.key, nullptr) == 0) elog(ERROR, "pg_baton could not lock the count of a key");
    }
    k.state.admitted = DatumGetInt32(value_at(0, 1));
    k.state.ready = DatumGetInt32(value_at(0, 2));
    k.state.tokens = DatumGetFloat8(value_at(0, 3));
    k.state.at = DatumGetTimestampTz(value_at(0, 4));
    return k;
}

// Writes the state back; a key left idle with nothing waiting loses its row.
void save(Slots& k) {
    if (key_limit::idle(k.limit->rule, k.state, k.now) && run(g_forget, k.key, nullptr) > 0) return;
    Datum values[7] = {k.key[0],
                       k.key[1],
                       k.key[2],
                       Int32GetDatum(k.state.admitted),
                       Int32GetDatum(k.state.ready),
                       Float8GetDatum(k.state.tokens),
                       TimestampTzGetDatum(k.state.at)};
    run(g_save, values, nullptr);
}

void insert_waiting(const Row& row, const Limit& limit) {
    Datum values[7] = {uuid_datum(row.tenant),  text_datum(row.target),          text_datum(row.key),
                       Int64GetDatum(waiting_rank(limit, row.priority)), Int64GetDatum(row.id),
                       Int32GetDatum(row.priority), TimestampTzGetDatum(row.run_after)};
    run(g_wait, values, nullptr);
}

// The waiting deliveries the key has room for, in its order, into baton.ready, each
// from its slot on; the claim hints told of each.
void promote(Slots& k) {
    int vanished = 0;
    while (key_limit::has_room(k.limit->rule, k.state)) {
        if (run(g_next, k.key, nullptr) == 0) {
            // Nothing to take, or the one found was deleted meanwhile by a transaction
            // this statement waited for (a cancel): look again, with a new snapshot.
            if (run(g_any_waiting, k.key, nullptr) == 0 || ++vanished > 16) break;
            continue;
        }
        std::int64_t id = DatumGetInt64(value_at(0, 1));
        std::int32_t priority = DatumGetInt32(value_at(0, 2));
        TimestampTz run_after = DatumGetTimestampTz(value_at(0, 3));
        TimestampTz slot = key_limit::admit(k.limit->rule, k.state, k.now);
        TimestampTz ready_at = slot > run_after ? slot : run_after;
        Datum values[5] = {k.key[0], k.key[1], Int64GetDatum(side_rows::rank_of(priority)), Int64GetDatum(id),
                           TimestampTzGetDatum(ready_at)};
        run(g_enter_ready, values, nullptr);
        if (claim_hints::enabled())
            claim_hints::row_pending(DatumGetUUIDP(k.key[0]), VARDATA_ANY(DatumGetTextPP(k.key[1])),
                                     static_cast<int>(VARSIZE_ANY_EXHDR(DatumGetTextPP(k.key[1]))), {priority, id},
                                     ready_at);
    }
}

// The limits found, per backend, by (tenant, target, key): a claim of a keyed delivery
// reads its key's limit, and most of the time it is the one the last claim read. Each
// write of baton.key_limits registers a relcache invalidation of the table (the
// trigger, api/triggers.cpp), sent at its commit, which forgets every entry; a lookup
// takes the lock of the limits first and then accepts the invalidations, so a change
// committed before it is seen (a change holds that lock exclusively until its
// invalidation is sent). A target and key longer than kKeptBytes together are read
// every time.
constexpr int kKeptBytes = 240;
struct LimitKey {
    pg_uuid_t tenant;
    int target_len;
    int key_len;
    char bytes[kKeptBytes];

    static bool make(LimitKey* k, const pg_uuid_t* tenant, const text* target, const text* key) {
        int tl = static_cast<int>(VARSIZE_ANY_EXHDR(target));
        int kl = static_cast<int>(VARSIZE_ANY_EXHDR(key));
        if (tl + kl > kKeptBytes) return false;
        std::memset(k, 0, sizeof *k);
        k->tenant = *tenant;
        k->target_len = tl;
        k->key_len = kl;
        std::memcpy(k->bytes, VARDATA_ANY(target), tl);
        std::memcpy(k->bytes + tl, VARDATA_ANY(key), kl);
        return true;
    }
    static Size used(const LimitKey& k) { return offsetof(LimitKey, bytes) + k.target_len + k.key_len; }
    static uint32 hash(const LimitKey& k) { return hash_bytes(reinterpret_cast<const unsigned char*>(&k), used(k)); }
    static bool equal(const LimitKey& a, const LimitKey& b) {
        return a.target_len == b.target_len && a.key_len == b.key_len && std::memcmp(&a, &b, used(a)) == 0;
    }
};
struct Kept {
    Oid relid;  // baton.key_limits when it was read
    Limit limit;
};
bool kept_depends(const LimitKey&, const Kept& kept, Oid relid) { return relid == kept.relid; }
cache::Map<LimitKey, Kept, LimitKey, kept_depends> g_limits{"pg_baton key limits", 4096,
                                                            cache::Forgets::kDependents};

}  // namespace

Limit find(const pg_uuid_t* tenant, const text* target, const text* key) {
    lock_limits(tenant, target, ShareLock);
    AcceptInvalidationMessages();
    LimitKey k;
    bool keep = LimitKey::make(&k, tenant, target, key);
    std::uint64_t generation = g_limits.generation();
    if (keep)
        if (const Kept* kept = g_limits.find(k, generation)) return kept->limit;
    connect();
    Limit limit = read_limit(tenant, target, key);
    SPI_finish();
    if (keep) {
        Kept* kept = g_limits.enter(k, generation);
        kept->relid = relations::relid("key_limits");
        kept->limit = limit;
    }
    return limit;
}

namespace {

// What this transaction did to its keys' counts, settled at its commit (settle_all()).
// One entry per call, in the transaction's memory; an aborted subtransaction's entries
// are dropped with it.
struct Owed {
    SubTransactionId subxid;
    pg_uuid_t tenant;
    text* target;
    text* key;
    Limit limit;
    std::int32_t admitted;  // + leased without a claim, - left the admitted
    std::int32_t unclaimed; // admitted deliveries of a paced key claimed or gone while unclaimed
    bool entering;          // a delivery that entered: it waits to be admitted
};
List* g_owed = NIL;  // of Owed*, in TopTransactionContext

void owe(const Row& row, const Limit& limit, std::int32_t admitted, std::int32_t unclaimed, bool entering = false) {
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    Owed* o = static_cast<Owed*>(palloc0(sizeof(Owed)));
    o->subxid = GetCurrentSubTransactionId();
    o->tenant = *row.tenant;
    o->target = static_cast<text*>(PG_DETOAST_DATUM_COPY(PointerGetDatum(const_cast<text*>(row.target))));
    o->key = static_cast<text*>(PG_DETOAST_DATUM_COPY(PointerGetDatum(const_cast<text*>(row.key))));
    o->limit = limit;
    o->admitted = admitted;
    o->unclaimed = unclaimed;
    o->entering = entering;
    g_owed = lappend(g_owed, o);
    MemoryContextSwitchTo(old);
}

int compare_bytes(const text* a, const text* b) {
    int la = static_cast<int>(VARSIZE_ANY_EXHDR(a)), lb = static_cast<int>(VARSIZE_ANY_EXHDR(b));
    int c = std::memcmp(VARDATA_ANY(a), VARDATA_ANY(b), la < lb ? la : lb);
    return c != 0 ? c : (la > lb) - (la < lb);
}

// The order keys are locked in: tenant, target, key. Every transaction that settles
// takes its keys' rows in this order, so two never wait for each other.
int compare_owed(const ListCell* a, const ListCell* b) {
    const Owed* x = static_cast<const Owed*>(lfirst(a));
    const Owed* y = static_cast<const Owed*>(lfirst(b));
    int c = std::memcmp(&x->tenant, &y->tenant, sizeof x->tenant);
    if (c == 0) c = compare_bytes(x->target, y->target);
    if (c == 0) c = compare_bytes(x->key, y->key);
    return c;
}

// The lock of one key's settles, until the transaction ends: taken in the order of
// compare_owed(), before the key's row is read.
void lock_key(const Owed* o) {
    uint64 h = hash_bytes_extended(o->tenant.data, UUID_LEN, 0);
    h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(o->target)),
                            static_cast<int>(VARSIZE_ANY_EXHDR(o->target)), h);
    h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(o->key)),
                            static_cast<int>(VARSIZE_ANY_EXHDR(o->key)), h);
    LOCKTAG tag = locks::tag(locks::Purpose::kKeySettle, h);
    (void)LockAcquire(&tag, ExclusiveLock, false, false);
}

bool same_key(const Owed* x, const Owed* y) {
    return std::memcmp(&x->tenant, &y->tenant, sizeof x->tenant) == 0 && compare_bytes(x->target, y->target) == 0 &&
           compare_bytes(x->key, y->key) == 0;
}

// Settles a key that is not paced in one statement (g_settle_plain): false when the key
// has no row yet (the caller makes it). A key left with nothing admitted loses its row
// when nothing waits either.
bool settle_plain(const Owed* o, std::int32_t admitted) {
    const key_limit::Limit& r = o->limit.rule;
    std::int32_t most = r.ordered ? 1 : r.max_leased > 0 ? r.max_leased : PG_INT32_MAX;
    Datum values[5] = {uuid_datum(&o->tenant), text_datum(o->target), text_datum(o->key), Int32GetDatum(most),
                       Int32GetDatum(admitted)};
    std::uint64_t n = run(r.ordered ? g_settle_ordered : g_settle_plain, values, nullptr);
    SPITupleTable* rows = SPI_tuptable;
    bool found = false;
    std::int32_t now_admitted = 0;
    for (std::uint64_t i = 0; i < n; i++) {
        bool isnull = false;
        if (DatumGetInt32(SPI_getbinval(rows->vals[i], rows->tupdesc, 1, &isnull)) == 1) {
            found = true;
            now_admitted = DatumGetInt32(SPI_getbinval(rows->vals[i], rows->tupdesc, 5, &isnull));
        } else if (claim_hints::enabled()) {
            std::int64_t id = DatumGetInt64(SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull));
            std::int32_t priority = DatumGetInt32(SPI_getbinval(rows->vals[i], rows->tupdesc, 3, &isnull));
            TimestampTz run_after = DatumGetTimestampTz(SPI_getbinval(rows->vals[i], rows->tupdesc, 4, &isnull));
            claim_hints::row_pending(&o->tenant, VARDATA_ANY(o->target), static_cast<int>(VARSIZE_ANY_EXHDR(o->target)),
                                     {priority, id}, run_after);
        }
    }
    if (found && now_admitted == 0) run(g_forget, values, nullptr);
    return found;
}

// One key's part of what the transaction owes: its first entry and the sums.
struct Debt {
    const Owed* first;
    std::int32_t admitted;
    std::int32_t unclaimed;
    bool entering;
};

bool same_target(const Owed* x, const Owed* y) {
    return std::memcmp(&x->tenant, &y->tenant, sizeof x->tenant) == 0 && compare_bytes(x->target, y->target) == 0;
}

// A key that is neither paced nor ordered hands the slots its deliveries free to its next
// waiting deliveries (hand_over()), without its row.
bool hands_over(const Limit& limit) { return limit.rule.rate == 0 && !limit.rule.ordered && limit.rule.max_leased > 0; }
bool hands_over(const Debt& d) { return d.admitted < 0 && hands_over(d.first->limit); }

// Hands the slots freed in the keys debts[from, to) of one (tenant, target) over
// (g_hand_over): each key's debt is lowered by the deliveries it let in.
void hand_over(Debt* debts, int from, int to) {
    int n = 0;
    for (int i = from; i < to; i++) n += hands_over(debts[i]) ? 1 : 0;
    if (n == 0) return;
    Datum* keys = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* freed = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    Datum* most = static_cast<Datum*>(palloc(sizeof(Datum) * n));
    int* which = static_cast<int*>(palloc(sizeof(int) * n));
    int k = 0;
    for (int i = from; i < to; i++) {
        if (!hands_over(debts[i])) continue;
        keys[k] = text_datum(debts[i].first->key);
        freed[k] = Int32GetDatum(-debts[i].admitted);
        most[k] = Int32GetDatum(debts[i].first->limit.rule.max_leased);
        which[k++] = i;
    }
    const Owed* o = debts[from].first;
    Datum values[5] = {uuid_datum(&o->tenant), text_datum(o->target),
                       PointerGetDatum(construct_array(keys, n, TEXTOID, -1, false, TYPALIGN_INT)),
                       PointerGetDatum(construct_array(freed, n, INT4OID, sizeof(int32), true, TYPALIGN_INT)),
                       PointerGetDatum(construct_array(most, n, INT4OID, sizeof(int32), true, TYPALIGN_INT))};
    std::uint64_t rows = run(g_hand_over, values, nullptr);
    bool hints = claim_hints::enabled();
    for (std::uint64_t i = 0; i < rows; i++) {
        std::int64_t ordinal = DatumGetInt64(value_at(i, 1));
        debts[which[ordinal - 1]].admitted++;
        if (hints)
            claim_hints::row_pending(&o->tenant, VARDATA_ANY(o->target), static_cast<int>(VARSIZE_ANY_EXHDR(o->target)),
                                     {DatumGetInt32(value_at(i, 3)), DatumGetInt64(value_at(i, 2))},
                                     DatumGetTimestampTz(value_at(i, 4)));
    }
}

// Settles what the transaction owes its keys. First the slots freed on keys that hand
// them over, one statement per (tenant, target); then, key after key in the locking
// order, whatever is left: each key's row locked, its counts moved, and its waiting
// deliveries let in as far as it has room. At PRE_COMMIT and PRE_PREPARE: the
// transaction's last writes.
void settle_all() {
    if (g_owed == NIL) return;
    List* owed = g_owed;
    g_owed = NIL;
    list_sort(owed, compare_owed);
    Debt* debts = static_cast<Debt*>(palloc(sizeof(Debt) * list_length(owed)));
    int nkeys = 0;
    ListCell* cell;
    foreach (cell, owed) {
        const Owed* o = static_cast<const Owed*>(lfirst(cell));
        if (nkeys == 0 || !same_key(debts[nkeys - 1].first, o)) debts[nkeys++] = {o, 0, 0, false};
        Debt& d = debts[nkeys - 1];
        d.admitted += o->admitted;
        d.unclaimed += o->unclaimed;
        d.entering = d.entering || o->entering;
    }
    // Outside any call: as the extension's owner, which pg_baton's calls act as (the
    // transaction's abort restores the user should an error come), and on a snapshot
    // (each statement takes its own under READ COMMITTED).
    Oid saved_user = InvalidOid;
    int saved_context = 0;
    GetUserIdAndSecContext(&saved_user, &saved_context);
    SetUserIdAndSecContext(owner::of_extension(), saved_context | SECURITY_LOCAL_USERID_CHANGE);
    PushActiveSnapshot(GetTransactionSnapshot());
    g_settling = true;
    connect();
    for (int from = 0; from < nkeys;) {
        int to = from + 1;
        while (to < nkeys && same_target(debts[from].first, debts[to].first)) to++;
        hand_over(debts, from, to);
        from = to;
    }
    for (int i = 0; i < nkeys; i++) {
        const Debt& d = debts[i];
        const Owed* first = d.first;
        // Every slot it freed went to a waiting delivery (or its count did not move), and
        // nothing of its own entered.
        if (hands_over(first->limit) && d.admitted == 0 && !d.entering) continue;
        lock_key(first);
        if (first->limit.rule.rate == 0 && settle_plain(first, d.admitted)) continue;
        Row row{&first->tenant, first->target, first->key, 0, 0, 0};
        Slots k = lock(row, first->limit);
        k.state.admitted = k.state.admitted + d.admitted > 0 ? k.state.admitted + d.admitted : 0;
        for (std::int32_t n = 0; n < d.unclaimed; n++) key_limit::claimed(first->limit.rule, k.state, k.now);
        promote(k);
        save(k);
    }
    SPI_finish();
    g_settling = false;
    PopActiveSnapshot();
    SetUserIdAndSecContext(saved_user, saved_context);
}

void on_xact(XactEvent event, void*) {
    if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE) {
        settle_all();
    } else {
        g_owed = NIL;  // ended: its memory went with it
        g_settling = false;
    }
}

void on_subxact(SubXactEvent event, SubTransactionId subxid, SubTransactionId, void*) {
    if (event != SUBXACT_EVENT_ABORT_SUB || g_owed == NIL) return;
    List* kept = NIL;
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    ListCell* cell;
    foreach (cell, g_owed) {
        Owed* o = static_cast<Owed*>(lfirst(cell));
        if (o->subxid < subxid) kept = lappend(kept, o);
    }
    MemoryContextSwitchTo(old);
    g_owed = kept;
}

// Drops what the transaction owes the keys a change of a limit covers: the change
// counts them afresh from the rows, this transaction's writes included.
void forgive(const pg_uuid_t* tenant, const text* target, const text* key) {
    if (g_owed == NIL) return;
    bool every = VARSIZE_ANY_EXHDR(key) == 0;
    List* kept = NIL;
    MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
    ListCell* cell;
    foreach (cell, g_owed) {
        Owed* o = static_cast<Owed*>(lfirst(cell));
        bool covered = std::memcmp(&o->tenant, tenant, sizeof o->tenant) == 0 && compare_bytes(o->target, target) == 0 &&
                       (every ? o->limit.every : compare_bytes(o->key, key) == 0);
        if (!covered) kept = lappend(kept, o);
    }
    MemoryContextSwitchTo(old);
    g_owed = kept;
}

}  // namespace

void init() {
    RegisterXactCallback(on_xact, nullptr);
    RegisterSubXactCallback(on_subxact, nullptr);
}

void enter(const Row& row, const Limit& limit) {
    connect();
    insert_waiting(row, limit);
    SPI_finish();
    owe(row, limit, 0, 0, true);
}

void claimed(const Row& row, const Limit& limit) { owe(row, limit, 0, 1); }

void reenter(const Row& row, const Limit& limit) {
    connect();
    insert_waiting(row, limit);
    SPI_finish();
    owe(row, limit, -1, 0);
}

void leased(const Row& row, const Limit& limit) { owe(row, limit, 1, 0); }

void wait(const Row& row, const Limit& limit) {
    connect();
    insert_waiting(row, limit);
    SPI_finish();
}

bool unwait(const pg_uuid_t* tenant, std::int64_t id) {
    connect();
    Datum values[2] = {uuid_datum(tenant), Int64GetDatum(id)};
    bool was = run(g_unwait, values, nullptr) > 0;
    SPI_finish();
    return was;
}

void left(const Row& row, const Limit& limit, bool was_ready) {
    owe(row, limit, -1, was_ready && limit.rule.rate > 0 ? 1 : 0);
}

void set(const pg_uuid_t* tenant, const text* target, const text* key, const Limit* given) {
    lock_limits(tenant, target, ExclusiveLock);
    forgive(tenant, target, key);
    connect();
    Limit limit{false, {}, false};
    if (given != nullptr) {
        limit = *given;
    } else if (VARSIZE_ANY_EXHDR(key) > 0) {
        text* every = cstring_to_text("");
        limit = read_limit(tenant, target, every);
    }
    Datum values[7] = {uuid_datum(tenant), text_datum(target), text_datum(key), 0, 0, 0, 0};
    if (run(g_unwait_all, values, nullptr) > 0) told_pending(tenant, target);
    run(g_unpace_all, values, nullptr);
    run(g_forget_all, values, nullptr);
    if (limit.limited) {
        const key_limit::Limit& r = limit.rule;
        bool paced = r.rate > 0;
        std::int64_t most = r.ordered ? 1 : r.max_leased > 0 ? r.max_leased : PG_INT32_MAX;
        values[3] = Int64GetDatum(most);
        values[4] = BoolGetDatum(r.ordered);
        values[5] = Int64GetDatum(paced ? r.burst : PG_INT32_MAX);
        values[6] = Float8GetDatum(paced ? r.burst : 0);
        run(g_admit_all, values, nullptr);
    }
    SPI_finish();
}

}  // namespace baton::pg::key_admission
