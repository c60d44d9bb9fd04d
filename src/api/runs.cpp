// Runs: submit, inputs_digest, approve, cancel, acquire_run, acquire_next_run,
// renew_run, release_run, run.
//
// A run is owned through a lease fenced by its generation, like a delivery: acquiring
// bumps the generation, and every owner call carries it (DU001 when superseded).
#include <string>

#include "core/definition.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/limits.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/jsonb.hpp"
#include "pg/fence.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"
#include "pg/workflow_store.hpp"

namespace baton::api {

namespace {

#define KEY_OF_R "r.tenant OPERATOR(pg_catalog.=) $1 AND r.id OPERATOR(pg_catalog.=) $2"

pg::KeptPlan g_insert_run = {
    "INSERT INTO baton.runs AS r (tenant, workflow, version, status, inputs, inputs_digest, "
    "idempotency_key, approved_at) VALUES ($1, $2, $3, $4, $5, "
    "pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to($5::pg_catalog.text, 'UTF8')), 'hex'), "
    "$6, CASE WHEN $4 OPERATOR(pg_catalog.=) 'approved' THEN pg_catalog.now() END) "
    "ON CONFLICT (tenant, workflow, idempotency_key) DO NOTHING RETURNING r.id",
    6, {UUIDOID, TEXTOID, INT4OID, TEXTOID, JSONBOID, TEXTOID}, nullptr};

pg::KeptPlan g_existing_run = {
    "SELECT r.id, r.inputs OPERATOR(pg_catalog.=) $4 FROM baton.runs r "
    "WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.workflow OPERATOR(pg_catalog.=) $2 "
    "AND r.idempotency_key OPERATOR(pg_catalog.=) $3",
    4, {UUIDOID, TEXTOID, TEXTOID, JSONBOID}, nullptr};

pg::KeptPlan g_digest = {"SELECT r.inputs_digest FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID},
                         nullptr};

// The run, locked for the owner's change (NO KEY UPDATE: inserts of stages and
// deliveries that reference it are not blocked).
pg::KeptPlan g_lock_run = {
    "SELECT r.status, r.generation, r.inputs_digest, r.approved_by, r.owner, "
    "r.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() "
    "FROM baton.runs r WHERE " KEY_OF_R " FOR NO KEY UPDATE",
    2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_approve = {
    "UPDATE baton.runs r SET status = 'approved', approved_by = $3, approved_at = pg_catalog.now() "
    "WHERE " KEY_OF_R,
    3, {UUIDOID, UUIDOID, TEXTOID}, nullptr};

pg::KeptPlan g_cancel = {
    "UPDATE baton.runs r SET status = 'cancelled', reason = $3, finished_at = pg_catalog.now() "
    "WHERE " KEY_OF_R,
    3, {UUIDOID, UUIDOID, TEXTOID}, nullptr};

pg::KeptPlan g_acquire = {
    "UPDATE baton.runs r SET generation = r.generation OPERATOR(pg_catalog.+) 1, owner = $3, "
    "lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 WHERE " KEY_OF_R " RETURNING r.generation",
    4, {UUIDOID, UUIDOID, TEXTOID, INTERVALOID}, nullptr};

pg::KeptPlan g_acquire_next = {
    "WITH c AS (SELECT r.id FROM baton.runs r "
    "WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.workflow OPERATOR(pg_catalog.=) $2 "
    "AND r.status OPERATOR(pg_catalog.=) ANY ('{approved,running}'::pg_catalog.text[]) "
    "AND (r.lease_until IS NULL OR r.lease_until OPERATOR(pg_catalog.<) pg_catalog.now()) "
    "AND NOT EXISTS (SELECT 1 FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) r.tenant "
    "AND s.run_id OPERATOR(pg_catalog.=) r.id AND s.is_current "
    "AND s.status OPERATOR(pg_catalog.=) 'failed' AND s.attempt OPERATOR(pg_catalog.<) s.max_attempts "
    "AND s.retry_at OPERATOR(pg_catalog.>) pg_catalog.now()) "
    "ORDER BY r.created_at LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) "
    "UPDATE baton.runs r SET generation = r.generation OPERATOR(pg_catalog.+) 1, owner = $3, "
    "lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 "
    "FROM c WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.id OPERATOR(pg_catalog.=) c.id "
    "RETURNING r.id, r.generation",
    4, {UUIDOID, TEXTOID, TEXTOID, INTERVALOID}, nullptr};

pg::KeptPlan g_renew_run = {
    "UPDATE baton.runs r SET lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 "
    "WHERE " KEY_OF_R " AND r.generation OPERATOR(pg_catalog.=) $3 AND r.owner IS NOT NULL "
    "AND NOT (r.status OPERATOR(pg_catalog.=) ANY ('{completed,failed,cancelled}'::pg_catalog.text[])) "
    "RETURNING r.lease_until",
    4, {UUIDOID, UUIDOID, INT8OID, INTERVALOID}, nullptr};

pg::KeptPlan g_release_run = {
    "UPDATE baton.runs r SET owner = NULL, lease_until = NULL, "
    "generation = r.generation OPERATOR(pg_catalog.+) 1 "
    "WHERE " KEY_OF_R " AND r.generation OPERATOR(pg_catalog.=) $3 AND r.owner IS NOT NULL",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

pg::KeptPlan g_run_row = {"SELECT r.status, r.generation, r.owner IS NOT NULL FROM baton.runs r WHERE " KEY_OF_R, 2,
                          {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_get_run = {"SELECT r FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

// DU008 naming the run and the tenant.
[[noreturn]] void throw_run_not_found(const pg_uuid_t* tenant, const pg_uuid_t* run_id) {
    run::throw_not_found(pg::uuid_text(run_id), pg::uuid_text(tenant));
}

// The status in the first column of the row just read; DU004 naming the run when it is
// not a run status.
run::Status stored_status(pg::Spi& spi, const pg_uuid_t* run_id) {
    const char* text = spi.cstring_at(0, 1);
    auto status = run::parse_status(text ? text : "");
    if (!status)
        throw Error(SqlState::kCorruptHistory, "run " + pg::uuid_text(run_id) + " has an unknown status",
                    "Its status is \"" + clip(text ? text : "") + "\".");
    return *status;
}

// The run's status and generation, as stored; DU008 when absent.
struct RunRow {
    run::Status status;
    std::int64_t generation;
    bool owned;  // a lease holder exists: without one, no generation holds the run
};

RunRow read_run(pg::Spi& spi, pg_uuid_t* tenant, pg_uuid_t* run_id) {
    Datum key[2] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id)};
    if (spi.run(g_run_row, key, nullptr) == 0) throw_run_not_found(tenant, run_id);
    return {stored_status(spi, run_id), spi.int64_at(0, 2), spi.bool_at(0, 3)};
}

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
    const char* status = wf.definition.requires_approval ? "submitted" : "approved";
    Datum values[6] = {UUIDPGetDatum(tenant), PointerGetDatum(workflow), Int32GetDatum(wf.version),
                       pg::text_datum(status), JsonbPGetDatum(inputs), PointerGetDatum(key)};
    char nulls[7] = "      ";
    if (key == nullptr) nulls[5] = 'n';
    pg_uuid_t* id = nullptr;
    bool isnull = false;
    if (spi.run(g_insert_run, values, nulls) == 1) {
        id = DatumGetUUIDP(spi.copy_out(0, 1, &isnull));
    } else {
        Datum existing[4] = {UUIDPGetDatum(tenant), PointerGetDatum(workflow), PointerGetDatum(key),
                             JsonbPGetDatum(inputs)};
        if (spi.run(g_existing_run, existing, nullptr) != 1)
            throw Error(SqlState::kInternal, "submit could neither insert nor find its run of workflow " +
                                                 pg::quoted(workflow) + " in tenant " + pg::uuid_text(tenant));
        if (!spi.bool_at(0, 2))
            throw Error(SqlState::kDedupConflict,
                        "idempotency key " + pg::quoted(key) + " of workflow " + pg::quoted(workflow) +
                            " is already used with other inputs in tenant " + pg::uuid_text(tenant),
                        "A submit repeated with the same key must carry the same inputs.",
                        "Use a new idempotency key for a different request.");
        id = DatumGetUUIDP(spi.copy_out(0, 1, &isnull));
    }
    PG_RETURN_UUID_P(id);
}

// baton.inputs_digest(tenant, run_id): the lowercase hex sha256 of the run's inputs
// (as jsonb prints them), which an approval must name.
Datum inputs_digest(FunctionCallInfo fcinfo, Oid) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    pg::Spi spi;
    Datum key[2] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id)};
    if (spi.run(g_digest, key, nullptr) == 0) throw_run_not_found(tenant, run_id);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

// baton.approve(tenant, run_id, approver, digest): binds the approver's decision to the
// inputs digest; creates no stage.
Datum approve(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.approve");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    text* approver = pg::text_arg(fcinfo, 2, "approver");
    text* digest = pg::text_arg(fcinfo, 3, "digest");
    check_label("approver", pg::text_chars(approver));
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    Datum key[3] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id), PointerGetDatum(approver)};
    if (spi.run(g_lock_run, key, nullptr) == 0) throw_run_not_found(tenant, run_id);
    run::Status status = stored_status(spi, run_id);
    bool digest_matches = pg::text_view(digest) == std::string_view(spi.cstring_at(0, 3));
    const char* approved_by = spi.cstring_at(0, 4);
    bool someone_else = approved_by != nullptr && pg::text_view(approver) != std::string_view(approved_by);
    if (run::approve_verdict(status, digest_matches, someone_else, pg::uuid_text(run_id)) == run::Approval::kApprove)
        spi.run(g_approve, key, nullptr);
    PG_RETURN_VOID();
}

