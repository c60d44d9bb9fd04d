// What the stage calls of a run's owner share (see owner_call.hpp).
#include <string>

#include "core/error.hpp"
#include "core/run.hpp"
#include "pg/args.hpp"
#include "api/owner_call.hpp"

namespace baton::api {

namespace {

pg::KeptPlan g_lock_run = {
    "SELECT r.status, r.generation, r.workflow, r.version, r.owner IS NOT NULL FROM baton.runs r WHERE " KEY_OF_R
    " FOR NO KEY UPDATE",
    2, {UUIDOID, UUIDOID}, nullptr};

}  // namespace

// The call's run as text ("run <uuid>"), for the messages that name it.
std::string run_text(const OwnerCall& call) {
    return "run " + pg::uuid_text(call.run_id);
}

// Reads them in the order every owner call declares them; 22004 names a NULL one.
OwnerCall owner_call_args(FunctionCallInfo fcinfo) {
    return {pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id"),
            pg::int64_arg(fcinfo, 2, "generation")};
}

// Locks the run first, so that the owner check and everything after it see the run as
// it stays until the transaction ends.
LockedRun lock_run(pg::Spi& spi, const OwnerCall& call) {
    Datum key[2] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id)};
    if (spi.run(g_lock_run, key, nullptr) == 0)
        run::throw_not_found(pg::uuid_text(call.run_id), pg::uuid_text(call.tenant));
    run::check_owner(call.generation, spi.int64_at(0, 2), spi.bool_at(0, 5), pg::uuid_text(call.run_id));
    const char* stored = spi.cstring_at(0, 1);
    auto status = run::parse_status(stored ? stored : "");
    if (!status)
        throw Error(SqlState::kCorruptHistory, run_text(call) + " has an unknown status",
                    "Its status is \"" + clip(stored ? stored : "") + "\".");
    bool isnull = false;
    text* workflow = DatumGetTextPP(spi.copy_out(0, 3, &isnull));
    return {*status, workflow, spi.int32_at(0, 4)};
}

// Reads the columns in STAGE_COLUMNS' order; the status first, so that a status the
// state machine does not know is refused before anything else is read.
StageRow read_stage(pg::Spi& spi, const OwnerCall& call) {
    const char* stored = spi.cstring_at(0, 4);
    auto status = run::parse_stage_status(stored ? stored : "");
    if (!status)
        throw Error(SqlState::kCorruptHistory,
                    "stage " + std::to_string(spi.int64_at(0, 1)) + " of " + run_text(call) + " has an unknown status",
                    "Its status is \"" + clip(stored ? stored : "") + "\".");
    StageRow r{};
    r.id = spi.int64_at(0, 1);
    r.name = spi.cstring_at(0, 2);
    r.entry_seq = spi.int32_at(0, 3);
    r.status = *status;
    r.attempt = spi.int32_at(0, 5);
    r.max_attempts = spi.int32_at(0, 6);
    bool isnull = false;
    Datum retry_at = spi.value(0, 7, &isnull);
    r.has_retry_at = !isnull;
    r.retry_at = isnull ? 0 : DatumGetTimestampTz(retry_at);
    r.before_retry_deadline = spi.bool_at(0, 8);
    r.inputs = spi.copy_out(0, 9, &isnull);
    r.is_current = spi.bool_at(0, 10);
    r.result = spi.copy_out(0, 11, &isnull);
    r.has_result = !isnull;
    return r;
}

}  // namespace baton::api
