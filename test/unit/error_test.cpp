// Unit tests for baton::Error, its helpers and the SQLSTATE codes (src/core/error.*,
// src/core/sqlstate.hpp).
#include "core/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "core/sqlstate.hpp"
#include "state_of.hpp"

namespace baton {
namespace {

using baton::test::error_of;
using baton::test::state_of;

constexpr int kStateCount = static_cast<int>(SqlState::kInternal) + 1;

// ---------------------------------------------------------------- sqlstate_code

TEST(SqlStateCode, EveryStateHasAFiveCharacterCode) {
    for (int i = 0; i < kStateCount; ++i) {
        const char* code = sqlstate_code(static_cast<SqlState>(i));
        ASSERT_NE(code, nullptr) << "enumerator " << i;
        ASSERT_EQ(std::strlen(code), 5u) << "enumerator " << i << ": " << code;
        for (int k = 0; k < 5; ++k)
            EXPECT_TRUE((code[k] >= '0' && code[k] <= '9') || (code[k] >= 'A' && code[k] <= 'Z'))
                << "enumerator " << i << ": " << code;
    }
}

TEST(SqlStateCode, CodesAreDistinct) {
    std::set<std::string> seen;
    for (int i = 0; i < kStateCount; ++i)
        EXPECT_TRUE(seen.insert(sqlstate_code(static_cast<SqlState>(i))).second)
            << "duplicate " << sqlstate_code(static_cast<SqlState>(i));
}

// The table in docs/internals/contract.md, "Errors".
TEST(SqlStateCode, DuClassMatchesTheContract) {
    EXPECT_STREQ(sqlstate_code(SqlState::kLeaseLost), "DU001");
    EXPECT_STREQ(sqlstate_code(SqlState::kTenantFenced), "DU002");
    EXPECT_STREQ(sqlstate_code(SqlState::kTransitionNotAllowed), "DU003");
    EXPECT_STREQ(sqlstate_code(SqlState::kCorruptHistory), "DU004");
    EXPECT_STREQ(sqlstate_code(SqlState::kTargetNotAuthorized), "DU005");
    EXPECT_STREQ(sqlstate_code(SqlState::kDigestMismatch), "DU006");
    EXPECT_STREQ(sqlstate_code(SqlState::kInvalidState), "DU007");
    EXPECT_STREQ(sqlstate_code(SqlState::kNotFound), "DU008");
    EXPECT_STREQ(sqlstate_code(SqlState::kDedupConflict), "DU009");
}

TEST(SqlStateCode, StandardCodes) {
    EXPECT_STREQ(sqlstate_code(SqlState::kNullValueNotAllowed), "22004");
    EXPECT_STREQ(sqlstate_code(SqlState::kInvalidParameterValue), "22023");
    EXPECT_STREQ(sqlstate_code(SqlState::kReadOnlyTransaction), "25006");
    EXPECT_STREQ(sqlstate_code(SqlState::kInsufficientPrivilege), "42501");
    EXPECT_STREQ(sqlstate_code(SqlState::kObjectNotInPrerequisiteState), "55000");
    EXPECT_STREQ(sqlstate_code(SqlState::kFeatureNotSupported), "0A000");
    EXPECT_STREQ(sqlstate_code(SqlState::kSerializationFailure), "40001");
    EXPECT_STREQ(sqlstate_code(SqlState::kOutOfMemory), "53200");
    EXPECT_STREQ(sqlstate_code(SqlState::kInternal), "XX000");
}

TEST(SqlStateCode, OutOfRangeValueIsInternal) {
    EXPECT_STREQ(sqlstate_code(static_cast<SqlState>(kStateCount + 100)), "XX000");
}

TEST(SqlStateCode, UsableAtCompileTime) {
    constexpr const char* code = sqlstate_code(SqlState::kLeaseLost);
    static_assert(code[0] == 'D' && code[4] == '1' && code[5] == '\0');
    SUCCEED();
}

// ---------------------------------------------------------------- Error

TEST(Error, KeepsStateAndTexts) {
    const Error e(SqlState::kDigestMismatch, "digest differs", "expected abc", "recompute it");
    EXPECT_EQ(e.state(), SqlState::kDigestMismatch);
    EXPECT_STREQ(e.code(), "DU006");
    EXPECT_EQ(e.message(), "digest differs");
    EXPECT_EQ(e.detail(), "expected abc");
    EXPECT_EQ(e.hint(), "recompute it");
    EXPECT_STREQ(e.what(), "digest differs");
}

TEST(Error, DetailAndHintDefaultToEmpty) {
    const Error e(SqlState::kNotFound, "no such run");
    EXPECT_EQ(e.detail(), "");
    EXPECT_EQ(e.hint(), "");
}

TEST(Error, CodeFollowsStateForEveryEnumerator) {
    for (int i = 0; i < kStateCount; ++i) {
        const auto s = static_cast<SqlState>(i);
        EXPECT_STREQ(Error(s, "x").code(), sqlstate_code(s));
    }
}

TEST(Error, IsAStdException) {
    try {
        throw Error(SqlState::kTenantFenced, "tenant is fenced");
    } catch (const std::exception& e) {
        EXPECT_STREQ(e.what(), "tenant is fenced");
        return;
    }
    FAIL() << "baton::Error was not caught as std::exception";
}

// The place of a throw: the line that threw, in this file and function.
int g_thrown_at = 0;

void throws_here() {
    g_thrown_at = __LINE__ + 1;
    throw Error(SqlState::kNotFound, "no such run");
}

TEST(Error, KnowsThePlaceThatRaisedIt) {
    try {
        throws_here();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.where().file).find("error_test.cpp"), std::string::npos) << e.where().file;
        EXPECT_EQ(e.where().line, g_thrown_at);
        EXPECT_STREQ(e.where().function, "throws_here");
        return;
    }
    FAIL() << "nothing thrown";
}

