// libFuzzer target: checking decisions (src/core/decision.hpp).
//
// Input: one header byte, then a JSON text, read into a tree (the decision) by the tests'
// lenient reader (test/unit/json_text.hpp). The header picks the stage the
// decision leaves: bits 0-5 choose its destinations among "a", "b", "c", "@finish",
// "purge_db" and "gate_user" (none set: just "@finish"); bit 6 repeats the first entry
// with a `when`; bit 7 with no text after it stands for SQL NULL.
//
// Properties: check_decision accepts exactly what an independent oracle written here from
// the rules in decision.hpp accepts; a refusal is DU003 whose message says "is malformed"
// or "is not allowed" as the oracle does; an accepted decision is among the allowed
// stages (next names a destination of the stage, never "@finish") or finishes a stage that
// may finish with "completed" or "failed", and its fields mirror the input.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/decision.hpp"
#include "core/definition.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "fuzz_check.hpp"
#include "json_text.hpp"

namespace {

namespace json = baton::json;
namespace def = baton::definition;
using baton::decision::Decision;

enum class Verdict { kAccept, kMalformed, kNotAllowed };

// The value of the last member named key (jsonb keeps the last), by a forward scan.
const json::Value* last_member(const json::Value& obj, std::string_view key) {
    const json::Value* found = nullptr;
    for (const auto& m : obj.members)
        if (m.first == key)
            found = &m.second;
    return found;
}

// The rules of decision.hpp, read independently.
Verdict oracle(const json::Value* d, const def::StageDef& from) {
    if (d == nullptr || d->kind != json::Kind::kObject)
        return Verdict::kMalformed;
    for (const auto& m : d->members)
        if (m.first != "next" && m.first != "finish" && m.first != "inputs" && m.first != "state" &&
            m.first != "reason")
            return Verdict::kMalformed;
    const json::Value* next = last_member(*d, "next");
    const json::Value* finish = last_member(*d, "finish");
    const json::Value* inputs = last_member(*d, "inputs");
    const json::Value* state = last_member(*d, "state");
    const json::Value* reason = last_member(*d, "reason");
    if ((next == nullptr) == (finish == nullptr))
        return Verdict::kMalformed;
    if (inputs && inputs->kind != json::Kind::kObject)
        return Verdict::kMalformed;
    if (state && state->kind != json::Kind::kObject)
        return Verdict::kMalformed;
    if (reason && reason->kind != json::Kind::kString)
        return Verdict::kMalformed;
    bool may_finish = false;
    for (const def::NextEntry& e : from.next)
        may_finish = may_finish || e.to == "@finish";
    if (finish) {
        if (finish->kind != json::Kind::kString ||
            (finish->text != "completed" && finish->text != "failed"))
            return Verdict::kMalformed;
        if (inputs)
            return Verdict::kMalformed;
        return may_finish ? Verdict::kAccept : Verdict::kNotAllowed;
    }
    if (next->kind != json::Kind::kString)
        return Verdict::kMalformed;
    if (next->text == "@finish")
        return Verdict::kNotAllowed;
    for (const def::NextEntry& e : from.next)
        if (e.to == next->text)
            return Verdict::kAccept;
    return Verdict::kNotAllowed;
}

def::StageDef stage_from(std::uint8_t header) {
    static const char* const pool[] = {"a", "b", "c", "@finish", "purge_db", "gate_user"};
    def::StageDef s;
    s.name = "gate_user";
    for (int bit = 0; bit < 6; ++bit)
        if (header & (1u << bit))
            s.next.push_back({pool[bit], ""});
    if (s.next.empty())
        s.next.push_back({"@finish", ""});
    if (header & 0x40)
        s.next.push_back({s.next.front().to, "$.x == 1"});
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const def::StageDef from = stage_from(data[0]);
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    json::Value value;
    const json::Value* decision = nullptr;
    if (!(size == 1 && (data[0] & 0x80))) {
        try {
            value = baton::test::json_of(text);
        } catch (const std::logic_error&) {
            return 0;  // not a tree
        }
        decision = &value;
    }

    const Verdict expected = oracle(decision, from);
    Decision got;
    try {
        got = baton::decision::check_decision(decision, from, "6f1c2d3e-0000-4000-8000-00000000abcd");
    } catch (const baton::Error& e) {
        FUZZ_CHECK(expected != Verdict::kAccept, "refused a decision the rules allow");
        fuzz::check_refusal(
            e, "DU003", expected == Verdict::kMalformed ? "is malformed" : "is not allowed", true);
        FUZZ_CHECK(e.message().rfind("decision for stage \"gate_user\"", 0) == 0,
                   "refusal does not name the stage");
        return 0;
    }
    FUZZ_CHECK(expected == Verdict::kAccept, "accepted a decision the rules refuse");

    // An accepted decision is among the allowed stages.
    if (got.kind == Decision::Kind::kNext) {
        FUZZ_CHECK(got.next != "@finish", "accepted next \"@finish\"");
        bool allowed = false;
        for (const std::string& to : def::destinations(from))
            allowed = allowed || to == got.next;
        FUZZ_CHECK(allowed, "accepted a next outside the stage's destinations");
        const json::Value* next = last_member(*decision, "next");
        FUZZ_CHECK(next && next->text == got.next, "next differs from the input");
        FUZZ_CHECK(got.finish_status.empty(), "a next decision has a finish status");
    } else {
        FUZZ_CHECK(from.may_finish(), "finished from a stage without \"@finish\"");
        FUZZ_CHECK(got.finish_status == "completed" || got.finish_status == "failed",
                   "bad finish status");
        FUZZ_CHECK(!got.has_inputs, "a finish decision with inputs");
    }
    FUZZ_CHECK(got.has_inputs == (last_member(*decision, "inputs") != nullptr), "has_inputs wrong");
    FUZZ_CHECK(got.has_state == (last_member(*decision, "state") != nullptr), "has_state wrong");
    const json::Value* reason = last_member(*decision, "reason");
    FUZZ_CHECK(got.reason == (reason ? reason->text : std::string()), "reason differs");
    return 0;
}
