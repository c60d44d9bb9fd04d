// The background reaper's scan floor: the lease expiry below which its scan of
// baton.leases need not look. reap reads the expired leases in order of expiry; each
// lease that ended leaves a dead entry in that order, and while a snapshot older than
// them is open no vacuum and no index scan can remove or skip those entries, so a scan
// from the first entry walks over every lease ended since that snapshot. The reaper's
// batches start at the floor instead:
//
//   - after a batch, the floor moves up to the oldest expired lease the batch found, or,
//     when it found none, to its clock less kSettle (a lease written just before the
//     batch's snapshot and committed just after it has an expiry at least that late);
//   - a lease row written already expired or about to be (is_early(): a lease shorter
//     than kEarly, or a row loaded or unfenced with an old expiry) is reported by its
//     writer, in shared memory, and the batches look down to the earliest report;
//   - every kFullScanEvery, and after a batch that failed or did not reap, a batch scans
//     from the first entry and the reports are forgotten: a lease written by a
//     transaction that stayed open for longer than its expiry plus kEarly, or a row
//     written with triggers disabled, is reaped by that scan at the latest.
//
// A client's reap always scans from the first entry. Pure logic; times are Postgres
// TimestampTz values (microseconds).
#pragma once

#ifdef POSTGRES_H
#error "core headers are included before postgres.hpp"
#endif

#include <cstdint>

namespace baton::reap_floor {

using Micros = std::int64_t;

constexpr Micros kEverything = INT64_MIN;  // a floor below every expiry: a full scan
constexpr Micros kNone = INT64_MAX;        // no lease found, none reported
constexpr Micros kFullScanEvery = 60 * 1000000LL;
constexpr Micros kSettle = 1000000LL;
constexpr Micros kEarly = 5 * 1000000LL;

struct State {
    Micros floor = kEverything;
    Micros next_full = kEverything;  // the first batch scans everything
};

// Where a batch beginning at `now` scans from, `reported` being the earliest expiry
// writers reported since the last full scan (kNone when none). *full is set when the
// batch is a full scan: the caller forgets the reports before the batch's snapshot.
Micros begin(State& s, Micros now, Micros reported, bool* full);

// After a batch that read the leases: the oldest expired lease it found (kNone when it
// found none), as of its clock `scan_now` (the time it compared expiries with).
void scanned(State& s, Micros oldest, Micros scan_now);

// After a batch that failed or did not reap: the next one scans everything.
void forget(State& s);

// True when a lease row with this expiry, written at `now`, is one to report.
constexpr bool is_early(Micros lease_until, Micros now) { return lease_until < now + kEarly; }

}  // namespace baton::reap_floor
