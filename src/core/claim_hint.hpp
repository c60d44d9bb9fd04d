// The claim hint of one (database, tenant, target): a position in claim order before
// which no claimable delivery can be, so that claims start their index scan there and
// never walk again over the dead entries of rows claimed before (which vacuum cannot
// remove while an old snapshot is open). Pure logic over one plain struct: the server
// keeps one per key in shared memory, under a spinlock, and calls these functions.
//
// The protocol (docs/internals/performance.md, "The claim hint"):
//   - A write that makes a row pending at position q (enqueue, retry, reap, a claim's
//     abort, direct SQL) calls lower() before it commits: the hint drops to q, the
//     lowering is logged, and the writer stays "in flight" until its transaction ends.
//   - A claim calls begin() before its snapshot, scans from the hint, and calls raise()
//     with the last position it claimed: the hint moves there unless a lowering in flight
//     at begin(), or logged since begin(), or a delayed row, lies before it.
//   - A row made pending with run_after still in the future is "delayed": no raise passes
//     it until a claim that began after it was due has scanned over it.
#pragma once

#ifdef POSTGRES_H
#error "core headers are included before postgres.hpp"
#endif

#include <cstdint>

namespace baton::claim_hint {

// A position in claim order: priority descending, then id ascending.
struct Position {
    std::int64_t priority;
    std::int64_t id;
};
// Before every row (priority above any int4) and after every row.
constexpr Position kTop = {INT64_MAX, INT64_MIN};
constexpr Position kEnd = {INT64_MIN, INT64_MAX};

// True when a comes strictly before b in claim order.
constexpr bool before(Position a, Position b) {
    return a.priority != b.priority ? a.priority > b.priority : a.id < b.id;
}
constexpr Position earliest(Position a, Position b) { return before(b, a) ? b : a; }
constexpr Position latest(Position a, Position b) { return before(a, b) ? b : a; }

constexpr int kLogSize = 32;       // lowerings remembered for claims in progress
constexpr int kInFlightSlots = 16; // writers tracked one by one; more are pooled

struct Lowering {
    std::uint64_t seq;
    Position at;
    bool delayed;
};

struct InFlight {
    std::int32_t writer;  // a backend number, or -1 for a free slot
    Position at;
};

struct State {
    Position hint;
    std::uint64_t seq;  // lowerings so far; log[seq % kLogSize] is the latest
    Lowering log[kLogSize];
    InFlight in_flight[kInFlightSlots];
    std::uint32_t pooled;   // writers in flight beyond the slots
    Position pooled_at;     // their first position, since pooled was last 0
    Position delayed_at;    // first delayed row registered, or kEnd
    std::int64_t delayed_until;  // latest run_after among them (microseconds)
};

// A claim's view of the state at begin().
struct Ticket {
    Position start;        // where the scan starts
    std::uint64_t seq;     // lowerings seen
    Position writers;      // first position of the writers in flight (their rows unseen)
    Position delayed_at;   // the delayed rows known at begin()
    std::int64_t delayed_until;
};

// A fresh state: the hint at the top, nothing in flight, nothing delayed.
void reset(State& s);

// Every row may be anywhere again: the rows the hint described are in another table now
// (on Citus, a tenant's shards that moved away and back). The hint goes to the top, as a
// lowering there: no claim begun before raises past it.
void forget(State& s);

// A row made pending at `at` by backend `writer`, with run_after later than now when
// `delayed`. The writer is in flight for this key from its first lowering until
// writer_done(); `again` says it has lowered this key before in this transaction (the
// caller counts: a writer is registered once, however many rows it makes pending).
void lower(State& s, std::int32_t writer, bool again, Position at, bool delayed, std::int64_t run_after);

// The writer's transaction ended (it had lowered this key): it is no longer in flight.
// Called once per transaction that lowered the key.
void writer_done(State& s, std::int32_t writer);

// A claim begins: where to start and what bounds its raise.
Ticket begin(const State& s);

// A claim that began with `t`, whose clock when it chose rows was `now` (rows with
// run_after <= now were due), claimed rows up to `last` (the last in claim order) after
// scanning every position from t.start on. Moves the hint forward when that is safe;
// clears the delayed rows it proved due and passed. Returns the new hint.
Position raise(State& s, const Ticket& t, Position last, std::int64_t now);

}  // namespace baton::claim_hint
