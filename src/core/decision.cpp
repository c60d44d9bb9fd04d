// Checking a decision against the stage it leaves (see decision.hpp).
#include "core/decision.hpp"

#include <utility>
#include <vector>

#include "core/error.hpp"

namespace baton::decision {

namespace {

using json::excerpt;
using json::kind_name;

// The decision being judged: the stage it leaves and the run it belongs to, which every
// refusal names.
struct Leaving {
    const definition::StageDef& from;
    std::string_view run_id;
};

// "stage "a" of run <id>", the object of a refusal.
std::string subject(const Leaving& at) {
    return "stage " + excerpt(at.from.name) + " of run " + std::string(at.run_id);
}

// Refuses a decision whose shape is wrong.
[[noreturn]] void malformed(const Leaving& at, std::string detail) {
    throw Error(SqlState::kTransitionNotAllowed, "decision for " + subject(at) + " is malformed",
                std::move(detail));
}

// Refuses a well-formed decision that goes where the stage may not go.
[[noreturn]] void not_allowed(const Leaving& at, std::string detail) {
    throw Error(SqlState::kTransitionNotAllowed, "decision for " + subject(at) + " is not allowed",
                std::move(detail));
}

// The stage's allowed set for a detail: `"a", "b" or "@finish"`, at most 20 of them.
std::string allowed_text(const definition::StageDef& from) {
    const std::vector<std::string> to = definition::destinations(from);
    std::string out;
    const std::size_t shown = to.size() < 20 ? to.size() : 20;
    for (std::size_t k = 0; k < shown; ++k) {
        if (k > 0)
            out += k + 1 == to.size() ? " or " : ", ";
        out += excerpt(to[k]);
    }
    if (shown < to.size())
        out += " and " + std::to_string(to.size() - shown) + " more";
    return out;
}

}  // namespace

// Checks the shape first (every key known and of its type, exactly one of next and
// finish), then the destination against the stage's next.
Decision check_decision(const json::Value* decision, const definition::StageDef& from, std::string_view run_id) {
    const Leaving at{from, run_id};
    if (decision == nullptr)
        malformed(at, "The decision is NULL; it must be an object.");
    if (decision->kind != json::Kind::kObject)
        malformed(at, std::string("The decision must be an object, not ") +
                            kind_name(decision->kind) + ".");
    for (const auto& m : decision->members)
        if (m.first != "next" && m.first != "finish" && m.first != "inputs" && m.first != "state" &&
            m.first != "reason")
            malformed(at, "The decision has unknown key " + excerpt(m.first) +
                                "; a decision has next or finish, and inputs, state, reason.");

    const json::Value* next = json::find(*decision, "next");
    const json::Value* finish = json::find(*decision, "finish");
    const json::Value* inputs = json::find(*decision, "inputs");
    const json::Value* state = json::find(*decision, "state");
    const json::Value* reason = json::find(*decision, "reason");

    if (next != nullptr && finish != nullptr)
        malformed(at, "The decision has both \"next\" and \"finish\"; it must have one.");
    if (next == nullptr && finish == nullptr)
        malformed(at, "The decision has neither \"next\" nor \"finish\"; it must have one.");
    if (inputs != nullptr && inputs->kind != json::Kind::kObject)
        malformed(at, std::string("The decision's inputs must be an object, not ") +
                            kind_name(inputs->kind) + ".");
    if (state != nullptr && state->kind != json::Kind::kObject)
        malformed(at, std::string("The decision's state must be an object, not ") +
                            kind_name(state->kind) + ".");
    if (reason != nullptr && reason->kind != json::Kind::kString)
        malformed(at, std::string("The decision's reason must be a string, not ") +
                            kind_name(reason->kind) + ".");

    Decision d;
    d.has_inputs = inputs != nullptr;
    d.has_state = state != nullptr;
    if (reason != nullptr)
        d.reason = reason->text;

    if (finish != nullptr) {
        if (finish->kind != json::Kind::kString ||
            (finish->text != "completed" && finish->text != "failed"))
            malformed(at, "The decision's finish must be \"completed\" or \"failed\", not " +
                                (finish->kind == json::Kind::kString
                                     ? excerpt(finish->text)
                                     : std::string(kind_name(finish->kind))) +
                                ".");
        if (inputs != nullptr)
            malformed(at,
                      "A finish decision has no successor stage, so it takes no "
                      "\"inputs\".");
        if (!from.may_finish())
            not_allowed(at, "Stage " + excerpt(from.name) + " cannot finish the run: its " +
                                  "next has no \"@finish\". It may go to " + allowed_text(from) +
                                  ".");
        d.kind = Decision::Kind::kFinish;
        d.finish_status = finish->text;
        return d;
    }

    if (next->kind != json::Kind::kString)
        malformed(at, std::string("The decision's next must be a string naming a stage, not ") +
                            kind_name(next->kind) + ".");
    if (next->text == definition::kFinish)
        not_allowed(at,
                    "\"@finish\" is not a stage; a decision ends the run with "
                    "{\"finish\": \"completed\"} or {\"finish\": \"failed\"}.");
    bool allowed = false;
    for (const definition::NextEntry& e : from.next)
        if (e.to == next->text)
            allowed = true;
    if (!allowed)
        not_allowed(at, "Stage " + excerpt(from.name) + " may go to " + allowed_text(from) +
                              "; the decision names " + excerpt(next->text) + ".");
    d.kind = Decision::Kind::kNext;
    d.next = next->text;
    return d;
}

}  // namespace baton::decision
