// Stages: transition_stage, start_stage, complete_stage, fail_stage, run_history.
//
// transition_stage is the one function that moves a run. In one transaction it locks
// the run, checks the owner's generation, and acts on the saved current stage only; the
// decision and the successor are written together, so a repeated call finds the
// successor and never applies a transition twice. Its cost does not depend on the
// run's history: the current stage is one probe of the partial unique index
// stages_current, and the successor's entry_seq one backward probe of
// (tenant, run_id, stage, entry_seq).
#include <string>
#include <vector>

#include "core/chain.hpp"
#include "core/decision.hpp"
#include "core/definition.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/fence.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"
#include "pg/workflow_store.hpp"

namespace baton::api {

namespace {

#define KEY_OF_R "r.tenant OPERATOR(pg_catalog.=) $1 AND r.id OPERATOR(pg_catalog.=) $2"

pg::KeptPlan g_lock_run = {
    "SELECT r.status, r.generation, r.workflow, r.version, r.owner IS NOT NULL FROM baton.runs r WHERE " KEY_OF_R
    " FOR NO KEY UPDATE",
    2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_stage_of_run = {
    "SELECT 1 FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.id OPERATOR(pg_catalog.=) $3 AND s.run_id OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

#define STAGE_COLUMNS_WITH(BEFORE_DEADLINE)                                                   \
    "s.id, s.stage, s.entry_seq, s.status, s.attempt, s.max_attempts, s.retry_at, "           \
    BEFORE_DEADLINE ", s.inputs, s.is_current, s.result"
#define STAGE_COLUMNS STAGE_COLUMNS_WITH("s.retry_at OPERATOR(pg_catalog.>) pg_catalog.now()")

// The run's current stage: one probe of stages_current.
pg::KeptPlan g_current = {
    "SELECT " STAGE_COLUMNS " FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.run_id OPERATOR(pg_catalog.=) $2 AND s.is_current",
    2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_stage = {
    "SELECT " STAGE_COLUMNS " FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.run_id OPERATOR(pg_catalog.=) $2 AND s.id OPERATOR(pg_catalog.=) $3",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

// A new current stage; entry_seq counts the run's earlier entries into that stage.
pg::KeptPlan g_insert_stage = {
    "INSERT INTO baton.stages AS s (tenant, run_id, stage, entry_seq, predecessor_id, inputs, "
    "max_attempts, retry_delay) VALUES ($1, $2, $3, COALESCE((SELECT p.entry_seq FROM baton.stages p "
    "WHERE p.tenant OPERATOR(pg_catalog.=) $1 AND p.run_id OPERATOR(pg_catalog.=) $2 "
    "AND p.stage OPERATOR(pg_catalog.=) $3 ORDER BY p.entry_seq DESC LIMIT 1), 0) OPERATOR(pg_catalog.+) 1, "
    "$4, $5::pg_catalog.jsonb, $6, $7::pg_catalog.interval) "
    // A new stage has no retry deadline; no now() in a RETURNING list (Citus).
    "RETURNING " STAGE_COLUMNS_WITH("false"),
    7, {UUIDOID, UUIDOID, TEXTOID, INT8OID, TEXTOID, INT4OID, TEXTOID}, nullptr};

pg::KeptPlan g_run_inputs = {"SELECT r.inputs FROM baton.runs r WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_start_run = {
    "UPDATE baton.runs r SET status = 'running' WHERE " KEY_OF_R, 2, {UUIDOID, UUIDOID}, nullptr};

pg::KeptPlan g_context = {
    "SELECT pg_catalog.jsonb_build_object("
    "'run', pg_catalog.jsonb_build_object('id', r.id, 'workflow', r.workflow, 'version', r.version, "
    "'inputs', r.inputs, 'state', r.state), "
    "'stage', pg_catalog.jsonb_build_object('id', s.id, 'name', s.stage, 'entry_seq', s.entry_seq, "
    "'attempt', s.attempt, 'inputs', s.inputs, 'result', s.result)) "
    "FROM baton.runs r JOIN baton.stages s ON s.tenant OPERATOR(pg_catalog.=) r.tenant "
    "AND s.run_id OPERATOR(pg_catalog.=) r.id WHERE " KEY_OF_R " AND s.id OPERATOR(pg_catalog.=) $3",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

pg::KeptPlan g_path_match = {
    "SELECT pg_catalog.jsonb_path_match($1, $2::pg_catalog.jsonpath, '{}'::pg_catalog.jsonb, true)",
    2, {JSONBOID, TEXTOID}, nullptr};

// Saves the decision on the completed stage; `$4` clears the current flag (a switch)
// or keeps it (the run ends on this stage).
pg::KeptPlan g_save_decision = {
    "UPDATE baton.stages s SET transition = $3::pg_catalog.jsonb, is_current = $4 "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2",
    4, {UUIDOID, INT8OID, TEXTOID, BOOLOID}, nullptr};

pg::KeptPlan g_set_state = {
    "UPDATE baton.runs r SET state = $3::pg_catalog.jsonb WHERE " KEY_OF_R, 3, {UUIDOID, UUIDOID, TEXTOID},
    nullptr};

pg::KeptPlan g_end_run = {
    "UPDATE baton.runs r SET status = $3, reason = $4, finished_at = pg_catalog.now() WHERE " KEY_OF_R, 4,
    {UUIDOID, UUIDOID, TEXTOID, TEXTOID}, nullptr};

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

// The arguments every owner call carries.
struct OwnerCall {
    pg_uuid_t* tenant;
    pg_uuid_t* run_id;
    std::int64_t generation;
};

// The call's run as text ("run <uuid>"), for the messages that name it.
std::string run_text(const OwnerCall& call) { return "run " + pg::uuid_text(call.run_id); }

OwnerCall owner_call_args(FunctionCallInfo fcinfo) {
    return {pg::uuid_arg(fcinfo, 0, "tenant"), pg::uuid_arg(fcinfo, 1, "run_id"),
            pg::int64_arg(fcinfo, 2, "generation")};
}

// The locked run as the owner sees it.
struct LockedRun {
    run::Status status;
    text* workflow;  // copied out of SPI memory
    int version;
};

// Locks the run (NO KEY UPDATE) and checks the owner's generation: DU008, DU001.
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

// A stage row read with STAGE_COLUMNS; pointers live in SPI memory until the next query.
struct StageRow {
    std::int64_t id;
    char* name;
    std::int32_t entry_seq;
    run::StageStatus status;
    std::int32_t attempt;
    std::int32_t max_attempts;
    bool has_retry_at;
    TimestampTz retry_at;
    bool before_retry_deadline;
    Datum inputs;  // jsonb, copied out of SPI memory
    bool is_current;
    bool has_result;
    Datum result;  // jsonb, copied out of SPI memory, when has_result
};

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

// The row transition_stage returns.
struct Outcome {
    const char* kind;  // "stage", "wait" or "finished"
    bool has_stage;
    StageRow stage;
    run::Status run_status;
};

Outcome stage_outcome(const StageRow& s) { return {"stage", true, s, run::Status::kRunning}; }

// Inserts a new current stage and returns it.
StageRow insert_stage(pg::Spi& spi, const OwnerCall& call, const definition::StageDef& def,
                      std::int64_t predecessor, const std::string& inputs) {
    Datum values[7] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id), pg::text_from_utf8(def.name),
                       Int64GetDatum(predecessor), pg::text_from_utf8(inputs), Int32GetDatum(def.max_attempts),
                       pg::text_from_utf8(def.retry_delay)};
    char nulls[8] = "       ";
    if (predecessor == 0) nulls[3] = 'n';
    spi.run(g_insert_stage, values, nulls);
    return read_stage(spi, call);
}

// The stage definition of a saved stage; DU004 when the run's version has no such stage.
const definition::StageDef& stage_def(const definition::Definition& def, const char* name, const OwnerCall& call) {
    const definition::StageDef* s = def.stage(name);
    if (s == nullptr)
        throw Error(SqlState::kCorruptHistory, "history of " + run_text(call) + " is corrupt",
                    "The current stage " + json::excerpt(name) + " is not a stage of the run's workflow version.");
    return *s;
}

// The context a decision sees: {"run": {...}, "stage": {...}} (jsonb, in SPI memory).
Datum decision_context(pg::Spi& spi, const OwnerCall& call, std::int64_t stage_id) {
    Datum values[3] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id), Int64GetDatum(stage_id)};
    spi.run(g_context, values, nullptr);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

// What the transition read before calling the decide function, read again after it:
// the decided stage still current and completed, the run still at the caller's
// generation and running.
pg::KeptPlan g_unchanged = {
    "SELECT s.is_current AND s.status OPERATOR(pg_catalog.=) 'completed' "
    "AND r.generation OPERATOR(pg_catalog.=) $4 AND r.status OPERATOR(pg_catalog.=) 'running' "
    "FROM baton.runs r JOIN baton.stages s ON s.tenant OPERATOR(pg_catalog.=) r.tenant "
    "AND s.run_id OPERATOR(pg_catalog.=) r.id WHERE " KEY_OF_R " AND s.id OPERATOR(pg_catalog.=) $3",
    4, {UUIDOID, UUIDOID, INT8OID, INT8OID}, nullptr};

// Refuses (DU007) to go on when the decide function changed the run itself (it may
// call pg_baton, e.g. transition_stage on the same run): the decision was taken on a
// state that no longer holds, and writing it would apply a transition twice.
void require_unchanged_by_decide(pg::Spi& spi, const OwnerCall& call, std::int64_t stage_id) {
    Datum values[4] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id), Int64GetDatum(stage_id),
                       Int64GetDatum(call.generation)};
    if (spi.run(g_unchanged, values, nullptr) == 1 && spi.bool_at(0, 1)) return;
    throw Error(SqlState::kInvalidState, run_text(call) + " changed while its decide function ran",
                "The decide function moved the run itself (it called pg_baton on the same run); "
                "nothing of this transition is written.",
                "A decide function returns a decision and leaves the run to transition_stage.");
}

// Calls the workflow's decide function with the context, as the caller (who needs
// EXECUTE on it): user code never runs with the extension owner's rights. Returns
// nullptr for SQL NULL.
Jsonb* call_decide(Oid fn, const std::string& name, Oid caller, Datum context) {
    if (!pg::guard([fn] { return SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(fn)); }))
        throw Error(SqlState::kUndefinedFunction,
                    "decide function \"" + name + "\" of the workflow no longer exists",
                    "It was dropped after the workflow version was defined; runs keep their version.",
                    "Create the function again and define the workflow again (a new version), then cancel "
                    "or finish the runs of the old version.");
    bool allowed = pg::guard([fn, caller] { return pg_proc_aclcheck(fn, caller, ACL_EXECUTE) == ACLCHECK_OK; });
    if (!allowed) {
        const char* role = pg::guard([caller] { return GetUserNameFromId(caller, true); });
        throw Error(SqlState::kInsufficientPrivilege,
                    "permission denied for role \"" + std::string(role ? role : "?") +
                        "\" to execute decide function \"" + name + "\"",
                    "transition_stage calls it as the calling role, which needs EXECUTE on it.");
    }
    return pg::guard([fn, caller, context]() -> Jsonb* {
        Oid saved_user;
        int saved_context;
        GetUserIdAndSecContext(&saved_user, &saved_context);
        SetUserIdAndSecContext(caller, saved_context);
        FmgrInfo flinfo;
        fmgr_info(fn, &flinfo);
        LOCAL_FCINFO(fc, 1);
        InitFunctionCallInfoData(*fc, &flinfo, 1, InvalidOid, nullptr, nullptr);
        fc->args[0].value = context;
        fc->args[0].isnull = false;
        Datum result = FunctionCallInvoke(fc);
        SetUserIdAndSecContext(saved_user, saved_context);
        return fc->isnull ? nullptr : DatumGetJsonbP(result);
    });
}

// Declarative routing: the first next entry whose `when` matches the context (a plain
// entry always matches). DU003 when none does.
json::Value route(pg::Spi& spi, const OwnerCall& call, const definition::StageDef& from, Datum context) {
    for (const definition::NextEntry& entry : from.next) {
        bool match = entry.when.empty();
        if (!match) {
            Datum values[2] = {context, pg::text_from_utf8(entry.when)};
            spi.run(g_path_match, values, nullptr);
            match = spi.bool_at(0, 1);
        }
        if (!match) continue;
        if (entry.to == definition::kFinish)
            return json::make_object({{"finish", json::make_string("completed")}});
        return json::make_object({{"next", json::make_string(entry.to)}});
    }
    throw Error(SqlState::kTransitionNotAllowed,
                "decision for stage " + json::excerpt(from.name) + " of " + run_text(call) + " is not allowed",
                "No next entry of the stage matches the context.");
}

// A completed current stage: decide, then save the decision and write the successor
// (or end the run), all in this transaction.
Outcome decide_and_switch(pg::Spi& spi, const OwnerCall& call, const pg::Workflow& wf, const StageRow& done,
                          Oid caller) {
    const definition::StageDef& from = stage_def(wf.definition, done.name, call);
    std::string from_name = from.name;
    // The saved result is the successor's inputs unless the decision names them; a
    // result that is not an object is corrupt history, whatever the decision says.
    std::string result_text = "{}";
    if (done.has_result) {
        Datum result = done.result;
        Jsonb* jb = pg::guard([result] { return DatumGetJsonbP(result); });
        if (!pg::jsonb_is_object(jb))
            throw Error(SqlState::kCorruptHistory, "history of " + run_text(call) + " is corrupt",
                        "The result saved on stage \"" + from_name + "\" is not a JSON object.");
        // insert_stage takes UTF-8: in a database of another encoding, convert.
        try {
            result_text = pg::jsonb_utf8_text(jb);
        } catch (const Error& e) {
            throw Error(SqlState::kCorruptHistory, "history of " + run_text(call) + " is corrupt",
                        "The result saved on stage \"" + from_name + "\" cannot be read as UTF-8. " + e.detail());
        }
    }
    Datum context = decision_context(spi, call, done.id);

    json::Value decision_value;
    bool has_value = true;
    if (wf.decide != InvalidOid) {
        Jsonb* returned = call_decide(wf.decide, wf.definition.decide, caller, context);
        require_unchanged_by_decide(spi, call, done.id);
        has_value = returned != nullptr;
        if (has_value && pg::jsonb_bytes(returned) > pg::max_payload_bytes())
            throw Error(SqlState::kTransitionNotAllowed,
                        "decision for stage " + json::excerpt(from_name) + " of " + run_text(call) + " is malformed",
                        "The decision is larger than baton.max_payload_bytes.");
        if (has_value) {
            try {
                decision_value = pg::jsonb_value(returned);
            } catch (const Error& e) {
                throw Error(SqlState::kTransitionNotAllowed,
                            "decision for stage " + json::excerpt(from_name) + " of " + run_text(call) +
                                " is malformed",
                            e.detail());
            }
        }
    } else {
        decision_value = route(spi, call, from, context);
    }
    decision::Decision d =
        decision::check_decision(has_value ? &decision_value : nullptr, from, pg::uuid_text(call.run_id));

    std::string inputs = d.has_inputs ? json::write(*json::find(decision_value, "inputs")) : result_text;
    std::string saved = json::write(decision_value);
    if (d.has_state) {
        Datum values[3] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id),
                           pg::text_from_utf8(json::write(*json::find(decision_value, "state")))};
        spi.run(g_set_state, values, nullptr);
    }
    bool switching = d.kind == decision::Decision::Kind::kNext;
    Datum save[4] = {UUIDPGetDatum(call.tenant), Int64GetDatum(done.id), pg::text_from_utf8(saved),
                     BoolGetDatum(!switching)};
    spi.run(g_save_decision, save, nullptr);
    if (!switching) {
        run::Status end = d.finish_status == "failed" ? run::Status::kFailed : run::Status::kCompleted;
        Datum values[4] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id),
                           pg::text_datum(run::status_name(end)), pg::text_from_utf8(d.reason)};
        char nulls[5] = "    ";
        if (d.reason.empty()) nulls[3] = 'n';
        spi.run(g_end_run, values, nulls);
        return {"finished", false, {}, end};
    }
    const definition::StageDef& to = stage_def(wf.definition, d.next.c_str(), call);
    return stage_outcome(insert_stage(spi, call, to, done.id, inputs));
}

