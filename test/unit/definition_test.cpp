// Unit tests for workflow definitions (src/core/definition.*).
#include "core/definition.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"
#include "json_text.hpp"
#include "state_of.hpp"

namespace baton::definition {
namespace {

using baton::test::error_of;

// The contract's example definition (docs/internals/contract.md, "Workflows and runs").
constexpr const char* kExample = R"({ "start": "gate_user",
  "requires_approval": true,
  "decide": "app.user_deletion_decide",
  "stages": {
    "gate_user":    { "next": ["purge_db"] },
    "purge_db":     { "next": ["purge_agents", "purge_db", "@finish"], "max_attempts": 5,
                      "retry_delay": "30 seconds" },
    "purge_agents": { "next": ["purge_db", "@finish"] } } })";

// Parses a JSON text as a definition.
Definition def(const std::string& text) {
    return parse_definition(test::json_of(text));
}

// The detail of the refusal of a definition text; fails the test when it was accepted or
// refused with anything but 22023 "invalid workflow definition".
std::string refusal(const std::string& text) {
    auto e = error_of([&] { def(text); });
    if (!e) {
        ADD_FAILURE() << "accepted: " << text;
        return {};
    }
    EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << text;
    EXPECT_EQ(e->message(), "invalid workflow definition") << text;
    EXPECT_FALSE(e->detail().empty()) << text;
    return e->detail();
}

// Expects the refusal of text to have a detail containing each of the fragments.
void expect_refused(const std::string& text, std::vector<std::string> fragments) {
    const std::string detail = refusal(text);
    for (const std::string& f : fragments)
        EXPECT_NE(detail.find(f), std::string::npos)
            << "detail: " << detail << "\nlacks: " << f << "\ntext: " << text;
}

// A definition with one stage "a" whose body is given.
std::string one_stage(const std::string& body, const std::string& extra = "") {
    return R"({"start":"a",)" + extra + R"("stages":{"a":)" + body + "}}";
}

// A definition whose top-level members are given (stages "a" -> "@finish" added unless given).
std::string top(const std::string& members) {
    return "{" + members + R"(,"stages":{"a":{"next":["@finish"]}}})";
}

// ---- accepted definitions --------------------------------------------------------------

TEST(Definition, ContractExampleParses) {
    const Definition d = def(kExample);
    EXPECT_EQ(d.start, "gate_user");
    EXPECT_TRUE(d.requires_approval);
    EXPECT_EQ(d.decide, "app.user_deletion_decide");
    ASSERT_EQ(d.stages.size(), 3u);

    const StageDef* gate = d.stage("gate_user");
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->name, "gate_user");
    ASSERT_EQ(gate->next.size(), 1u);
    EXPECT_EQ(gate->next[0].to, "purge_db");
    EXPECT_EQ(gate->next[0].when, "");
    EXPECT_EQ(gate->max_attempts, 3);
    EXPECT_EQ(gate->retry_delay, "30 seconds");
    EXPECT_FALSE(gate->may_finish());

    const StageDef* db = d.stage("purge_db");
    ASSERT_NE(db, nullptr);
    ASSERT_EQ(db->next.size(), 3u);
    EXPECT_EQ(db->next[0].to, "purge_agents");
    EXPECT_EQ(db->next[1].to, "purge_db");
    EXPECT_EQ(db->next[2].to, "@finish");
    EXPECT_EQ(db->max_attempts, 5);
    EXPECT_EQ(db->retry_delay, "30 seconds");
    EXPECT_TRUE(db->may_finish());
    EXPECT_EQ(destinations(*db), (std::vector<std::string>{"purge_agents", "purge_db", "@finish"}));

    const StageDef* agents = d.stage("purge_agents");
    ASSERT_NE(agents, nullptr);
    EXPECT_TRUE(agents->may_finish());
    EXPECT_EQ(agents->max_attempts, 3);

    EXPECT_EQ(d.stage("nope"), nullptr);
    EXPECT_EQ(d.stage(""), nullptr);
    EXPECT_EQ(d.stage("@finish"), nullptr);
}

