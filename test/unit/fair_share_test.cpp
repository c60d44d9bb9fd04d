// The fair claim's turns: quotas, the end of a turn, the weight's bounds.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/fair_share.hpp"

namespace baton::fair_share {
namespace {

TEST(FairShare, ATurnGivesTheWeightThenCloses) {
    Turn t;
    EXPECT_FALSE(t.open);
    open(t);
    EXPECT_EQ(quota(t, 3, 10), 3);
    took(t, 3, 2, 2);  // asked 2 of its 3, got both: still open
    EXPECT_TRUE(t.open);
    EXPECT_EQ(quota(t, 3, 10), 1);
    took(t, 3, 1, 1);
    EXPECT_FALSE(t.open);
}

TEST(FairShare, AQuotaIsNoMoreThanWantedAndAtLeastOne) {
    Turn t;
    open(t);
    EXPECT_EQ(quota(t, 100, 4), 4);
    EXPECT_EQ(quota(t, 1, 4), 1);
    t.served = 7;  // a weight lowered during the turn
    EXPECT_EQ(quota(t, 5, 4), 1);
}

TEST(FairShare, ATenantAloneInTheRoundTakesAllItIsAsked) {
    Turn t;
    open(t);
    EXPECT_EQ(quota(t, 1, 50, true), 50);
    took(t, 1, 50, 50);
    EXPECT_FALSE(t.open);  // the next call looks for others again
    open(t);
    took(t, 1, 50, 7);     // ran dry
    EXPECT_FALSE(t.open);
}

TEST(FairShare, ATenantThatRunsDryEndsItsTurn) {
    Turn t;
    open(t);
    took(t, 10, 5, 2);
    EXPECT_FALSE(t.open);
    EXPECT_EQ(t.served, 2);
    open(t);
    EXPECT_EQ(t.served, 0);
    EXPECT_TRUE(t.open);
}

TEST(FairShare, PassingClosesTheTurn) {
    Turn t;
    open(t);
    pass(t);
    EXPECT_FALSE(t.open);
}

TEST(FairShare, WeightsAreBounded) {
    EXPECT_NO_THROW(check_weight(kMinWeight));
    EXPECT_NO_THROW(check_weight(kMaxWeight));
    try {
        check_weight(0);
        FAIL() << "0 accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.state(), SqlState::kInvalidParameterValue);
        EXPECT_NE(std::string(e.detail()).find("between 1 and 10000, not 0"), std::string::npos);
    }
    EXPECT_THROW(check_weight(-1), Error);
    EXPECT_THROW(check_weight(kMaxWeight + 1), Error);
}

}  // namespace
}  // namespace baton::fair_share
