// Rules of at-most-once markers (see marker.hpp).
#include "core/marker.hpp"

#include <string>

#include "core/error.hpp"
#include "core/run.hpp"

namespace baton::marker {

std::optional<State> parse_state(std::string_view text) {
    if (text == "in_progress") return State::kInProgress;
    if (text == "done") return State::kDone;
    if (text == "failed") return State::kFailed;
    if (text == "retry") return State::kRetry;
    return std::nullopt;
}

const char* state_name(State s) {
    switch (s) {
        case State::kInProgress: return "in_progress";
        case State::kDone: return "done";
        case State::kFailed: return "failed";
        case State::kRetry: return "retry";
    }
    return "in_progress";
}

State parse_completion(std::string_view text) {
    if (text == "done") return State::kDone;
    if (text == "failed") return State::kFailed;
    throw_invalid_argument("state", "A marker completes as \"done\" or \"failed\", not \"" +
                                        clip(text) + "\".");
}

State parse_resolution(std::string_view text) {
    if (text == "done") return State::kDone;
    if (text == "failed") return State::kFailed;
    if (text == "retry") return State::kRetry;
    throw_invalid_argument("outcome", "A marker in doubt resolves as \"done\", \"failed\" or \"retry\", not \"" +
                                          clip(text) + "\".");
}

bool in_doubt(State state, std::int64_t claimed_generation, std::int64_t run_generation) {
    return state == State::kInProgress && claimed_generation < run_generation;
}

std::string marker_text(std::int64_t entry_id, std::int64_t position) {
    return "marker at position " + std::to_string(position) + " of entry " + std::to_string(entry_id);
}

void check_resolve(State state, std::int64_t claimed_generation, std::int64_t run_generation,
                   bool run_owned, std::int64_t caller_generation, std::string_view run_id,
                   std::int64_t entry_id, std::int64_t position) {
    run::check_owner(caller_generation, run_generation, run_owned, run_id);
    if (state != State::kInProgress)
        throw Error(SqlState::kInvalidState, marker_text(entry_id, position) + " is " + state_name(state),
                    "Only a marker still in progress can be in doubt.");
    if (!in_doubt(state, claimed_generation, run_generation))
        throw Error(SqlState::kInvalidState, marker_text(entry_id, position) + " is not in doubt",
                    "It was claimed under the current generation; complete it with baton.complete_marker().");
}


void check_position(std::int64_t position) {
    if (position < 0)
        throw_invalid_argument("position", "A position is zero or more, not " + std::to_string(position) + ".");
}

}  // namespace baton::marker
