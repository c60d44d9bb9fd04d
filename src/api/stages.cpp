// The stage calls of a run's owner besides transition_stage (transition.cpp):
// start_stage, complete_stage and fail_stage, each on a stage of the locked run; and
// run_history, the run's stages in chain order.
#include <string>
#include <vector>

#include "core/cause.hpp"
#include "core/chain.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/fence.hpp"
#include "pg/jsonb.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"
#include "api/owner_call.hpp"

namespace baton::api {

namespace {

pg::KeptPlan g_stage = {
    "SELECT " STAGE_COLUMNS " FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.run_id OPERATOR(pg_catalog.=) $2 AND s.id OPERATOR(pg_catalog.=) $3",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

pg::KeptPlan g_start_stage = {
    "UPDATE baton.stages s SET status = 'running', attempt = s.attempt OPERATOR(pg_catalog.+) 1, "
    "started_at = pg_catalog.now() "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2 RETURNING s.inputs",
    2, {UUIDOID, INT8OID}, nullptr};

pg::KeptPlan g_same_result = {
    "SELECT s.result OPERATOR(pg_catalog.=) $3 FROM baton.stages s "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, INT8OID, JSONBOID}, nullptr};

pg::KeptPlan g_complete_stage = {
    "UPDATE baton.stages s SET status = 'completed', result = $3, completed_at = pg_catalog.now() "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, INT8OID, JSONBOID}, nullptr};

pg::KeptPlan g_fail_stage = {
    "UPDATE baton.stages s SET status = 'failed', error = $3, "
    "retry_at = pg_catalog.now() OPERATOR(pg_catalog.+) COALESCE($4, s.retry_delay) "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2 RETURNING s.retry_at",
    4, {UUIDOID, INT8OID, TEXTOID, INTERVALOID}, nullptr};

pg::KeptPlan g_run_exists = {"SELECT 1 FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_history = {
    "SELECT s.*, s.id AS chain_id, s.predecessor_id AS chain_predecessor FROM baton.stages s "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.run_id OPERATOR(pg_catalog.=) $2",
    2, {UUIDOID, UUIDOID}, nullptr};

// Reads a stage of the run for an owner call: DU008 when it is not the run's.
StageRow stage_of_run(pg::Spi& spi, const OwnerCall& call, std::int64_t stage_id) {
    Datum values[3] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id), Int64GetDatum(stage_id)};
    if (spi.run(g_stage, values, nullptr) == 0)
        throw Error(SqlState::kNotFound,
                    "stage " + std::to_string(stage_id) + " is not a stage of " + run_text(call) +
                        " in tenant " + pg::uuid_text(call.tenant),
                    "Stages are addressed by (tenant, run_id, stage_id).");
    return read_stage(spi, call);
}

