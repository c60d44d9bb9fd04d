// Runs: submit, inputs_digest, approve, cancel, acquire_run, acquire_next_run,
// renew_run, release_run, run.
//
// A run is owned through a lease fenced by its generation, like a delivery: acquiring
// bumps the generation, and every owner call carries it (DU001 when superseded).
#include <optional>
#include <string>
#include <string_view>

#include "core/definition.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/limits.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/jsonb.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/run_store.hpp"
#include "pg/stores/workflow_store.hpp"

namespace baton::api {

namespace {

// The owner and lease arguments of acquire calls, read (22004) before either is
// checked (22023).
struct Acquirer {
    text* owner;
    Interval* lease;
};

Acquirer acquirer_args(FunctionCallInfo fcinfo, int owner_arg, int lease_arg) {
    Acquirer a{pg::text_arg(fcinfo, owner_arg, "owner"), pg::interval_arg(fcinfo, lease_arg, "lease")};
    check_label("owner", pg::text_chars(a.owner));
    delivery::check_lease_usec(pg::interval_usec(a.lease));
    return a;
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

// baton.submit(tenant, workflow, inputs, idempotency_key): records a run of the
// workflow's latest version with its inputs and their digest; approved at once when the
// workflow does not require approval. Idempotent on (tenant, workflow, key).
Datum submit(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.submit");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* workflow = pg::text_arg(fcinfo, 1, "workflow");
    Jsonb* inputs = pg::jsonb_arg(fcinfo, 2, "inputs");
    text* key = pg::optional_text_arg(fcinfo, 3);
    check_label("workflow", pg::text_chars(workflow));
    pg::check_object_argument("inputs", inputs);
    pg::check_json_utf8("inputs", inputs);  // its digest is taken over its UTF-8 text
    if (key != nullptr) check_label("idempotency_key", pg::text_chars(key));
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    pg::Workflow wf = pg::load_workflow(spi, workflow, 0);
    run::Status status = wf.definition.requires_approval ? run::Status::kSubmitted : run::Status::kApproved;
    pg::runs::Submitted run = pg::runs::insert(spi, tenant, workflow, wf.version, status, inputs, key);
    if (!run.same_inputs)
        throw Error(SqlState::kDedupConflict,
                    "idempotency key " + pg::quoted(key) + " of workflow " + pg::quoted(workflow) +
                        " is already used with other inputs in tenant " + pg::uuid_text(tenant),
                    "A submit repeated with the same key must carry the same inputs.",
                    "Use a new idempotency key for a different request.");
    PG_RETURN_UUID_P(run.id);
}

// baton.inputs_digest(tenant, run_id): the lowercase hex sha256 of the run's inputs
// (as jsonb prints them), which an approval must name.
Datum inputs_digest(FunctionCallInfo fcinfo, Oid) {
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    pg::Spi spi;
    return pg::runs::digest(spi, run);
}

// baton.approve(tenant, run_id, approver, digest): binds the approver's decision to the
// inputs digest; creates no stage.
Datum approve(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.approve");
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    text* approver = pg::text_arg(fcinfo, 2, "approver");
    text* digest = pg::text_arg(fcinfo, 3, "digest");
    check_label("approver", pg::text_chars(approver));
    pg::fence::require_writable(run.tenant);
    pg::Spi spi;
    pg::runs::Locked r = pg::runs::lock(spi, run);
    bool digest_matches = pg::text_view(digest) == std::string_view(r.digest);
    bool someone_else = r.approved_by != nullptr && pg::text_view(approver) != std::string_view(r.approved_by);
    if (run::approve_verdict(r.status, digest_matches, someone_else, pg::uuid_text(run.run_id)) ==
        run::Approval::kApprove)
        pg::runs::approve(spi, run, approver);
    PG_RETURN_VOID();
}

// baton.cancel(tenant, run_id, reason): ends a run that has not ended; its holder's
// next transition_stage answers finished/cancelled.
Datum cancel(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.cancel");
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    text* reason = pg::text_arg(fcinfo, 2, "reason");
    if (VARSIZE_ANY_EXHDR(reason) > limits::kMaxErrorBytes)
        throw_invalid_argument("reason", "A reason has at most " + std::to_string(limits::kMaxErrorBytes) +
                                             " bytes; this one has " + std::to_string(VARSIZE_ANY_EXHDR(reason)) + ".");
    pg::fence::require_writable(run.tenant);
    pg::Spi spi;
    pg::runs::Locked r = pg::runs::lock(spi, run);
    if (run::cancel_verdict(r.status, pg::uuid_text(run.run_id)) == run::Cancellation::kCancel)
        pg::runs::cancel(spi, run, reason);
    PG_RETURN_VOID();
}

// baton.acquire_run(tenant, run_id, owner, lease): takes the run's lease and returns
// the new generation; NULL (nothing changes) when another owner holds an unexpired
// lease or the run has ended.
Datum acquire_run(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.acquire_run");
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    auto [owner, lease] = acquirer_args(fcinfo, 2, 3);
    pg::fence::require_writable(run.tenant);
    pg::Spi spi;
    pg::runs::Locked r = pg::runs::lock(spi, run);
    bool same_owner = r.owner != nullptr && pg::text_view(owner) == std::string_view(r.owner);
    if (!run::may_acquire(r.status, r.lease_live, same_owner)) PG_RETURN_NULL();
    PG_RETURN_INT64(pg::runs::acquire(spi, run, owner, lease));
}

// baton.acquire_next_run(tenant, workflow, owner, lease): takes the lease of one
// runnable run (approved or running, lease free or expired, no retry deadline ahead),
// skipping runs other acquirers hold; zero rows when there is none.
Datum acquire_next_run(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.acquire_next_run");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* workflow = pg::text_arg(fcinfo, 1, "workflow");
    auto [owner, lease] = acquirer_args(fcinfo, 2, 3);
    check_label("workflow", pg::text_chars(workflow));
    pg::fence::require_writable(tenant);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    (void)pg::load_workflow(spi, workflow, 0);  // DU008 for an unknown workflow
    pg::runs::acquire_next(spi, tenant, workflow, owner, lease, rsinfo);
    return static_cast<Datum>(0);
}

// baton.renew_run(tenant, run_id, generation, lease): extends the owner's lease;
// DU001 when superseded, DU007 when the run has ended.
Datum renew_run(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.renew_run");
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    std::int64_t generation = pg::int64_arg(fcinfo, 2, "generation");
    Interval* lease = pg::interval_arg(fcinfo, 3, "lease");
    delivery::check_lease_usec(pg::interval_usec(lease));
    pg::fence::require_writable(run.tenant);
    pg::Spi spi;
    if (std::optional<TimestampTz> until = pg::runs::renew(spi, run, generation, lease))
        PG_RETURN_TIMESTAMPTZ(*until);
    pg::runs::State r = pg::runs::state(spi, run);
    run::check_owner(generation, r.generation, r.owned, pg::uuid_text(run.run_id));
    throw Error(SqlState::kInvalidState, "run " + pg::uuid_text(run.run_id) + " is " + run::status_name(r.status),
                "An ended run has no lease to renew.");
}

// baton.release_run(tenant, run_id, generation): gives the lease up; the generation
// moves on, so the releasing owner's later calls are DU001.
Datum release_run(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.release_run");
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    std::int64_t generation = pg::int64_arg(fcinfo, 2, "generation");
    pg::fence::require_writable(run.tenant);
    pg::Spi spi;
    if (pg::runs::release(spi, run, generation)) PG_RETURN_VOID();
    pg::runs::State r = pg::runs::state(spi, run);
    run::check_owner(generation, r.generation, r.owned, pg::uuid_text(run.run_id));
    throw Error(SqlState::kInternal,
                "release_run found its own lease on run " + pg::uuid_text(run.run_id) + " but could not release it");
}

// baton.run(tenant, run_id): the run's row, for any tenant state; DU008 if absent.
Datum get_run(FunctionCallInfo fcinfo, Oid) {
    pg::runs::Key run{pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id")};
    pg::Spi spi;
    return pg::runs::row(spi, run);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_submit, baton::api::submit)
BATON_FUNCTION(baton_inputs_digest, baton::api::inputs_digest)
BATON_FUNCTION(baton_approve, baton::api::approve)
BATON_FUNCTION(baton_cancel, baton::api::cancel)
BATON_FUNCTION(baton_acquire_run, baton::api::acquire_run)
BATON_FUNCTION(baton_acquire_next_run, baton::api::acquire_next_run)
BATON_FUNCTION(baton_renew_run, baton::api::renew_run)
BATON_FUNCTION(baton_release_run, baton::api::release_run)
BATON_FUNCTION(baton_run, baton::api::get_run)
