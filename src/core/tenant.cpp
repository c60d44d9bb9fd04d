// Tenant state rules (see tenant.hpp).
#include "core/tenant.hpp"

#include <string>

#include "core/error.hpp"

namespace baton::tenant {

std::optional<State> parse_state(std::string_view text) {
    if (text == "active") return State::kActive;
    if (text == "quiescing") return State::kQuiescing;
    if (text == "fenced") return State::kFenced;
    if (text == "deleted") return State::kDeleted;
    return std::nullopt;
}

const char* state_name(State s) {
    switch (s) {
        case State::kActive: return "active";
        case State::kQuiescing: return "quiescing";
        case State::kFenced: return "fenced";
        case State::kDeleted: return "deleted";
    }
    return "active";
}

State parse_state_argument(std::string_view text) {
    if (auto s = parse_state(text)) return *s;
    throw_invalid_argument("state", "A tenant state is active, quiescing, fenced or deleted, not \"" +
                                        clip(text) + "\".");
}

void check_move(State from, State to, std::string_view tenant) {
    if (from == State::kDeleted && to != State::kDeleted)
        throw Error(SqlState::kInvalidState, "tenant " + std::string(tenant) + " is deleted",
                    std::string("A deleted tenant cannot become ") + state_name(to) + ".",
                    "Deleted is final; use a new tenant id.");
}

}  // namespace baton::tenant
