// The statements of baton.runs (see run_store.hpp).
#include <string>

#include "core/cause.hpp"
#include "core/error.hpp"
#include "core/run.hpp"
#include "pg/runtime/args.hpp"
#include "pg/stores/run_store.hpp"

namespace baton::pg::runs {

namespace {

#define KEY_OF_R BATON_KEY_OF_R

KeptPlan g_insert = {
    "INSERT INTO baton.runs AS r (tenant, workflow, version, status, inputs, inputs_digest, "
    "idempotency_key, approved_at) VALUES ($1, $2, $3, $4, $5, "
    "pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to($5::pg_catalog.text, 'UTF8')), 'hex'), "
    "$6, CASE WHEN $4 OPERATOR(pg_catalog.=) 'approved' THEN pg_catalog.now() END) "
    "ON CONFLICT (tenant, workflow, idempotency_key) DO NOTHING RETURNING r.id",
    6, {UUIDOID, TEXTOID, INT4OID, TEXTOID, JSONBOID, TEXTOID}, nullptr};

KeptPlan g_by_key = {
    "SELECT r.id, r.inputs OPERATOR(pg_catalog.=) $4 FROM baton.runs r "
    "WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.workflow OPERATOR(pg_catalog.=) $2 "
    "AND r.idempotency_key OPERATOR(pg_catalog.=) $3",
    4, {UUIDOID, TEXTOID, TEXTOID, JSONBOID}, nullptr};

KeptPlan g_digest = {"SELECT r.inputs_digest FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

KeptPlan g_lock = {
    "SELECT r.status, r.inputs_digest, r.approved_by, r.owner, "
    "r.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() "
    "FROM baton.runs r WHERE " KEY_OF_R " FOR NO KEY UPDATE",
    2, {UUIDOID, UUIDOID}, nullptr};

KeptPlan g_approve = {
    "UPDATE baton.runs r SET status = 'approved', approved_by = $3, approved_at = pg_catalog.now() "
    "WHERE " KEY_OF_R,
    3, {UUIDOID, UUIDOID, TEXTOID}, nullptr};

KeptPlan g_cancel = {
    "UPDATE baton.runs r SET status = 'cancelled', reason = $3, finished_at = pg_catalog.now() "
    "WHERE " KEY_OF_R,
    3, {UUIDOID, UUIDOID, TEXTOID}, nullptr};

KeptPlan g_acquire = {
    "UPDATE baton.runs r SET generation = r.generation OPERATOR(pg_catalog.+) 1, owner = $3, "
    "lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 WHERE " KEY_OF_R " RETURNING r.generation",
    4, {UUIDOID, UUIDOID, TEXTOID, INTERVALOID}, nullptr};

KeptPlan g_acquire_next = {
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

KeptPlan g_renew = {
    "UPDATE baton.runs r SET lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $4 "
    "WHERE " KEY_OF_R " AND r.generation OPERATOR(pg_catalog.=) $3 AND r.owner IS NOT NULL "
    "AND NOT (r.status OPERATOR(pg_catalog.=) ANY ('{completed,failed,cancelled}'::pg_catalog.text[])) "
    "RETURNING r.lease_until",
    4, {UUIDOID, UUIDOID, INT8OID, INTERVALOID}, nullptr};

KeptPlan g_release = {
    "UPDATE baton.runs r SET owner = NULL, lease_until = NULL, "
    "generation = r.generation OPERATOR(pg_catalog.+) 1 "
    "WHERE " KEY_OF_R " AND r.generation OPERATOR(pg_catalog.=) $3 AND r.owner IS NOT NULL",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

KeptPlan g_state = {"SELECT r.status, r.generation, r.owner IS NOT NULL FROM baton.runs r WHERE " KEY_OF_R, 2,
                    {UUIDOID, UUIDOID}, nullptr};

KeptPlan g_row = {"SELECT r FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

KeptPlan g_exists = {"SELECT 1 FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

KeptPlan g_lock_for_owner = {
    "SELECT r.status, r.generation, r.owner IS NOT NULL, r.workflow, r.version FROM baton.runs r WHERE " KEY_OF_R
    " FOR NO KEY UPDATE",
    2, {UUIDOID, UUIDOID}, nullptr};

KeptPlan g_inputs = {"SELECT r.inputs FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

KeptPlan g_set_running = {"UPDATE baton.runs r SET status = 'running' WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID},
                          nullptr};

KeptPlan g_set_state = {"UPDATE baton.runs r SET state = $3 WHERE " KEY_OF_R, 3, {UUIDOID, UUIDOID, JSONBOID},
                        nullptr};

KeptPlan g_end = {
    "UPDATE baton.runs r SET status = $3, reason = $4, finished_at = pg_catalog.now() WHERE " KEY_OF_R, 4,
    {UUIDOID, UUIDOID, TEXTOID, TEXTOID}, nullptr};

// The statements' first two parameters.
struct KeyValues {
    Datum v[4];
    explicit KeyValues(const Key& key) : v{UUIDPGetDatum(key.tenant), UUIDPGetDatum(key.run_id), 0, 0} {}
};

// Runs a statement of the run's key alone; DU008 when it finds no row.
void run_or_not_found(Spi& spi, KeptPlan& plan, const Key& key) {
    KeyValues k(key);
    if (spi.run(plan, k.v, nullptr) == 0) throw_not_found(key);
}

// The first column of a statement of the run's key alone, copied out; DU008 when it
// finds no row.
Datum first_column(Spi& spi, KeptPlan& plan, const Key& key) {
    run_or_not_found(spi, plan, key);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

// The status in column `col` of the row just read; DU004 naming the run when the state
// machine does not know it.
run::Status status_at(Spi& spi, int col, const Key& key) {
    const char* text = spi.cstring_at(0, col);
    auto status = run::parse_status(text ? text : "");
    if (!status)
        throw Error(SqlState::kCorruptHistory, "run " + uuid_text(key.run_id) + " has an unknown status",
                    "Its status is \"" + clip(text ? text : "") + "\".");
    return *status;
}

}  // namespace

// The core's DU008, with the run and the tenant as text.
void throw_not_found(const Key& key) {
    run::throw_not_found(uuid_text(key.run_id), uuid_text(key.tenant));
}

// One insert attempt; on conflict the run of that key, which must exist (XX000 if not:
// a run is never deleted while it can still be found by its key, unless by purge).
Submitted insert(Spi& spi, pg_uuid_t* tenant, text* workflow, int version, run::Status status, Jsonb* inputs,
                 text* key) {
    Datum values[6] = {UUIDPGetDatum(tenant), PointerGetDatum(workflow), Int32GetDatum(version),
                       text_datum(run::status_name(status)), JsonbPGetDatum(inputs), PointerGetDatum(key)};
    char nulls[7] = "      ";
    if (key == nullptr) nulls[5] = 'n';
    bool isnull = false;
    if (spi.run(g_insert, values, nulls) == 1) return {DatumGetUUIDP(spi.copy_out(0, 1, &isnull)), true};
    Datum existing[4] = {UUIDPGetDatum(tenant), PointerGetDatum(workflow), PointerGetDatum(key),
                         JsonbPGetDatum(inputs)};
    if (spi.run(g_by_key, existing, nullptr) != 1)
        throw Error(SqlState::kInternal, "submit could neither insert nor find its run of workflow " +
                                             quoted(workflow) + " in tenant " + uuid_text(tenant));
    return {DatumGetUUIDP(spi.copy_out(0, 1, &isnull)), spi.bool_at(0, 2)};
}

// inputs_digest's column.
Datum digest(Spi& spi, const Key& key) {
    return first_column(spi, g_digest, key);
}

// The status first, so that a status the state machine does not know is refused before
// the rest is read.
Locked lock(Spi& spi, const Key& key) {
    run_or_not_found(spi, g_lock, key);
    return {status_at(spi, 1, key), spi.cstring_at(0, 2), spi.cstring_at(0, 3), spi.cstring_at(0, 4),
            spi.bool_at(0, 5)};
}

// approve's write, after run::approve_verdict said so.
void approve(Spi& spi, const Key& key, text* approver) {
    KeyValues k(key);
    k.v[2] = PointerGetDatum(approver);
    spi.run(g_approve, k.v, nullptr);
}

// cancel's write, after run::cancel_verdict said so.
void cancel(Spi& spi, const Key& key, text* reason) {
    KeyValues k(key);
    k.v[2] = PointerGetDatum(reason);
    spi.run(g_cancel, k.v, nullptr);
}

// acquire_run's write, after run::may_acquire said so.
std::int64_t acquire(Spi& spi, const Key& key, text* owner, Interval* lease) {
    KeyValues k(key);
    k.v[2] = PointerGetDatum(owner);
    k.v[3] = IntervalPGetDatum(lease);
    spi.run(g_acquire, k.v, nullptr);
    return spi.int64_at(0, 1);
}

// One statement: the candidate is locked SKIP LOCKED and updated in the same command.
void acquire_next(Spi& spi, pg_uuid_t* tenant, text* workflow, text* owner, Interval* lease, ReturnSetInfo* rsinfo) {
    Datum values[4] = {UUIDPGetDatum(tenant), PointerGetDatum(workflow), PointerGetDatum(owner),
                       IntervalPGetDatum(lease)};
    std::uint64_t n = spi.run(g_acquire_next, values, nullptr);
    for (std::uint64_t row = 0; row < n; row++) spi.emit_row(rsinfo, row);
}

// The update's WHERE is the lease check; the caller learns why it failed from state().
std::optional<TimestampTz> renew(Spi& spi, const Key& key, std::int64_t generation, Interval* lease) {
    Datum values[4] = {UUIDPGetDatum(key.tenant), UUIDPGetDatum(key.run_id), Int64GetDatum(generation),
                       IntervalPGetDatum(lease)};
    if (spi.run(g_renew, values, nullptr) != 1) return std::nullopt;
    bool isnull = false;
    return DatumGetTimestampTz(spi.value(0, 1, &isnull));
}

// The same shape as renew.
bool release(Spi& spi, const Key& key, std::int64_t generation) {
    KeyValues k(key);
    k.v[2] = Int64GetDatum(generation);
    return spi.run(g_release, k.v, nullptr) == 1;
}

// For the refusals of renew_run and release_run, and markers_in_doubt's generation.
State state(Spi& spi, const Key& key) {
    run_or_not_found(spi, g_state, key);
    return {status_at(spi, 1, key), spi.int64_at(0, 2), spi.bool_at(0, 3)};
}

// baton.run's answer.
Datum row(Spi& spi, const Key& key) {
    return first_column(spi, g_row, key);
}

// A probe of the primary key.
bool exists(Spi& spi, const Key& key) {
    KeyValues k(key);
    return spi.run(g_exists, k.v, nullptr) == 1;
}

// Locks first, so that the owner check and everything after it see the run as it stays
// until the transaction ends; the owner check before the status, as every owner call
// answers DU001 to a superseded caller whatever the run's state.
Owned lock_for_owner(Spi& spi, const Key& key, std::int64_t generation) {
    run_or_not_found(spi, g_lock_for_owner, key);
    run::check_owner(generation, spi.int64_at(0, 2), spi.bool_at(0, 3), uuid_text(key.run_id));
    run::Status status = status_at(spi, 1, key);
    bool isnull = false;
    text* workflow = DatumGetTextPP(spi.copy_out(0, 4, &isnull));
    return {status, workflow, spi.int32_at(0, 5)};
}

// The start stage's inputs.
Datum inputs(Spi& spi, const Key& key) {
    return first_column(spi, g_inputs, key);
}

// An approved run moves to running when its start stage is written.
void set_running(Spi& spi, const Key& key) {
    KeyValues k(key);
    spi.run(g_set_running, k.v, nullptr);
}

// A decision's `state`.
void set_state(Spi& spi, const Key& key, Jsonb* state) {
    KeyValues k(key);
    k.v[2] = JsonbPGetDatum(state);
    spi.run(g_set_state, k.v, nullptr);
}

// A decision's finish, or a stage that spent its attempts.
void end(Spi& spi, const Key& key, run::Status status, Datum reason) {
    KeyValues k(key);
    k.v[2] = text_datum(run::status_name(status));
    k.v[3] = reason;
    char nulls[5] = "    ";
    if (reason == 0) nulls[3] = 'n';
    spi.run(g_end, k.v, nulls);
}

}  // namespace baton::pg::runs
