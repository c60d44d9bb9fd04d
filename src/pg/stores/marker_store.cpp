// The statements of baton.step_entries and baton.markers (see marker_store.hpp).
//
// Claiming is insert-from-absent under the marker's primary key: of two claimers, the
// second waits for the first and then finds its row, so an action runs at most once.
#include <string>

#include "core/cause.hpp"
#include "core/error.hpp"
#include "core/marker.hpp"
#include "pg/runtime/args.hpp"
#include "pg/citus/citus.hpp"
#include "pg/runtime/locks.hpp"
#include "pg/stores/marker_store.hpp"

namespace baton::pg::markers {

namespace {

#define KEY_OF_M                                                                   \
    "m.tenant OPERATOR(pg_catalog.=) $1 AND m.entry_id OPERATOR(pg_catalog.=) $2 " \
    "AND m.\"position\" OPERATOR(pg_catalog.=) $3"

// The next entry of (subject, step): one backward probe of its unique index. Run with
// the latest snapshot under the entry lock, so it sees every committed entry.
KeptPlan g_enter = {
    "INSERT INTO baton.step_entries AS e (tenant, subject, step, entry_seq, digest) VALUES ($1, $2, $3, "
    "COALESCE((SELECT p.entry_seq FROM baton.step_entries p WHERE p.tenant OPERATOR(pg_catalog.=) $1 "
    "AND p.subject OPERATOR(pg_catalog.=) $2 AND p.step OPERATOR(pg_catalog.=) $3 "
    "ORDER BY p.entry_seq DESC LIMIT 1), 0) OPERATOR(pg_catalog.+) 1, $4) RETURNING e.id, e.entry_seq",
    4, {UUIDOID, TEXTOID, TEXTOID, TEXTOID}, nullptr};

// g_enter for Citus, which refuses a subquery inside INSERT ... VALUES: INSERT ...
// SELECT over the tenant's own shard.
KeptPlan g_enter_citus = {
    "INSERT INTO baton.step_entries AS e (tenant, subject, step, entry_seq, digest) "
    "SELECT $1, $2, $3, COALESCE(pg_catalog.max(p.entry_seq), 0) OPERATOR(pg_catalog.+) 1, $4 "
    "FROM baton.step_entries p WHERE p.tenant OPERATOR(pg_catalog.=) $1 "
    "AND p.subject OPERATOR(pg_catalog.=) $2 AND p.step OPERATOR(pg_catalog.=) $3 RETURNING e.id, e.entry_seq",
    4, {UUIDOID, TEXTOID, TEXTOID, TEXTOID}, nullptr};

KeptPlan g_entry = {
    "SELECT s.run_id, r.generation FROM baton.stages s JOIN baton.runs r "
    "ON r.tenant OPERATOR(pg_catalog.=) s.tenant AND r.id OPERATOR(pg_catalog.=) s.run_id "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2 "
    "UNION ALL SELECT NULL, NULL FROM baton.step_entries e "
    "WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, INT8OID}, nullptr};

// From absent to in_progress. A loser finds the row and writes (and locks) nothing.
KeptPlan g_claim = {
    "INSERT INTO baton.markers AS m (tenant, entry_id, \"position\", kind, operation_id, run_id, generation) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant, entry_id, \"position\") DO NOTHING RETURNING 1",
    7, {UUIDOID, INT8OID, INT4OID, TEXTOID, TEXTOID, UUIDOID, INT8OID}, nullptr};

// A marker resolved as `retry` may be claimed once more.
KeptPlan g_reclaim = {
    "UPDATE baton.markers m SET state = 'in_progress', kind = $4, operation_id = $5, generation = $7, "
    "error = NULL, claims = m.claims OPERATOR(pg_catalog.+) 1, claimed_at = pg_catalog.now(), "
    "completed_at = NULL, resolved_generation = NULL "
    "WHERE " KEY_OF_M " AND m.state OPERATOR(pg_catalog.=) 'retry' RETURNING 1",
    7, {UUIDOID, INT8OID, INT4OID, TEXTOID, TEXTOID, UUIDOID, INT8OID}, nullptr};

KeptPlan g_complete = {
    "UPDATE baton.markers m SET state = $4, error = $5, completed_at = pg_catalog.now() "
    "WHERE " KEY_OF_M " AND m.state OPERATOR(pg_catalog.=) 'in_progress'",
    5, {UUIDOID, INT8OID, INT4OID, TEXTOID, TEXTOID}, nullptr};

KeptPlan g_marker = {
    "SELECT m.state, m.error, m.kind, m.operation_id, m.claimed_at, m.completed_at "
    "FROM baton.markers m WHERE " KEY_OF_M,
    3, {UUIDOID, INT8OID, INT4OID}, nullptr};

// marker::in_doubt() of src/core/marker.cpp, applied set-wise.
KeptPlan g_in_doubt = {
    "SELECT m.entry_id, m.\"position\", s.stage, m.kind, m.operation_id, m.generation, m.claimed_at "
    "FROM baton.markers m JOIN baton.stages s ON s.tenant OPERATOR(pg_catalog.=) m.tenant "
    "AND s.id OPERATOR(pg_catalog.=) m.entry_id "
    "WHERE m.tenant OPERATOR(pg_catalog.=) $1 AND m.run_id OPERATOR(pg_catalog.=) $2 "
    "AND m.state OPERATOR(pg_catalog.=) 'in_progress' AND m.generation OPERATOR(pg_catalog.<) $3 "
    "ORDER BY m.entry_id, m.\"position\"",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

// Both locked: a takeover cannot slip between the check of the generation and the
// resolution.
KeptPlan g_lock_for_resolve = {
    "SELECT m.state, m.generation, r.generation, r.owner IS NOT NULL, r.id::pg_catalog.text "
    "FROM baton.markers m JOIN baton.runs r "
    "ON r.tenant OPERATOR(pg_catalog.=) m.tenant AND r.id OPERATOR(pg_catalog.=) m.run_id "
    "WHERE " KEY_OF_M " FOR UPDATE OF m FOR NO KEY UPDATE OF r",
    3, {UUIDOID, INT8OID, INT4OID}, nullptr};

KeptPlan g_exists = {"SELECT 1 FROM baton.markers m WHERE " KEY_OF_M, 3, {UUIDOID, INT8OID, INT4OID}, nullptr};

KeptPlan g_resolve = {
    "UPDATE baton.markers m SET state = $4, resolved_generation = $5, "
    "completed_at = CASE WHEN $4 OPERATOR(pg_catalog.=) 'retry' THEN NULL ELSE pg_catalog.now() END "
    "WHERE " KEY_OF_M,
    5, {UUIDOID, INT8OID, INT4OID, TEXTOID, INT8OID}, nullptr};

// g_resolve for Citus, which crashes on the generic plan of an UPDATE with now() inside
// a CASE and refuses a function that is not immutable inside a CASE: completed_at is
// computed by the caller ($6: NULL for retry, else now()).
KeptPlan g_resolve_citus = {
    "UPDATE baton.markers m SET state = $4, resolved_generation = $5, completed_at = $6 WHERE " KEY_OF_M,
    6, {UUIDOID, INT8OID, INT4OID, TEXTOID, INT8OID, TIMESTAMPTZOID}, nullptr};

// The values of a statement on a marker's key, room for the rest after it.
struct KeyValues {
    Datum v[7];
    char nulls[8];
    explicit KeyValues(const Key& key)
        : v{UUIDPGetDatum(key.tenant), Int64GetDatum(key.entry_id), Int32GetDatum(key.position), 0, 0, 0, 0},
          nulls{' ', ' ', ' ', ' ', ' ', ' ', ' ', '\0'} {}
};

// The advisory lock that orders the entries of (tenant, subject, step), until commit.
void lock_entries(const pg_uuid_t* tenant, const text* subject, const text* step) {
    guard([tenant, subject, step] {
        uint64 h = hash_bytes_extended(tenant->data, UUID_LEN, 0);
        h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(subject)),
                                VARSIZE_ANY_EXHDR(subject), h);
        h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(step)), VARSIZE_ANY_EXHDR(step),
                                h);
        LOCKTAG tag = locks::tag(locks::Purpose::kEnterStep, h);
        (void)LockAcquire(&tag, ExclusiveLock, false, false);
    });
}

}  // namespace

