// libFuzzer target: workflow definitions (src/core/definition.hpp), on value trees. The
// input is read into a tree by the tests' lenient reader (test/unit/json_text.hpp), so a
// tree may hold what jsonb never yields (repeated keys, NUL bytes, bytes that are not
// UTF-8, number texts that are no JSON numbers): parse_definition must judge any tree.
//
// Properties, for any input the reader makes a tree of:
//   - parse_definition either accepts or refuses with 22023 "invalid workflow definition"
//     and a detail (no other exception, no crash);
//   - an accepted definition satisfies every rule of definition.hpp, checked here
//     independently: at least one stage, unique stage names matching ^[a-z][a-z0-9_]{0,62}$,
//     start names a stage, each next non-empty with every destination a stage or "@finish",
//     max_attempts within bounds, retry_delay non-empty, no `when` with decide, the stages
//     in the order of their last occurrence in the "stages" object;
//   - written back as a tree (the Definition as JSON, by this file) and parsed again, it
//     gives the same Definition, and that one gives the same tree.
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/definition.hpp"
#include "core/error.hpp"
#include "core/json.hpp"
#include "fuzz_check.hpp"
#include "json_text.hpp"

namespace {

namespace def = baton::definition;
namespace json = baton::json;

// The stage-name rule, written out separately from is_stage_name.
bool name_ok(const std::string& s) {
    static const std::string first = "abcdefghijklmnopqrstuvwxyz";
    static const std::string rest = first + "0123456789_";
    return !s.empty() && s.size() <= 63 && first.find(s[0]) != std::string::npos &&
           s.find_first_not_of(rest) == std::string::npos;
}

bool same(const def::Definition& a, const def::Definition& b) {
    if (a.start != b.start || a.requires_approval != b.requires_approval || a.decide != b.decide ||
        a.stages.size() != b.stages.size())
        return false;
    for (std::size_t i = 0; i < a.stages.size(); ++i) {
        const def::StageDef& x = a.stages[i];
        const def::StageDef& y = b.stages[i];
        if (x.name != y.name || x.max_attempts != y.max_attempts ||
            x.retry_delay != y.retry_delay || x.next.size() != y.next.size())
            return false;
        for (std::size_t k = 0; k < x.next.size(); ++k)
            if (x.next[k].to != y.next[k].to || x.next[k].when != y.next[k].when)
                return false;
    }
    return true;
}

// The Definition as the JSON define_workflow takes; entries without `when` as plain
// strings, the others as {"to", "when"} objects; every optional key written out.
json::Value to_json(const def::Definition& d) {
    std::vector<std::pair<std::string, json::Value>> stages;
    for (const def::StageDef& s : d.stages) {
        std::vector<json::Value> next;
        for (const def::NextEntry& e : s.next)
            next.push_back(e.when.empty()
                               ? json::make_string(e.to)
                               : json::make_object({{"to", json::make_string(e.to)},
                                                    {"when", json::make_string(e.when)}}));
        stages.emplace_back(s.name,
                            json::make_object({{"next", json::make_array(next)},
                                               {"max_attempts", json::make_int(s.max_attempts)},
                                               {"retry_delay", json::make_string(s.retry_delay)}}));
    }
    std::vector<std::pair<std::string, json::Value>> top = {
        {"start", json::make_string(d.start)},
        {"requires_approval", json::make_bool(d.requires_approval)},
        {"stages", json::make_object(stages)}};
    if (!d.decide.empty())
        top.emplace_back("decide", json::make_string(d.decide));
    return json::make_object(top);
}

bool try_definition(const json::Value& v, def::Definition& out) {
    try {
        out = def::parse_definition(v);
        return true;
    } catch (const baton::Error& e) {
        fuzz::check_refusal(e, "22023", "invalid workflow definition");
        return false;
    }
}

void check_accepted(const json::Value& input, const def::Definition& d) {
    FUZZ_CHECK(!d.stages.empty(), "accepted a definition without stages");
    std::set<std::string> names;
    for (const def::StageDef& s : d.stages) {
        FUZZ_CHECK(name_ok(s.name), "accepted a bad stage name");
        FUZZ_CHECK(def::is_stage_name(s.name), "is_stage_name disagrees");
        FUZZ_CHECK(names.insert(s.name).second, "two stages of one name");
    }
    FUZZ_CHECK(names.count(d.start) == 1, "start is not a stage");
    FUZZ_CHECK(d.stage(d.start) != nullptr, "stage() cannot find start");
    FUZZ_CHECK(d.decide.size() <= def::kDecideMaxBytes, "decide too long");
    for (const def::StageDef& s : d.stages) {
        FUZZ_CHECK(!s.next.empty(), "accepted an empty next");
        FUZZ_CHECK(s.max_attempts >= def::kMaxAttemptsMin && s.max_attempts <= def::kMaxAttemptsMax,
                   "max_attempts out of bounds");
        FUZZ_CHECK(!s.retry_delay.empty(), "empty retry_delay");
        bool finish = false;
        for (const def::NextEntry& e : s.next) {
            FUZZ_CHECK(e.to == def::kFinish || names.count(e.to) == 1, "unknown destination");
            FUZZ_CHECK(d.decide.empty() || e.when.empty(), "a when with decide");
            finish = finish || e.to == def::kFinish;
        }
        FUZZ_CHECK(finish == s.may_finish(), "may_finish disagrees");
        const std::vector<std::string> dests = def::destinations(s);
        FUZZ_CHECK(std::set<std::string>(dests.begin(), dests.end()).size() == dests.size(),
                   "destinations repeats a name");
        for (const def::NextEntry& e : s.next) {
            bool found = false;
            for (const std::string& x : dests)
                found = found || x == e.to;
            FUZZ_CHECK(found, "destinations misses an entry");
        }
    }
    // Stage order: the last occurrence of each key of "stages", in order.
    const json::Value* stages = json::find(input, "stages");
    FUZZ_CHECK(stages != nullptr, "accepted without a stages object");
    std::vector<std::string> order;
    for (std::size_t k = 0; k < stages->members.size(); ++k) {
        bool later = false;
        for (std::size_t j = k + 1; j < stages->members.size(); ++j)
            later = later || stages->members[j].first == stages->members[k].first;
        if (!later)
            order.push_back(stages->members[k].first);
    }
    FUZZ_CHECK(order.size() == d.stages.size(), "stage count differs from the stages object");
    for (std::size_t k = 0; k < order.size(); ++k)
        FUZZ_CHECK(order[k] == d.stages[k].name, "stages out of order");

    // Round trip.
    def::Definition again;
    const json::Value written = to_json(d);
    FUZZ_CHECK(try_definition(written, again), "a definition written back was refused");
    FUZZ_CHECK(same(d, again), "a definition written back reads differently");
    FUZZ_CHECK(to_json(again) == written, "writing back is unstable");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    json::Value v;
    try {
        v = baton::test::json_of(std::string_view(reinterpret_cast<const char*>(data), size));
    } catch (const std::logic_error&) {
        return 0;  // not a tree
    }
    def::Definition d;
    if (try_definition(v, d))
        check_accepted(v, d);
    return 0;
}