TEST(Definition, MinimalDefinitionAndDefaults) {
    const Definition d = def(R"({"start":"a","stages":{"a":{"next":["@finish"]}}})");
    EXPECT_EQ(d.start, "a");
    EXPECT_FALSE(d.requires_approval);
    EXPECT_TRUE(d.decide.empty());
    ASSERT_EQ(d.stages.size(), 1u);
    EXPECT_EQ(d.stages[0].max_attempts, kDefaultMaxAttempts);
    EXPECT_EQ(d.stages[0].retry_delay, kDefaultRetryDelay);
    EXPECT_TRUE(d.stages[0].may_finish());
    EXPECT_FALSE(def(top(R"("start":"a","requires_approval":false)")).requires_approval);
}

TEST(Definition, StagesKeepTheirWrittenOrder) {
    const Definition d = def(R"({"start":"m","stages":{"z":{"next":["@finish"]},)"
                             R"("m":{"next":["z"]},"a":{"next":["m"]}}})");
    ASSERT_EQ(d.stages.size(), 3u);
    EXPECT_EQ(d.stages[0].name, "z");
    EXPECT_EQ(d.stages[1].name, "m");
    EXPECT_EQ(d.stages[2].name, "a");
}

TEST(Definition, DeclarativeEntries) {
    const Definition d = def(R"({"start":"check","stages":{
        "check":{"next":[{"to":"big","when":"$.stage.result.n > 10"},
                         {"to":"@finish","when":"$.stage.result.n == 0"},
                         {"to":"small"}]},
        "big":{"next":["@finish"]},
        "small":{"next":["check", "@finish"], "retry_delay":"5 min"}}})");
    const StageDef* check = d.stage("check");
    ASSERT_NE(check, nullptr);
    ASSERT_EQ(check->next.size(), 3u);
    EXPECT_EQ(check->next[0].to, "big");
    EXPECT_EQ(check->next[0].when, "$.stage.result.n > 10");
    EXPECT_EQ(check->next[1].to, "@finish");
    EXPECT_EQ(check->next[1].when, "$.stage.result.n == 0");
    EXPECT_EQ(check->next[2].to, "small");
    EXPECT_EQ(check->next[2].when, "");
    EXPECT_TRUE(check->may_finish());  // a conditional "@finish" still allows finishing
    EXPECT_EQ(d.stage("small")->retry_delay, "5 min");
}

TEST(Definition, SelfLoopsAndCyclesAreAllowed) {
    EXPECT_NO_THROW(def(R"({"start":"a","stages":{"a":{"next":["a","@finish"]}}})"));
    EXPECT_NO_THROW(def(R"({"start":"a","stages":{"a":{"next":["b"]},"b":{"next":["a"]}}})"));
}

TEST(Definition, UnreachableStagesAreAllowed) {
    // The contract validates names, not reachability.
    const Definition d = def(R"({"start":"a","stages":{"a":{"next":["@finish"]},
                                                        "b":{"next":["a"]}}})");
    EXPECT_EQ(d.stages.size(), 2u);
}

TEST(Definition, PlainToEntryWithDecideIsAllowed) {
    const Definition d = def(R"({"start":"a","decide":"f","stages":{
        "a":{"next":[{"to":"b"},"@finish"]},"b":{"next":[{"to":"@finish"}]}}})");
    EXPECT_EQ(d.stage("a")->next[0].to, "b");
    EXPECT_TRUE(d.stage("b")->may_finish());
}

TEST(Definition, RepeatedKeysTakeTheLastValue) {
    // As jsonb keeps them: the definition jsonb stores has only the last.
    const Definition d = def(R"({"start":"x","start":"a","stages":{
        "a":{"next":["b"],"max_attempts":2,"max_attempts":7},
        "b":{"next":["nowhere"]},
        "b":{"next":["@finish"]}}})");
    EXPECT_EQ(d.start, "a");
    EXPECT_EQ(d.stage("a")->max_attempts, 7);
    ASSERT_EQ(d.stages.size(), 2u);
    EXPECT_EQ(d.stage("b")->next[0].to, "@finish");
}

TEST(Definition, MaxAttemptsBounds) {
    EXPECT_EQ(def(one_stage(R"({"next":["@finish"],"max_attempts":1})")).stages[0].max_attempts, 1);
    EXPECT_EQ(def(one_stage(R"({"next":["@finish"],"max_attempts":1000})")).stages[0].max_attempts,
              1000);
}

