// Unit tests for checking decisions (src/core/decision.*).
#include "core/decision.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/definition.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "json_text.hpp"
#include "state_of.hpp"

namespace baton::decision {
namespace {

using baton::test::error_of;

// The run every refusal names.
constexpr const char* kRun = "6f1c2d3e-0000-4000-8000-00000000abcd";
using definition::Definition;
using definition::StageDef;

// The contract's example definition (docs/internals/contract.md, "Workflows and runs").
const Definition& example() {
    static const Definition d = definition::parse_definition(test::json_of(R"({
      "start": "gate_user", "requires_approval": true, "decide": "app.user_deletion_decide",
      "stages": {
        "gate_user":    { "next": ["purge_db"] },
        "purge_db":     { "next": ["purge_agents", "purge_db", "@finish"], "max_attempts": 5 },
        "purge_agents": { "next": ["purge_db", "@finish"] } } })"));
    return d;
}

// A stage of the example.
const StageDef& stage(const char* name) {
    return *example().stage(name);
}

// Checks a decision given as JSON text, taken at the named stage.
Decision check(const std::string& text, const char* from) {
    const json::Value v = test::json_of(text);
    return check_decision(&v, stage(from), kRun);
}

// The refusal of a decision: fails the test unless it is DU003 with the given message
// ending ("is malformed" or "is not allowed") for that stage; returns the detail.
std::string refusal(const std::string& text, const char* from, const char* ending) {
    auto e = error_of([&] { check(text, from); });
    if (!e) {
        ADD_FAILURE() << "accepted: " << text;
        return {};
    }
    EXPECT_EQ(e->state(), SqlState::kTransitionNotAllowed) << text;
    EXPECT_STREQ(e->code(), "DU003");
    EXPECT_EQ(e->message(), std::string("decision for stage \"") + from + "\" of run " + kRun + " " + ending) << text;
    EXPECT_FALSE(e->detail().empty());
    return e->detail();
}

// Expects a malformed decision whose detail holds the fragment.
void expect_malformed(const std::string& text, const std::string& fragment,
                      const char* from = "purge_db") {
    const std::string d = refusal(text, from, "is malformed");
    EXPECT_NE(d.find(fragment), std::string::npos) << "detail: " << d << "\ntext: " << text;
}

// Expects a refused (not allowed) decision whose detail holds each fragment.
void expect_not_allowed(const std::string& text, const char* from,
                        const std::vector<std::string>& fragments) {
    const std::string d = refusal(text, from, "is not allowed");
    for (const std::string& f : fragments)
        EXPECT_NE(d.find(f), std::string::npos) << "detail: " << d << "\nlacks: " << f;
}

// ---- accepted --------------------------------------------------------------------------

TEST(Decision, AllowedNext) {
    const Decision d = check(R"({"next":"purge_db"})", "gate_user");
    EXPECT_EQ(d.kind, Decision::Kind::kNext);
    EXPECT_EQ(d.next, "purge_db");
    EXPECT_TRUE(d.finish_status.empty());
    EXPECT_TRUE(d.reason.empty());
    EXPECT_FALSE(d.has_inputs);
    EXPECT_FALSE(d.has_state);
}

TEST(Decision, EveryDestinationOfTheStage) {
    for (const char* to : {"purge_agents", "purge_db"})
        EXPECT_EQ(check(std::string(R"({"next":")") + to + "\"}", "purge_db").next, to);
    EXPECT_EQ(check(R"({"next":"purge_db"})", "purge_agents").next, "purge_db");
}

TEST(Decision, NextWithInputsStateAndReason) {
    const Decision d =
        check(R"({"next":"purge_agents","inputs":{"user":7},"state":{"n":1},"reason":"db done"})",
              "purge_db");
    EXPECT_EQ(d.kind, Decision::Kind::kNext);
    EXPECT_EQ(d.next, "purge_agents");
    EXPECT_TRUE(d.has_inputs);
    EXPECT_TRUE(d.has_state);
    EXPECT_EQ(d.reason, "db done");
}

TEST(Decision, EmptyObjectsCount) {
    const Decision d = check(R"({"next":"purge_db","inputs":{},"state":{}})", "gate_user");
    EXPECT_TRUE(d.has_inputs);
    EXPECT_TRUE(d.has_state);
}

TEST(Decision, FinishAllowed) {
    for (const char* status : {"completed", "failed"}) {
        for (const char* from : {"purge_db", "purge_agents"}) {
            const Decision d = check(std::string(R"({"finish":")") + status + "\"}", from);
            EXPECT_EQ(d.kind, Decision::Kind::kFinish);
            EXPECT_EQ(d.finish_status, status);
            EXPECT_TRUE(d.next.empty());
        }
    }
    const Decision d =
        check(R"({"finish":"failed","reason":"user gone","state":{"x":[]}})", "purge_agents");
    EXPECT_EQ(d.reason, "user gone");
    EXPECT_TRUE(d.has_state);
    EXPECT_FALSE(d.has_inputs);
}

TEST(Decision, RepeatedKeysTakeTheLastValue) {
    const Decision d = check(R"({"next":"nowhere","next":"purge_db"})", "gate_user");
    EXPECT_EQ(d.next, "purge_db");
}

TEST(Decision, DeclarativeStageDestinations) {
    StageDef s;
    s.name = "check";
    s.next = {{"big", "$.n > 10"}, {"@finish", "$.n == 0"}, {"small", ""}};
    json::Value v = test::json_of(R"({"next":"big"})");
    EXPECT_EQ(check_decision(&v, s, kRun).next, "big");
    v = test::json_of(R"({"finish":"completed"})");
    EXPECT_EQ(check_decision(&v, s, kRun).kind, Decision::Kind::kFinish);
}

// ---- not allowed -----------------------------------------------------------------------

TEST(DecisionNotAllowed, NextOutsideTheSet) {
    expect_not_allowed(
        R"({"next":"purge_agents"})", "gate_user",
        {"Stage \"gate_user\" may go to \"purge_db\"", "the decision names \"purge_agents\""});
    expect_not_allowed(R"({"next":"gate_user"})", "purge_db",
                       {"\"purge_agents\", \"purge_db\" or \"@finish\"", "\"gate_user\""});
    expect_not_allowed(R"({"next":"no_such_stage"})", "purge_agents", {"\"no_such_stage\""});
    expect_not_allowed(R"({"next":""})", "purge_agents", {"names \"\""});
    expect_not_allowed(R"({"next":"Purge_db"})", "purge_agents", {"\"Purge_db\""});
}

TEST(DecisionNotAllowed, NextFinishIsNotAStage) {
    expect_not_allowed(R"({"next":"@finish"})", "purge_db", {"\"@finish\" is not a stage"});
    expect_not_allowed(R"({"next":"@finish"})", "gate_user", {"not a stage"});
}

TEST(DecisionNotAllowed, FinishFromAStageWithoutFinish) {
    expect_not_allowed(
        R"({"finish":"completed"})", "gate_user",
        {"Stage \"gate_user\" cannot finish the run", "\"@finish\"", "It may go to \"purge_db\""});
    expect_not_allowed(R"({"finish":"failed","reason":"x"})", "gate_user", {"cannot finish"});
}

TEST(DecisionNotAllowed, LongAllowedSetsAreCut) {
    StageDef s;
    s.name = "hub";
    for (int k = 0; k < 50; ++k)
        s.next.push_back({"s" + std::to_string(k), ""});
    const json::Value v = test::json_of(R"({"next":"elsewhere"})");
    auto e = error_of([&] { check_decision(&v, s, kRun); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->state(), SqlState::kTransitionNotAllowed);
    EXPECT_NE(e->detail().find("\"s19\" and 30 more"), std::string::npos) << e->detail();
    EXPECT_EQ(e->detail().find("\"s20\""), std::string::npos) << e->detail();
}

// ---- malformed -------------------------------------------------------------------------

TEST(DecisionMalformed, NullDecision) {
    auto e = error_of([] { check_decision(nullptr, stage("purge_db"), kRun); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->state(), SqlState::kTransitionNotAllowed);
    EXPECT_EQ(e->message(), std::string("decision for stage \"purge_db\" of run ") + kRun + " is malformed");
    EXPECT_NE(e->detail().find("NULL"), std::string::npos) << e->detail();
}

TEST(DecisionMalformed, NotAnObject) {
    expect_malformed("null", "must be an object, not null");
    expect_malformed("[]", "must be an object, not array");
    expect_malformed(R"(["purge_db"])", "not array");
    expect_malformed(R"("purge_db")", "not string");
    expect_malformed("1", "not number");
    expect_malformed("true", "not boolean");
}

TEST(DecisionMalformed, NeitherOrBoth) {
    expect_malformed("{}", "neither \"next\" nor \"finish\"");
    expect_malformed(R"({"reason":"x","state":{}})", "neither");
    expect_malformed(R"({"next":"purge_db","finish":"completed"})", "both \"next\" and \"finish\"");
}

TEST(DecisionMalformed, NextNotAString) {
    for (const char* v : {"null", "1", "true", "[\"purge_db\"]", "{\"stage\":\"purge_db\"}"})
        expect_malformed(std::string(R"({"next":)") + v + "}", "next must be a string");
}

TEST(DecisionMalformed, UnknownFinishStatus) {
    for (const char* v :
         {"\"done\"", "\"Completed\"", "\"cancelled\"", "\"\"", "true", "null", "1", "{}"})
        expect_malformed(std::string(R"({"finish":)") + v + "}",
                         "finish must be \"completed\" or \"failed\"");
    // Malformed wins over not allowed: the shape is judged first.
    expect_malformed(R"({"finish":"done"})", "finish must be", "gate_user");
}

TEST(DecisionMalformed, InputsAndStateMustBeObjects) {
    for (const char* v : {"null", "[]", "\"x\"", "1", "false"}) {
        expect_malformed(std::string(R"({"next":"purge_db","inputs":)") + v + "}",
                         "inputs must be an object");
        expect_malformed(std::string(R"({"next":"purge_db","state":)") + v + "}",
                         "state must be an object");
        expect_malformed(std::string(R"({"finish":"completed","state":)") + v + "}",
                         "state must be an object");
    }
}

TEST(DecisionMalformed, ReasonMustBeAString) {
    for (const char* v : {"null", "1", "{}", "[]", "true"})
        expect_malformed(std::string(R"({"finish":"failed","reason":)") + v + "}",
                         "reason must be a string");
}

TEST(DecisionMalformed, UnknownKeys) {
    expect_malformed(R"({"next":"purge_db","input":{}})", "unknown key \"input\"");
    expect_malformed(R"({"finish":"completed","status":"ok"})", "unknown key \"status\"");
    expect_malformed(R"({"next":"purge_db","":1})", "unknown key \"\"");
    expect_malformed(R"({"Next":"purge_db"})", "unknown key \"Next\"");
}

TEST(DecisionMalformed, FinishTakesNoInputs) {
    expect_malformed(R"({"finish":"completed","inputs":{}})", "no \"inputs\"");
}

TEST(DecisionMalformed, ShapeIsJudgedBeforeTheDestination) {
    // A next outside the set with a bad inputs is malformed, not "not allowed".
    expect_malformed(R"({"next":"gate_user","inputs":[]})", "inputs must be an object");
    expect_malformed(R"({"next":"gate_user","extra":1})", "unknown key");
}

TEST(DecisionMalformed, DetailsStayShort) {
    const std::string huge(5000, 'z');
    for (const std::string& text : {R"({")" + huge + R"(":1})", R"({"next":")" + huge + R"("})",
                                    R"({"finish":")" + huge + R"("})"}) {
        auto e = error_of([&] { check(text, "purge_db"); });
        ASSERT_TRUE(e);
        EXPECT_EQ(e->state(), SqlState::kTransitionNotAllowed);
        EXPECT_LT(e->detail().size(), 400u) << e->detail();
    }
}

}  // namespace
}  // namespace baton::decision
