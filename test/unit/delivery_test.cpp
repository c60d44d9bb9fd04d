// Unit tests for the delivery state machine and argument rules (src/core/delivery.*).
#include "core/delivery.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "state_of.hpp"

namespace baton::delivery {

// Printers so failures read "kApply" / "claimed" instead of raw bytes.
void PrintTo(Verdict v, std::ostream* os) {
    switch (v) {
        case Verdict::kApply:
            *os << "kApply";
            return;
        case Verdict::kReturnStored:
            *os << "kReturnStored";
            return;
        case Verdict::kLeaseLost:
            *os << "kLeaseLost";
            return;
        case Verdict::kSettled:
            *os << "kSettled";
            return;
    }
    *os << "Verdict(" << static_cast<int>(v) << ")";
}
void PrintTo(Status s, std::ostream* os) {
    *os << status_name(s);
}

namespace {

using baton::test::error_of;
using baton::test::state_of;

constexpr std::optional<SqlState> kOk = std::nullopt;
constexpr std::optional<SqlState> k22023 = SqlState::kInvalidParameterValue;

constexpr Status kAllStatuses[] = {Status::kPending, Status::kClaimed, Status::kFinished,
                                   Status::kFailed};

constexpr std::int64_t kGen = 7;

Row row(Status s, std::int64_t generation = kGen, std::int32_t attempts = 1,
        std::int32_t max_attempts = 3) {
    return Row{s, generation, attempts, max_attempts};
}

// Caller generations that differ from kGen: older, newer, and the extremes.
constexpr std::int64_t kOtherGenerations[] = {kGen - 1, kGen + 1, 0,
                                              std::numeric_limits<std::int64_t>::min(),
                                              std::numeric_limits<std::int64_t>::max()};

// ---------------------------------------------------------------- statuses

TEST(DeliveryStatus, ParseAndNameRoundTrip) {
    for (Status s : kAllStatuses) {
        auto parsed = parse_status(status_name(s));
        ASSERT_TRUE(parsed.has_value()) << status_name(s);
        EXPECT_EQ(*parsed, s);
    }
    EXPECT_STREQ(status_name(Status::kPending), "pending");
    EXPECT_STREQ(status_name(Status::kClaimed), "claimed");
    EXPECT_STREQ(status_name(Status::kFinished), "finished");
    EXPECT_STREQ(status_name(Status::kFailed), "failed");
}

TEST(DeliveryStatus, ParseRefusesOtherSpellings) {
    for (const char* text : {"", "Pending", "CLAIMED", "finished ", " failed", "done", "canceled", "Cancelled"})
        EXPECT_FALSE(parse_status(text).has_value()) << '"' << text << '"';
    EXPECT_FALSE(parse_status(std::string_view("pending\0x", 9)).has_value());
}

TEST(DeliveryStatus, OnlyFinishedFailedAndCancelledAreSettled) {
    EXPECT_FALSE(is_settled(Status::kPending));
    EXPECT_FALSE(is_settled(Status::kClaimed));
    EXPECT_TRUE(is_settled(Status::kFinished));
    EXPECT_TRUE(is_settled(Status::kFailed));
    EXPECT_TRUE(is_settled(Status::kCancelled));
}

TEST(DeliveryStatus, CancelledRoundTrips) {
    EXPECT_STREQ(status_name(Status::kCancelled), "cancelled");
    EXPECT_EQ(parse_status("cancelled"), Status::kCancelled);
}

// ---------------------------------------------------------------- cancel and redrive

TEST(Cancel, PendingAndClaimedAreCancelled) {
    EXPECT_EQ(cancel_verdict(Status::kPending), CancelVerdict::kApply);
    EXPECT_EQ(cancel_verdict(Status::kClaimed), CancelVerdict::kApply);
}

TEST(Cancel, ARepeatIsAnsweredAndSettledRowsAreRefused) {
    EXPECT_EQ(cancel_verdict(Status::kCancelled), CancelVerdict::kAlready);
    EXPECT_EQ(cancel_verdict(Status::kFinished), CancelVerdict::kSettled);
    EXPECT_EQ(cancel_verdict(Status::kFailed), CancelVerdict::kSettled);
}

TEST(Cancel, BumpsTheGenerationSoTheHolderIsFenced) {
    Row held{Status::kClaimed, 7, 2, 5};
    Row after = cancelled(held);
    EXPECT_EQ(after.status, Status::kCancelled);
    EXPECT_EQ(after.generation, 8);
    EXPECT_EQ(after.attempts, 2);
    // The holder's finish, retry and renew carry generation 7: lease lost, never applied.
    EXPECT_EQ(settle_verdict(after, 7), Verdict::kLeaseLost);
    EXPECT_EQ(renew_verdict(after, 7), Verdict::kLeaseLost);
    EXPECT_STREQ(batch_answer(&after, 7), "lease_lost");
    EXPECT_FALSE(claimable(after.status, 0, 1));
}

TEST(Redrive, OnlyFailedAndCancelledRowsMove) {
    EXPECT_TRUE(redrivable(Status::kFailed));
    EXPECT_TRUE(redrivable(Status::kCancelled));
    EXPECT_FALSE(redrivable(Status::kPending));
    EXPECT_FALSE(redrivable(Status::kClaimed));
    EXPECT_FALSE(redrivable(Status::kFinished));
}

TEST(Redrive, PendingWithAttemptsResetAndTheGenerationKept) {
    Row failed{Status::kFailed, 4, 3, 3};
    Row after = redriven(failed);
    EXPECT_EQ(after.status, Status::kPending);
    EXPECT_EQ(after.generation, 4);
    EXPECT_EQ(after.attempts, 0);
    EXPECT_EQ(after.max_attempts, 3);
    EXPECT_TRUE(claimable(after.status, 0, 0));
    // The former holder (generation 4) cannot write; the next claim raises the generation.
    EXPECT_EQ(settle_verdict(after, 4), Verdict::kLeaseLost);
    EXPECT_EQ(claimed(after).generation, 5);
    EXPECT_EQ(claimed(after).attempts, 1);
}

TEST(Redrive, ACancelledThenRedrivenRowFencesEveryFormerHolder) {
    Row held{Status::kClaimed, 2, 1, 3};
    Row back = claimed(redriven(cancelled(held)));
    EXPECT_EQ(back.generation, 4);
    EXPECT_EQ(settle_verdict(back, 2), Verdict::kLeaseLost);
    EXPECT_EQ(settle_verdict(back, 3), Verdict::kLeaseLost);
    EXPECT_EQ(settle_verdict(back, 4), Verdict::kApply);
}

TEST(Redrive, EachSkippedIdHasItsReason) {
    EXPECT_EQ(redrive_skip_reason(7, "job", false, "", ""), "Delivery 7 does not exist.");
    EXPECT_EQ(redrive_skip_reason(7, "job", true, "other", "failed"), "Delivery 7 is of target \"other\", not \"job\".");
    EXPECT_EQ(redrive_skip_reason(7, "job", true, "job", "finished"),
              "Delivery 7 is finished: only failed and cancelled deliveries are redriven.");
    EXPECT_EQ(redrive_skip_reason(7, "job", true, "job", "claimed"),
              "Delivery 7 is claimed: only failed and cancelled deliveries are redriven.");
    for (const char* held : {"failed", "cancelled"})
        EXPECT_EQ(redrive_skip_reason(7, "job", true, "job", held),
                  "Delivery 7 is being changed by another transaction: redrive it again once that one ends.");
    // A long target is clipped as every name in a message is.
    std::string long_target(300, 't');
    EXPECT_LT(redrive_skip_reason(7, "job", true, long_target, "failed").size(), 120u);
}

TEST(Redrive, ArgumentRanges) {
    EXPECT_EQ(state_of([] { check_redrive_rows(1); }), kOk);
    EXPECT_EQ(state_of([] { check_redrive_rows(100000); }), kOk);
    EXPECT_NE(state_of([] { check_redrive_rows(0); }), kOk);
    EXPECT_NE(state_of([] { check_redrive_rows(100001); }), kOk);
    EXPECT_EQ(state_of([] { check_reason_bytes(65536); }), kOk);
    EXPECT_NE(state_of([] { check_reason_bytes(65537); }), kOk);
}

// ---------------------------------------------------------------- parse_outcome

TEST(CheckStoredRow, AcceptsTheFiveStatusesAndOneAttemptOrMore) {
    for (const char* status : {"pending", "claimed", "finished", "failed", "cancelled"})
        for (std::int32_t max : {1, 3, INT32_MAX})
            EXPECT_EQ(state_of([&] { check_stored_row(status, max, 42); }), kOk) << status << ' ' << max;
}

TEST(CheckStoredRow, RefusesOtherRowsWith23514NamingTheRule) {
    for (const char* status : {"", "Pending", "done", "pending "})
        EXPECT_EQ(state_of([&] { check_stored_row(status, 3, 42); }), SqlState::kCheckViolation) << status;
    for (std::int32_t max : {0, -1, INT32_MIN})
        EXPECT_EQ(state_of([&] { check_stored_row("pending", max, 42); }), SqlState::kCheckViolation) << max;
    EXPECT_EQ(error_of([] { check_stored_row("done", 3, 42); })->message(),
              "new row of delivery 42 of relation \"deliveries\" has invalid value \"done\" in column \"status\"");
    EXPECT_EQ(error_of([] { check_stored_row("pending", 0, 42); })->message(),
              "new row of delivery 42 of relation \"deliveries\" has invalid value 0 in column \"max_attempts\"");
}

TEST(ParseOutcome, AcceptsFinishedAndFailed) {
    EXPECT_EQ(parse_outcome("finished"), Status::kFinished);
    EXPECT_EQ(parse_outcome("failed"), Status::kFailed);
}

TEST(ParseOutcome, RefusesEverythingElseWith22023) {
    for (const char* text : {"", "pending", "claimed", "Finished", "FAILED", "finished ", "ok"})
        EXPECT_EQ(state_of([&] { parse_outcome(text); }), k22023) << '"' << text << '"';
    EXPECT_EQ(state_of([] { parse_outcome(std::string_view("failed\0", 7)); }), k22023);
}

TEST(ParseOutcome, ErrorNamesTheArgumentAndBoundsTheEcho) {
    const std::string huge(10000, 'x');
    auto e = error_of([&] { parse_outcome(huge); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue);
    EXPECT_NE(e->message().find("\"outcome\""), std::string::npos) << e->message();
    // The refused text is echoed, but only a bounded prefix of it.
    EXPECT_NE(e->detail().find(std::string(64, 'x')), std::string::npos) << e->detail();
    EXPECT_EQ(e->detail().find(std::string(65, 'x')), std::string::npos);
    EXPECT_LT(e->detail().size(), 200u);
}

// ---------------------------------------------------------------- settle_verdict (finish, retry)

TEST(SettleVerdict, ClaimedAtCallerGenerationApplies) {
    EXPECT_EQ(settle_verdict(row(Status::kClaimed), kGen), Verdict::kApply);
}

TEST(SettleVerdict, FinishedAtCallerGenerationReturnsStored) {
    EXPECT_EQ(settle_verdict(row(Status::kFinished), kGen), Verdict::kReturnStored);
}

TEST(SettleVerdict, FailedAtCallerGenerationReturnsStored) {
    EXPECT_EQ(settle_verdict(row(Status::kFailed), kGen), Verdict::kReturnStored);
}

TEST(SettleVerdict, PendingAtCallerGenerationIsLeaseLost) {
    // Never claimed by this generation (e.g. generation 0 before any claim).
    EXPECT_EQ(settle_verdict(row(Status::kPending), kGen), Verdict::kLeaseLost);
    EXPECT_EQ(settle_verdict(row(Status::kPending, 0), 0), Verdict::kLeaseLost);
}

TEST(SettleVerdict, EveryStatusAtAnotherGenerationIsLeaseLost) {
    for (Status s : kAllStatuses)
        for (std::int64_t caller : kOtherGenerations)
            EXPECT_EQ(settle_verdict(row(s), caller), Verdict::kLeaseLost)
                << status_name(s) << " row at " << kGen << ", caller " << caller;
}

TEST(SettleVerdict, AttemptsDoNotChangeTheVerdict) {
    // Spent attempts decide where retry sends the row, not whether the holder may act.
    EXPECT_EQ(settle_verdict(row(Status::kClaimed, kGen, 3, 3), kGen), Verdict::kApply);
    EXPECT_EQ(settle_verdict(row(Status::kClaimed, kGen, 5, 3), kGen), Verdict::kApply);
    EXPECT_EQ(settle_verdict(row(Status::kFailed, kGen, 3, 3), kGen), Verdict::kReturnStored);
}

// ---------------------------------------------------------------- renew_verdict

TEST(RenewVerdict, ClaimedAtCallerGenerationApplies) {
    EXPECT_EQ(renew_verdict(row(Status::kClaimed), kGen), Verdict::kApply);
}

TEST(RenewVerdict, FinishedAtCallerGenerationIsSettled) {
    EXPECT_EQ(renew_verdict(row(Status::kFinished), kGen), Verdict::kSettled);
}

TEST(RenewVerdict, FailedAtCallerGenerationIsSettled) {
    EXPECT_EQ(renew_verdict(row(Status::kFailed), kGen), Verdict::kSettled);
}

TEST(RenewVerdict, PendingAtCallerGenerationIsLeaseLost) {
    EXPECT_EQ(renew_verdict(row(Status::kPending), kGen), Verdict::kLeaseLost);
    EXPECT_EQ(renew_verdict(row(Status::kPending, 0), 0), Verdict::kLeaseLost);
}

TEST(RenewVerdict, EveryStatusAtAnotherGenerationIsLeaseLost) {
    for (Status s : kAllStatuses)
        for (std::int64_t caller : kOtherGenerations)
            EXPECT_EQ(renew_verdict(row(s), caller), Verdict::kLeaseLost)
                << status_name(s) << " row at " << kGen << ", caller " << caller;
}

TEST(RenewVerdict, NeverReturnsStored) {
    for (Status s : kAllStatuses) {
        EXPECT_NE(renew_verdict(row(s), kGen), Verdict::kReturnStored) << status_name(s);
        EXPECT_NE(settle_verdict(row(s), kGen), Verdict::kSettled) << status_name(s);
    }
}

// ---------------------------------------------------------------- give_back_status

TEST(GiveBackStatus, PendingWhileAttemptsRemain) {
    EXPECT_EQ(give_back_status(1, 3), Status::kPending);
    EXPECT_EQ(give_back_status(2, 3), Status::kPending);
    EXPECT_EQ(give_back_status(999, 1000), Status::kPending);
}

TEST(GiveBackStatus, FailedWhenAttemptsEqualMax) {
    EXPECT_EQ(give_back_status(3, 3), Status::kFailed);
    EXPECT_EQ(give_back_status(1, 1), Status::kFailed);
    EXPECT_EQ(give_back_status(1000, 1000), Status::kFailed);
}

TEST(GiveBackStatus, FailedWhenAttemptsExceedMax) {
    EXPECT_EQ(give_back_status(4, 3), Status::kFailed);
    EXPECT_EQ(give_back_status(std::numeric_limits<std::int32_t>::max(), 1), Status::kFailed);
}

// ---------------------------------------------------------------- claimable, holds_lease, claimed

TEST(Claimable, OnlyPendingRowsThatAreDue) {
    EXPECT_TRUE(claimable(Status::kPending, 100, 100));
    EXPECT_FALSE(claimable(Status::kPending, 101, 100));
    for (Status s : {Status::kClaimed, Status::kFinished, Status::kFailed}) EXPECT_FALSE(claimable(s, 0, 100));
}

TEST(HoldsLease, ClaimedAtTheCallersGenerationOnly) {
    EXPECT_TRUE(holds_lease(row(Status::kClaimed), kGen));
    EXPECT_FALSE(holds_lease(row(Status::kClaimed), kGen + 1));
    EXPECT_FALSE(holds_lease(row(Status::kFinished), kGen));
}

TEST(Claimed, BumpsGenerationAndAttempts) {
    Row r = claimed(row(Status::kPending, 4, 1, 3));
    EXPECT_EQ(r.status, Status::kClaimed);
    EXPECT_EQ(r.generation, 5);
    EXPECT_EQ(r.attempts, 2);
    EXPECT_EQ(r.max_attempts, 3);
}

// ---------------------------------------------------------------- batch_answer, retry_give_back

TEST(BatchAnswer, NotFoundStoredStatusOrLeaseLost) {
    EXPECT_STREQ(batch_answer(nullptr, kGen), "not_found");
    Row finished = row(Status::kFinished);
    EXPECT_STREQ(batch_answer(&finished, kGen), "finished");
    EXPECT_STREQ(batch_answer(&finished, kGen + 1), "lease_lost");
    Row claimed_row = row(Status::kClaimed);
    EXPECT_STREQ(batch_answer(&claimed_row, kGen), "lease_lost");
}

TEST(RetryGiveBack, PendingUnderTheNextGenerationWithBackoff) {
    GiveBack g = retry_give_back(row(Status::kClaimed, kGen, 2, 3));
    EXPECT_EQ(g.status, Status::kPending);
    EXPECT_EQ(g.generation, kGen + 1);
    EXPECT_FALSE(g.settles);
    EXPECT_EQ(g.backoff_usec, backoff_usec(2));
}

TEST(RetryGiveBack, FailedAndSettledAtTheSameGenerationWhenSpent) {
    GiveBack g = retry_give_back(row(Status::kClaimed, kGen, 3, 3));
    EXPECT_EQ(g.status, Status::kFailed);
    EXPECT_EQ(g.generation, kGen);
    EXPECT_TRUE(g.settles);
}

// ---------------------------------------------------------------- backoff_usec

constexpr std::int64_t kSec = limits::kUsecPerSec;

TEST(Backoff, DoublesFromOneSecond) {
    EXPECT_EQ(backoff_usec(1), 1 * kSec);
    EXPECT_EQ(backoff_usec(2), 2 * kSec);
    EXPECT_EQ(backoff_usec(3), 4 * kSec);
    EXPECT_EQ(backoff_usec(4), 8 * kSec);
    EXPECT_EQ(backoff_usec(11), 1024 * kSec);
    EXPECT_EQ(backoff_usec(12), 2048 * kSec);
}

TEST(Backoff, CappedAtOneHour) {
    EXPECT_EQ(backoff_usec(13), 3600 * kSec);  // 4096 s would exceed the cap
    EXPECT_EQ(backoff_usec(14), 3600 * kSec);
    EXPECT_EQ(backoff_usec(63), 3600 * kSec);
    EXPECT_EQ(backoff_usec(64), 3600 * kSec);
    EXPECT_EQ(backoff_usec(1000), 3600 * kSec);
    EXPECT_EQ(backoff_usec(std::numeric_limits<std::int32_t>::max()), 3600 * kSec);
}

TEST(Backoff, ZeroOrNegativeAttemptsCountAsTheFirst) {
    EXPECT_EQ(backoff_usec(0), 1 * kSec);
    EXPECT_EQ(backoff_usec(-1), 1 * kSec);
    EXPECT_EQ(backoff_usec(std::numeric_limits<std::int32_t>::min()), 1 * kSec);
}

TEST(Backoff, NeverDecreasesAndStaysWithinBounds) {
    std::int64_t previous = 0;
    for (std::int32_t a = -5; a <= 200; ++a) {
        std::int64_t b = backoff_usec(a);
        EXPECT_GE(b, previous) << "attempts " << a;
        EXPECT_GE(b, kSec) << "attempts " << a;
        EXPECT_LE(b, limits::kBackoffCapUsec) << "attempts " << a;
        previous = b;
    }
}

// ---------------------------------------------------------------- argument checks

TEST(CheckTargetChars, OneToTwoHundred) {
    EXPECT_EQ(state_of([] { check_target_chars(1); }), kOk);
    EXPECT_EQ(state_of([] { check_target_chars(200); }), kOk);
    EXPECT_EQ(state_of([] { check_target_chars(0); }), k22023);
    EXPECT_EQ(state_of([] { check_target_chars(201); }), k22023);
    EXPECT_EQ(state_of([] { check_target_chars(-1); }), k22023);
}

TEST(CheckDedupKeyChars, OneToTwoHundredFiftySix) {
    EXPECT_EQ(state_of([] { check_dedup_key_chars(1); }), kOk);
    EXPECT_EQ(state_of([] { check_dedup_key_chars(256); }), kOk);
    EXPECT_EQ(state_of([] { check_dedup_key_chars(0); }), k22023);
    EXPECT_EQ(state_of([] { check_dedup_key_chars(257); }), k22023);
}

TEST(CheckMaxAttempts, OneToThousand) {
    EXPECT_EQ(state_of([] { check_max_attempts(1); }), kOk);
    EXPECT_EQ(state_of([] { check_max_attempts(1000); }), kOk);
    EXPECT_EQ(state_of([] { check_max_attempts(0); }), k22023);
    EXPECT_EQ(state_of([] { check_max_attempts(1001); }), k22023);
    EXPECT_EQ(state_of([] { check_max_attempts(-3); }), k22023);
}

TEST(CheckLeaseUsec, MoreThanZeroAtMost365Days) {
    constexpr std::int64_t kYear = 365 * limits::kUsecPerDay;
    EXPECT_EQ(state_of([] { check_lease_usec(1); }), kOk);
    EXPECT_EQ(state_of([&] { check_lease_usec(kYear); }), kOk);
    EXPECT_EQ(state_of([] { check_lease_usec(0); }), k22023);
    EXPECT_EQ(state_of([] { check_lease_usec(-1); }), k22023);
    EXPECT_EQ(state_of([&] { check_lease_usec(kYear + 1); }), k22023);
    EXPECT_EQ(state_of([] { check_lease_usec(std::numeric_limits<std::int64_t>::max()); }), k22023);
    EXPECT_EQ(state_of([] { check_lease_usec(std::numeric_limits<std::int64_t>::min()); }), k22023);
}

TEST(CheckMaxItems, OneToTenThousand) {
    EXPECT_EQ(state_of([] { check_max_items(1); }), kOk);
    EXPECT_EQ(state_of([] { check_max_items(10000); }), kOk);
    EXPECT_EQ(state_of([] { check_max_items(0); }), k22023);
    EXPECT_EQ(state_of([] { check_max_items(10001); }), k22023);
}

TEST(CheckDelayUsec, ZeroTo365Days) {
    constexpr std::int64_t kYear = 365 * limits::kUsecPerDay;
    EXPECT_EQ(state_of([] { check_delay_usec(0); }), kOk);
    EXPECT_EQ(state_of([&] { check_delay_usec(kYear); }), kOk);
    EXPECT_EQ(state_of([] { check_delay_usec(-1); }), k22023);
    EXPECT_EQ(state_of([&] { check_delay_usec(kYear + 1); }), k22023);
    EXPECT_EQ(state_of([] { check_delay_usec(std::numeric_limits<std::int64_t>::min()); }), k22023);
}

TEST(CheckErrorBytes, AtMost65536) {
    EXPECT_EQ(state_of([] { check_error_bytes(0); }), kOk);
    EXPECT_EQ(state_of([] { check_error_bytes(65536); }), kOk);
    EXPECT_EQ(state_of([] { check_error_bytes(65537); }), k22023);
}

TEST(CheckReapRows, OneToHundredThousand) {
    EXPECT_EQ(state_of([] { check_reap_rows(1); }), kOk);
    EXPECT_EQ(state_of([] { check_reap_rows(100000); }), kOk);
    EXPECT_EQ(state_of([] { check_reap_rows(0); }), k22023);
    EXPECT_EQ(state_of([] { check_reap_rows(100001); }), k22023);
}

TEST(CheckJsonBytes, AtMostTheLimit) {
    constexpr std::int64_t kLimit = limits::kDefaultMaxPayloadBytes;
    EXPECT_EQ(state_of([] { check_json_bytes("payload", 0, kLimit); }), kOk);
    EXPECT_EQ(state_of([] { check_json_bytes("payload", kLimit, kLimit); }), kOk);
    EXPECT_EQ(state_of([] { check_json_bytes("payload", kLimit + 1, kLimit); }), k22023);
    // The limit is the caller's (baton.max_payload_bytes), not a constant.
    EXPECT_EQ(state_of([] { check_json_bytes("result", 10, 10); }), kOk);
    EXPECT_EQ(state_of([] { check_json_bytes("result", 11, 10); }), k22023);
}

// Every refusal names the argument the caller got wrong.
TEST(ArgumentChecks, RefusalsNameTheArgument) {
    struct Case {
        const char* argument;
        void (*call)();
    };
    const Case cases[] = {
        {"target", [] { check_target_chars(0); }},
        {"dedup_key", [] { check_dedup_key_chars(0); }},
        {"max_attempts", [] { check_max_attempts(0); }},
        {"lease", [] { check_lease_usec(0); }},
        {"max_items", [] { check_max_items(0); }},
        {"delay", [] { check_delay_usec(-1); }},
        {"error", [] { check_error_bytes(65537); }},
        {"max_rows", [] { check_reap_rows(0); }},
        {"binding", [] { check_json_bytes("binding", 2, 1); }},
        {"outcome", [] { parse_outcome("x"); }},
    };
    for (const Case& c : cases) {
        auto e = error_of(c.call);
        ASSERT_TRUE(e.has_value()) << c.argument;
        EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << c.argument;
        EXPECT_NE(e->message().find(std::string("\"") + c.argument + "\""), std::string::npos)
            << c.argument << ": " << e->message();
        EXPECT_FALSE(e->detail().empty()) << c.argument;
    }
}

}  // namespace
}  // namespace baton::delivery
