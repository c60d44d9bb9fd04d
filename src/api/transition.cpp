// transition_stage: the one function that moves a run.
//
// In one transaction it locks the run, checks the owner's generation, and acts on the
// saved current stage only; the decision and the successor are written together, so a
// repeated call finds the successor and never applies a transition twice. Its cost does
// not depend on the run's history: the current stage is one probe of the partial unique
// index stages_current, and the successor's entry_seq one backward probe of
// (tenant, run_id, stage, entry_seq).
//
// The steps, each a function below: lock the run (owner_call.hpp); start it on its start
// stage (start_run), or read its current stage and let run::next_step say what is owed
// (transition); for a completed stage, take the decision (take_decision: the decide
// function or declarative routing), let the core judge it (decision::check_decision),
// and write it (apply_decision). JSON goes from jsonb to the core's tree and back through
// pg/jsonb, never as text.
#include <optional>
#include <string>
#include <string_view>

#include "core/cause.hpp"
#include "core/decision.hpp"
#include "core/definition.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/decide.hpp"
#include "pg/fence.hpp"
#include "pg/jsonb.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"
#include "pg/workflow_store.hpp"
#include "api/owner_call.hpp"

namespace baton::api {

namespace {

pg::KeptPlan g_stage_of_run = {
    "SELECT 1 FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.id OPERATOR(pg_catalog.=) $3 AND s.run_id OPERATOR(pg_catalog.=) $2",
    3, {UUIDOID, UUIDOID, INT8OID}, nullptr};

// The run's current stage: one probe of stages_current.
pg::KeptPlan g_current = {
    "SELECT " STAGE_COLUMNS " FROM baton.stages s WHERE s.tenant OPERATOR(pg_catalog.=) $1 "
    "AND s.run_id OPERATOR(pg_catalog.=) $2 AND s.is_current",
    2, {UUIDOID, UUIDOID}, nullptr};

// A new current stage; entry_seq counts the run's earlier entries into that stage.
pg::KeptPlan g_insert_stage = {
    "INSERT INTO baton.stages AS s (tenant, run_id, stage, entry_seq, predecessor_id, inputs, "
    "max_attempts, retry_delay) VALUES ($1, $2, $3, COALESCE((SELECT p.entry_seq FROM baton.stages p "
    "WHERE p.tenant OPERATOR(pg_catalog.=) $1 AND p.run_id OPERATOR(pg_catalog.=) $2 "
    "AND p.stage OPERATOR(pg_catalog.=) $3 ORDER BY p.entry_seq DESC LIMIT 1), 0) OPERATOR(pg_catalog.+) 1, "
    "$4, $5, $6, $7::pg_catalog.interval) "
    // A new stage has no retry deadline; no now() in a RETURNING list (Citus).
    "RETURNING " STAGE_COLUMNS_WITH("false"),
    7, {UUIDOID, UUIDOID, TEXTOID, INT8OID, JSONBOID, INT4OID, TEXTOID}, nullptr};

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

// What the transition read before calling the decide function, read again after it:
// the decided stage still current and completed, the run still at the caller's
// generation and running.
pg::KeptPlan g_unchanged = {
    "SELECT s.is_current AND s.status OPERATOR(pg_catalog.=) 'completed' "
    "AND r.generation OPERATOR(pg_catalog.=) $4 AND r.status OPERATOR(pg_catalog.=) 'running' "
    "FROM baton.runs r JOIN baton.stages s ON s.tenant OPERATOR(pg_catalog.=) r.tenant "
    "AND s.run_id OPERATOR(pg_catalog.=) r.id WHERE " KEY_OF_R " AND s.id OPERATOR(pg_catalog.=) $3",
    4, {UUIDOID, UUIDOID, INT8OID, INT8OID}, nullptr};

// Saves the decision on the completed stage; `$4` clears the current flag (a switch)
// or keeps it (the run ends on this stage).
pg::KeptPlan g_save_decision = {
    "UPDATE baton.stages s SET transition = $3, is_current = $4 "
    "WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.id OPERATOR(pg_catalog.=) $2",
    4, {UUIDOID, INT8OID, JSONBOID, BOOLOID}, nullptr};

pg::KeptPlan g_set_state = {
    "UPDATE baton.runs r SET state = $3 WHERE " KEY_OF_R, 3, {UUIDOID, UUIDOID, JSONBOID}, nullptr};

pg::KeptPlan g_end_run = {
    "UPDATE baton.runs r SET status = $3, reason = $4, finished_at = pg_catalog.now() WHERE " KEY_OF_R, 4,
    {UUIDOID, UUIDOID, TEXTOID, TEXTOID}, nullptr};

// The row transition_stage returns.
struct Outcome {
    const char* kind;  // "stage", "wait" or "finished"
    bool has_stage;
    StageRow stage;
    run::Status run_status;
};

// A run that goes on at this stage.
Outcome stage_outcome(const StageRow& s) { return {"stage", true, s, run::Status::kRunning}; }

// A run that has ended with this status.
Outcome finished(run::Status status) { return {"finished", false, {}, status}; }

// DU004 naming the run, for a history that breaks the rules.
[[noreturn]] void throw_corrupt(const OwnerCall& call, const std::string& detail) {
    throw Error(SqlState::kCorruptHistory, "history of " + run_text(call) + " is corrupt", detail);
}

// DU003 "malformed" for a decision taken at `from`, with the fault in the detail.
[[noreturn]] void throw_malformed(const OwnerCall& call, const std::string& from, const std::string& detail) {
    throw Error(SqlState::kTransitionNotAllowed,
                "decision for stage " + json::excerpt(from) + " of " + run_text(call) + " is malformed", detail);
}

// Inserts a new current stage with these inputs (jsonb) and returns it.
StageRow insert_stage(pg::Spi& spi, const OwnerCall& call, const definition::StageDef& def,
                      std::int64_t predecessor, Datum inputs) {
    Datum values[7] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id), pg::text_from_utf8(def.name),
                       Int64GetDatum(predecessor), inputs, Int32GetDatum(def.max_attempts),
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
        throw_corrupt(call, "The current stage " + json::excerpt(name) + " is not a stage of the run's workflow version.");
    return *s;
}

// Refuses (DU004, saying what) stored jsonb that cannot be read as UTF-8: it would become
// a stage's inputs, which pg_baton reads as UTF-8. Nothing to check in a UTF8 database.
void require_utf8_history(const OwnerCall& call, Datum stored, const std::string& what) {
    Jsonb* jb = pg::guard([stored] { return DatumGetJsonbP(stored); });
    try {
        pg::require_json_utf8(jb);
    } catch (const Error& e) {
        throw_corrupt(call, what + " cannot be read as UTF-8. " + e.detail());
    }
}

// The first transition of an approved run: the run becomes running and enters its start
// stage, whose inputs are the run's inputs.
Outcome start_run(pg::Spi& spi, const OwnerCall& call, const LockedRun& run) {
    pg::Workflow wf = pg::load_workflow(spi, run.workflow, run.version);
    const definition::StageDef& start = stage_def(wf.definition, wf.definition.start.c_str(), call);
    Datum key[2] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id)};
    spi.run(g_start_run, key, nullptr);
    spi.run(g_run_inputs, key, nullptr);
    bool isnull = false;
    Datum inputs = spi.copy_out(0, 1, &isnull);
    require_utf8_history(call, inputs, "The run's inputs");
    return stage_outcome(insert_stage(spi, call, start, 0, inputs));
}

