// The arithmetic of a key's limit (see key_limit.hpp).
#include "core/key_limit.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace baton::key_limit {

namespace {

void check_count(const char* argument, std::int64_t value) {
    if (value < 1 || value > kMaxCount)
        throw_invalid_argument(argument, std::string(argument) + " is between 1 and " + std::to_string(kMaxCount) +
                                             ", not " + std::to_string(value) + ".");
}

bool paced(const Limit& limit) { return limit.rate > 0 && limit.per_usec > 0; }

// Microseconds per token.
double spacing(const Limit& limit) { return static_cast<double>(limit.per_usec) / limit.rate; }

}  // namespace

void check_max_leased(std::int64_t max_leased) { check_count("max_leased", max_leased); }
void check_rate(std::int64_t rate) { check_count("rate", rate); }
void check_burst(std::int64_t burst) { check_count("burst", burst); }

void check_per_usec(std::int64_t per_usec) {
    if (per_usec <= 0 || per_usec > kMaxPerUsec)
        throw_invalid_argument("per", "per is longer than zero and at most one day.");
}

State fresh(const Limit& limit, std::int64_t now) {
    State s;
    s.tokens = paced(limit) ? limit.burst : 0;
    s.at = now;
    return s;
}

void refill(const Limit& limit, State& state, std::int64_t now) {
    if (!paced(limit)) return;
    if (now > state.at) {
        state.tokens += static_cast<double>(now - state.at) / spacing(limit);
        state.at = now;
    }
    state.tokens = std::min(state.tokens, static_cast<double>(limit.burst - state.ready));
}

bool has_room(const Limit& limit, const State& state) {
    if (limit.ordered && state.admitted > 0) return false;
    if (limit.max_leased > 0 && state.admitted >= limit.max_leased) return false;
    if (paced(limit) && state.ready >= limit.burst) return false;
    return true;
}

std::int64_t admit(const Limit& limit, State& state, std::int64_t now) {
    state.admitted++;
    if (!paced(limit)) return kNoSlot;
    refill(limit, state, now);
    state.ready++;
    std::int64_t slot = now;
    // Without a token, the delivery waits in the claim order for the moment its token
    // comes: the tokens owed before it, and its own.
    if (state.tokens < 1) slot = now + static_cast<std::int64_t>(std::ceil((1 - state.tokens) * spacing(limit)));
    state.tokens -= 1;
    return slot;
}

void claimed(const Limit& limit, State& state, std::int64_t now) {
    if (!paced(limit) || state.ready == 0) return;
    refill(limit, state, now);
    state.ready--;
}

void left(const Limit& limit, State& state, bool was_ready, std::int64_t now) {
    if (state.admitted > 0) state.admitted--;
    if (was_ready) claimed(limit, state, now);
}

bool idle(const Limit& limit, const State& state, std::int64_t now) {
    if (state.admitted > 0 || state.ready > 0) return false;
    if (!paced(limit)) return true;
    State s = state;
    refill(limit, s, now);
    return s.tokens >= limit.burst;
}

}  // namespace baton::key_limit
