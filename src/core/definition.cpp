// Reading and validating workflow definitions (see definition.hpp).
#include "core/definition.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/error.hpp"

namespace baton::definition {

namespace {

using json::excerpt;
using json::Kind;
using json::kind_name;
using Member = std::pair<std::string, json::Value>;

// Refuses the definition with a detail naming the fault.
[[noreturn]] void refuse(std::string detail) {
    throw Error(SqlState::kInvalidParameterValue, "invalid workflow definition", std::move(detail));
}

// The members of an object, a repeated key counted once with its last value (as jsonb
// keeps it), in the order of those last values. The object must outlive the result.
std::vector<const Member*> unique_members(const json::Value& object) {
    std::unordered_map<std::string_view, std::size_t> last;
    for (std::size_t k = 0; k < object.members.size(); ++k)
        last[object.members[k].first] = k;
    std::vector<const Member*> out;
    out.reserve(last.size());
    for (std::size_t k = 0; k < object.members.size(); ++k)
        if (last[object.members[k].first] == k)
            out.push_back(&object.members[k]);
    return out;
}

// A string the Postgres layer passes on as a C string must not hold a NUL byte (jsonb never
// holds one; a tree built by hand might).
bool has_nul(const std::string& s) {
    return s.find('\0') != std::string::npos;
}

// A value for a detail when it has the wrong type or range: a short number as written
// (`0`, `1.5`), another number quoted and cut, anything else by its kind.
std::string value_text(const json::Value& v) {
    if (v.kind != Kind::kNumber)
        return kind_name(v.kind);
    if (v.text.empty() || v.text.size() > 32 ||
        v.text.find_first_not_of("0123456789+-.eE") != std::string::npos)
        return excerpt(v.text, 32);
    return v.text;
}

// The subject of a stage's details: `Stage "a"`.
std::string stage_where(const std::string& stage) {
    return "Stage " + excerpt(stage);
}

// Reads one entry of a stage's next: a string (the destination) or an object with "to"
// and, only without decide, "when". Destinations are checked once every stage is known.
NextEntry read_entry(const json::Value& v, const std::string& where, bool has_decide) {
    NextEntry entry;
    if (v.kind == Kind::kString) {
        entry.to = v.text;
        return entry;
    }
    if (v.kind != Kind::kObject)
        refuse(where + " must be a string or an object, not " + kind_name(v.kind) + ".");
    for (const Member& m : v.members)
        if (m.first != "to" && m.first != "when")
            refuse(where + " has unknown key " + excerpt(m.first) +
                   "; an entry object has \"to\" and optionally \"when\".");
    const json::Value* to = json::find(v, "to");
    if (to == nullptr)
        refuse(where + " has no \"to\": it must name a stage or \"@finish\".");
    if (to->kind != Kind::kString)
        refuse(where + ".to must be a string, not " + kind_name(to->kind) + ".");
    entry.to = to->text;
    if (const json::Value* when = json::find(v, "when")) {
        if (has_decide)
            refuse(where + " has a \"when\", but the definition has a \"decide\" function: " +
                   "with decide, the function routes, so next lists destinations only.");
        if (when->kind != Kind::kString)
            refuse(where + ".when must be a string (a jsonpath predicate), not " +
                   kind_name(when->kind) + ".");
        if (when->text.empty())
            refuse(where +
                   ".when must not be empty; leave \"when\" out for an entry that "
                   "always matches.");
        if (has_nul(when->text))
            refuse(where + ".when must not hold a NUL byte.");
        entry.when = when->text;
    }
    return entry;
}

// Reads one stage object (not its destinations, which need every stage's name).
StageDef read_stage(const std::string& name, const json::Value& v, bool has_decide) {
    const std::string where = stage_where(name);
    if (!is_stage_name(name))
        refuse("Stage name " + excerpt(name) + " must match ^[a-z][a-z0-9_]{0,62}$: a " +
               "lowercase letter, then at most 62 lowercase letters, digits or underscores.");
    if (v.kind != Kind::kObject)
        refuse(where + " must be an object, not " + kind_name(v.kind) + ".");
    for (const Member& m : v.members)
        if (m.first != "next" && m.first != "max_attempts" && m.first != "retry_delay")
            refuse(where + " has unknown key " + excerpt(m.first) +
                   "; a stage has next, max_attempts and retry_delay.");

    StageDef stage;
    stage.name = name;

    const json::Value* next = json::find(v, "next");
    if (next == nullptr)
        refuse(where +
               " has no \"next\": every stage lists where it may go (stage names "
               "or \"@finish\").");
    if (next->kind != Kind::kArray)
        refuse(where + ": next must be an array, not " + kind_name(next->kind) + ".");
    if (next->items.empty())
        refuse(where +
               " has an empty next: a stage with no way out could never finish the "
               "run. List a stage or \"@finish\".");
    stage.next.reserve(next->items.size());
    for (std::size_t k = 0; k < next->items.size(); ++k)
        stage.next.push_back(
            read_entry(next->items[k], where + ": next[" + std::to_string(k) + "]", has_decide));

    if (const json::Value* max = json::find(v, "max_attempts")) {
        const std::optional<std::int64_t> n = json::as_int64(*max);
        if (!n || *n < kMaxAttemptsMin || *n > kMaxAttemptsMax)
            refuse(where + ": max_attempts must be an integer from " +
                   std::to_string(kMaxAttemptsMin) + " to " + std::to_string(kMaxAttemptsMax) +
                   ", not " + value_text(*max) + ".");
        stage.max_attempts = static_cast<int>(*n);
    }

    if (const json::Value* delay = json::find(v, "retry_delay")) {
        if (delay->kind != Kind::kString)
            refuse(where +
                   ": retry_delay must be a string (an interval such as \"30 seconds\"),"
                   " not " +
                   kind_name(delay->kind) + ".");
        if (delay->text.empty())
            refuse(where +
                   ": retry_delay must not be empty (an interval such as \"30 "
                   "seconds\"); leave it out for the default.");
        if (has_nul(delay->text))
            refuse(where + ": retry_delay must not hold a NUL byte.");
        stage.retry_delay = delay->text;
    }
    return stage;
}

}  // namespace

// "@finish" among the entries' destinations.
bool StageDef::may_finish() const {
    for (const NextEntry& e : next)
        if (e.to == kFinish)
            return true;
    return false;
}

// A linear search: definitions are small, and the stages keep their written order.
const StageDef* Definition::stage(std::string_view name) const {
    for (const StageDef& s : stages)
        if (s.name == name)
            return &s;
    return nullptr;
}

// Checks the top-level keys and their types, reads each stage, then checks the graph:
// start and every destination must name a stage (or "@finish", for destinations).
Definition parse_definition(const json::Value& v) {
    if (v.kind != Kind::kObject)
        refuse(std::string("A definition must be an object, not ") + kind_name(v.kind) + ".");
    for (const Member& m : v.members)
        if (m.first != "start" && m.first != "stages" && m.first != "requires_approval" &&
            m.first != "decide")
            refuse("Unknown key " + excerpt(m.first) +
                   "; a definition has start, stages, requires_approval and decide.");

    Definition def;

    const json::Value* stages = json::find(v, "stages");
    if (stages == nullptr)
        refuse("The definition has no \"stages\" object.");
    if (stages->kind != Kind::kObject)
        refuse(std::string("\"stages\" must be an object, not ") + kind_name(stages->kind) + ".");
    if (stages->members.empty())
        refuse("\"stages\" must hold at least one stage.");

    const json::Value* start = json::find(v, "start");
    if (start == nullptr)
        refuse("The definition has no \"start\": it must name the first stage.");
    if (start->kind != Kind::kString)
        refuse(std::string("\"start\" must be a string naming a stage, not ") +
               kind_name(start->kind) + ".");
    def.start = start->text;

    if (const json::Value* approval = json::find(v, "requires_approval")) {
        if (approval->kind != Kind::kBoolean)
            refuse(std::string("\"requires_approval\" must be a boolean, not ") +
                   kind_name(approval->kind) + ".");
        def.requires_approval = approval->b;
    }

    if (const json::Value* decide = json::find(v, "decide")) {
        if (decide->kind != Kind::kString)
            refuse(std::string("\"decide\" must be a string naming a function, not ") +
                   kind_name(decide->kind) + "; leave it out for declarative routing.");
        if (decide->text.empty())
            refuse("\"decide\" must not be empty; leave it out for declarative routing.");
        if (decide->text.size() > kDecideMaxBytes)
            refuse("\"decide\" has " + std::to_string(decide->text.size()) +
                   " bytes; a function name has at most " + std::to_string(kDecideMaxBytes) + ".");
        if (has_nul(decide->text))
            refuse("\"decide\" must not hold a NUL byte.");
        def.decide = decide->text;
    }
    const bool has_decide = !def.decide.empty();

    for (const Member* m : unique_members(*stages))
        def.stages.push_back(read_stage(m->first, m->second, has_decide));

    std::unordered_set<std::string_view> names;
    for (const StageDef& s : def.stages)
        names.insert(s.name);

    if (names.count(def.start) == 0)
        refuse("\"start\" names " + excerpt(def.start) + ", which is not a stage of the " +
               "definition.");
    for (const StageDef& s : def.stages)
        for (std::size_t k = 0; k < s.next.size(); ++k)
            if (s.next[k].to != kFinish && names.count(s.next[k].to) == 0)
                refuse(stage_where(s.name) + " names unknown destination " + excerpt(s.next[k].to) +
                       " in next[" + std::to_string(k) +
                       "]; a destination is a stage of the definition or \"@finish\".");
    return def;
}

// Each entry's destination, skipping repeats.
std::vector<std::string> destinations(const StageDef& stage) {
    std::vector<std::string> out;
    std::unordered_set<std::string_view> seen;
    for (const NextEntry& e : stage.next)
        if (seen.insert(e.to).second)
            out.push_back(e.to);
    return out;
}

// Checks ^[a-z][a-z0-9_]{0,62}$ byte by byte (no <regex>: it is slow and can recurse deeply).
bool is_stage_name(std::string_view name) {
    if (name.empty() || name.size() > 63)
        return false;
    if (name[0] < 'a' || name[0] > 'z')
        return false;
    for (char c : name.substr(1))
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    return true;
}

}  // namespace baton::definition