// ---- refusals: the top level -----------------------------------------------------------

TEST(DefinitionRefused, NotAnObject) {
    expect_refused("[]", {"must be an object", "array"});
    expect_refused("\"x\"", {"must be an object", "string"});
    expect_refused("null", {"must be an object", "null"});
    expect_refused("42", {"number"});
}

TEST(DefinitionRefused, UnknownTopLevelKey) {
    expect_refused(top(R"("start":"a","requires_aproval":true)"),
                   {"Unknown key \"requires_aproval\""});
    expect_refused(top(R"("start":"a","version":2)"), {"\"version\""});
    expect_refused(top(R"("start":"a","Start":"a")"), {"\"Start\""});
}

TEST(DefinitionRefused, Start) {
    expect_refused(R"({"stages":{"a":{"next":["@finish"]}}})", {"no \"start\""});
    expect_refused(top(R"("start":null)"), {"\"start\" must be a string", "null"});
    expect_refused(top(R"("start":["a"])"), {"\"start\" must be a string", "array"});
    expect_refused(top(R"("start":"b")"), {"\"start\" names \"b\"", "not a stage"});
    expect_refused(top(R"("start":"@finish")"), {"\"start\" names \"@finish\""});
    expect_refused(top(R"("start":"")"), {"\"start\" names \"\""});
}

TEST(DefinitionRefused, Stages) {
    expect_refused(R"({"start":"a"})", {"no \"stages\""});
    expect_refused(R"({"start":"a","stages":[]})", {"\"stages\" must be an object", "array"});
    expect_refused(R"({"start":"a","stages":null})", {"\"stages\" must be an object", "null"});
    expect_refused(R"({"start":"a","stages":{}})", {"at least one stage"});
}

TEST(DefinitionRefused, RequiresApproval) {
    expect_refused(top(R"("start":"a","requires_approval":"true")"),
                   {"\"requires_approval\" must be a boolean", "string"});
    expect_refused(top(R"("start":"a","requires_approval":1)"), {"boolean", "number"});
    expect_refused(top(R"("start":"a","requires_approval":null)"), {"boolean", "null"});
}

TEST(DefinitionRefused, Decide) {
    expect_refused(top(R"("start":"a","decide":null)"), {"\"decide\" must be a string", "null"});
    expect_refused(top(R"("start":"a","decide":7)"), {"\"decide\" must be a string", "number"});
    expect_refused(top(R"("start":"a","decide":"")"), {"\"decide\" must not be empty"});
    const std::string longest(kDecideMaxBytes, 'f');
    EXPECT_EQ(def(top(R"("start":"a","decide":")" + longest + "\"")).decide, longest);
    expect_refused(top(R"("start":"a","decide":")" + longest + "g\""), {"201 bytes", "200"});
}

// ---- refusals: stages ------------------------------------------------------------------

TEST(StageName, Pattern) {
    for (const char* name : {"a", "z", "a_", "a1", "gate_user", "purge_db2", "a__b", "x0_9"})
        EXPECT_TRUE(is_stage_name(name)) << name;
    EXPECT_TRUE(is_stage_name(std::string(63, 'a')));
    EXPECT_TRUE(is_stage_name("a" + std::string(62, '_')));
    for (const char* name : {"", "A", "Ab", "aB", "1a", "_a", "a-b", "a b", "a.b", "@finish",
                             "caf\xc3\xa9", "a\n", " a", "a ", "\xc3\xa9"})
        EXPECT_FALSE(is_stage_name(name)) << name;
    EXPECT_FALSE(is_stage_name(std::string(64, 'a')));
    EXPECT_FALSE(is_stage_name(std::string("a\0b", 3)));
    EXPECT_FALSE(is_stage_name(std::string("a\0", 2)));
}

TEST(DefinitionRefused, BadStageNames) {
    for (const char* name : {"A", "1a", "_a", "a-b", "Gate", "a b", "@finish", ""}) {
        const std::string text =
            std::string(R"({"start":"a","stages":{"a":{"next":["@finish"]},")") + name +
            R"(":{"next":["@finish"]}}})";
        expect_refused(text,
                       {"Stage name \"" + std::string(name) + "\"", "^[a-z][a-z0-9_]{0,62}$"});
    }
    const std::string long_name(64, 'a');
    expect_refused(R"({"start":"a","stages":{"a":{"next":["@finish"]},")" + long_name +
                       R"(":{"next":["@finish"]}}})",
                   {"Stage name"});
}