// baton.cancel(tenant, run_id, reason): ends a run that has not ended; its holder's
// next transition_stage answers finished/cancelled.
Datum cancel(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.cancel");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    text* reason = pg::text_arg(fcinfo, 2, "reason");
    if (VARSIZE_ANY_EXHDR(reason) > limits::kMaxErrorBytes)
        throw_invalid_argument("reason", "A reason has at most " + std::to_string(limits::kMaxErrorBytes) +
                                             " bytes; this one has " + std::to_string(VARSIZE_ANY_EXHDR(reason)) + ".");
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    Datum key[3] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id), PointerGetDatum(reason)};
    if (spi.run(g_lock_run, key, nullptr) == 0) throw_run_not_found(tenant, run_id);
    run::Status status = stored_status(spi, run_id);
    if (run::cancel_verdict(status, pg::uuid_text(run_id)) == run::Cancellation::kCancel)
        spi.run(g_cancel, key, nullptr);
    PG_RETURN_VOID();
}

// baton.acquire_run(tenant, run_id, owner, lease): takes the run's lease and returns
// the new generation; NULL (nothing changes) when another owner holds an unexpired
// lease or the run has ended.
Datum acquire_run(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.acquire_run");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    auto [owner, lease] = acquirer_args(fcinfo, 2, 3);
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    Datum values[4] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id), PointerGetDatum(owner),
                       IntervalPGetDatum(lease)};
    if (spi.run(g_lock_run, values, nullptr) == 0) throw_run_not_found(tenant, run_id);
    run::Status status = stored_status(spi, run_id);
    const char* holder = spi.cstring_at(0, 5);
    bool same_owner = holder != nullptr && pg::text_view(owner) == std::string_view(holder);
    if (!run::may_acquire(status, spi.bool_at(0, 6), same_owner)) PG_RETURN_NULL();
    spi.run(g_acquire, values, nullptr);
    PG_RETURN_INT64(spi.int64_at(0, 1));
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
    Datum values[4] = {UUIDPGetDatum(tenant), PointerGetDatum(workflow), PointerGetDatum(owner),
                       IntervalPGetDatum(lease)};
    std::uint64_t n = spi.run(g_acquire_next, values, nullptr);
    for (std::uint64_t row = 0; row < n; row++) spi.emit_row(rsinfo, row);
    return static_cast<Datum>(0);
}