// The context a decision sees: {"run": {...}, "stage": {...}} (jsonb, in SPI memory).
Datum decision_context(pg::Spi& spi, const OwnerCall& call, std::int64_t stage_id) {
    Datum values[3] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id), Int64GetDatum(stage_id)};
    spi.run(g_context, values, nullptr);
    bool isnull = false;
    return spi.copy_out(0, 1, &isnull);
}

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
        if (entry.to == definition::kFinish) return json::make_object({{"finish", json::make_string("completed")}});
        return json::make_object({{"next", json::make_string(entry.to)}});
    }
    throw Error(SqlState::kTransitionNotAllowed,
                "decision for stage " + json::excerpt(from.name) + " of " + run_text(call) + " is not allowed",
                "No next entry of the stage matches the context.");
}

// The decision for the completed stage `done`: what the decide function returned
// (nullopt for SQL NULL), read into the core's tree, or what routing chose. A decision
// too large or too deep for the core is malformed (DU003).
std::optional<json::Value> take_decision(pg::Spi& spi, const OwnerCall& call, const pg::Workflow& wf,
                                         const definition::StageDef& from, std::int64_t done, Oid caller) {
    Datum context = decision_context(spi, call, done);
    if (wf.decide == InvalidOid) return route(spi, call, from, context);
    Jsonb* returned = pg::decide::call(wf.decide, wf.definition.decide, caller, context);
    require_unchanged_by_decide(spi, call, done);
    if (returned == nullptr) return std::nullopt;
    if (pg::jsonb_bytes(returned) > pg::max_payload_bytes())
        throw_malformed(call, from.name, "The decision is larger than baton.max_payload_bytes.");
    try {
        return pg::jsonb_value(returned);
    } catch (const Error& e) {
        throw_malformed(call, from.name, e.detail());
    }
}