// Concurrent entries wait for each other on the lock, so no two share a number.
void enter(Spi& spi, pg_uuid_t* tenant, text* subject, text* step, text* digest, ReturnSetInfo* rsinfo) {
    lock_entries(tenant, subject, step);
    Datum values[4] = {UUIDPGetDatum(tenant), PointerGetDatum(subject), PointerGetDatum(step),
                       PointerGetDatum(digest)};
    spi.run_latest(citus::pick(g_enter, g_enter_citus), values, nullptr);
    spi.emit_row(rsinfo, 0);
}

// One probe of each table's primary key.
std::optional<Entry> entry(Spi& spi, pg_uuid_t* tenant, std::int64_t entry_id) {
    Datum values[2] = {UUIDPGetDatum(tenant), Int64GetDatum(entry_id)};
    if (spi.run(g_entry, values, nullptr) == 0) return std::nullopt;
    if (spi.is_null(0, 1)) return Entry{false, 0, 0};
    bool isnull = false;
    return Entry{true, spi.copy_out(0, 1, &isnull), spi.int64_at(0, 2)};
}

// The insert first; a marker resolved as retry is the only one that may be claimed again.
bool claim(Spi& spi, const Key& key, text* kind, text* operation_id, const Entry& entry) {
    KeyValues k(key);
    k.v[3] = PointerGetDatum(kind);
    k.v[4] = PointerGetDatum(operation_id);
    k.v[5] = entry.run_id;
    k.v[6] = Int64GetDatum(entry.generation);
    if (operation_id == nullptr) k.nulls[4] = 'n';
    if (!entry.has_run) k.nulls[5] = k.nulls[6] = 'n';
    if (spi.run(g_claim, k.v, k.nulls) == 1) return true;
    return spi.run(g_reclaim, k.v, k.nulls) == 1;
}

