// Unit tests for the core's JSON values (src/core/json.*): lookups, integers, equality,
// excerpts, and the nesting limit's offset and refusal.
#include "core/json.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "json_text.hpp"

namespace baton::json {

void PrintTo(Kind k, std::ostream* os) {
    *os << kind_name(k);
}

namespace {

// The tree of a JSON text (the tests' own reader).
Value parse(std::string_view text) {
    return test::json_of(text);
}

// n arrays, one inside the other.
std::string nested_arrays(int n) {
    return std::string(n, '[') + std::string(n, ']');
}

TEST(JsonFind, DuplicateKeysAreKeptAndTheLastWins) {
    Value v = parse(R"({"a":1,"b":2,"a":3})");
    ASSERT_EQ(v.members.size(), 3u);
    const Value* a = find(v, "a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->text, "3");
    EXPECT_EQ(find(v, "b")->text, "2");
}

TEST(JsonFind, MissingKeysAndNonObjects) {
    Value v = parse(R"({"a":null,"":1,"A":2})");
    ASSERT_NE(find(v, "a"), nullptr);
    EXPECT_EQ(find(v, "a")->kind, Kind::kNull);
    EXPECT_EQ(find(v, "b"), nullptr);
    EXPECT_EQ(find(v, "")->text, "1");
    EXPECT_EQ(find(v, "A")->text, "2");
    EXPECT_EQ(find(v, "a "), nullptr);
    EXPECT_EQ(find(parse("[\"a\"]"), "a"), nullptr);
    EXPECT_EQ(find(parse("\"a\""), "a"), nullptr);
    EXPECT_EQ(find(parse("{}"), "a"), nullptr);
}

// ---- depth -----------------------------------------------------------------------------

TEST(JsonDepth, NestingOffsetFindsLevel201) {
    EXPECT_EQ(nesting_offset(nested_arrays(kMaxDepth)), std::string_view::npos);
    EXPECT_EQ(nesting_offset(nested_arrays(kMaxDepth + 1)), 200u);
    EXPECT_EQ(nesting_offset("[1, [2]]", 1), 4u);
    EXPECT_EQ(nesting_offset("{\"a\": {\"b\": []}}", 2), 12u);
    EXPECT_EQ(nesting_offset(std::string(1000000, '[')), 200u);
}

TEST(JsonDepth, BracketsInStringsDoNotCount) {
    EXPECT_EQ(nesting_offset(R"(["[[[", "\"[", {"k\\": "{"}])", 1), 15u);
    EXPECT_EQ(nesting_offset(R"(["[[[", "\"["])", 1), std::string_view::npos);
    EXPECT_EQ(nesting_offset(R"({"\\": [1]})", 1), 7u);
}

TEST(JsonDepth, TooDeepNamesTheOffset) {
    const Error e = too_deep(234);
    EXPECT_EQ(e.state(), SqlState::kInvalidParameterValue);
    EXPECT_EQ(e.message(), "invalid JSON text");
    EXPECT_EQ(e.detail(),
              "At byte offset 234: arrays and objects nest at most 200 levels deep, and level 201 starts here.");
}

// ---- integers --------------------------------------------------------------------------

TEST(JsonInteger, IsInteger) {
    for (const char* text : {"0", "-0", "7", "-7", "1000", "9223372036854775807",
                             "-9223372036854775808", "123456789012345678901234567890"})
        EXPECT_TRUE(is_integer(parse(text))) << text;
    for (const char* text : {"1.0", "1.5", "1e2", "1E0", "-0.0", "10e-1", "0.0"})
        EXPECT_FALSE(is_integer(parse(text))) << text;
    for (const char* text : {"\"1\"", "true", "null", "[1]", "{\"a\":1}"})
        EXPECT_FALSE(is_integer(parse(text))) << text;
    EXPECT_FALSE(is_integer(make_number("01")));
    EXPECT_FALSE(is_integer(make_number("")));
    EXPECT_FALSE(is_integer(make_number("-")));
    EXPECT_FALSE(is_integer(make_number("12a")));
}

TEST(JsonInteger, AsInt64) {
    EXPECT_EQ(as_int64(parse("0")), 0);
    EXPECT_EQ(as_int64(parse("-0")), 0);
    EXPECT_EQ(as_int64(parse("42")), 42);
    EXPECT_EQ(as_int64(parse("-42")), -42);
    EXPECT_EQ(as_int64(parse("9223372036854775807")), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(as_int64(parse("-9223372036854775808")), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(as_int64(parse("9223372036854775808")), std::nullopt);
    EXPECT_EQ(as_int64(parse("-9223372036854775809")), std::nullopt);
    EXPECT_EQ(as_int64(parse("18446744073709551616")), std::nullopt);
    EXPECT_EQ(as_int64(parse("99999999999999999999999")), std::nullopt);
    EXPECT_EQ(as_int64(parse("1.0")), std::nullopt);
    EXPECT_EQ(as_int64(parse("1e2")), std::nullopt);
    EXPECT_EQ(as_int64(parse("\"5\"")), std::nullopt);
    EXPECT_EQ(as_int64(parse("true")), std::nullopt);
    EXPECT_EQ(as_int64(make_number("007")), std::nullopt);
}

TEST(JsonInteger, MakeIntRoundTrips) {
    for (std::int64_t n :
         {std::int64_t{0}, std::int64_t{-1}, std::int64_t{123456789},
          std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()}) {
        const Value v = make_int(n);
        EXPECT_EQ(v.kind, Kind::kNumber);
        EXPECT_EQ(as_int64(v), n);
    }
}

// ---- helpers ---------------------------------------------------------------------------

TEST(JsonHelpers, KindNames) {
    EXPECT_STREQ(kind_name(Kind::kNull), "null");
    EXPECT_STREQ(kind_name(Kind::kBoolean), "boolean");
    EXPECT_STREQ(kind_name(Kind::kNumber), "number");
    EXPECT_STREQ(kind_name(Kind::kString), "string");
    EXPECT_STREQ(kind_name(Kind::kArray), "array");
    EXPECT_STREQ(kind_name(Kind::kObject), "object");
}

TEST(JsonHelpers, Equality) {
    EXPECT_EQ(parse("[1,{\"a\":null}]"), parse("[ 1 , { \"a\" : null } ]"));
    EXPECT_NE(parse("1"), parse("1.0"));
    EXPECT_NE(parse("{\"a\":1,\"b\":2}"), parse("{\"b\":2,\"a\":1}"));
    EXPECT_NE(parse("true"), parse("false"));
    EXPECT_NE(parse("\"1\""), parse("1"));
    EXPECT_NE(parse("[]"), parse("{}"));
    EXPECT_EQ(make_null(), parse("null"));
}

TEST(JsonHelpers, Excerpt) {
    EXPECT_EQ(excerpt("abc"), "\"abc\"");
    EXPECT_EQ(excerpt(""), "\"\"");
    EXPECT_EQ(excerpt("a\"b\\c\nd\te\x01"), "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
    EXPECT_EQ(excerpt("a\x80z"), "\"a\\x80z\"");
    EXPECT_EQ(excerpt("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    EXPECT_EQ(excerpt(std::string(64, 'x')), "\"" + std::string(64, 'x') + "\"");
    EXPECT_EQ(excerpt(std::string(65, 'x')), "\"" + std::string(64, 'x') + "\"...");
    EXPECT_EQ(excerpt(std::string(10000, 'x'), 5), "\"xxxxx\"...");
    // A multibyte character that would cross the limit is left out whole.
    EXPECT_EQ(excerpt("abcd\xc3\xa9", 5), "\"abcd\"...");
    EXPECT_EQ(excerpt(std::string("a\0b", 3)), "\"a\\u0000b\"");
}

}  // namespace
}  // namespace baton::json