TEST(DefinitionRefused, StageNotAnObject) {
    expect_refused(one_stage(R"(["@finish"])"), {"Stage \"a\" must be an object", "array"});
    expect_refused(one_stage("null"), {"Stage \"a\" must be an object", "null"});
    expect_refused(one_stage("\"b\""), {"string"});
}

TEST(DefinitionRefused, StageUnknownKey) {
    expect_refused(one_stage(R"({"next":["@finish"],"retries":3})"),
                   {"Stage \"a\" has unknown key \"retries\""});
    expect_refused(one_stage(R"({"next":["@finish"],"when":"$.x"})"), {"unknown key \"when\""});
    expect_refused(one_stage(R"({"next":["@finish"],"Next":["@finish"]})"),
                   {"unknown key \"Next\""});
}

TEST(DefinitionRefused, Next) {
    expect_refused(one_stage(R"({})"), {"Stage \"a\" has no \"next\""});
    expect_refused(one_stage(R"({"max_attempts":2})"), {"no \"next\""});
    expect_refused(one_stage(R"({"next":"@finish"})"), {"next must be an array", "string"});
    expect_refused(one_stage(R"({"next":{"to":"@finish"}})"), {"next must be an array", "object"});
    expect_refused(one_stage(R"({"next":null})"), {"next must be an array", "null"});
    expect_refused(one_stage(R"({"next":[]})"), {"Stage \"a\" has an empty next", "never finish"});
}

TEST(DefinitionRefused, NextEntryShapes) {
    expect_refused(one_stage(R"({"next":["@finish",1]})"),
                   {"Stage \"a\": next[1] must be a string or an object", "number"});
    expect_refused(one_stage(R"({"next":[null]})"), {"next[0]", "null"});
    expect_refused(one_stage(R"({"next":[["@finish"]]})"), {"next[0]", "array"});
    expect_refused(one_stage(R"({"next":[true]})"), {"next[0]", "boolean"});
    expect_refused(one_stage(R"({"next":[{"to":"@finish","if":"$.x"}]})"),
                   {"next[0] has unknown key \"if\""});
    expect_refused(one_stage(R"({"next":[{}]})"), {"next[0] has no \"to\""});
    expect_refused(one_stage(R"({"next":[{"when":"$.x"}]})"), {"next[0] has no \"to\""});
    expect_refused(one_stage(R"({"next":[{"to":1}]})"), {"next[0].to must be a string", "number"});
    expect_refused(one_stage(R"({"next":[{"to":null}]})"), {"next[0].to must be a string"});
    expect_refused(one_stage(R"({"next":[{"to":"@finish","when":""}]})"),
                   {"next[0].when must not be empty"});
    expect_refused(one_stage(R"({"next":[{"to":"@finish","when":true}]})"),
                   {"next[0].when must be a string", "boolean"});
    expect_refused(one_stage(R"({"next":[{"to":"@finish","when":null}]})"),
                   {"next[0].when must be a string", "null"});
}

TEST(DefinitionRefused, WhenWithDecide) {
    expect_refused(
        one_stage(R"({"next":[{"to":"@finish","when":"$.x > 1"}]})", R"("decide":"app.f",)"),
        {"next[0] has a \"when\"", "decide"});
    // The same entry is fine without decide.
    EXPECT_NO_THROW(def(one_stage(R"({"next":[{"to":"@finish","when":"$.x > 1"}]})")));
}

TEST(DefinitionRefused, UnknownDestinations) {
    const std::string example = kExample;
    std::string broken = example;
    broken.replace(broken.find("\"purge_agents\", \"purge_db\""), 14, "\"purge_x\"");
    expect_refused(broken, {"Stage \"purge_db\" names unknown destination \"purge_x\" in next[0]"});
    expect_refused(one_stage(R"({"next":["@finish","b"]})"),
                   {"Stage \"a\" names unknown destination \"b\" in next[1]"});
    expect_refused(one_stage(R"({"next":[{"to":"b","when":"$.x"}]})"),
                   {"unknown destination \"b\" in next[0]"});
    expect_refused(one_stage(R"({"next":["finish"]})"), {"unknown destination \"finish\""});
    expect_refused(one_stage(R"({"next":["@FINISH"]})"), {"unknown destination \"@FINISH\""});
    expect_refused(one_stage(R"({"next":[""]})"), {"unknown destination \"\""});
    expect_refused(one_stage(R"({"next":["A"]})"), {"unknown destination \"A\""});
}