// The core of transition_stage, on a locked run whose generation matched.
Outcome transition(pg::Spi& spi, const OwnerCall& call, const LockedRun& run, Oid caller) {
    if (run::is_terminal(run.status)) return {"finished", false, {}, run.status};
    if (run.status == run::Status::kSubmitted)
        throw Error(SqlState::kInvalidState, run_text(call) + " is not approved",
                    "A run that requires approval starts only after baton.approve().");
    if (run.status == run::Status::kApproved) {
        pg::Workflow wf = pg::load_workflow(spi, run.workflow, run.version);
        const definition::StageDef& start = stage_def(wf.definition, wf.definition.start.c_str(), call);
        Datum key[2] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id)};
        spi.run(g_start_run, key, nullptr);
        // The start stage's inputs are the run's inputs.
        spi.run(g_run_inputs, key, nullptr);
        bool isnull = false;
        Datum d = spi.value(0, 1, &isnull);
        Jsonb* inputs = pg::guard([d] { return DatumGetJsonbP(d); });
        // insert_stage takes UTF-8: in a database of another encoding, convert.
        char* utf8 = nullptr;
        try {
            utf8 = pg::jsonb_utf8_text(inputs);
        } catch (const Error& e) {
            throw Error(SqlState::kCorruptHistory, "history of " + run_text(call) + " is corrupt",
                        "The run's inputs cannot be read as UTF-8. " + e.detail());
        }
        return stage_outcome(insert_stage(spi, call, start, 0, utf8));
    }
    pg::Workflow wf = pg::load_workflow(spi, run.workflow, run.version);
    Datum key[2] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id)};
    if (spi.run(g_current, key, nullptr) != 1)
        throw Error(SqlState::kCorruptHistory, "history of " + run_text(call) + " is corrupt",
                    "The running run has no current stage.");
    StageRow current = read_stage(spi, call);
    (void)stage_def(wf.definition, current.name, call);  // DU004 for a stage the version does not have
    switch (run::next_step(current.status, current.attempt, current.max_attempts, current.before_retry_deadline)) {
        case run::Step::kReturnStage: return stage_outcome(current);
        case run::Step::kWait: return {"wait", true, current, run::Status::kRunning};
        case run::Step::kFailRun: {
            std::string reason = "stage \"" + std::string(current.name) + "\" spent its " +
                                 std::to_string(current.max_attempts) + " attempts";
            Datum values[4] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id),
                               pg::text_datum(run::status_name(run::Status::kFailed)), pg::text_datum(reason)};
            spi.run(g_end_run, values, nullptr);
            return {"finished", false, {}, run::Status::kFailed};
        }
        case run::Step::kDecide: break;
    }
    return decide_and_switch(spi, call, wf, current, caller);
}