// complete_marker's write; its WHERE is the state check.
bool complete(Spi& spi, const Key& key, marker::State to, text* error) {
    KeyValues k(key);
    k.v[3] = text_datum(marker::state_name(to));
    k.v[4] = PointerGetDatum(error);
    if (error == nullptr) k.nulls[4] = 'n';
    return spi.run(g_complete, k.v, k.nulls) == 1;
}

// A probe of the primary key.
void emit(Spi& spi, const Key& key, ReturnSetInfo* rsinfo) {
    KeyValues k(key);
    if (spi.run(g_marker, k.v, nullptr) == 1) spi.emit_row(rsinfo, 0);
}

// The run's markers, by the (tenant, run_id) index.
void emit_in_doubt(Spi& spi, pg_uuid_t* tenant, pg_uuid_t* run_id, std::int64_t run_generation,
                   ReturnSetInfo* rsinfo) {
    Datum values[3] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id), Int64GetDatum(run_generation)};
    std::uint64_t n = spi.run(g_in_doubt, values, nullptr);
    for (std::uint64_t row = 0; row < n; row++) spi.emit_row(rsinfo, row);
}

// The state first, so that a state the core does not know is refused before the rest
// is read.
std::optional<Locked> lock_for_resolve(Spi& spi, const Key& key) {
    KeyValues k(key);
    if (spi.run(g_lock_for_resolve, k.v, nullptr) == 0) return std::nullopt;
    const char* stored = spi.cstring_at(0, 1);
    auto state = marker::parse_state(stored ? stored : "");
    if (!state)
        throw Error(SqlState::kInternal, marker::marker_text(key.entry_id, key.position) + " has an unknown state",
                    "Its state is \"" + clip(stored ? stored : "") + "\".");
    return Locked{*state, spi.int64_at(0, 2), spi.int64_at(0, 3), spi.bool_at(0, 4), spi.cstring_at(0, 5)};
}

// A probe of the primary key.
bool exists(Spi& spi, const Key& key) {
    KeyValues k(key);
    return spi.run(g_exists, k.v, nullptr) == 1;
}

// resolve_marker's write, after marker::check_resolve said so.
void resolve(Spi& spi, const Key& key, marker::State to, std::int64_t generation) {
    KeyValues k(key);
    k.v[3] = text_datum(marker::state_name(to));
    k.v[4] = Int64GetDatum(generation);
    if (!citus::distributed()) {
        spi.run(g_resolve, k.v, nullptr);
        return;
    }
    bool retry = to == marker::State::kRetry;
    k.v[5] = retry ? 0 : TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());  // now()
    char nulls[7] = "      ";
    if (retry) nulls[5] = 'n';
    spi.run(g_resolve_citus, k.v, nulls);
}

}  // namespace baton::pg::markers
