// Unit tests for the rules of runs and their stages (src/core/run.*).
#include "core/run.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>
#include <utility>

#include "core/error.hpp"
#include "state_of.hpp"

namespace baton::run {

// Printers so failures read "cancelled" / "kWait" instead of raw bytes.
void PrintTo(Status s, std::ostream* os) {
    *os << status_name(s);
}
void PrintTo(StageStatus s, std::ostream* os) {
    *os << stage_status_name(s);
}
void PrintTo(Step s, std::ostream* os) {
    switch (s) {
        case Step::kReturnStage:
            *os << "kReturnStage";
            return;
        case Step::kWait:
            *os << "kWait";
            return;
        case Step::kFailRun:
            *os << "kFailRun";
            return;
        case Step::kDecide:
            *os << "kDecide";
            return;
    }
    *os << "Step(" << static_cast<int>(s) << ")";
}
void PrintTo(Approval a, std::ostream* os) {
    *os << (a == Approval::kApprove ? "kApprove" : a == Approval::kNothing ? "kNothing" : "Approval(?)");
}
void PrintTo(Cancellation c, std::ostream* os) {
    *os << (c == Cancellation::kCancel ? "kCancel" : c == Cancellation::kNothing ? "kNothing" : "Cancellation(?)");
}

namespace {

using baton::test::error_of;
using baton::test::state_of;

constexpr std::optional<SqlState> kOk = std::nullopt;
// The run, tenant and stage every refusal below must name.
constexpr const char* kRun = "6f1c2d3e-0000-4000-8000-00000000abcd";
constexpr const char* kTenant = "11111111-1111-1111-1111-111111111111";
constexpr std::int64_t kStage = 4242;
constexpr std::optional<SqlState> kDU001 = SqlState::kLeaseLost;
constexpr std::optional<SqlState> kDU006 = SqlState::kDigestMismatch;
constexpr std::optional<SqlState> kDU007 = SqlState::kInvalidState;
constexpr std::optional<SqlState> kDU008 = SqlState::kNotFound;

constexpr Status kAllStatuses[] = {Status::kSubmitted, Status::kApproved,  Status::kRunning,
                                   Status::kCompleted, Status::kFailed,    Status::kCancelled};
constexpr StageStatus kAllStageStatuses[] = {StageStatus::kPending, StageStatus::kRunning,
                                             StageStatus::kCompleted, StageStatus::kFailed};
constexpr bool kBools[] = {false, true};

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// ---------------------------------------------------------------- run statuses

TEST(RunStatus, ParseAndNameRoundTrip) {
    for (Status s : kAllStatuses) {
        auto parsed = parse_status(status_name(s));
        ASSERT_TRUE(parsed.has_value()) << status_name(s);
        EXPECT_EQ(*parsed, s);
    }
    EXPECT_STREQ(status_name(Status::kSubmitted), "submitted");
    EXPECT_STREQ(status_name(Status::kApproved), "approved");
    EXPECT_STREQ(status_name(Status::kRunning), "running");
    EXPECT_STREQ(status_name(Status::kCompleted), "completed");
    EXPECT_STREQ(status_name(Status::kFailed), "failed");
    EXPECT_STREQ(status_name(Status::kCancelled), "cancelled");
}

TEST(RunStatus, NamesAreDistinct) {
    std::set<std::string> seen;
    for (Status s : kAllStatuses)
        EXPECT_TRUE(seen.insert(status_name(s)).second) << "duplicate " << status_name(s);
}

TEST(RunStatus, ParseRefusesOtherSpellings) {
    for (const char* text : {"", "Submitted", "APPROVED", "running ", " failed", "canceled", "pending",
                             "finished", "done"})
        EXPECT_FALSE(parse_status(text).has_value()) << '"' << text << '"';
    EXPECT_FALSE(parse_status(std::string_view("running\0", 8)).has_value());
}

TEST(RunStatus, OnlyCompletedFailedAndCancelledAreTerminal) {
    EXPECT_FALSE(is_terminal(Status::kSubmitted));
    EXPECT_FALSE(is_terminal(Status::kApproved));
    EXPECT_FALSE(is_terminal(Status::kRunning));
    EXPECT_TRUE(is_terminal(Status::kCompleted));
    EXPECT_TRUE(is_terminal(Status::kFailed));
    EXPECT_TRUE(is_terminal(Status::kCancelled));
}

// ---------------------------------------------------------------- stage statuses

TEST(StageStatusNames, ParseAndNameRoundTrip) {
    for (StageStatus s : kAllStageStatuses) {
        auto parsed = parse_stage_status(stage_status_name(s));
        ASSERT_TRUE(parsed.has_value()) << stage_status_name(s);
        EXPECT_EQ(*parsed, s);
    }
    EXPECT_STREQ(stage_status_name(StageStatus::kPending), "pending");
    EXPECT_STREQ(stage_status_name(StageStatus::kRunning), "running");
    EXPECT_STREQ(stage_status_name(StageStatus::kCompleted), "completed");
    EXPECT_STREQ(stage_status_name(StageStatus::kFailed), "failed");
}

TEST(StageStatusNames, NamesAreDistinct) {
    std::set<std::string> seen;
    for (StageStatus s : kAllStageStatuses)
        EXPECT_TRUE(seen.insert(stage_status_name(s)).second) << "duplicate " << stage_status_name(s);
}

TEST(StageStatusNames, ParseRefusesOtherSpellings) {
    for (const char* text : {"", "Pending", "RUNNING", "completed ", " failed", "submitted", "approved",
                             "cancelled", "done"})
        EXPECT_FALSE(parse_stage_status(text).has_value()) << '"' << text << '"';
    EXPECT_FALSE(parse_stage_status(std::string_view("pending\0", 8)).has_value());
}

// ---------------------------------------------------------------- throw_not_found

TEST(ThrowNotFound, IsDU008NamingTheRun) {
    auto e = error_of([] { throw_not_found(kRun, kTenant); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kNotFound);
    EXPECT_STREQ(e->code(), "DU008");
    EXPECT_EQ(e->message(), std::string("run ") + kRun + " does not exist in tenant " + kTenant);
    EXPECT_EQ(state_of([] { throw_not_found(kRun, kTenant); }), kDU008);
}

// ---------------------------------------------------------------- check_owner

constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin64 = std::numeric_limits<std::int64_t>::min();

TEST(CheckOwner, OwnedAtTheRunsGenerationPasses) {
    for (std::int64_t g : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, kMax64})
        EXPECT_EQ(state_of([&] { check_owner(g, g, true, kRun); }), kOk) << "generation " << g;
}

TEST(CheckOwner, OwnedAtAnotherGenerationIsDU001) {
    const std::pair<std::int64_t, std::int64_t> cases[] = {{6, 7}, {8, 7}, {0, 7}, {kMin64, 7}, {kMax64, 7},
                                                           {7, 0}};
    for (auto [caller, current] : cases)
        EXPECT_EQ(state_of([&] { check_owner(caller, current, true, kRun); }), kDU001)
            << "caller " << caller << ", run " << current;
}

TEST(CheckOwner, NotOwnedIsDU001EvenAtTheRunsGeneration) {
    // Released or never acquired: no generation holds the run, not even the current one.
    for (std::int64_t g : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, kMax64})
        EXPECT_EQ(state_of([&] { check_owner(g, g, false, kRun); }), kDU001) << "generation " << g;
    EXPECT_EQ(state_of([] { check_owner(6, 7, false, kRun); }), kDU001);
    EXPECT_EQ(state_of([] { check_owner(8, 7, false, kRun); }), kDU001);
}

TEST(CheckOwner, SupersededDetailNamesBothGenerationsAndNotNobody) {
    auto e = error_of([] { check_owner(6, 7, true, kRun); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kLeaseLost);
    EXPECT_STREQ(e->code(), "DU001");
    EXPECT_EQ(e->message(), std::string("lease on run ") + kRun + " is lost");
    EXPECT_TRUE(contains(e->detail(), "generation 6")) << e->detail();
    EXPECT_TRUE(contains(e->detail(), "generation 7")) << e->detail();
    EXPECT_FALSE(contains(e->detail(), "nobody holds")) << e->detail();
    EXPECT_FALSE(e->hint().empty());
}

TEST(CheckOwner, NotOwnedDetailSaysNobodyHoldsTheLease) {
    for (auto [caller, current] : {std::pair<std::int64_t, std::int64_t>{7, 7}, {6, 7}}) {
        auto e = error_of([&] { check_owner(caller, current, false, kRun); });
        ASSERT_TRUE(e.has_value());
        EXPECT_EQ(e->state(), SqlState::kLeaseLost);
        EXPECT_TRUE(contains(e->detail(), "nobody holds")) << e->detail();
        EXPECT_TRUE(contains(e->detail(), "generation " + std::to_string(caller))) << e->detail();
        EXPECT_TRUE(contains(e->detail(), "generation " + std::to_string(current))) << e->detail();
    }
}

TEST(CheckOwner, ExtremeGenerationsAreWrittenOut) {
    auto e = error_of([] { check_owner(kMin64, kMax64, true, kRun); });
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(contains(e->detail(), std::to_string(kMin64))) << e->detail();
    EXPECT_TRUE(contains(e->detail(), std::to_string(kMax64))) << e->detail();
}

// ---------------------------------------------------------------- next_step

constexpr int kMaxAttempts = 3;

TEST(NextStep, PendingAndRunningAreReturnedToTheirHandler) {
    // Attempts and deadlines concern failed stages only.
    for (StageStatus s : {StageStatus::kPending, StageStatus::kRunning})
        for (int attempt : {0, 1, kMaxAttempts - 1, kMaxAttempts, kMaxAttempts + 1})
            for (bool before : kBools)
                EXPECT_EQ(next_step(s, attempt, kMaxAttempts, before), Step::kReturnStage)
                    << stage_status_name(s) << " attempt " << attempt << " before_deadline " << before;
}

TEST(NextStep, CompletedIsDecided) {
    for (int attempt : {0, 1, kMaxAttempts - 1, kMaxAttempts, kMaxAttempts + 1})
        for (bool before : kBools)
            EXPECT_EQ(next_step(StageStatus::kCompleted, attempt, kMaxAttempts, before), Step::kDecide)
                << "attempt " << attempt << " before_deadline " << before;
}

TEST(NextStep, FailedWithAttemptsLeftWaitsBeforeTheDeadline) {
    EXPECT_EQ(next_step(StageStatus::kFailed, 1, kMaxAttempts, true), Step::kWait);
    EXPECT_EQ(next_step(StageStatus::kFailed, kMaxAttempts - 1, kMaxAttempts, true), Step::kWait);
    EXPECT_EQ(next_step(StageStatus::kFailed, 999, 1000, true), Step::kWait);
}

TEST(NextStep, FailedWithAttemptsLeftIsReturnedAfterTheDeadline) {
    EXPECT_EQ(next_step(StageStatus::kFailed, 1, kMaxAttempts, false), Step::kReturnStage);
    EXPECT_EQ(next_step(StageStatus::kFailed, kMaxAttempts - 1, kMaxAttempts, false), Step::kReturnStage);
    EXPECT_EQ(next_step(StageStatus::kFailed, 999, 1000, false), Step::kReturnStage);
}

TEST(NextStep, FailedWithAttemptsSpentFailsTheRunAtOnce) {
    // At max_attempts and beyond, before or after the deadline: no waiting for a retry
    // that will never come.
    for (bool before : kBools) {
        EXPECT_EQ(next_step(StageStatus::kFailed, kMaxAttempts, kMaxAttempts, before), Step::kFailRun)
            << "before_deadline " << before;
        EXPECT_EQ(next_step(StageStatus::kFailed, kMaxAttempts + 1, kMaxAttempts, before), Step::kFailRun)
            << "before_deadline " << before;
        EXPECT_EQ(next_step(StageStatus::kFailed, 1, 1, before), Step::kFailRun) << "before_deadline " << before;
        EXPECT_EQ(next_step(StageStatus::kFailed, 1000, 1000, before), Step::kFailRun)
            << "before_deadline " << before;
        EXPECT_EQ(next_step(StageStatus::kFailed, std::numeric_limits<int>::max(), 1000, before), Step::kFailRun)
            << "before_deadline " << before;
    }
}

// Every combination, against the rule as docs/internals/contract.md states it.
TEST(NextStep, EveryCombination) {
    for (StageStatus s : kAllStageStatuses)
        for (int attempt : {0, 1, kMaxAttempts - 1, kMaxAttempts, kMaxAttempts + 1})
            for (bool before : kBools) {
                Step expected = Step::kReturnStage;
                if (s == StageStatus::kCompleted)
                    expected = Step::kDecide;
                else if (s == StageStatus::kFailed)
                    expected = attempt >= kMaxAttempts ? Step::kFailRun : before ? Step::kWait : Step::kReturnStage;
                EXPECT_EQ(next_step(s, attempt, kMaxAttempts, before), expected)
                    << stage_status_name(s) << " attempt " << attempt << "/" << kMaxAttempts << " before_deadline "
                    << before;
            }
}

// ---------------------------------------------------------------- approve_verdict

struct ApproveCase {
    Status status;
    bool digest_matches;
    bool someone_else;
    std::optional<SqlState> error;  // set: approve refuses with it
    Approval verdict;               // otherwise: what approve does
};

constexpr Approval kApprove = Approval::kApprove;
constexpr Approval kNothing = Approval::kNothing;

// The whole table: run status x digest match x approved by someone else.
constexpr ApproveCase kApproveTable[] = {
    // A cancelled run is DU007 before anything else, even with a wrong digest.
    {Status::kCancelled, false, false, kDU007, kNothing},
    {Status::kCancelled, false, true, kDU007, kNothing},
    {Status::kCancelled, true, false, kDU007, kNothing},
    {Status::kCancelled, true, true, kDU007, kNothing},
    // A wrong digest is DU006 for every other status, whoever approved.
    {Status::kSubmitted, false, false, kDU006, kNothing},
    {Status::kSubmitted, false, true, kDU006, kNothing},
    {Status::kApproved, false, false, kDU006, kNothing},
    {Status::kApproved, false, true, kDU006, kNothing},
    {Status::kRunning, false, false, kDU006, kNothing},
    {Status::kRunning, false, true, kDU006, kNothing},
    {Status::kCompleted, false, false, kDU006, kNothing},
    {Status::kCompleted, false, true, kDU006, kNothing},
    {Status::kFailed, false, false, kDU006, kNothing},
    {Status::kFailed, false, true, kDU006, kNothing},
    // A submitted run with the right digest is approved.
    {Status::kSubmitted, true, false, kOk, kApprove},
    {Status::kSubmitted, true, true, kOk, kApprove},
    // Already approved: a repeat does nothing, another approver is DU007.
    {Status::kApproved, true, false, kOk, kNothing},
    {Status::kApproved, true, true, kDU007, kNothing},
    {Status::kRunning, true, false, kOk, kNothing},
    {Status::kRunning, true, true, kDU007, kNothing},
    {Status::kCompleted, true, false, kOk, kNothing},
    {Status::kCompleted, true, true, kDU007, kNothing},
    {Status::kFailed, true, false, kOk, kNothing},
    {Status::kFailed, true, true, kDU007, kNothing},
};

TEST(ApproveVerdict, TableCoversEveryCombination) {
    std::set<std::tuple<int, bool, bool>> seen;
    for (const ApproveCase& c : kApproveTable)
        EXPECT_TRUE(seen.insert({static_cast<int>(c.status), c.digest_matches, c.someone_else}).second);
    EXPECT_EQ(seen.size(), std::size(kAllStatuses) * 2 * 2);
}

TEST(ApproveVerdict, EveryCombination) {
    for (const ApproveCase& c : kApproveTable) {
        std::optional<Approval> got;
        auto state = state_of([&] { got = approve_verdict(c.status, c.digest_matches, c.someone_else, kRun); });
        EXPECT_EQ(state, c.error) << status_name(c.status) << " digest_matches " << c.digest_matches
                                  << " someone_else " << c.someone_else;
        if (!c.error) {
            ASSERT_TRUE(got.has_value());
            EXPECT_EQ(*got, c.verdict) << status_name(c.status) << " digest_matches " << c.digest_matches
                                       << " someone_else " << c.someone_else;
        }
    }
}

TEST(ApproveVerdict, CancelledMessageSaysCancelled) {
    auto e = error_of([] { approve_verdict(Status::kCancelled, false, true, kRun); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kInvalidState);
    EXPECT_EQ(e->message(), std::string("run ") + kRun + " is cancelled");
}

TEST(ApproveVerdict, DigestMismatchPointsAtInputsDigest) {
    auto e = error_of([] { approve_verdict(Status::kSubmitted, false, false, kRun); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kDigestMismatch);
    EXPECT_STREQ(e->code(), "DU006");
    EXPECT_EQ(e->message(), std::string("approval digest does not match the inputs of run ") + kRun);
    EXPECT_TRUE(contains(e->hint(), "baton.inputs_digest()")) << e->hint();
}

TEST(ApproveVerdict, AnotherApproverDetailNamesTheRunStatus) {
    for (Status s : {Status::kApproved, Status::kRunning, Status::kCompleted, Status::kFailed}) {
        auto e = error_of([&] { approve_verdict(s, true, true, kRun); });
        ASSERT_TRUE(e.has_value()) << status_name(s);
        EXPECT_EQ(e->state(), SqlState::kInvalidState);
        EXPECT_EQ(e->message(), std::string("run ") + kRun + " is already approved");
        EXPECT_TRUE(contains(e->detail(), std::string("is ") + status_name(s))) << e->detail();
    }
}

// ---------------------------------------------------------------- cancel_verdict

TEST(CancelVerdict, RunsThatHaveNotEndedAreCancelled) {
    for (Status s : {Status::kSubmitted, Status::kApproved, Status::kRunning}) {
        std::optional<Cancellation> got;
        EXPECT_EQ(state_of([&] { got = cancel_verdict(s, kRun); }), kOk) << status_name(s);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, Cancellation::kCancel) << status_name(s);
    }
}

TEST(CancelVerdict, CancelledRunDoesNothing) {
    std::optional<Cancellation> got;
    EXPECT_EQ(state_of([&] { got = cancel_verdict(Status::kCancelled, kRun); }), kOk);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, Cancellation::kNothing);
}

TEST(CancelVerdict, CompletedAndFailedRunsAreDU007NamingTheStatus) {
    for (Status s : {Status::kCompleted, Status::kFailed}) {
        auto e = error_of([&] { cancel_verdict(s, kRun); });
        ASSERT_TRUE(e.has_value()) << status_name(s);
        EXPECT_EQ(e->state(), SqlState::kInvalidState) << status_name(s);
        EXPECT_EQ(e->message(), std::string("run ") + kRun + " is already " + status_name(s));
    }
}

TEST(CancelVerdict, EveryStatusIsCovered) {
    int cancel = 0, nothing = 0, refused = 0;
    for (Status s : kAllStatuses) {
        std::optional<Cancellation> got;
        if (state_of([&] { got = cancel_verdict(s, kRun); }))
            ++refused;
        else if (*got == Cancellation::kCancel)
            ++cancel;
        else
            ++nothing;
    }
    EXPECT_EQ(cancel, 3);
    EXPECT_EQ(nothing, 1);
    EXPECT_EQ(refused, 2);
}

// ---------------------------------------------------------------- may_acquire

TEST(MayAcquire, TerminalRunsAreNeverAcquired) {
    for (Status s : {Status::kCompleted, Status::kFailed, Status::kCancelled})
        for (bool unexpired : kBools)
            for (bool same : kBools)
                EXPECT_FALSE(may_acquire(s, unexpired, same))
                    << status_name(s) << " unexpired " << unexpired << " same_owner " << same;
}

TEST(MayAcquire, OpenRunsGoToAnyoneOnceTheLeaseExpired) {
    // Includes submitted: the owner may wait for approval.
    for (Status s : {Status::kSubmitted, Status::kApproved, Status::kRunning})
        for (bool same : kBools)
            EXPECT_TRUE(may_acquire(s, false, same)) << status_name(s) << " same_owner " << same;
}

TEST(MayAcquire, UnexpiredLeaseGoesOnlyToItsOwner) {
    for (Status s : {Status::kSubmitted, Status::kApproved, Status::kRunning}) {
        EXPECT_TRUE(may_acquire(s, true, true)) << status_name(s);
        EXPECT_FALSE(may_acquire(s, true, false)) << status_name(s);
    }
}

TEST(MayAcquire, TruthTable) {
    for (Status s : kAllStatuses)
        for (bool unexpired : kBools)
            for (bool same : kBools) {
                const bool open = s == Status::kSubmitted || s == Status::kApproved || s == Status::kRunning;
                EXPECT_EQ(may_acquire(s, unexpired, same), open && (!unexpired || same))
                    << status_name(s) << " unexpired " << unexpired << " same_owner " << same;
            }
}

// ---------------------------------------------------------------- check_start

// check_start with the error it threw, if any.
std::optional<Error> start_error(Status run, StageStatus stage, bool is_current, bool before, int attempt,
                                 int max_attempts = kMaxAttempts) {
    return error_of([&] { check_start(run, stage, is_current, before, attempt, max_attempts, kRun, kStage); });
}

TEST(CheckStart, PendingAndRunningCurrentStagesStart) {
    // Running: a restarted handler starts it again.
    for (StageStatus s : {StageStatus::kPending, StageStatus::kRunning})
        for (bool before : kBools)
            for (int attempt : {0, 1, kMaxAttempts - 1})
                EXPECT_EQ(state_of([&] { check_start(Status::kRunning, s, true, before, attempt, kMaxAttempts, kRun, kStage); }),
                          kOk)
                    << stage_status_name(s) << " attempt " << attempt << " before_deadline " << before;
}

TEST(CheckStart, FailedPastItsDeadlineWithAttemptsLeftStarts) {
    EXPECT_EQ(state_of([] { check_start(Status::kRunning, StageStatus::kFailed, true, false, 1, 3, kRun, kStage); }), kOk);
    EXPECT_EQ(state_of([] { check_start(Status::kRunning, StageStatus::kFailed, true, false, 2, 3, kRun, kStage); }), kOk);
    EXPECT_EQ(state_of([] { check_start(Status::kRunning, StageStatus::kFailed, true, false, 999, 1000, kRun, kStage); }), kOk);
}

TEST(CheckStart, RunNotRunningIsDU007NamingTheRunStatus) {
    // The run is checked first: even a stage that could start is refused.
    for (Status r : kAllStatuses) {
        if (r == Status::kRunning) continue;
        for (StageStatus s : kAllStageStatuses)
            for (bool current : kBools) {
                auto e = start_error(r, s, current, false, 1);
                ASSERT_TRUE(e.has_value()) << status_name(r) << " " << stage_status_name(s);
                EXPECT_EQ(e->state(), SqlState::kInvalidState);
                EXPECT_EQ(e->message(), std::string("run ") + kRun + " is " + status_name(r));
            }
    }
}

TEST(CheckStart, StageNotCurrentIsDU007) {
    // Checked before the stage's own status: every status, every attempt count.
    for (StageStatus s : kAllStageStatuses)
        for (bool before : kBools)
            for (int attempt : {1, kMaxAttempts}) {
                auto e = start_error(Status::kRunning, s, false, before, attempt);
                ASSERT_TRUE(e.has_value()) << stage_status_name(s);
                EXPECT_EQ(e->state(), SqlState::kInvalidState);
                EXPECT_EQ(e->message(), std::string("stage 4242 of run ") + kRun + " is not its current stage");
            }
}

TEST(CheckStart, CompletedStageIsDU007) {
    for (bool before : kBools)
        for (int attempt : {1, kMaxAttempts, kMaxAttempts + 1}) {
            auto e = start_error(Status::kRunning, StageStatus::kCompleted, true, before, attempt);
            ASSERT_TRUE(e.has_value());
            EXPECT_EQ(e->state(), SqlState::kInvalidState);
            EXPECT_TRUE(contains(e->message(), "already completed")) << e->message();
        }
}

TEST(CheckStart, FailedWithAttemptsSpentIsDU007BeforeOrAfterTheDeadline) {
    for (bool before : kBools)
        for (auto [attempt, max] : {std::pair{3, 3}, {4, 3}, {1, 1}, {1000, 1000}}) {
            auto e = start_error(Status::kRunning, StageStatus::kFailed, true, before, attempt, max);
            ASSERT_TRUE(e.has_value()) << attempt << "/" << max << " before_deadline " << before;
            EXPECT_EQ(e->state(), SqlState::kInvalidState);
            // Spent attempts are named, not the deadline.
            EXPECT_TRUE(contains(e->message(), "spent its attempts")) << e->message();
        }
}

TEST(CheckStart, FailedBeforeItsDeadlineIsDU007) {
    for (auto [attempt, max] : {std::pair{1, 3}, {2, 3}, {999, 1000}}) {
        auto e = start_error(Status::kRunning, StageStatus::kFailed, true, true, attempt, max);
        ASSERT_TRUE(e.has_value()) << attempt << "/" << max;
        EXPECT_EQ(e->state(), SqlState::kInvalidState);
        EXPECT_TRUE(contains(e->message(), "retry deadline")) << e->message();
    }
}

// Every combination, against the rule as choices.md states it.
TEST(CheckStart, EveryCombination) {
    for (Status r : kAllStatuses)
        for (StageStatus s : kAllStageStatuses)
            for (bool current : kBools)
                for (bool before : kBools)
                    for (int attempt : {0, 1, kMaxAttempts - 1, kMaxAttempts, kMaxAttempts + 1}) {
                        bool allowed = r == Status::kRunning && current &&
                                       (s == StageStatus::kPending || s == StageStatus::kRunning ||
                                        (s == StageStatus::kFailed && !before && attempt < kMaxAttempts));
                        EXPECT_EQ(state_of([&] { check_start(r, s, current, before, attempt, kMaxAttempts, kRun, kStage); }),
                                  allowed ? kOk : kDU007)
                            << "run " << status_name(r) << " stage " << stage_status_name(s) << " current "
                            << current << " before_deadline " << before << " attempt " << attempt;
                    }
}

// ---------------------------------------------------------------- check_settle

constexpr const char* kSettleCalls[] = {"complete_stage", "fail_stage"};

TEST(CheckSettle, RunningCurrentStageOfARunningRunPasses) {
    for (const char* call : kSettleCalls)
        EXPECT_EQ(state_of([&] { check_settle(Status::kRunning, StageStatus::kRunning, true, call, kRun, kStage); }), kOk)
            << call;
}

TEST(CheckSettle, RunNotRunningIsDU007NamingTheRunStatusAndTheCall) {
    for (const char* call : kSettleCalls)
        for (Status r : kAllStatuses) {
            if (r == Status::kRunning) continue;
            for (StageStatus s : kAllStageStatuses)
                for (bool current : kBools) {
                    auto e = error_of([&] { check_settle(r, s, current, call, kRun, kStage); });
                    ASSERT_TRUE(e.has_value()) << call << " " << status_name(r);
                    EXPECT_EQ(e->state(), SqlState::kInvalidState);
                    EXPECT_EQ(e->message(), std::string("run ") + kRun + " is " + status_name(r));
                    EXPECT_TRUE(contains(e->detail(), call)) << e->detail();
                }
        }
}

TEST(CheckSettle, StageNotCurrentIsDU007) {
    for (const char* call : kSettleCalls)
        for (StageStatus s : kAllStageStatuses) {
            auto e = error_of([&] { check_settle(Status::kRunning, s, false, call, kRun, kStage); });
            ASSERT_TRUE(e.has_value()) << call << " " << stage_status_name(s);
            EXPECT_EQ(e->state(), SqlState::kInvalidState);
            EXPECT_EQ(e->message(), std::string("stage 4242 of run ") + kRun + " is not its current stage");
            EXPECT_TRUE(contains(e->detail(), call)) << e->detail();
        }
}

TEST(CheckSettle, StageNotRunningIsDU007NamingItsStatus) {
    for (const char* call : kSettleCalls)
        for (StageStatus s : {StageStatus::kPending, StageStatus::kCompleted, StageStatus::kFailed}) {
            auto e = error_of([&] { check_settle(Status::kRunning, s, true, call, kRun, kStage); });
            ASSERT_TRUE(e.has_value()) << call << " " << stage_status_name(s);
            EXPECT_EQ(e->state(), SqlState::kInvalidState);
            EXPECT_EQ(e->message(), std::string("stage 4242 of run ") + kRun + " is " + stage_status_name(s));
            EXPECT_TRUE(contains(e->detail(), call)) << e->detail();
            EXPECT_TRUE(contains(e->detail(), "baton.start_stage()")) << e->detail();
        }
}

TEST(CheckStartAndSettle, EveryRefusalNamesTheRunAndItsStage) {
    for (Status r : kAllStatuses)
        for (StageStatus s : kAllStageStatuses)
            for (bool current : kBools)
                for (bool before : kBools) {
                    std::vector<std::optional<Error>> refusals = {
                        error_of([&] { check_start(r, s, current, before, 3, kMaxAttempts, kRun, kStage); }),
                        error_of([&] { check_settle(r, s, current, "fail_stage", kRun, kStage); })};
                    for (const auto& e : refusals) {
                        if (!e) continue;
                        EXPECT_TRUE(contains(e->message(), std::string("run ") + kRun)) << e->message();
                        if (e->message().rfind("stage", 0) == 0) {
                            EXPECT_TRUE(contains(e->message(), "stage 4242 of run")) << e->message();
                        }
                    }
                }
}

TEST(CheckSettle, EveryCombination) {
    for (const char* call : kSettleCalls)
        for (Status r : kAllStatuses)
            for (StageStatus s : kAllStageStatuses)
                for (bool current : kBools) {
                    bool allowed = r == Status::kRunning && current && s == StageStatus::kRunning;
                    EXPECT_EQ(state_of([&] { check_settle(r, s, current, call, kRun, kStage); }), allowed ? kOk : kDU007)
                        << call << " run " << status_name(r) << " stage " << stage_status_name(s) << " current "
                        << current;
                }
}

}  // namespace
}  // namespace baton::run
