// Tenant states and the moves between them, free of Postgres.
// Any state may move to any other, except that deleted is final.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <optional>
#include <string_view>

namespace baton::tenant {

enum class State { kActive, kQuiescing, kFenced, kDeleted };

// "active" -> kActive ...; nullopt for anything else.
std::optional<State> parse_state(std::string_view text);
// The stored spelling of a state.
const char* state_name(State s);
// Parses the state argument of set_tenant_state; 22023 naming the allowed states.
State parse_state_argument(std::string_view text);
// Refuses (DU007, naming `tenant`, its id as text) a move out of deleted; every other
// move, including to the same state, is allowed.
void check_move(State from, State to, std::string_view tenant);
// Only active tenants accept writes.
inline bool writes_allowed(State s) { return s == State::kActive; }

}  // namespace baton::tenant