// baton.transition_stage(tenant, run_id, generation, previous_stage_id): see above.
Datum transition_stage(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.transition_stage");
    OwnerCall call = owner_call_args(fcinfo);
    bool has_previous = !PG_ARGISNULL(3);
    std::int64_t previous = has_previous ? PG_GETARG_INT64(3) : 0;
    pg::fence::require_writable(call.tenant);
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    LockedRun run = lock_run(spi, call);
    if (has_previous) {
        Datum values[3] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id), Int64GetDatum(previous)};
        if (spi.run(g_stage_of_run, values, nullptr) == 0)
            throw Error(SqlState::kNotFound,
                        "stage " + std::to_string(previous) + " is not a stage of " + run_text(call) +
                            " in tenant " + pg::uuid_text(call.tenant),
                        "previous_stage_id names a stage of the run being transitioned.");
    }
    Outcome out = transition(spi, call, run, caller);

    Datum values[8] = {};
    bool nulls[8] = {true, true, true, true, true, true, true, true};
    values[0] = pg::text_datum(out.kind);
    nulls[0] = false;
    if (out.has_stage) {
        values[1] = Int64GetDatum(out.stage.id);
        values[2] = pg::text_datum(out.stage.name);
        values[3] = Int32GetDatum(out.stage.entry_seq);
        values[4] = out.stage.inputs;
        values[5] = Int32GetDatum(out.stage.attempt);
        nulls[1] = nulls[2] = nulls[3] = nulls[4] = nulls[5] = false;
        if (std::string_view(out.kind) == "wait" && out.stage.has_retry_at) {
            values[6] = TimestampTzGetDatum(out.stage.retry_at);
            nulls[6] = false;
        }
    }
    values[7] = pg::text_datum(run::status_name(out.run_status));
    nulls[7] = false;
    pg::put_row(rsinfo, values, nulls);
    return static_cast<Datum>(0);
}

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

BATON_FUNCTION(baton_transition_stage, baton::api::transition_stage)
BATON_FUNCTION(baton_start_stage, baton::api::start_stage)
BATON_FUNCTION(baton_complete_stage, baton::api::complete_stage)
BATON_FUNCTION(baton_fail_stage, baton::api::fail_stage)
BATON_FUNCTION(baton_run_history, baton::api::run_history)
