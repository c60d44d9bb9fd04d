// Step entries and at-most-once markers: enter_step, claim_marker, complete_marker,
// marker, markers_in_doubt, resolve_marker.
//
// Claiming is insert-from-absent under the marker's primary key: of two claimers, the
// second waits for the first and then finds its row (false), so an action runs at most
// once. A marker of a stage records the run's generation; after a takeover, markers
// still in progress under an older generation are in doubt until the new owner
// resolves them.
#include <string>

#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/marker.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/fence.hpp"
#include "pg/locks.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"

namespace baton::api {

namespace {

#define KEY_OF_M                                                                   \
    "m.tenant OPERATOR(pg_catalog.=) $1 AND m.entry_id OPERATOR(pg_catalog.=) $2 " \
    "AND m.\"position\" OPERATOR(pg_catalog.=) $3"

// The next entry of (subject, step): one backward probe of its unique index. Run with
// the latest snapshot under the entry lock, so it sees every committed entry.
pg::KeptPlan g_enter = {
    "INSERT INTO baton.step_entries AS e (tenant, subject, step, entry_seq, digest) VALUES ($1, $2, $3, "
    "COALESCE((SELECT p.entry_seq FROM baton.step_entries p WHERE p.tenant OPERATOR(pg_catalog.=) $1 "
    "AND p.subject OPERATOR(pg_catalog.=) $2 AND p.step OPERATOR(pg_catalog.=) $3 "
    "ORDER BY p.entry_seq DESC LIMIT 1), 0) OPERATOR(pg_catalog.+) 1, $4) RETURNING e.id, e.entry_seq",
    4, {UUIDOID, TEXTOID, TEXTOID, TEXTOID}, nullptr};

// The entry a marker belongs to: a stage (with its run and the run's generation) or a
// step entry (no run).
pg::KeptPlan g_entry = {
    "SELECT s.run_id, r.generation FROM baton.stages s JOIN baton.runs r "
    "ON r.tenant OPERATOR(pg_catalog.=) s.tenant AND r.id OPERATOR(pg_catalog.=) s.run_id "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2 "
    "UNION ALL SELECT NULL, NULL FROM baton.step_entries e "
    "WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, INT8OID}, nullptr};

// From absent to in_progress. A loser finds the row and writes (and locks) nothing.
pg::KeptPlan g_claim = {
    "INSERT INTO baton.markers AS m (tenant, entry_id, \"position\", kind, operation_id, run_id, generation) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant, entry_id, \"position\") DO NOTHING RETURNING 1",
    7, {UUIDOID, INT8OID, INT4OID, TEXTOID, TEXTOID, UUIDOID, INT8OID}, nullptr};

// A marker resolved as `retry` may be claimed once more.
pg::KeptPlan g_reclaim = {
    "UPDATE baton.markers m SET state = 'in_progress', kind = $4, operation_id = $5, generation = $7, "
    "error = NULL, claims = m.claims OPERATOR(pg_catalog.+) 1, claimed_at = pg_catalog.now(), "
    "completed_at = NULL, resolved_generation = NULL "
    "WHERE " KEY_OF_M " AND m.state OPERATOR(pg_catalog.=) 'retry' RETURNING 1",
    7, {UUIDOID, INT8OID, INT4OID, TEXTOID, TEXTOID, UUIDOID, INT8OID}, nullptr};

pg::KeptPlan g_complete = {
    "UPDATE baton.markers m SET state = $4, error = $5, completed_at = pg_catalog.now() "
    "WHERE " KEY_OF_M " AND m.state OPERATOR(pg_catalog.=) 'in_progress'",
    5, {UUIDOID, INT8OID, INT4OID, TEXTOID, TEXTOID}, nullptr};

pg::KeptPlan g_marker = {
    "SELECT m.state, m.error, m.kind, m.operation_id, m.claimed_at, m.completed_at "
    "FROM baton.markers m WHERE " KEY_OF_M,
    3, {UUIDOID, INT8OID, INT4OID}, nullptr};

pg::KeptPlan g_run_generation = {
    "SELECT r.generation FROM baton.runs r WHERE r.tenant OPERATOR(pg_catalog.=) $1 "
    "AND r.id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, UUIDOID}, nullptr};

// Markers in doubt: marker::in_doubt() of src/core/marker.cpp, applied set-wise.
pg::KeptPlan g_in_doubt = {
    "SELECT m.entry_id, m.\"position\", s.stage, m.kind, m.operation_id, m.generation, m.claimed_at "
    "FROM baton.markers m JOIN baton.stages s ON s.tenant OPERATOR(pg_catalog.=) m.tenant "
    "AND s.id OPERATOR(pg_catalog.=) m.entry_id "
    "WHERE m.tenant OPERATOR(pg_catalog.=) $1 AND m.run_id OPERATOR(pg_catalog.=) $2 "
    "AND m.state OPERATOR(pg_catalog.=) 'in_progress' AND m.generation OPERATOR(pg_catalog.<) $3 "
    "ORDER BY m.entry_id, m.\"position\"",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

// The marker and its run, both locked: a takeover cannot slip between the check of the
// generation and the resolution.
pg::KeptPlan g_lock_marker = {
    "SELECT m.state, m.generation, r.generation, r.owner IS NOT NULL, r.id::pg_catalog.text "
    "FROM baton.markers m JOIN baton.runs r "
    "ON r.tenant OPERATOR(pg_catalog.=) m.tenant AND r.id OPERATOR(pg_catalog.=) m.run_id "
    "WHERE " KEY_OF_M " FOR UPDATE OF m FOR NO KEY UPDATE OF r",
    3, {UUIDOID, INT8OID, INT4OID}, nullptr};

pg::KeptPlan g_marker_exists = {"SELECT 1 FROM baton.markers m WHERE " KEY_OF_M, 3, {UUIDOID, INT8OID, INT4OID},
                                nullptr};

pg::KeptPlan g_resolve = {
    "UPDATE baton.markers m SET state = $4, resolved_generation = $5, "
    "completed_at = CASE WHEN $4 OPERATOR(pg_catalog.=) 'retry' THEN NULL ELSE pg_catalog.now() END "
    "WHERE " KEY_OF_M,
    5, {UUIDOID, INT8OID, INT4OID, TEXTOID, INT8OID}, nullptr};

// The (tenant, entry_id, position) every marker call names.
struct MarkerKey {
    pg_uuid_t* tenant;
    std::int64_t entry_id;
    std::int32_t position;
};

// Reads them (22004); the position is checked by the caller once every argument has
// been read, so NULLs are reported before bad values.
MarkerKey marker_key_args(FunctionCallInfo fcinfo) {
    return {pg::uuid_arg(fcinfo, 0, "tenant"), pg::int64_arg(fcinfo, 1, "entry_id"),
            pg::int32_arg(fcinfo, 2, "position")};
}

// Takes the advisory lock that orders the entries of (tenant, subject, step).
void lock_entries(const pg_uuid_t* tenant, const text* subject, const text* step) {
    pg::guard([tenant, subject, step] {
        uint64 h = hash_bytes_extended(tenant->data, UUID_LEN, 0);
        h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(subject)),
                                VARSIZE_ANY_EXHDR(subject), h);
        h = hash_bytes_extended(reinterpret_cast<const unsigned char*>(VARDATA_ANY(step)), VARSIZE_ANY_EXHDR(step),
                                h);
        LOCKTAG tag = pg::locks::tag(pg::locks::Purpose::kEnterStep, h);
        (void)LockAcquire(&tag, ExclusiveLock, false, false);
    });
}

// baton.enter_step(tenant, subject, step, digest): a new entry of the subject into the
// step, numbered from 1; concurrent entries wait for each other, so no two share a number.
Datum enter_step(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.enter_step");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* subject = pg::text_arg(fcinfo, 1, "subject");
    text* step = pg::text_arg(fcinfo, 2, "step");
    text* digest = pg::text_arg(fcinfo, 3, "digest");
    check_label("subject", pg::text_chars(subject));
    check_label("step", pg::text_chars(step));
    check_label("digest", pg::text_chars(digest));
    pg::fence::require_writable(tenant);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    lock_entries(tenant, subject, step);
    pg::Spi spi;
    Datum values[4] = {UUIDPGetDatum(tenant), PointerGetDatum(subject), PointerGetDatum(step),
                       PointerGetDatum(digest)};
    spi.run_latest(g_enter, values, nullptr);
    spi.emit_row(rsinfo, 0);
    return static_cast<Datum>(0);
}

// baton.claim_marker(tenant, entry_id, position, kind, operation_id): true when this
// call moved the marker from absent (or `retry`) to in_progress; false when it exists:
// the caller must then not run the action.
Datum claim_marker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.claim_marker");
    MarkerKey key = marker_key_args(fcinfo);
    text* kind = pg::text_arg(fcinfo, 3, "kind");
    text* operation_id = pg::optional_text_arg(fcinfo, 4);
    marker::check_position(key.position);
    check_label("kind", pg::text_chars(kind));
    if (operation_id != nullptr) check_label("operation_id", pg::text_chars(operation_id));
    pg::fence::require_writable(key.tenant);
    pg::Spi spi;
    Datum entry[2] = {UUIDPGetDatum(key.tenant), Int64GetDatum(key.entry_id)};
    if (spi.run(g_entry, entry, nullptr) == 0)
        throw Error(SqlState::kNotFound,
                    "entry " + std::to_string(key.entry_id) + " does not exist in tenant " + pg::uuid_text(key.tenant),
                    "A marker belongs to a stage or to an entry made by baton.enter_step().");
    bool no_run = spi.is_null(0, 1);
    bool isnull = false;
    Datum run_id = no_run ? 0 : spi.copy_out(0, 1, &isnull);
    Datum values[7] = {UUIDPGetDatum(key.tenant), Int64GetDatum(key.entry_id), Int32GetDatum(key.position),
                       PointerGetDatum(kind),     PointerGetDatum(operation_id), run_id,
                       Int64GetDatum(no_run ? 0 : spi.int64_at(0, 2))};
    char nulls[8] = "       ";
    if (operation_id == nullptr) nulls[4] = 'n';
    if (no_run) nulls[5] = nulls[6] = 'n';
    if (spi.run(g_claim, values, nulls) == 1) PG_RETURN_BOOL(true);
    PG_RETURN_BOOL(spi.run(g_reclaim, values, nulls) == 1);
}

// baton.complete_marker(tenant, entry_id, position, state, error): in_progress to done
// or failed, true; false, writing nothing, when the marker is absent or terminal. Run it
// in the transaction of the action's own writes.
Datum complete_marker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.complete_marker");
    MarkerKey key = marker_key_args(fcinfo);
    text* state = pg::text_arg(fcinfo, 3, "state");
    text* error = pg::optional_text_arg(fcinfo, 4);
    marker::check_position(key.position);
    marker::State to = marker::parse_completion(pg::text_view(state));
    if (error != nullptr) delivery::check_error_bytes(VARSIZE_ANY_EXHDR(error));
    pg::fence::require_writable(key.tenant);
    pg::Spi spi;
    Datum values[5] = {UUIDPGetDatum(key.tenant), Int64GetDatum(key.entry_id), Int32GetDatum(key.position),
                       pg::text_datum(marker::state_name(to)), PointerGetDatum(error)};
    char nulls[6] = "     ";
    if (error == nullptr) nulls[4] = 'n';
    PG_RETURN_BOOL(spi.run(g_complete, values, nulls) == 1);
}

// baton.marker(tenant, entry_id, position): the marker, or zero rows if never claimed.
Datum get_marker(FunctionCallInfo fcinfo, Oid) {
    MarkerKey key = marker_key_args(fcinfo);
    marker::check_position(key.position);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    Datum values[3] = {UUIDPGetDatum(key.tenant), Int64GetDatum(key.entry_id), Int32GetDatum(key.position)};
    if (spi.run(g_marker, values, nullptr) == 1) spi.emit_row(rsinfo, 0);
    return static_cast<Datum>(0);
}

// baton.markers_in_doubt(tenant, run_id): the run's markers still in progress that were
// claimed under an older generation than the run's current one.
Datum markers_in_doubt(FunctionCallInfo fcinfo, Oid) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    Datum key[2] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id)};
    if (spi.run(g_run_generation, key, nullptr) == 0)
        run::throw_not_found(pg::uuid_text(run_id), pg::uuid_text(tenant));
    Datum values[3] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id), Int64GetDatum(spi.int64_at(0, 1))};
    std::uint64_t n = spi.run(g_in_doubt, values, nullptr);
    for (std::uint64_t row = 0; row < n; row++) spi.emit_row(rsinfo, row);
    return static_cast<Datum>(0);
}

