// Checking a decision: what a decide function returned (or what declarative routing chose)
// for a completed stage, judged against the stage's next before anything is written.
//
//   {"next": "<stage>", "inputs": {...}, "state": {...}, "reason": "..."}
//   {"finish": "completed" | "failed", "state": {...}, "reason": "..."}
//
// A decision is malformed when it is NULL or not an object, has an unknown key, has both
// or neither of next and finish, has a next that is not a string, a finish status other
// than the two, an inputs or state that is not an object, or a reason that is not a string;
// a finish with inputs is malformed too (there is no successor to take them). It is not
// allowed when next names a destination outside the stage's next (including "@finish":
// a run ends with "finish"), or when it finishes from a stage whose next lacks "@finish".
// Both are DU003, as the contract says, with the stage and the allowed set in the detail.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <string>
#include <string_view>

#include "core/definition.hpp"
#include "core/json.hpp"

namespace baton::decision {

struct Decision {
    enum class Kind { kNext, kFinish } kind = Kind::kNext;
    std::string next;           // the successor stage, when kNext
    std::string finish_status;  // "completed" or "failed", when kFinish
    std::string reason;         // empty when absent
    bool has_inputs = false;    // the decision carries "inputs" (an object): find it there
    bool has_state = false;     // the decision carries "state" (an object): find it there
};

// Checks a decision taken at stage `from` of run `run_id` and returns what it says. Throws
// baton::Error DU003 with the message `decision for stage "X" of run <run_id> is malformed`
// or `... is not allowed`.
// decision may be nullptr (the function returned SQL NULL).
Decision check_decision(const json::Value* decision, const definition::StageDef& from, std::string_view run_id);

}  // namespace baton::decision
