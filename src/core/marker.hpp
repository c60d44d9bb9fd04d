// The rules of at-most-once markers, free of Postgres.
//
//   absent --claim--> in_progress --complete--> done | failed
//   in_progress (claimed under an older run generation) --resolve--> done | failed | retry
//   retry --claim--> in_progress   (the new owner found the action did not happen)
//
// A marker of a stage is "in doubt" when it is still in progress but the run has been
// taken over since it was claimed: the action may or may not have happened, so the new
// owner must find out and resolve it, never run it blindly again.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::marker {

enum class State { kInProgress, kDone, kFailed, kRetry };

std::optional<State> parse_state(std::string_view text);
const char* state_name(State s);

// The state argument of complete_marker: done or failed (22023 otherwise).
State parse_completion(std::string_view text);
// The outcome argument of resolve_marker: done, failed or retry (22023 otherwise).
State parse_resolution(std::string_view text);

// In doubt: in progress, claimed under a generation older than the run's current one.
bool in_doubt(State state, std::int64_t claimed_generation, std::int64_t run_generation);

// resolve_marker may act: someone holds the run and the caller holds its current
// generation (DU001), and the marker is in doubt (DU007 otherwise, naming why). The
// refusals name run `run_id` and the marker (`entry_id`, `position`).
void check_resolve(State state, std::int64_t claimed_generation, std::int64_t run_generation,
                   bool run_owned, std::int64_t caller_generation, std::string_view run_id,
                   std::int64_t entry_id, std::int64_t position);
// "marker at position P of entry E", the object of a marker's refusals.
std::string marker_text(std::int64_t entry_id, std::int64_t position);

// Positions are zero or more (22023).
void check_position(std::int64_t position);

}  // namespace baton::marker