// baton.renew_run(tenant, run_id, generation, lease): extends the owner's lease;
// DU001 when superseded, DU007 when the run has ended.
Datum renew_run(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.renew_run");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    std::int64_t generation = pg::int64_arg(fcinfo, 2, "generation");
    Interval* lease = pg::interval_arg(fcinfo, 3, "lease");
    delivery::check_lease_usec(pg::interval_usec(lease));
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    Datum values[4] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id), Int64GetDatum(generation),
                       IntervalPGetDatum(lease)};
    if (spi.run(g_renew_run, values, nullptr) == 1) {
        bool isnull = false;
        PG_RETURN_TIMESTAMPTZ(DatumGetTimestampTz(spi.value(0, 1, &isnull)));
    }
    RunRow r = read_run(spi, tenant, run_id);
    run::check_owner(generation, r.generation, r.owned, pg::uuid_text(run_id));
    throw Error(SqlState::kInvalidState, "run " + pg::uuid_text(run_id) + " is " + run::status_name(r.status),
                "An ended run has no lease to renew.");
}

// baton.release_run(tenant, run_id, generation): gives the lease up; the generation
// moves on, so the releasing owner's later calls are DU001.
Datum release_run(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.release_run");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    std::int64_t generation = pg::int64_arg(fcinfo, 2, "generation");
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    Datum values[3] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id), Int64GetDatum(generation)};
    if (spi.run(g_release_run, values, nullptr) == 1) PG_RETURN_VOID();
    RunRow r = read_run(spi, tenant, run_id);
    run::check_owner(generation, r.generation, r.owned, pg::uuid_text(run_id));
    throw Error(SqlState::kInternal,
                "release_run found its own lease on run " + pg::uuid_text(run_id) + " but could not release it");
}

// baton.run(tenant, run_id): the run's row, for any tenant state; DU008 if absent.
Datum get_run(FunctionCallInfo fcinfo, Oid) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg_uuid_t* run_id = pg::uuid_arg(fcinfo, 1, "run_id");
    pg::Spi spi;
    Datum key[2] = {UUIDPGetDatum(tenant), UUIDPGetDatum(run_id)};
    if (spi.run(g_get_run, key, nullptr) == 0) throw_run_not_found(tenant, run_id);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
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