TEST(DefinitionRefused, ForwardReferencesAreResolved) {
    // "a" names "b" before "b" is read: fine; an unknown one after every stage is read: not.
    EXPECT_NO_THROW(def(R"({"start":"a","stages":{"a":{"next":["b"]},"b":{"next":["@finish"]}}})"));
    expect_refused(R"({"start":"a","stages":{"a":{"next":["b"]},"c":{"next":["@finish"]}}})",
                   {"unknown destination \"b\""});
}

TEST(DefinitionRefused, MaxAttempts) {
    for (const char* bad : {"0", "-0", "-1", "1001", "1.0", "3.5", "1e2", "99999999999999999999"})
        expect_refused(one_stage(std::string(R"({"next":["@finish"],"max_attempts":)") + bad + "}"),
                       {"Stage \"a\": max_attempts must be an integer from 1 to 1000", bad});
    for (const char* bad : {"\"3\"", "true", "null", "[3]"})
        expect_refused(one_stage(std::string(R"({"next":["@finish"],"max_attempts":)") + bad + "}"),
                       {"max_attempts must be an integer"});
}

TEST(DefinitionRefused, RetryDelay) {
    expect_refused(one_stage(R"({"next":["@finish"],"retry_delay":""})"),
                   {"Stage \"a\": retry_delay must not be empty"});
    expect_refused(one_stage(R"({"next":["@finish"],"retry_delay":30})"),
                   {"retry_delay must be a string", "number"});
    expect_refused(one_stage(R"({"next":["@finish"],"retry_delay":null})"),
                   {"retry_delay must be a string", "null"});
}

TEST(DefinitionRefused, NulBytesInHandBuiltValues) {
    // jsonb never holds a NUL byte, but the tree can be built by hand.
    json::Value v = test::json_of(one_stage(R"({"next":["@finish"],"retry_delay":"x"})"));
    json::Value* stages = &v.members[1].second;
    ASSERT_EQ(v.members[1].first, "stages");
    stages->members[0].second.members[1].second.text = std::string("1 s\0x", 5);
    auto e = error_of([&] { parse_definition(v); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue);
    EXPECT_NE(e->detail().find("NUL"), std::string::npos) << e->detail();

    json::Value d = test::json_of(top(R"("start":"a","decide":"f")"));
    json::find(d, "decide");  // present
    for (auto& m : d.members)
        if (m.first == "decide")
            m.second.text = std::string("f\0g", 3);
    EXPECT_EQ(baton::test::state_of([&] { parse_definition(d); }),
              SqlState::kInvalidParameterValue);
}

TEST(DefinitionRefused, DetailsStayShortForHugeNames) {
    const std::string huge(5000, 'q');
    for (const std::string& text :
         {top(R"("start":")" + huge + "\""), one_stage(R"({"next":[")" + huge + R"("]})"),
          R"({"start":"a","stages":{")" + huge + R"(":{"next":["@finish"]}}})",
          top(R"("start":"a",")" + huge + R"(":1)")}) {
        const std::string detail = refusal(text);
        EXPECT_LT(detail.size(), 400u) << detail;
        EXPECT_EQ(detail.find(std::string(65, 'q')), std::string::npos);
    }
}

TEST(Destinations, EachOnceInFirstSeenOrder) {
    StageDef s;
    s.name = "a";
    s.next = {{"b", "$.x"}, {"@finish", ""}, {"b", ""}, {"c", ""}, {"@finish", "$.y"}};
    EXPECT_EQ(destinations(s), (std::vector<std::string>{"b", "@finish", "c"}));
    EXPECT_TRUE(s.may_finish());
    s.next = {{"b", ""}};
    EXPECT_FALSE(s.may_finish());
    s.next.clear();
    EXPECT_TRUE(destinations(s).empty());
    EXPECT_FALSE(s.may_finish());
}

}  // namespace
}  // namespace baton::definition
