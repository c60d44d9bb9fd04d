// Unit tests for the events a delivery's write counts (src/core/event_count.*).
#include "core/event_count.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace baton::event_count {
namespace {

using delivery::Status;

// The names of what a write counts, in order.
std::vector<std::string> counted(std::optional<Status> before, std::optional<Status> after, bool reaping = false) {
    Counted c = of(before, after, reaping);
    std::vector<std::string> out;
    for (int i = 0; i < c.n; i++) out.emplace_back(name(c.events[i]));
    return out;
}

using Names = std::vector<std::string>;

TEST(EventCount, AnInsertIsEnqueuedWhateverItsStatus) {
    EXPECT_EQ(counted(std::nullopt, Status::kPending), Names{"enqueued"});
    EXPECT_EQ(counted(std::nullopt, Status::kClaimed), Names{"enqueued"});
}

TEST(EventCount, ADeleteOrAnUnchangedStatusCountsNothing) {
    EXPECT_TRUE(counted(Status::kFinished, std::nullopt).empty());  // purge
    EXPECT_TRUE(counted(Status::kClaimed, Status::kClaimed).empty());  // renew
    EXPECT_TRUE(counted(Status::kPending, Status::kPending).empty());  // a priority raised
    EXPECT_TRUE(counted(std::nullopt, std::nullopt).empty());
}

TEST(EventCount, TheLeaseCycle) {
    EXPECT_EQ(counted(Status::kPending, Status::kClaimed), Names{"claimed"});
    EXPECT_EQ(counted(Status::kClaimed, Status::kFinished), Names{"finished"});
    EXPECT_EQ(counted(Status::kClaimed, Status::kFailed), Names{"failed"});
    EXPECT_EQ(counted(Status::kClaimed, Status::kPending), Names{"retried"});
}

TEST(EventCount, AReapIsReapedAndFailedWhenItSpendsTheLastAttempt) {
    EXPECT_EQ(counted(Status::kClaimed, Status::kPending, true), Names{"reaped"});
    EXPECT_EQ(counted(Status::kClaimed, Status::kFailed, true), (Names{"failed", "reaped"}));
    // A reap's statement writes nothing else, but a pending row is not reaped.
    EXPECT_EQ(counted(Status::kPending, Status::kFailed, true), Names{"failed"});
}

TEST(EventCount, CancelAndRedrive) {
    EXPECT_EQ(counted(Status::kPending, Status::kCancelled), Names{"cancelled"});
    EXPECT_EQ(counted(Status::kClaimed, Status::kCancelled), Names{"cancelled"});
    EXPECT_EQ(counted(Status::kCancelled, Status::kPending), Names{"redriven"});
    EXPECT_EQ(counted(Status::kFailed, Status::kPending), Names{"redriven"});
    EXPECT_EQ(counted(Status::kFinished, Status::kPending), Names{"redriven"});  // direct SQL
}

TEST(EventCount, EveryEventHasItsOwnName) {
    std::vector<std::string> names;
    for (int i = 0; i < kEvents; i++) names.emplace_back(name(static_cast<Event>(i)));
    EXPECT_EQ(names, (Names{"enqueued", "claimed", "finished", "failed", "retried", "cancelled", "reaped", "redriven"}));
}

}  // namespace
}  // namespace baton::event_count
