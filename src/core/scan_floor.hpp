// A scan floor: where a scan that reads rows in an order that only moves forward starts,
// so that it does not walk again the dead entries an old snapshot keeps behind it. The
// background reaper reads baton.leases in order of expiry; each lease that ends leaves a
// dead entry in that order, and while a snapshot older than it is open (a transaction
// held open, a standby's feedback, a replication slot) no vacuum and no index scan can
// remove or skip those entries: a scan from the first entry walks over every lease ended
// since that snapshot, every round. A scan starts at the floor instead:
//
//   - after a scan, the floor moves up to the oldest row it found that stays (a lease
//     that expired and is still held), or, when it found none, to its clock
//     less kSettle (a row written just before the scan's snapshot and committed just
//     after it has a key at least that late);
//   - a row written with its key already behind (is_early(): a lease shorter than
//     kEarly, a restored or unfenced tenant's leases) may be reported by its writer, and
//     the scans look down to the earliest report;
//   - every kFullScanEvery, and after a scan that failed, a scan starts at the first
//     entry and the reports are forgotten: a row written by a transaction that stayed
//     open for longer than kEarly past its key, or with triggers disabled, is found by
//     that scan at the latest.
//
// baton.purge reads baton.deliveries in order of creation the same way; its writers
// report a delivery written with a creation time already behind, and a delivery behind
// the floor that becomes purgeable later waits for the next full scan.
//
// Pure logic; keys and clocks are Postgres TimestampTz values (microseconds).
#pragma once

#ifdef POSTGRES_H
#error "core headers are included before postgres.hpp"
#endif

#include <cstdint>

namespace baton::scan_floor {

using Micros = std::int64_t;

constexpr Micros kEverything = INT64_MIN;  // a floor below every key: a full scan
constexpr Micros kNone = INT64_MAX;        // no row found, none reported
constexpr Micros kFullScanEvery = 60 * 1000000LL;
constexpr Micros kSettle = 1000000LL;
constexpr Micros kEarly = 5 * 1000000LL;

struct State {
    Micros floor = kEverything;
    Micros next_full = kEverything;  // the first scan starts at the first entry
};

// Where a scan beginning at `now` starts, `reported` being the earliest key writers
// reported since the last full scan (kNone when none). *full is set when the scan is a
// full one: the caller forgets the reports before the scan's snapshot.
Micros begin(State& s, Micros now, Micros reported, bool* full);

// After a scan: the oldest row it found that stays (kNone when none), as of its clock
// `scan_now` (the time it compared keys with).
void scanned(State& s, Micros oldest, Micros scan_now);

// After a scan that failed: the next one starts at the first entry.
void forget(State& s);

// True when a row with this key, written at `now`, is one to report.
constexpr bool is_early(Micros key, Micros now) { return key < now + kEarly; }

}  // namespace baton::scan_floor
