// Unit tests for the rules of at-most-once markers (src/core/marker.*).
#include "core/marker.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <string>

#include "core/error.hpp"
#include "state_of.hpp"

namespace baton::marker {

void PrintTo(State s, std::ostream* os) {
    *os << state_name(s);
}

namespace {

using baton::test::error_of;
using baton::test::state_of;

constexpr std::optional<SqlState> kOk = std::nullopt;
// The run and the marker (entry, position) every refusal below must name.
constexpr const char* kRun = "6f1c2d3e-0000-4000-8000-00000000abcd";
constexpr std::int64_t kEntry = 77;
constexpr std::int64_t kPosition = 3;
constexpr std::optional<SqlState> k22023 = SqlState::kInvalidParameterValue;
constexpr std::optional<SqlState> kDU001 = SqlState::kLeaseLost;
constexpr std::optional<SqlState> kDU007 = SqlState::kInvalidState;

constexpr State kAllStates[] = {State::kInProgress, State::kDone, State::kFailed, State::kRetry};
constexpr State kSettledStates[] = {State::kDone, State::kFailed, State::kRetry};

constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin64 = std::numeric_limits<std::int64_t>::min();

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// ---------------------------------------------------------------- states

TEST(MarkerState, ParseAndNameRoundTrip) {
    for (State s : kAllStates) {
        auto parsed = parse_state(state_name(s));
        ASSERT_TRUE(parsed.has_value()) << state_name(s);
        EXPECT_EQ(*parsed, s);
    }
    EXPECT_STREQ(state_name(State::kInProgress), "in_progress");
    EXPECT_STREQ(state_name(State::kDone), "done");
    EXPECT_STREQ(state_name(State::kFailed), "failed");
    EXPECT_STREQ(state_name(State::kRetry), "retry");
}

TEST(MarkerState, NamesAreDistinct) {
    std::set<std::string> seen;
    for (State s : kAllStates)
        EXPECT_TRUE(seen.insert(state_name(s)).second) << "duplicate " << state_name(s);
}

TEST(MarkerState, ParseRefusesOtherSpellings) {
    for (const char* text : {"", "Done", "FAILED", "in progress", "in-progress", "inprogress", "retry ", " done",
                             "pending", "completed"})
        EXPECT_FALSE(parse_state(text).has_value()) << '"' << text << '"';
    EXPECT_FALSE(parse_state(std::string_view("done\0", 5)).has_value());
}

// ---------------------------------------------------------------- parse_completion (complete_marker)

TEST(ParseCompletion, AcceptsDoneAndFailed) {
    EXPECT_EQ(parse_completion("done"), State::kDone);
    EXPECT_EQ(parse_completion("failed"), State::kFailed);
}

TEST(ParseCompletion, RefusesInProgressRetryAndOthersWith22023NamingState) {
    for (const char* text : {"in_progress", "retry", "", "Done", "FAILED", "done ", "finished", "ok"}) {
        auto e = error_of([&] { parse_completion(text); });
        ASSERT_TRUE(e.has_value()) << '"' << text << '"';
        EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << '"' << text << '"';
        EXPECT_TRUE(contains(e->message(), "\"state\"")) << e->message();
    }
    EXPECT_EQ(state_of([] { parse_completion(std::string_view("done\0", 5)); }), k22023);
}

TEST(ParseCompletion, ErrorEchoesTheTextBoundedly) {
    auto e = error_of([] { parse_completion("retry"); });
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(contains(e->detail(), "\"retry\"")) << e->detail();

    const std::string huge(10000, 'x');
    e = error_of([&] { parse_completion(huge); });
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(contains(e->detail(), std::string(64, 'x'))) << e->detail();
    EXPECT_FALSE(contains(e->detail(), std::string(65, 'x')));
    EXPECT_LT(e->detail().size(), 200u);
}

// ---------------------------------------------------------------- parse_resolution (resolve_marker)

TEST(ParseResolution, AcceptsDoneFailedAndRetry) {
    EXPECT_EQ(parse_resolution("done"), State::kDone);
    EXPECT_EQ(parse_resolution("failed"), State::kFailed);
    EXPECT_EQ(parse_resolution("retry"), State::kRetry);
}

TEST(ParseResolution, RefusesInProgressAndOthersWith22023NamingOutcome) {
    for (const char* text : {"in_progress", "", "Done", "RETRY", "retry ", "finished", "pending"}) {
        auto e = error_of([&] { parse_resolution(text); });
        ASSERT_TRUE(e.has_value()) << '"' << text << '"';
        EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << '"' << text << '"';
        EXPECT_TRUE(contains(e->message(), "\"outcome\"")) << e->message();
    }
    EXPECT_EQ(state_of([] { parse_resolution(std::string_view("retry\0", 6)); }), k22023);
}

TEST(ParseResolution, ErrorEchoesTheTextBoundedly) {
    auto e = error_of([] { parse_resolution("in_progress"); });
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(contains(e->detail(), "\"in_progress\"")) << e->detail();

    const std::string huge(10000, 'y');
    e = error_of([&] { parse_resolution(huge); });
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(contains(e->detail(), std::string(64, 'y'))) << e->detail();
    EXPECT_FALSE(contains(e->detail(), std::string(65, 'y')));
    EXPECT_LT(e->detail().size(), 200u);
}

// ---------------------------------------------------------------- in_doubt

TEST(InDoubt, InProgressClaimedUnderAnOlderGeneration) {
    EXPECT_TRUE(in_doubt(State::kInProgress, 6, 7));
    EXPECT_TRUE(in_doubt(State::kInProgress, 1, 7));
    EXPECT_TRUE(in_doubt(State::kInProgress, 0, 1));
    EXPECT_TRUE(in_doubt(State::kInProgress, kMin64, kMax64));
    EXPECT_TRUE(in_doubt(State::kInProgress, kMax64 - 1, kMax64));
}

TEST(InDoubt, InProgressUnderTheCurrentGenerationIsNot) {
    for (std::int64_t g : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, kMax64})
        EXPECT_FALSE(in_doubt(State::kInProgress, g, g)) << "generation " << g;
}

TEST(InDoubt, InProgressUnderANewerGenerationIsNot) {
    EXPECT_FALSE(in_doubt(State::kInProgress, 8, 7));
    EXPECT_FALSE(in_doubt(State::kInProgress, kMax64, 0));
}

TEST(InDoubt, SettledMarkersNeverAre) {
    for (State s : kSettledStates)
        for (auto [claimed, current] : {std::pair<std::int64_t, std::int64_t>{6, 7}, {7, 7}, {8, 7}, {0, kMax64}})
            EXPECT_FALSE(in_doubt(s, claimed, current))
                << state_name(s) << " claimed " << claimed << " run " << current;
}

TEST(InDoubt, Table) {
    for (State s : kAllStates)
        for (std::int64_t claimed : {5, 6, 7, 8})
            EXPECT_EQ(in_doubt(s, claimed, 7), s == State::kInProgress && claimed < 7)
                << state_name(s) << " claimed " << claimed;
}

// ---------------------------------------------------------------- check_resolve

constexpr std::int64_t kRunGen = 7;

TEST(CheckResolve, MarkerInDoubtResolvedByTheCurrentOwnerPasses) {
    EXPECT_EQ(state_of([] { check_resolve(State::kInProgress, kRunGen - 1, kRunGen, true, kRunGen, kRun, kEntry, kPosition); }), kOk);
    EXPECT_EQ(state_of([] { check_resolve(State::kInProgress, 0, kRunGen, true, kRunGen, kRun, kEntry, kPosition); }), kOk);
    EXPECT_EQ(state_of([] { check_resolve(State::kInProgress, 1, kMax64, true, kMax64, kRun, kEntry, kPosition); }), kOk);
}

TEST(CheckResolve, NotOwnedIsDU001FirstWhateverTheMarker) {
    // Even at the run's generation, and before anything about the marker.
    for (State s : kAllStates)
        for (std::int64_t claimed : {kRunGen - 1, kRunGen})
            for (std::int64_t caller : {kRunGen, kRunGen - 1, kRunGen + 1}) {
                auto e = error_of([&] { check_resolve(s, claimed, kRunGen, false, caller, kRun, kEntry, kPosition); });
                ASSERT_TRUE(e.has_value()) << state_name(s);
                EXPECT_EQ(e->state(), SqlState::kLeaseLost)
                    << state_name(s) << " claimed " << claimed << " caller " << caller;
                EXPECT_TRUE(contains(e->detail(), "nobody holds")) << e->detail();
            }
}

TEST(CheckResolve, OwnedButAnotherGenerationIsDU001FirstWhateverTheMarker) {
    // The caller's generation is superseded (or from the future): DU001 before the
    // marker's state, even when the marker is in doubt.
    for (State s : kAllStates)
        for (std::int64_t claimed : {kRunGen - 1, kRunGen})
            for (std::int64_t caller : {kRunGen - 1, kRunGen + 1, std::int64_t{0}}) {
                auto e = error_of([&] { check_resolve(s, claimed, kRunGen, true, caller, kRun, kEntry, kPosition); });
                ASSERT_TRUE(e.has_value()) << state_name(s);
                EXPECT_EQ(e->state(), SqlState::kLeaseLost)
                    << state_name(s) << " claimed " << claimed << " caller " << caller;
                EXPECT_FALSE(contains(e->detail(), "nobody holds")) << e->detail();
            }
}

TEST(CheckResolve, SettledMarkerIsDU007NamingItsState) {
    // Checked before "in doubt": a settled marker claimed under an older generation
    // says what it is.
    for (State s : kSettledStates)
        for (std::int64_t claimed : {kRunGen - 1, kRunGen}) {
            auto e = error_of([&] { check_resolve(s, claimed, kRunGen, true, kRunGen, kRun, kEntry, kPosition); });
            ASSERT_TRUE(e.has_value()) << state_name(s);
            EXPECT_EQ(e->state(), SqlState::kInvalidState) << state_name(s);
            EXPECT_EQ(e->message(), std::string("marker at position 3 of entry 77 is ") + state_name(s));
        }
}

TEST(CheckResolve, InProgressUnderTheCurrentGenerationIsDU007NotInDoubt) {
    auto e = error_of([] { check_resolve(State::kInProgress, kRunGen, kRunGen, true, kRunGen, kRun, kEntry, kPosition); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kInvalidState);
    EXPECT_EQ(e->message(), "marker at position 3 of entry 77 is not in doubt");
    EXPECT_TRUE(contains(e->detail(), "baton.complete_marker()")) << e->detail();
}

TEST(CheckResolve, InProgressUnderANewerGenerationIsDU007NotInDoubt) {
    auto e = error_of([] { check_resolve(State::kInProgress, kRunGen + 1, kRunGen, true, kRunGen, kRun, kEntry, kPosition); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kInvalidState);
    EXPECT_EQ(e->message(), "marker at position 3 of entry 77 is not in doubt");
}

TEST(CheckResolve, EveryCombination) {
    for (State s : kAllStates)
        for (std::int64_t claimed : {kRunGen - 1, kRunGen, kRunGen + 1})
            for (bool owned : {false, true})
                for (std::int64_t caller : {kRunGen - 1, kRunGen, kRunGen + 1}) {
                    std::optional<SqlState> expected = kOk;
                    if (!owned || caller != kRunGen)
                        expected = kDU001;
                    else if (s != State::kInProgress || claimed >= kRunGen)
                        expected = kDU007;
                    EXPECT_EQ(state_of([&] { check_resolve(s, claimed, kRunGen, owned, caller, kRun, kEntry, kPosition); }), expected)
                        << state_name(s) << " claimed " << claimed << " owned " << owned << " caller " << caller;
                }
}

// ---------------------------------------------------------------- check_position

TEST(CheckPosition, ZeroOrMore) {
    EXPECT_EQ(state_of([] { check_position(0); }), kOk);
    EXPECT_EQ(state_of([] { check_position(1); }), kOk);
    EXPECT_EQ(state_of([] { check_position(std::numeric_limits<std::int32_t>::max()); }), kOk);
    EXPECT_EQ(state_of([] { check_position(kMax64); }), kOk);
}

TEST(CheckPosition, NegativeIs22023NamingPosition) {
    for (std::int64_t p : {std::int64_t{-1}, std::int64_t{-2}, std::int64_t{std::numeric_limits<std::int32_t>::min()},
                           kMin64}) {
        auto e = error_of([&] { check_position(p); });
        ASSERT_TRUE(e.has_value()) << p;
        EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << p;
        EXPECT_TRUE(contains(e->message(), "\"position\"")) << e->message();
        EXPECT_TRUE(contains(e->detail(), std::to_string(p))) << e->detail();
    }
}

}  // namespace
}  // namespace baton::marker
