// Unit tests for tenant states and the moves between them (src/core/tenant.*).
#include "core/tenant.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/error.hpp"
#include "state_of.hpp"

namespace baton::tenant {

void PrintTo(State s, std::ostream* os) {
    *os << state_name(s);
}

namespace {

using baton::test::error_of;

// The tenant every refusal names.
constexpr const char* kTenant = "11111111-1111-1111-1111-111111111111";
using baton::test::state_of;

constexpr State kAllStates[] = {State::kActive, State::kQuiescing, State::kFenced, State::kDeleted};

TEST(TenantState, ParseAndNameRoundTrip) {
    for (State s : kAllStates) {
        auto parsed = parse_state(state_name(s));
        ASSERT_TRUE(parsed.has_value()) << state_name(s);
        EXPECT_EQ(*parsed, s);
        EXPECT_EQ(parse_state_argument(state_name(s)), s);
    }
    EXPECT_STREQ(state_name(State::kActive), "active");
    EXPECT_STREQ(state_name(State::kQuiescing), "quiescing");
    EXPECT_STREQ(state_name(State::kFenced), "fenced");
    EXPECT_STREQ(state_name(State::kDeleted), "deleted");
}

TEST(TenantState, ParseRefusesOtherSpellings) {
    for (const char* text : {"", "Active", "DELETED", "active ", " fenced", "paused", "quiesced"})
        EXPECT_FALSE(parse_state(text).has_value()) << '"' << text << '"';
    EXPECT_FALSE(parse_state(std::string_view("active\0", 7)).has_value());
}

TEST(TenantState, ArgumentOutsideTheFourStatesIs22023) {
    for (const char* text : {"", "Active", "paused", "deleted!"})
        EXPECT_EQ(state_of([&] { parse_state_argument(text); }),
                  std::optional<SqlState>(SqlState::kInvalidParameterValue))
            << '"' << text << '"';
}

TEST(TenantState, ArgumentErrorNamesTheArgumentAndBoundsTheEcho) {
    const std::string huge(5000, 'z');
    auto e = error_of([&] { parse_state_argument(huge); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue);
    EXPECT_NE(e->message().find("\"state\""), std::string::npos) << e->message();
    EXPECT_EQ(e->detail().find(std::string(65, 'z')), std::string::npos);
    EXPECT_LT(e->detail().size(), 200u);
}

TEST(TenantMove, DeletedIsFinal) {
    for (State to : {State::kActive, State::kQuiescing, State::kFenced}) {
        auto e = error_of([&] { check_move(State::kDeleted, to, kTenant); });
        ASSERT_TRUE(e.has_value()) << "deleted -> " << state_name(to);
        EXPECT_EQ(e->state(), SqlState::kInvalidState) << "deleted -> " << state_name(to);
        EXPECT_NE(e->detail().find(state_name(to)), std::string::npos) << e->detail();
        EXPECT_EQ(e->message(), std::string("tenant ") + kTenant + " is deleted");
    }
}

TEST(TenantMove, SameStateIsAllowed) {
    for (State s : kAllStates)
        EXPECT_EQ(state_of([&] { check_move(s, s, kTenant); }), std::nullopt) << state_name(s);
}

TEST(TenantMove, EveryMoveNotOutOfDeletedIsAllowed) {
    for (State from : {State::kActive, State::kQuiescing, State::kFenced})
        for (State to : kAllStates)
            EXPECT_EQ(state_of([&] { check_move(from, to, kTenant); }), std::nullopt)
                << state_name(from) << " -> " << state_name(to);
}

TEST(TenantWrites, OnlyActiveTenantsAcceptWrites) {
    EXPECT_TRUE(writes_allowed(State::kActive));
    EXPECT_FALSE(writes_allowed(State::kQuiescing));
    EXPECT_FALSE(writes_allowed(State::kFenced));
    EXPECT_FALSE(writes_allowed(State::kDeleted));
}

}  // namespace
}  // namespace baton::tenant