// A helper that throws for its caller reports the caller's place, not its own.
TEST(Error, HelpersReportTheirCallersPlace) {
    int line = 0;
    auto e = error_of([&line] {
        line = __LINE__ + 1;
        check_label("step", 0);
    });
    ASSERT_TRUE(e.has_value());
    EXPECT_NE(std::string(e->where().file).find("error_test.cpp"), std::string::npos) << e->where().file;
    EXPECT_EQ(e->where().line, line);
    auto n = error_of([&line] {
        line = __LINE__ + 1;
        throw_null_argument("tenant");
    });
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(n->where().line, line);
    EXPECT_NE(std::string(n->where().file).find("error_test.cpp"), std::string::npos);
}

TEST(Error, ThrowNullArgumentIs22004NamingTheArgument) {
    auto e = error_of([] { throw_null_argument("dedup_key"); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kNullValueNotAllowed);
    EXPECT_STREQ(e->code(), "22004");
    EXPECT_NE(e->message().find("\"dedup_key\""), std::string::npos) << e->message();
}

TEST(Error, ThrowInvalidArgumentIs22023WithTheDetail) {
    auto e = error_of([] { throw_invalid_argument("lease", "A lease is longer than zero."); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue);
    EXPECT_STREQ(e->code(), "22023");
    EXPECT_NE(e->message().find("\"lease\""), std::string::npos) << e->message();
    EXPECT_EQ(e->detail(), "A lease is longer than zero.");
}


// ---------------------------------------------------------------- check_label

TEST(CheckLabel, OneToTwoHundredCharactersPass) {
    for (std::int64_t chars : {std::int64_t{1}, std::int64_t{2}, std::int64_t{199}, std::int64_t{200}})
        EXPECT_EQ(state_of([&] { check_label("subject", chars); }), std::nullopt) << chars;
}

TEST(CheckLabel, OutsideOneToTwoHundredIs22023NamingTheArgument) {
    for (const char* argument : {"workflow", "owner", "approver", "subject", "step", "kind"})
        for (std::int64_t chars : {std::int64_t{0}, std::int64_t{201}, std::int64_t{-1}, std::int64_t{100000},
                                   std::numeric_limits<std::int64_t>::min(),
                                   std::numeric_limits<std::int64_t>::max()}) {
            auto e = error_of([&] { check_label(argument, chars); });
            ASSERT_TRUE(e.has_value()) << argument << " " << chars;
            EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << argument << " " << chars;
            EXPECT_STREQ(e->code(), "22023");
            EXPECT_NE(e->message().find(std::string("\"") + argument + "\""), std::string::npos)
                << e->message();
            // The detail says the bounds and how long this one was.
            EXPECT_NE(e->detail().find("1 to 200"), std::string::npos) << e->detail();
            EXPECT_NE(e->detail().find(std::to_string(chars)), std::string::npos) << e->detail();
        }
}

}  // namespace
}  // namespace baton

// clip keeps error texts short without ever cutting a UTF-8 character in half.
TEST(Clip, KeepsShortTextsWhole) {
    EXPECT_EQ(baton::clip("abc"), "abc");
    EXPECT_EQ(baton::clip(std::string(64, 'x')), std::string(64, 'x'));
}

TEST(Clip, CutsLongTextsAtACharacterBoundary) {
    std::string text = "x";
    for (int i = 0; i < 40; i++) text += "\xC3\xA9";  // "é"
    std::string clipped = baton::clip(text);
    EXPECT_LE(clipped.size(), 64u);
    EXPECT_EQ(clipped.size() % 2, 1u);  // "x" then whole two-byte characters
    EXPECT_NE(static_cast<unsigned char>(clipped.back()), 0xC3);
    EXPECT_EQ(text.compare(0, clipped.size(), clipped), 0);
}
