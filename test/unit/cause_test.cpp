// Unit tests for the binding.cause shape rule (src/core/cause.*).
#include "core/cause.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "state_of.hpp"

namespace baton::cause {

void PrintTo(Kind k, std::ostream* os) {
    switch (k) {
        case Kind::kNone:
            *os << "kNone";
            return;
        case Kind::kEvent:
            *os << "kEvent";
            return;
        case Kind::kSchedule:
            *os << "kSchedule";
            return;
        case Kind::kWebhook:
            *os << "kWebhook";
            return;
    }
    *os << "Kind(" << static_cast<int>(k) << ")";
}

namespace {

using baton::test::error_of;
using baton::test::state_of;

constexpr std::optional<SqlState> k22023 = SqlState::kInvalidParameterValue;

View object(std::vector<Field> fields) {
    View v;
    v.present = true;
    v.kind = JsonKind::kObject;
    v.fields = std::move(fields);
    return v;
}

View scalar(JsonKind kind) {
    View v;
    v.present = true;
    v.kind = kind;
    return v;
}

std::optional<SqlState> refusal(const View& v) {
    return state_of([&] { check(v); });
}

TEST(Cause, AbsentIsNone) {
    EXPECT_EQ(check(View{}), Kind::kNone);
    // When the key is absent, whatever else the view holds is not looked at.
    View v;
    v.present = false;
    v.kind = JsonKind::kArray;
    v.fields = {{"bogus", JsonKind::kNumber}, {"event", JsonKind::kString}};
    EXPECT_EQ(check(v), Kind::kNone);
}

TEST(Cause, EachValidKind) {
    EXPECT_EQ(check(object({{"event", JsonKind::kString}})), Kind::kEvent);
    EXPECT_EQ(check(object({{"schedule", JsonKind::kString}})), Kind::kSchedule);
    EXPECT_EQ(check(object({{"webhook", JsonKind::kString}})), Kind::kWebhook);
}

TEST(Cause, NonObjectIsRefused) {
    // A present cause that is JSON null is not "absent": it is a non-object.
    for (JsonKind k : {JsonKind::kNull, JsonKind::kString, JsonKind::kNumber, JsonKind::kBool,
                       JsonKind::kArray}) {
        auto e = error_of([&] { check(scalar(k)); });
        ASSERT_TRUE(e.has_value()) << kind_name(k);
        EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << kind_name(k);
        EXPECT_NE(e->detail().find(kind_name(k)), std::string::npos) << e->detail();
    }
}

TEST(Cause, ZeroKeysIsRefused) {
    EXPECT_EQ(refusal(object({})), k22023);
}

TEST(Cause, TwoKnownKeysIsRefused) {
    EXPECT_EQ(refusal(object({{"event", JsonKind::kString}, {"schedule", JsonKind::kString}})),
              k22023);
    EXPECT_EQ(refusal(object({{"webhook", JsonKind::kString}, {"event", JsonKind::kString}})),
              k22023);
    EXPECT_EQ(refusal(object({{"event", JsonKind::kString},
                              {"schedule", JsonKind::kString},
                              {"webhook", JsonKind::kString}})),
              k22023);
}

TEST(Cause, KnownPlusUnknownKeyIsRefused) {
    // Whichever comes first, a known key does not excuse an extra one.
    EXPECT_EQ(refusal(object({{"event", JsonKind::kString}, {"extra", JsonKind::kString}})),
              k22023);
    EXPECT_EQ(refusal(object({{"extra", JsonKind::kString}, {"event", JsonKind::kString}})),
              k22023);
    EXPECT_EQ(refusal(object({{"webhook", JsonKind::kString}, {"note", JsonKind::kNull}})), k22023);
}

TEST(Cause, UnknownKeyIsRefused) {
    for (const char* key : {"cron", "Event", "EVENT", "events", "", "event "}) {
        auto e = error_of([&] { check(object({{key, JsonKind::kString}})); });
        ASSERT_TRUE(e.has_value()) << '"' << key << '"';
        EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << '"' << key << '"';
    }
}

TEST(Cause, UnknownKeyEchoIsBounded) {
    const std::string huge(5000, 'k');
    auto e = error_of([&] { check(object({{huge, JsonKind::kString}})); });
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue);
    EXPECT_EQ(e->detail().find(std::string(65, 'k')), std::string::npos);
    EXPECT_LT(e->detail().size(), 300u);
}

TEST(Cause, NonStringValuesAreRefused) {
    for (const char* key : {"event", "schedule", "webhook"}) {
        for (JsonKind k : {JsonKind::kNull, JsonKind::kNumber, JsonKind::kBool, JsonKind::kArray,
                           JsonKind::kObject}) {
            auto e = error_of([&] { check(object({{key, k}})); });
            ASSERT_TRUE(e.has_value()) << key << ": " << kind_name(k);
            EXPECT_EQ(e->state(), SqlState::kInvalidParameterValue) << key << ": " << kind_name(k);
            EXPECT_NE(e->detail().find(key), std::string::npos) << e->detail();
        }
    }
}

TEST(Cause, RefusalsNameTheBindingArgument) {
    for (const View& v :
         {scalar(JsonKind::kArray), object({}), object({{"cron", JsonKind::kString}}),
          object({{"event", JsonKind::kNumber}})}) {
        auto e = error_of([&] { check(v); });
        ASSERT_TRUE(e.has_value());
        EXPECT_NE(e->message().find("\"binding\""), std::string::npos) << e->message();
    }
}

TEST(Cause, KindNames) {
    EXPECT_STREQ(kind_name(JsonKind::kNull), "null");
    EXPECT_STREQ(kind_name(JsonKind::kString), "string");
    EXPECT_STREQ(kind_name(JsonKind::kNumber), "number");
    EXPECT_STREQ(kind_name(JsonKind::kBool), "boolean");
    EXPECT_STREQ(kind_name(JsonKind::kArray), "array");
    EXPECT_STREQ(kind_name(JsonKind::kObject), "object");
}

}  // namespace
}  // namespace baton::cause
