// The claim hint protocol (see claim_hint.hpp).
#include "core/claim_hint.hpp"

namespace baton::claim_hint {

void reset(State& s) {
    s.hint = kTop;
    s.seq = 0;
    for (Lowering& l : s.log) l = {0, kEnd, false};
    for (InFlight& f : s.in_flight) f = {-1, kEnd};
    s.pooled = 0;
    s.pooled_at = kEnd;
    s.delayed_at = kEnd;
    s.delayed_until = INT64_MIN;
}

void forget(State& s) {
    s.hint = kTop;
    s.seq++;
    s.log[s.seq % kLogSize] = {s.seq, kTop, false};
}

void lower(State& s, std::int32_t writer, bool again, Position at, bool delayed, std::int64_t run_after) {
    s.hint = earliest(s.hint, at);
    s.seq++;
    s.log[s.seq % kLogSize] = {s.seq, at, delayed};
    if (delayed) {
        s.delayed_at = earliest(s.delayed_at, at);
        if (run_after > s.delayed_until) s.delayed_until = run_after;
    }
    InFlight* mine = nullptr;
    InFlight* free_slot = nullptr;
    for (InFlight& f : s.in_flight) {
        if (again && f.writer == writer) mine = &f;
        if (f.writer < 0 && free_slot == nullptr) free_slot = &f;
    }
    if (mine != nullptr) {
        mine->at = earliest(mine->at, at);
    } else if (!again && free_slot != nullptr) {
        *free_slot = {writer, at};
    } else {
        // Beyond the slots a writer is pooled, counted once: the pool's first position
        // stays until the pool empties.
        if (!again) s.pooled++;
        s.pooled_at = earliest(s.pooled_at, at);
    }
}

void writer_done(State& s, std::int32_t writer) {
    for (InFlight& f : s.in_flight)
        if (f.writer == writer) {
            f = {-1, kEnd};
            return;
        }
    if (s.pooled > 0 && --s.pooled == 0) s.pooled_at = kEnd;
}

Ticket begin(const State& s) {
    Position writers = kEnd;
    for (const InFlight& f : s.in_flight)
        if (f.writer >= 0) writers = earliest(writers, f.at);
    if (s.pooled > 0) writers = earliest(writers, s.pooled_at);
    return {s.hint, s.seq, writers, s.delayed_at, s.delayed_until};
}

Position raise(State& s, const Ticket& t, Position last, std::int64_t now) {
    // Too many lowerings since begin() to know where they were: no raise.
    if (s.seq - t.seq >= static_cast<std::uint64_t>(kLogSize)) return s.hint;
    // Rows the scan could not see: those of writers in flight at begin(), and those made
    // pending since (logged).
    Position bound = earliest(last, t.writers);
    bool delayed_since = false;
    for (std::uint64_t q = t.seq + 1; q <= s.seq; q++) {
        const Lowering& l = s.log[q % kLogSize];
        bound = earliest(bound, l.at);
        delayed_since = delayed_since || l.delayed;
    }
    // Delayed rows bound it too, unless every one known at begin() was due when the scan
    // chose rows and lay inside the range it scanned: then the scan saw them all.
    bool none_delayed = !before(t.delayed_at, kEnd);
    bool passed = !none_delayed && !delayed_since && t.delayed_until <= now &&
                  !before(t.delayed_at, t.start) && !before(last, t.delayed_at);
    if (passed) {
        s.delayed_at = kEnd;
        s.delayed_until = INT64_MIN;
    } else {
        bound = earliest(bound, t.delayed_at);
    }
    s.hint = latest(s.hint, bound);
    return s.hint;
}

}  // namespace baton::claim_hint