// baton.resolve_marker(tenant, entry_id, position, generation, outcome): the run's
// current owner records what it found out about a marker in doubt: done, failed, or
// retry (the action did not happen: it may be claimed once more).
Datum resolve_marker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.resolve_marker");
    MarkerKey key = marker_key_args(fcinfo);
    std::int64_t generation = pg::int64_arg(fcinfo, 3, "generation");
    text* outcome = pg::text_arg(fcinfo, 4, "outcome");
    marker::check_position(key.position);
    marker::State to = marker::parse_resolution(pg::text_view(outcome));
    pg::fence::require_writable(key.tenant);
    pg::Spi spi;
    Datum values[5] = {UUIDPGetDatum(key.tenant), Int64GetDatum(key.entry_id), Int32GetDatum(key.position),
                       pg::text_datum(marker::state_name(to)), Int64GetDatum(generation)};
    if (spi.run(g_lock_marker, values, nullptr) == 0) {
        std::string marker = marker::marker_text(key.entry_id, key.position);
        if (spi.run(g_marker_exists, values, nullptr) == 0)
            throw Error(SqlState::kNotFound, marker + " does not exist in tenant " + pg::uuid_text(key.tenant),
                        "It was never claimed.");
        throw Error(SqlState::kInvalidState, marker + " is not a stage's marker",
                    "Only markers of a run's stages have an owner generation to resolve under.");
    }
    const char* stored = spi.cstring_at(0, 1);
    auto state = marker::parse_state(stored ? stored : "");
    if (!state)
        throw Error(SqlState::kInternal, marker::marker_text(key.entry_id, key.position) + " has an unknown state",
                    "Its state is \"" + clip(stored ? stored : "") + "\".");
    marker::check_resolve(*state, spi.int64_at(0, 2), spi.int64_at(0, 3), spi.bool_at(0, 4), generation,
                          spi.cstring_at(0, 5), key.entry_id, key.position);
    spi.run(g_resolve, values, nullptr);
    PG_RETURN_VOID();
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_enter_step, baton::api::enter_step)
BATON_FUNCTION(baton_claim_marker, baton::api::claim_marker)
BATON_FUNCTION(baton_complete_marker, baton::api::complete_marker)
BATON_FUNCTION(baton_marker, baton::api::get_marker)
BATON_FUNCTION(baton_markers_in_doubt, baton::api::markers_in_doubt)
BATON_FUNCTION(baton_resolve_marker, baton::api::resolve_marker)
