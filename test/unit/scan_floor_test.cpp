// Unit tests for the scan floor (src/core/scan_floor.*).
#include "core/scan_floor.hpp"

#include <gtest/gtest.h>

namespace baton::scan_floor {
namespace {

constexpr Micros kSecond = 1000000;
constexpr Micros kT0 = 1000 * kSecond;

TEST(ScanFloor, FirstBatchScansEverything) {
    State s;
    bool full = false;
    EXPECT_EQ(begin(s, kT0, kNone, &full), kEverything);
    EXPECT_TRUE(full);
}

TEST(ScanFloor, NothingFoundMovesTheFloorToTheClockLessTheSettle) {
    State s;
    bool full = false;
    begin(s, kT0, kNone, &full);
    scanned(s, kNone, kT0);
    EXPECT_EQ(begin(s, kT0 + kSecond, kNone, &full), kT0 - kSettle);
    EXPECT_FALSE(full);
}

TEST(ScanFloor, TheOldestExpiredLeaseFoundHoldsTheFloor) {
    State s;
    bool full = false;
    begin(s, kT0, kNone, &full);
    scanned(s, kT0 - 30 * kSecond, kT0);  // a lease the batch found and could not reap
    EXPECT_EQ(begin(s, kT0 + kSecond, kNone, &full), kT0 - 30 * kSecond);
    // One found within the settle: the settle is the lower.
    scanned(s, kT0 + kSecond - kSettle / 2, kT0 + kSecond);
    EXPECT_EQ(begin(s, kT0 + 2 * kSecond, kNone, &full), kT0);
}

TEST(ScanFloor, AReportBelowTheFloorLowersEveryBatchUntilTheFullScan) {
    State s;
    bool full = false;
    begin(s, kT0, kNone, &full);
    scanned(s, kNone, kT0);
    Micros early = kT0 - 3600 * kSecond;
    // The report stays in shared memory: each batch looks down to it, even after a
    // batch that did not see its row (its writer had not committed yet).
    EXPECT_EQ(begin(s, kT0 + kSecond, early, &full), early);
    scanned(s, kNone, kT0 + kSecond);
    EXPECT_EQ(begin(s, kT0 + 2 * kSecond, early, &full), early);
    EXPECT_FALSE(full);
    // The full scan: the caller forgets the reports.
    EXPECT_EQ(begin(s, kT0 + kFullScanEvery, early, &full), kEverything);
    EXPECT_TRUE(full);
}

TEST(ScanFloor, FullScanEveryPeriod) {
    State s;
    bool full = false;
    begin(s, kT0, kNone, &full);
    Micros t = kT0;
    int fulls = 0;
    for (int i = 1; i <= 180; i++) {
        t += kSecond;
        scanned(s, kNone, t - kSecond);
        begin(s, t, kNone, &full);
        fulls += full ? 1 : 0;
    }
    EXPECT_EQ(fulls, 3);  // at 60, 120 and 180 s
}

TEST(ScanFloor, ForgetMakesTheNextBatchAFullScan) {
    State s;
    bool full = false;
    begin(s, kT0, kNone, &full);
    scanned(s, kNone, kT0);
    forget(s);
    EXPECT_EQ(begin(s, kT0 + kSecond, kNone, &full), kEverything);
    EXPECT_TRUE(full);
}

TEST(ScanFloor, EarlyLeases) {
    EXPECT_TRUE(is_early(kT0 - kSecond, kT0));         // already expired
    EXPECT_TRUE(is_early(kT0 + 2 * kSecond, kT0));     // a 2 s lease
    EXPECT_FALSE(is_early(kT0 + kEarly, kT0));         // kEarly ahead
    EXPECT_FALSE(is_early(kT0 + 30 * kSecond, kT0));   // a 30 s lease
}

}  // namespace
}  // namespace baton::scan_floor