// baton.start_stage(tenant, run_id, generation, stage_id): marks the current stage
// running (attempt + 1) and returns its inputs.
Datum start_stage(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.start_stage");
    OwnerCall call = owner_call_args(fcinfo);
    std::int64_t stage_id = pg::int64_arg(fcinfo, 3, "stage_id");
    pg::fence::require_writable(call.tenant);
    pg::Spi spi;
    LockedRun run = lock_run(spi, call);
    StageRow s = stage_of_run(spi, call, stage_id);
    run::check_start(run.status, s.status, s.is_current, s.before_retry_deadline, s.attempt, s.max_attempts,
                     pg::uuid_text(call.run_id), stage_id);
    Datum values[2] = {UUIDPGetDatum(call.tenant), Int64GetDatum(stage_id)};
    spi.run(g_start_stage, values, nullptr);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

// baton.complete_stage(tenant, run_id, generation, stage_id, result): saves the running
// stage's result; repeating it with the same result is a no-op, with another DU007.
Datum complete_stage(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.complete_stage");
    OwnerCall call = owner_call_args(fcinfo);
    std::int64_t stage_id = pg::int64_arg(fcinfo, 3, "stage_id");
    Jsonb* result = pg::jsonb_arg(fcinfo, 4, "result");
    pg::check_object_argument("result", result);
    pg::check_json_utf8("result", result);  // the successor's inputs, read as UTF-8
    pg::fence::require_writable(call.tenant);
    pg::Spi spi;
    LockedRun run = lock_run(spi, call);
    StageRow s = stage_of_run(spi, call, stage_id);
    Datum values[3] = {UUIDPGetDatum(call.tenant), Int64GetDatum(stage_id), JsonbPGetDatum(result)};
    if (s.status == run::StageStatus::kCompleted) {
        spi.run(g_same_result, values, nullptr);
        if (spi.bool_at(0, 1)) PG_RETURN_VOID();
        throw Error(SqlState::kInvalidState,
                    "stage " + std::to_string(stage_id) + " of " + run_text(call) +
                        " is already completed with another result",
                    "A stage's result is saved once; a repeat must carry the same result.");
    }
    run::check_settle(run.status, s.status, s.is_current, "complete_stage", pg::uuid_text(call.run_id), stage_id);
    spi.run(g_complete_stage, values, nullptr);
    PG_RETURN_VOID();
}

// baton.fail_stage(tenant, run_id, generation, stage_id, error, retry_in): saves the
// error and a retry deadline (now + retry_in, or the stage's retry_delay); returns it.
Datum fail_stage(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.fail_stage");
    OwnerCall call = owner_call_args(fcinfo);
    std::int64_t stage_id = pg::int64_arg(fcinfo, 3, "stage_id");
    text* error = pg::text_arg(fcinfo, 4, "error");
    Interval* retry_in = PG_ARGISNULL(5) ? nullptr : PG_GETARG_INTERVAL_P(5);
    delivery::check_error_bytes(VARSIZE_ANY_EXHDR(error));
    if (retry_in != nullptr) {
        try {
            delivery::check_delay_usec(pg::interval_usec(retry_in));
        } catch (const Error& e) {
            throw_invalid_argument("retry_in", e.detail());
        }
    }
    pg::fence::require_writable(call.tenant);
    pg::Spi spi;
    LockedRun run = lock_run(spi, call);
    StageRow s = stage_of_run(spi, call, stage_id);
    run::check_settle(run.status, s.status, s.is_current, "fail_stage", pg::uuid_text(call.run_id), stage_id);
    Datum values[4] = {UUIDPGetDatum(call.tenant), Int64GetDatum(stage_id), PointerGetDatum(error),
                       retry_in ? IntervalPGetDatum(retry_in) : 0};
    char nulls[5] = "    ";
    if (retry_in == nullptr) nulls[3] = 'n';
    spi.run(g_fail_stage, values, nulls);
    bool isnull = false;
    PG_RETURN_TIMESTAMPTZ(DatumGetTimestampTz(spi.value(0, 1, &isnull)));
}

// baton.run_history(tenant, run_id): the run's stages in chain order, following
// predecessor_id from the start stage; DU004 when the chain is broken.
Datum run_history(FunctionCallInfo fcinfo, Oid) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    Datum key[2] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id)};
    if (spi.run(g_run_exists, key, nullptr) == 0)
        run::throw_not_found(pg::uuid_text(run_id), pg::uuid_text(tenant));
    std::uint64_t n = spi.run(g_history, key, nullptr);
    int natts = rsinfo->setDesc->natts;  // the columns of baton.stages, then chain_id, chain_predecessor
    std::vector<chain::Link> links;
    links.reserve(n);
    for (std::uint64_t row = 0; row < n; row++) {
        bool isnull = false;
        chain::Link link{spi.int64_at(row, natts + 1), 0, false};
        Datum pred = spi.value(row, natts + 2, &isnull);
        if (!isnull) {
            link.predecessor = DatumGetInt64(pred);
            link.has_predecessor = true;
        }
        links.push_back(link);
    }
    std::vector<std::size_t> order = chain::chain_order(links, pg::uuid_text(run_id));
    for (std::size_t row : order) spi.emit_row(rsinfo, row);
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_start_stage, baton::api::start_stage)
BATON_FUNCTION(baton_complete_stage, baton::api::complete_stage)
BATON_FUNCTION(baton_fail_stage, baton::api::fail_stage)
BATON_FUNCTION(baton_run_history, baton::api::run_history)
