// The stage calls of a run's owner besides transition_stage (transition.cpp):
// start_stage, complete_stage and fail_stage, each on a stage of the locked run; and
// run_history, the run's stages in chain order.
#include <optional>
#include <string>

#include "core/definition.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/fence.hpp"
#include "pg/runtime/jsonb.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/stage_store.hpp"
#include "api/owner_call.hpp"

namespace baton::api {

namespace {

// Stage stage_id of the call's run: DU008 when it is not the run's.
pg::stages::Stage stage_of_run(pg::Spi& spi, const OwnerCall& call, std::int64_t stage_id) {
    std::optional<pg::stages::Stage> s = pg::stages::find(spi, call.run(), stage_id);
    if (!s)
        throw Error(SqlState::kNotFound,
                    "stage " + std::to_string(stage_id) + " is not a stage of " + run_text(call) +
                        " in tenant " + pg::uuid_text(call.tenant),
                    "Stages are addressed by (tenant, run_id, stage_id).");
    return *s;
}

// baton.start_stage(tenant, run_id, generation, stage_id): marks the current stage
// running (attempt + 1) and returns its inputs.
Datum start_stage(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.start_stage");
    OwnerCall call = owner_call_args(fcinfo);
    std::int64_t stage_id = pg::int64_arg(fcinfo, 3, "stage_id");
    pg::fence::require_writable(call.tenant);
    pg::Spi spi;
    pg::runs::Owned run = pg::runs::lock_for_owner(spi, call.run(), call.generation);
    pg::stages::Stage s = stage_of_run(spi, call, stage_id);
    run::check_start(run.status, s.status, s.is_current, s.before_retry_deadline, s.attempt, s.max_attempts,
                     pg::uuid_text(call.run_id), stage_id);
    return pg::stages::start(spi, call.run(), stage_id);
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
    pg::runs::Owned run = pg::runs::lock_for_owner(spi, call.run(), call.generation);
    pg::stages::Stage s = stage_of_run(spi, call, stage_id);
    if (s.status == run::StageStatus::kCompleted) {
        if (pg::stages::same_result(spi, call.run(), stage_id, result)) PG_RETURN_VOID();
        throw Error(SqlState::kInvalidState,
                    "stage " + std::to_string(stage_id) + " of " + run_text(call) +
                        " is already completed with another result",
                    "A stage's result is saved once; a repeat must carry the same result.");
    }
    run::check_settle(run.status, s.status, s.is_current, "complete_stage", pg::uuid_text(call.run_id), stage_id);
    pg::stages::complete(spi, call.run(), stage_id, result);
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
    pg::runs::Owned run = pg::runs::lock_for_owner(spi, call.run(), call.generation);
    pg::stages::Stage s = stage_of_run(spi, call, stage_id);
    run::check_settle(run.status, s.status, s.is_current, "fail_stage", pg::uuid_text(call.run_id), stage_id);
    PG_RETURN_TIMESTAMPTZ(pg::stages::fail(spi, call.run(), stage_id, error, retry_in));
}

// baton.run_history(tenant, run_id): the run's stages in chain order, following
// predecessor_id from the start stage; DU004 when the chain is broken.
Datum run_history(FunctionCallInfo fcinfo, Oid) {
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    if (!pg::runs::exists(spi, run)) pg::runs::throw_not_found(run);
    pg::stages::emit_history(spi, run, rsinfo);
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_start_stage, baton::api::start_stage)
BATON_FUNCTION(baton_complete_stage, baton::api::complete_stage)
BATON_FUNCTION(baton_fail_stage, baton::api::fail_stage)
BATON_FUNCTION(baton_run_history, baton::api::run_history)
