// transition_stage: the one function that moves a run.
//
// In one transaction it locks the run, checks the owner's generation, and acts on the
// saved current stage only; the decision and the successor are written together, so a
// repeated call finds the successor and never applies a transition twice. Its cost does
// not depend on the run's history: the current stage is one probe of the partial unique
// index stages_current, and the successor's entry_seq one backward probe of
// (tenant, run_id, stage, entry_seq).
//
// The steps, each a function below: lock the run (pg/stores/run_store.hpp); start it on its start
// stage (start_run), or read its current stage and let run::next_step say what is owed
// (transition); for a completed stage, take the decision (take_decision: the decide
// function or declarative routing), let the core judge it (decision::check_decision),
// and write it (apply_decision). JSON goes from jsonb to the core's tree and back through
// pg/runtime/jsonb, never as text.
#include <optional>
#include <string>
#include <string_view>

#include "core/decision.hpp"
#include "core/definition.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "core/run.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/runtime/decide.hpp"
#include "pg/access/fence.hpp"
#include "pg/runtime/jsonb.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/stage_store.hpp"
#include "pg/stores/workflow_store.hpp"
#include "api/owner_call.hpp"

namespace baton::api {

namespace {

// The row transition_stage returns.
struct Outcome {
    const char* kind;  // "stage", "wait" or "finished"
    bool has_stage;
    pg::stages::Stage stage;
    run::Status run_status;
};

// A run that goes on at this stage.
Outcome stage_outcome(const pg::stages::Stage& s) { return {"stage", true, s, run::Status::kRunning}; }

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
Outcome start_run(pg::Spi& spi, const OwnerCall& call, const pg::runs::Owned& run) {
    pg::Workflow wf = pg::load_workflow(spi, run.workflow, run.version);
    const definition::StageDef& start = stage_def(wf.definition, wf.definition.start.c_str(), call);
    pg::runs::set_running(spi, call.run());
    Datum inputs = pg::runs::inputs(spi, call.run());
    require_utf8_history(call, inputs, "The run's inputs");
    return stage_outcome(pg::stages::insert(spi, call.run(), start, 0, inputs));
}

// Refuses (DU007) to go on when the decide function changed the run itself (it may
// call pg_baton, e.g. transition_stage on the same run): the decision was taken on a
// state that no longer holds, and writing it would apply a transition twice.
void require_unchanged_by_decide(pg::Spi& spi, const OwnerCall& call, std::int64_t stage_id) {
    if (pg::stages::unchanged(spi, call.run(), stage_id, call.generation)) return;
    throw Error(SqlState::kInvalidState, run_text(call) + " changed while its decide function ran",
                "The decide function moved the run itself (it called pg_baton on the same run); "
                "nothing of this transition is written.",
                "A decide function returns a decision and leaves the run to transition_stage.");
}

// Declarative routing: the first next entry whose `when` matches the context of the
// completed stage `done` (a plain entry always matches). DU003 when none does. The
// context (a join of the run and the stage, built as jsonb) is read only when an entry
// has a `when`: a stage whose entries are all plain strings, the common case, is routed
// without it.
json::Value route(pg::Spi& spi, const OwnerCall& call, const definition::StageDef& from, std::int64_t done) {
    Datum context = 0;
    bool have_context = false;
    for (const definition::NextEntry& entry : from.next) {
        bool match = entry.when.empty();
        if (!match) {
            if (!have_context) {
                context = pg::stages::decision_context(spi, call.run(), done);
                have_context = true;
            }
            match = pg::stages::path_matches(spi, context, pg::text_from_utf8(entry.when));
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
    if (!wf.has_decide) return route(spi, call, from, done);
    Datum context = pg::stages::decision_context(spi, call.run(), done);
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
    if (d.has_state) pg::runs::set_state(spi, call.run(), pg::jsonb_of(*json::find(decision, "state")));
    bool switching = d.kind == decision::Decision::Kind::kNext;
    pg::stages::save_decision(spi, call.run(), done, pg::jsonb_of(decision), !switching);
    if (!switching) {
        run::Status end = d.finish_status == "failed" ? run::Status::kFailed : run::Status::kCompleted;
        pg::runs::end(spi, call.run(), end, d.reason.empty() ? 0 : pg::text_from_utf8(d.reason));
        return finished(end);
    }
    Datum inputs = d.has_inputs ? JsonbPGetDatum(pg::jsonb_of(*json::find(decision, "inputs"))) : result;
    const definition::StageDef& to = stage_def(wf.definition, d.next.c_str(), call);
    return stage_outcome(pg::stages::insert(spi, call.run(), to, done, inputs));
}

// A completed current stage: decide, then save the decision and write the successor
// (or end the run), all in this transaction. The saved result is the successor's inputs
// unless the decision names them; a result that is not an object is corrupt history,
// whatever the decision says.
Outcome leave_stage(pg::Spi& spi, const OwnerCall& call, const pg::Workflow& wf, const pg::stages::Stage& done, Oid caller) {
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
Outcome transition(pg::Spi& spi, const OwnerCall& call, const pg::runs::Owned& run, Oid caller) {
    if (run::is_terminal(run.status)) return finished(run.status);
    if (run.status == run::Status::kSubmitted)
        throw Error(SqlState::kInvalidState, run_text(call) + " is not approved",
                    "A run that requires approval starts only after baton.approve().");
    if (run.status == run::Status::kApproved) return start_run(spi, call, run);
    pg::Workflow wf = pg::load_workflow(spi, run.workflow, run.version);
    std::optional<pg::stages::Stage> found = pg::stages::current(spi, call.run());
    if (!found) throw_corrupt(call, "The running run has no current stage.");
    const pg::stages::Stage& current = *found;
    (void)stage_def(wf.definition, current.name, call);  // DU004 for a stage the version does not have
    switch (run::next_step(current.status, current.attempt, current.max_attempts, current.before_retry_deadline)) {
        case run::Step::kReturnStage: return stage_outcome(current);
        case run::Step::kWait: return {"wait", true, current, run::Status::kRunning};
        case run::Step::kFailRun: {
            std::string reason = "stage \"" + std::string(current.name) + "\" spent its " +
                                 std::to_string(current.max_attempts) + " attempts";
            pg::runs::end(spi, call.run(), run::Status::kFailed, pg::text_datum(reason));
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
    pg::runs::Owned run = pg::runs::lock_for_owner(spi, call.run(), call.generation);
    if (has_previous) {
        if (!pg::stages::is_of_run(spi, call.run(), previous))
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
