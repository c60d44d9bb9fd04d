// Workflow definitions: the shape define_workflow accepts, read into plain structs.
//
//   { "start": "gate_user", "requires_approval": true, "decide": "app.decide",
//     "stages": { "gate_user": { "next": ["purge_db"] },
//                 "purge_db":  { "next": ["purge_db", "@finish"], "max_attempts": 5,
//                                "retry_delay": "30 seconds" } } }
//
// The core checks everything that needs no catalog: the keys, their types, the stage names
// and the graph (start and every destination name a stage, or "@finish"). The Postgres
// layer then checks what needs the server: retry_delay parses as an interval, each `when`
// is a valid jsonpath, decide names a function (jsonb) RETURNS jsonb.
//
// Choices where the contract is silent:
//   - next must not be empty: a stage with no way out could never finish its run.
//   - With decide, routing is the function's job, so no next entry may carry a `when`;
//     an entry {"to": "x"} without one is allowed and means the same as "x".
//   - Optional keys must have their type when present: "decide": null is refused, not
//     read as "no decide".
//   - A key repeated in an object counts once, with its last value, as jsonb keeps it.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace baton::definition {

// The destination that ends the run instead of entering a stage.
constexpr std::string_view kFinish = "@finish";
// Bounds of a stage's max_attempts, and the longest decide function name in bytes.
constexpr int kMaxAttemptsMin = 1;
constexpr int kMaxAttemptsMax = 1000;
constexpr std::size_t kDecideMaxBytes = 200;
// The defaults of a stage.
constexpr int kDefaultMaxAttempts = 3;
constexpr std::string_view kDefaultRetryDelay = "30 seconds";

// One entry of a stage's next: where to go, and (without decide) when.
struct NextEntry {
    std::string to;    // a stage name or "@finish"
    std::string when;  // a jsonpath predicate over the context; empty = always matches
};

struct StageDef {
    std::string name;
    std::vector<NextEntry> next;  // in the order written: the first that matches wins
    int max_attempts = kDefaultMaxAttempts;
    std::string retry_delay = std::string(kDefaultRetryDelay);  // an interval's text

    // True when "@finish" is one of the destinations: only then may a decision finish.
    bool may_finish() const;
};

struct Definition {
    std::string start;
    bool requires_approval = false;
    std::string decide;            // the function's name as written; empty = declarative
    std::vector<StageDef> stages;  // in the order of the definition's stages object

    // The stage of that name, or nullptr.
    const StageDef* stage(std::string_view name) const;
};

// Reads and validates a definition. Every refusal is baton::Error 22023 "invalid workflow
// definition" with a detail naming the fault, e.g.
// `Stage "purge_db" names unknown destination "purge_x" in next[0].`
Definition parse_definition(const json::Value& definition);

// The destinations of a stage's next (each entry's `to`), each once, in first-seen order.
std::vector<std::string> destinations(const StageDef& stage);

// True for a stage name: ^[a-z][a-z0-9_]{0,62}$ (1 to 63 bytes).
bool is_stage_name(std::string_view name);

}  // namespace baton::definition
