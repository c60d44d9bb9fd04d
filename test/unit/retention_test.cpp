// Unit tests for the argument rules of baton.purge (src/core/retention.*).
#include "core/retention.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace baton::retention {
namespace {

// The SQLSTATE code of what f throws, or "" when it throws nothing.
template <typename F>
std::string code_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.code();
    }
    return "";
}

TEST(RetentionTest, MaxRowsBounds) {
    EXPECT_EQ(code_of([] { check_purge_rows(1); }), "");
    EXPECT_EQ(code_of([] { check_purge_rows(kMaxPurgeRows); }), "");
    EXPECT_EQ(code_of([] { check_purge_rows(0); }), "22023");
    EXPECT_EQ(code_of([] { check_purge_rows(-5); }), "22023");
    EXPECT_EQ(code_of([] { check_purge_rows(kMaxPurgeRows + 1); }), "22023");
}

TEST(RetentionTest, MaxRowsDetailNamesTheBound) {
    try {
        check_purge_rows(0);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(e.message().find("max_rows"), std::string::npos);
        EXPECT_NE(e.detail().find("100000"), std::string::npos);
    }
}

TEST(RetentionTest, OlderThanIsAtMostTenThousandYears) {
    EXPECT_EQ(code_of([] { check_older_than(0, 3650000, 0); }), "");
    EXPECT_EQ(code_of([] { check_older_than(0, 3650001, 0); }), "22023");
    EXPECT_EQ(code_of([] { check_older_than(121666, 20, 0); }), "");
    EXPECT_EQ(code_of([] { check_older_than(2147483647, 0, 0); }), "22023");
    EXPECT_EQ(code_of([] { check_older_than(0, 0, INT64_MAX); }), "22023");
    EXPECT_EQ(code_of([] { check_older_than(2147483647, 2147483647, INT64_MAX); }), "22023");
}

TEST(RetentionTest, OlderThanIsNeverNegative) {
    EXPECT_EQ(code_of([] { check_older_than(0, 0, 0); }), "");
    EXPECT_EQ(code_of([] { check_older_than(1, 2, 3); }), "");
    EXPECT_EQ(code_of([] { check_older_than(-1, 0, 0); }), "22023");
    EXPECT_EQ(code_of([] { check_older_than(0, -1, 0); }), "22023");
    EXPECT_EQ(code_of([] { check_older_than(0, 0, -1); }), "22023");
    // Mixed signs are refused too, even when the total would be positive.
    EXPECT_EQ(code_of([] { check_older_than(1, -1, 0); }), "22023");
}

}  // namespace
}  // namespace baton::retention
