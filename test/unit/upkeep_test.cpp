// Unit tests for what a delivery's move writes beside its row (src/core/upkeep.*).
#include "core/upkeep.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace baton::upkeep {
namespace {

using delivery::Status;

constexpr char kTenantA[] = "aaaaaaaaaaaaaaaa";
constexpr char kTenantB[] = "bbbbbbbbbbbbbbbb";

// A version of delivery 42 of tenant A, target "t", priority 0, due at 100, generation 3,
// lease until 500.
Version version(Status s) {
    return {true, s, true, std::string_view(kTenantA, 16), "t", 0, 42, 100, true, 3, 500, false, {}};
}

void expect(const Changes& c, bool leaves_ready, bool enters_ready, bool adds_lease, bool drops_lease = false) {
    EXPECT_EQ(c.leaves_ready, leaves_ready);
    EXPECT_EQ(c.enters_ready, enters_ready);
    EXPECT_EQ(c.adds_lease, adds_lease);
    EXPECT_EQ(c.drops_lease, drops_lease);
}

TEST(Upkeep, AKeyChangedWhilePendingMovesTheRow) {
    Version before = version(Status::kPending);
    Version after = before;
    after.has_key = true;
    after.key = "k";
    expect(changes(&before, &after), true, true, false);
    before = after;
    after.key = "l";
    expect(changes(&before, &after), true, true, false);
    expect(changes(&before, &before), false, false, false);
}

TEST(Upkeep, ReadyNeedsPendingWithAPlace) {
    EXPECT_TRUE(ready(version(Status::kPending)));
    for (Status s : {Status::kClaimed, Status::kFinished, Status::kFailed, Status::kCancelled})
        EXPECT_FALSE(ready(version(s)));
    Version v = version(Status::kPending);
    v.has_place = false;
    EXPECT_FALSE(ready(v));
    v = version(Status::kPending);
    v.has_status = false;
    EXPECT_FALSE(ready(v));
}

TEST(Upkeep, LeasedNeedsClaimedWithALease) {
    EXPECT_TRUE(leased(version(Status::kClaimed)));
    for (Status s : {Status::kPending, Status::kFinished, Status::kFailed, Status::kCancelled})
        EXPECT_FALSE(leased(version(s)));
    Version v = version(Status::kClaimed);
    v.has_lease = false;
    EXPECT_FALSE(leased(v));
}

TEST(Upkeep, InsertOfAPendingRowEntersReady) {
    Version after = version(Status::kPending);
    expect(changes(nullptr, &after), false, true, false);
}

TEST(Upkeep, InsertOfAClaimedRowAddsItsLease) {
    Version after = version(Status::kClaimed);
    expect(changes(nullptr, &after), false, false, true);
    after.has_lease = false;
    expect(changes(nullptr, &after), false, false, false);
}

TEST(Upkeep, ClaimLeavesReadyAndAddsTheLease) {
    Version before = version(Status::kPending);
    Version after = version(Status::kClaimed);
    after.generation = 4;
    expect(changes(&before, &after), true, false, true);
}

TEST(Upkeep, RenewReplacesTheLease) {
    Version before = version(Status::kClaimed);
    Version after = before;
    expect(changes(&before, &after), false, false, false);  // the same lease written again
    after.lease_until = 900;
    expect(changes(&before, &after), false, false, true, true);
    after = before;
    after.generation = 4;
    expect(changes(&before, &after), false, false, true, true);
    after = before;
    after.id = 43;  // the lease row is keyed by the delivery too
    expect(changes(&before, &after), false, false, true, true);
    after = before;
    after.tenant = std::string_view(kTenantB, 16);
    expect(changes(&before, &after), false, false, true, true);
    before.has_lease = false;  // a claimed row without a lease before: the lease is new
    after = version(Status::kClaimed);
    expect(changes(&before, &after), false, false, true, false);
}

TEST(Upkeep, SettleRetryAndCancelDropTheLease) {
    Version claimed = version(Status::kClaimed);
    for (Status s : {Status::kFinished, Status::kFailed, Status::kCancelled}) {
        Version after = version(s);
        expect(changes(&claimed, &after), false, false, false, true);
    }
    Version pending = version(Status::kPending);
    expect(changes(&claimed, &pending), false, true, false, true);  // retry, reap
    Version cancelled = version(Status::kCancelled);
    expect(changes(&pending, &cancelled), true, false, false, false);  // cancel of a pending row
    Version unleased = version(Status::kClaimed);
    unleased.has_lease = false;  // a claimed row without a lease has no row to drop
    expect(changes(&unleased, &cancelled), false, false, false, false);
}

TEST(Upkeep, DeleteLeavesReadyOrDropsTheLease) {
    Version before = version(Status::kPending);
    expect(changes(&before, nullptr), true, false, false);
    Version claimed = version(Status::kClaimed);
    expect(changes(&claimed, nullptr), false, false, false, true);
}

TEST(Upkeep, PendingRowMovesWhenItsPlaceChanges) {
    Version before = version(Status::kPending);
    Version after = before;
    expect(changes(&before, &after), false, false, false);  // payload changed, say: nothing moves
    after.priority = 5;
    expect(changes(&before, &after), true, true, false);
    after = before;
    after.run_after = 200;
    expect(changes(&before, &after), true, true, false);
    after = before;
    after.target = "u";
    expect(changes(&before, &after), true, true, false);
    after = before;
    after.id = 43;
    expect(changes(&before, &after), true, true, false);
    after = before;
    after.tenant = std::string_view(kTenantB, 16);
    expect(changes(&before, &after), true, true, false);
}

TEST(Upkeep, APendingRowWithoutAPlaceHasNoReadyRow) {
    Version before = version(Status::kPending);
    Version after = before;
    after.has_place = false;  // a NULL in a NOT NULL column: the write fails
    expect(changes(&before, &after), true, false, false);
    expect(changes(nullptr, &after), false, false, false);
}

TEST(Upkeep, NoVersionsChangeNothing) { expect(changes(nullptr, nullptr), false, false, false); }

}  // namespace
}  // namespace baton::upkeep
