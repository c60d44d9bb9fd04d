// Claim hints in shared memory: one claim_hint::State per (database, tenant, target),
// so that claims skip the dead index entries of rows claimed before them (see
// src/core/claim_hint.hpp for the protocol, docs/internals/performance.md for the figures).
//
// Only with shared_preload_libraries = 'pg_baton' (the memory is reserved at start-up);
// without it every claim scans from the top, as it always did. A hint only moves where a
// claim starts its scan: a claim that finds fewer rows than it asked for from the hint
// scans again from the top, so a hint can change the order of a claim, never whether
// pending rows are found.
#pragma once

#include <cstdint>

#include "core/claim_hint.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/postgres.hpp"

namespace baton::pg::claim_hints {

// From _PG_init: reserves the memory when preloaded; registers the transaction callbacks.
void init();

// True when the hints live (preloaded, baton.claim_hint_targets > 0).
bool enabled();

// A claim in progress. `entry` is null when there is no hint to use (not preloaded, the
// table full, a claim filtered by `expected`).
struct Scan {
    void* entry;
    claim_hint::Ticket ticket;
    TimestampTz now;  // the clock the claim compares run_after with
    void* disabled;   // the entry, when a prepared transaction disabled it and it is time to look again
    std::uint64_t prepares;  // ...and how many prepared transactions had written it then
};

// A hinted claim that found fewer rows than it asked for may scan again from the top
// (over the dead entries the hint skips) at most once a second per target, whoever asks:
// true when this claim may. A row the hint cannot see (written with triggers disabled)
// is still found, and a drained queue polled by many workers does not pay for it each time.
bool may_scan_from_top(const Scan& scan);

// A transaction that PREPAREs after writing a target's rows makes them visible, or
// pending again, at COMMIT or ROLLBACK PREPARED, in another backend: the target gets no
// hint from then on. Citus commits a transaction that wrote on two nodes that way. When
// begin() said it is time (once a second per target at most), this looks whether a
// prepared transaction of the database remains: once none does, every such row is
// visible or gone, and the target's hint starts again from the top.
void look_at_prepared(const Scan& scan);

// Begins a claim of (tenant, target) in `relation`, the deliveries table the claim reads
// (on Citus, the tenant's shard of it): the ticket, and the clock read after it. A hint
// kept for another relation is forgotten first (claim_hint::forget()): on Citus a
// tenant's shards may move away and come back as a new table, whose rows written
// elsewhere meanwhile no lowering here reported. Writes report no relation: those made
// before the first claim of the new table are lowerings of the hint it forgets.
Scan begin(const pg_uuid_t* tenant, const char* target, int target_len, bool use_hint, Oid relation);
// The claim scanned every position from the ticket's start and claimed rows up to
// `last` (claim_hint::kEnd when it claimed fewer rows than it asked for).
void raise(const Scan& scan, claim_hint::Position last);

// A delivery row written by this transaction, as the fence trigger sees it: it is now
// pending at `at` (an insert, a retry, a reap, any update into pending)...
void row_pending(const pg_uuid_t* tenant, const char* target, int target_len, claim_hint::Position at,
                 TimestampTz run_after);
// ...or it was pending at `at` and no longer is: pending again if this transaction aborts.
void row_taken(const pg_uuid_t* tenant, const char* target, int target_len, claim_hint::Position at,
               TimestampTz run_after);

}  // namespace baton::pg::claim_hints