// Writes a checked decision: the run's state when it carries one, the decision on the
// stage it leaves, and then the successor (with the decision's inputs, or the stage's
// result) or the run's end.
Outcome apply_decision(pg::Spi& spi, const OwnerCall& call, const pg::Workflow& wf, std::int64_t done,
                       const json::Value& decision, const decision::Decision& d, Datum result) {
    if (d.has_state) {
        Datum values[3] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id),
                           JsonbPGetDatum(pg::jsonb_of(*json::find(decision, "state")))};
        spi.run(g_set_state, values, nullptr);
    }
    bool switching = d.kind == decision::Decision::Kind::kNext;
    Datum save[4] = {UUIDPGetDatum(call.tenant), Int64GetDatum(done), JsonbPGetDatum(pg::jsonb_of(decision)),
                     BoolGetDatum(!switching)};
    spi.run(g_save_decision, save, nullptr);
    if (!switching) {
        run::Status end = d.finish_status == "failed" ? run::Status::kFailed : run::Status::kCompleted;
        Datum values[4] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id),
                           pg::text_datum(run::status_name(end)), pg::text_from_utf8(d.reason)};
        char nulls[5] = "    ";
        if (d.reason.empty()) nulls[3] = 'n';
        spi.run(g_end_run, values, nulls);
        return finished(end);
    }
    Datum inputs = d.has_inputs ? JsonbPGetDatum(pg::jsonb_of(*json::find(decision, "inputs"))) : result;
    const definition::StageDef& to = stage_def(wf.definition, d.next.c_str(), call);
    return stage_outcome(insert_stage(spi, call, to, done, inputs));
}

// A completed current stage: decide, then save the decision and write the successor
// (or end the run), all in this transaction. The saved result is the successor's inputs
// unless the decision names them; a result that is not an object is corrupt history,
// whatever the decision says.
Outcome leave_stage(pg::Spi& spi, const OwnerCall& call, const pg::Workflow& wf, const StageRow& done, Oid caller) {
    const definition::StageDef& from = stage_def(wf.definition, done.name, call);
    Datum result = done.result;
    if (!done.has_result) {
        result = JsonbPGetDatum(pg::jsonb_of(json::make_object({})));  // no result counts as {}
    } else {
        if (!pg::jsonb_is_object(pg::guard([result] { return DatumGetJsonbP(result); })))
            throw_corrupt(call, "The result saved on stage \"" + from.name + "\" is not a JSON object.");
        require_utf8_history(call, result, "The result saved on stage \"" + from.name + "\"");
    }
    std::optional<json::Value> decision = take_decision(spi, call, wf, from, done.id, caller);
    decision::Decision d =
        decision::check_decision(decision ? &*decision : nullptr, from, pg::uuid_text(call.run_id));
    return apply_decision(spi, call, wf, done.id, *decision, d, result);
}

// The core of transition_stage, on a locked run whose generation matched: what the run's
// status and its current stage (run::next_step) say is owed.
Outcome transition(pg::Spi& spi, const OwnerCall& call, const LockedRun& run, Oid caller) {
    if (run::is_terminal(run.status)) return finished(run.status);
    if (run.status == run::Status::kSubmitted)
        throw Error(SqlState::kInvalidState, run_text(call) + " is not approved",
                    "A run that requires approval starts only after baton.approve().");
    if (run.status == run::Status::kApproved) return start_run(spi, call, run);
    pg::Workflow wf = pg::load_workflow(spi, run.workflow, run.version);
    Datum key[2] = {UUIDPGetDatum(call.tenant), UUIDPGetDatum(call.run_id)};
    if (spi.run(g_current, key, nullptr) != 1) throw_corrupt(call, "The running run has no current stage.");
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
            return finished(run::Status::kFailed);
        }
        case run::Step::kDecide: break;
    }
    return leave_stage(spi, call, wf, current, caller);
}

// baton.transition_stage(tenant, run_id, generation, previous_stage_id): see above.
// previous_stage_id, when given, must name a stage of the run (DU008).
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

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_transition_stage, baton::api::transition_stage)
