// Unit tests for the arithmetic of a key's limit (src/core/key_limit.*).
#include "core/key_limit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "core/error.hpp"

namespace baton::key_limit {
namespace {

constexpr std::int64_t kSecond = 1000000;

Limit concurrency(std::int32_t n) {
    Limit l;
    l.max_leased = n;
    return l;
}

Limit paced(std::int32_t rate, std::int64_t per, std::int32_t burst) {
    Limit l;
    l.rate = rate;
    l.per_usec = per;
    l.burst = burst;
    return l;
}

TEST(KeyLimit, BoundsAreChecked) {
    EXPECT_THROW(check_max_leased(0), Error);
    EXPECT_THROW(check_max_leased(-1), Error);
    EXPECT_NO_THROW(check_max_leased(1));
    EXPECT_NO_THROW(check_max_leased(kMaxCount));
    EXPECT_THROW(check_max_leased(kMaxCount + 1), Error);
    EXPECT_THROW(check_rate(0), Error);
    EXPECT_THROW(check_burst(-5), Error);
    EXPECT_THROW(check_per_usec(0), Error);
    EXPECT_THROW(check_per_usec(-kSecond), Error);
    EXPECT_NO_THROW(check_per_usec(1));
    EXPECT_THROW(check_per_usec(kMaxPerUsec + 1), Error);
    try {
        check_rate(-3);
    } catch (const Error& e) {
        EXPECT_EQ(e.state(), SqlState::kInvalidParameterValue);
    }
}

TEST(KeyLimit, ConcurrencyCapsTheAdmitted) {
    Limit l = concurrency(2);
    State s = fresh(l, 0);
    EXPECT_TRUE(has_room(l, s));
    EXPECT_EQ(admit(l, s, 10), kNoSlot);
    EXPECT_EQ(admit(l, s, 11), kNoSlot);
    EXPECT_FALSE(has_room(l, s));
    left(l, s, false, 20);
    EXPECT_TRUE(has_room(l, s));
    EXPECT_EQ(s.admitted, 1);
    // A claim does not free a slot: the delivery is still admitted while leased.
    claimed(l, s, 20);
    EXPECT_EQ(s.admitted, 1);
}

TEST(KeyLimit, OrderedAdmitsOneAtATime) {
    Limit l = concurrency(1);
    l.ordered = true;
    State s = fresh(l, 0);
    admit(l, s, 0);
    EXPECT_FALSE(has_room(l, s));
    left(l, s, false, 20);
    EXPECT_TRUE(has_room(l, s));
}

TEST(KeyLimit, APacedKeyAdmitsABurstThenSpacesTheSlots) {
    Limit l = paced(10, kSecond, 3);  // 10 a second: a token each 100 ms
    State s = fresh(l, 0);
    EXPECT_EQ(admit(l, s, 0), 0);
    claimed(l, s, 0);
    EXPECT_EQ(admit(l, s, 0), 0);
    claimed(l, s, 0);
    EXPECT_EQ(admit(l, s, 0), 0);
    claimed(l, s, 0);
    // The bucket is empty: the next slots come a token apart.
    EXPECT_EQ(admit(l, s, 0), 100000);
    EXPECT_EQ(admit(l, s, 0), 200000);
    // Two unclaimed admissions and one token owed: one more fits in the burst of 3.
    EXPECT_TRUE(has_room(l, s));
    EXPECT_EQ(admit(l, s, 0), 300000);
    EXPECT_FALSE(has_room(l, s));
}

TEST(KeyLimit, UnclaimedAdmissionsHoldTheirTokens) {
    Limit l = paced(1, kSecond, 2);
    State s = fresh(l, 0);
    admit(l, s, 0);
    admit(l, s, 0);
    EXPECT_FALSE(has_room(l, s));
    // An hour later nothing has been claimed: the bucket has not refilled past the two
    // tokens the unclaimed deliveries hold.
    refill(l, s, 3600 * kSecond);
    EXPECT_LE(s.tokens, 0.0);
    // Claimed then: the hour does not count, the bucket refills from the claims on.
    claimed(l, s, 3600 * kSecond);
    claimed(l, s, 3600 * kSecond);
    refill(l, s, 3600 * kSecond);
    EXPECT_LE(s.tokens, 0.0);
    refill(l, s, 3602 * kSecond);
    EXPECT_DOUBLE_EQ(s.tokens, 2.0);
}

TEST(KeyLimit, IdleOnlyWithNothingAdmittedAndAFullBucket) {
    Limit l = paced(2, kSecond, 2);
    State s = fresh(l, 0);
    EXPECT_TRUE(idle(l, s, 0));
    admit(l, s, 0);
    EXPECT_FALSE(idle(l, s, 0));
    left(l, s, true, 0);
    EXPECT_FALSE(idle(l, s, 0));           // a token spent, not yet back
    EXPECT_TRUE(idle(l, s, kSecond / 2));  // half a second: one token at 2 a second
    Limit c = concurrency(3);
    State t = fresh(c, 0);
    admit(c, t, 0);
    EXPECT_FALSE(idle(c, t, 0));
    left(c, t, false, 0);
    EXPECT_TRUE(idle(c, t, 0));
}

// The promise of a paced key: whatever the arrivals and however late the workers, no
// span of `per` holds more than rate + burst claims. A simulation: deliveries arrive at
// random, wait when the key has no room, are admitted when a slot frees (a claim), and
// are claimed by workers that come at random moments, never before their slot.
TEST(KeyLimit, NoSpanOfPerHoldsMoreThanRatePlusBurstClaims) {
    std::mt19937_64 rng(37);
    for (int round = 0; round < 40; round++) {
        Limit l = paced(1 + static_cast<std::int32_t>(rng() % 20), (1 + static_cast<std::int64_t>(rng() % 5)) * kSecond,
                        1 + static_cast<std::int32_t>(rng() % 10));
        State s = fresh(l, 0);
        std::int64_t waiting = 0;
        std::deque<std::int64_t> ready;  // slots of admitted, unclaimed deliveries
        std::vector<std::int64_t> claims;
        std::int64_t now = 0;
        auto admit_waiting = [&] {
            while (waiting > 0 && has_room(l, s)) {
                ready.push_back(admit(l, s, now));
                waiting--;
            }
        };
        for (int step = 0; step < 4000; step++) {
            now += static_cast<std::int64_t>(rng() % (l.per_usec / 4 + 1));
            if (rng() % 3 == 0) {
                // A burst of arrivals.
                waiting += 1 + static_cast<std::int64_t>(rng() % 8);
                admit_waiting();
            } else {
                // A worker claims up to n deliveries whose slot has come (the claim order
                // is the slots' order here: they were admitted in it).
                std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 10);
                while (n-- > 0 && !ready.empty() && ready.front() <= now) {
                    claims.push_back(now);
                    ready.pop_front();
                    claimed(l, s, now);
                    admit_waiting();
                }
            }
        }
        ASSERT_GT(claims.size(), 10u);
        std::size_t lo = 0;
        for (std::size_t hi = 0; hi < claims.size(); hi++) {
            while (claims[hi] - claims[lo] >= l.per_usec) lo++;
            ASSERT_LE(static_cast<std::int64_t>(hi - lo + 1), static_cast<std::int64_t>(l.rate) + l.burst)
                << "rate " << l.rate << " per " << l.per_usec << " burst " << l.burst << " at " << claims[hi];
        }
    }
}

}  // namespace
}  // namespace baton::key_limit
