// Step entries and at-most-once markers: enter_step, claim_marker, complete_marker,
// marker, markers_in_doubt, resolve_marker.
//
// Claiming is insert-from-absent (pg/stores/marker_store.cpp), so an action runs at most
// once. A marker of a stage records the run's generation; after a takeover, markers
// still in progress under an older generation are in doubt until the new owner
// resolves them.
#include <optional>
#include <string>

#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/marker.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/fence.hpp"
#include "pg/stores/marker_store.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/run_store.hpp"

namespace baton::api {

namespace {

// Reads the (tenant, entry_id, position) every marker call names (22004); the position
// is checked by the caller once every argument has been read, so NULLs are reported
// before bad values.
pg::markers::Key marker_key_args(FunctionCallInfo fcinfo) {
    return {pg::uuid_arg(fcinfo, 0, "tenant"), pg::int64_arg(fcinfo, 1, "entry_id"),
            pg::int32_arg(fcinfo, 2, "position")};
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
    pg::Spi spi;
    pg::markers::enter(spi, tenant, subject, step, digest, rsinfo);
    return static_cast<Datum>(0);
}

// baton.claim_marker(tenant, entry_id, position, kind, operation_id): true when this
// call moved the marker from absent (or `retry`) to in_progress; false when it exists:
// the caller must then not run the action.
Datum claim_marker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.claim_marker");
    pg::markers::Key key = marker_key_args(fcinfo);
    text* kind = pg::text_arg(fcinfo, 3, "kind");
    text* operation_id = pg::optional_text_arg(fcinfo, 4);
    marker::check_position(key.position);
    check_label("kind", pg::text_chars(kind));
    if (operation_id != nullptr) check_label("operation_id", pg::text_chars(operation_id));
    pg::fence::require_writable(key.tenant);
    pg::Spi spi;
    std::optional<pg::markers::Entry> entry = pg::markers::entry(spi, key.tenant, key.entry_id);
    if (!entry)
        throw Error(SqlState::kNotFound,
                    "entry " + std::to_string(key.entry_id) + " does not exist in tenant " + pg::uuid_text(key.tenant),
                    "A marker belongs to a stage or to an entry made by baton.enter_step().");
    PG_RETURN_BOOL(pg::markers::claim(spi, key, kind, operation_id, *entry));
}

// baton.complete_marker(tenant, entry_id, position, state, error): in_progress to done
// or failed, true; false, writing nothing, when the marker is absent or terminal. Run it
// in the transaction of the action's own writes.
Datum complete_marker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.complete_marker");
    pg::markers::Key key = marker_key_args(fcinfo);
    text* state = pg::text_arg(fcinfo, 3, "state");
    text* error = pg::optional_text_arg(fcinfo, 4);
    marker::check_position(key.position);
    marker::State to = marker::parse_completion(pg::text_view(state));
    if (error != nullptr) delivery::check_error_bytes(VARSIZE_ANY_EXHDR(error));
    pg::fence::require_writable(key.tenant);
    pg::Spi spi;
    PG_RETURN_BOOL(pg::markers::complete(spi, key, to, error));
}

// baton.marker(tenant, entry_id, position): the marker, or zero rows if never claimed.
Datum get_marker(FunctionCallInfo fcinfo, Oid) {
    pg::markers::Key key = marker_key_args(fcinfo);
    marker::check_position(key.position);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    pg::markers::emit(spi, key, rsinfo);
    return static_cast<Datum>(0);
}

// baton.markers_in_doubt(tenant, run_id): the run's markers still in progress that were
// claimed under an older generation than the run's current one.
Datum markers_in_doubt(FunctionCallInfo fcinfo, Oid) {
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    std::int64_t generation = pg::runs::state(spi, run).generation;  // DU008 for an unknown run
    pg::markers::emit_in_doubt(spi, run.tenant, run.run_id, generation, rsinfo);
    return static_cast<Datum>(0);
}

// baton.resolve_marker(tenant, entry_id, position, generation, outcome): the run's
// current owner records what it found out about a marker in doubt: done, failed, or
// retry (the action did not happen: it may be claimed once more).
Datum resolve_marker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.resolve_marker");
    pg::markers::Key key = marker_key_args(fcinfo);
    std::int64_t generation = pg::int64_arg(fcinfo, 3, "generation");
    text* outcome = pg::text_arg(fcinfo, 4, "outcome");
    marker::check_position(key.position);
    marker::State to = marker::parse_resolution(pg::text_view(outcome));
    pg::fence::require_writable(key.tenant);
    pg::Spi spi;
    std::optional<pg::markers::Locked> m = pg::markers::lock_for_resolve(spi, key);
    if (!m) {
        std::string marker = marker::marker_text(key.entry_id, key.position);
        if (!pg::markers::exists(spi, key))
            throw Error(SqlState::kNotFound, marker + " does not exist in tenant " + pg::uuid_text(key.tenant),
                        "It was never claimed.");
        throw Error(SqlState::kInvalidState, marker + " is not a stage's marker",
                    "Only markers of a run's stages have an owner generation to resolve under.");
    }
    marker::check_resolve(m->state, m->generation, m->run_generation, m->run_owned, generation, m->run_id,
                          key.entry_id, key.position);
    pg::markers::resolve(spi, key, to, generation);
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
