// Unit tests for recurring schedules (src/core/schedule.*): every form of a cron field,
// names, the day-of-month / day-of-week rule, macros, @every, each refusal's detail, leap
// years and month ends, daylight-saving gaps and repetitions (fixed-time and wildcard
// specs), next_slot strictly after, the latest slot at or before, and a minute-by-minute
// oracle against the field-skipping search.
#include "core/schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "schedule_zones.hpp"

namespace baton::schedule {
namespace {

using test::utc;

constexpr std::int64_t kSec = 1000000;
constexpr std::int64_t kMin = 60 * kSec;
constexpr std::int64_t kHour = 60 * kMin;

// The bits of a list of values.
std::uint64_t bits(std::initializer_list<int> values) {
    std::uint64_t b = 0;
    for (int v : values)
        b |= std::uint64_t{1} << v;
    return b;
}

// The bits lo..hi.
std::uint64_t span(int lo, int hi) {
    std::uint64_t b = 0;
    for (int v = lo; v <= hi; ++v)
        b |= std::uint64_t{1} << v;
    return b;
}

// The detail of the refusal of a spec (checking it is 22023 naming `spec`), or "" when
// the spec is accepted.
std::string refusal(std::string_view spec) {
    try {
        parse(spec);
    } catch (const Error& e) {
        EXPECT_STREQ(e.code(), "22023");
        EXPECT_EQ(e.message(), "invalid value for argument \"spec\"");
        return e.detail();
    }
    return "";
}

// A slot as text, or "none".
std::string iso(std::optional<std::int64_t> slot) {
    return slot ? format_utc(*slot) : "none";
}

std::string next_iso(std::string_view spec, const Zone& zone, std::int64_t after) {
    return iso(next_slot(parse(spec), zone, after));
}

std::string latest_iso(std::string_view spec, const Zone& zone, std::int64_t now) {
    return iso(latest_slot_at_or_before(parse(spec), zone, now));
}

// The first n slots after `after`, each found from the one before.
std::vector<std::string> slots(std::string_view spec, const Zone& zone, std::int64_t after, int n) {
    const Spec s = parse(spec);
    std::vector<std::string> out;
    for (int k = 0; k < n; ++k) {
        std::optional<std::int64_t> next = next_slot(s, zone, after);
        if (!next)
            break;
        out.push_back(format_utc(*next));
        after = *next;
    }
    return out;
}

const FixedZone kUtc(0);

// ---- parsing ---------------------------------------------------------------------------

TEST(ScheduleParseTest, EveryFormOfAField) {
    EXPECT_EQ(parse("* * * * *").minutes, span(0, 59));
    EXPECT_EQ(parse("5 * * * *").minutes, bits({5}));
    EXPECT_EQ(parse("05 * * * *").minutes, bits({5}));
    EXPECT_EQ(parse("1,2,59 * * * *").minutes, bits({1, 2, 59}));
    EXPECT_EQ(parse("10-12 * * * *").minutes, bits({10, 11, 12}));
    EXPECT_EQ(parse("*/15 * * * *").minutes, bits({0, 15, 30, 45}));
    EXPECT_EQ(parse("10-30/10 * * * *").minutes, bits({10, 20, 30}));
    EXPECT_EQ(parse("50/3 * * * *").minutes, bits({50, 53, 56, 59}));  // a/n is a-max/n
    EXPECT_EQ(parse("1-3,7,*/30 * * * *").minutes, bits({0, 1, 2, 3, 7, 30}));
    EXPECT_EQ(parse("0 */6 * * *").hours, bits({0, 6, 12, 18}));
    EXPECT_EQ(parse("0 9-17/4 * * *").hours, bits({9, 13, 17}));
    EXPECT_EQ(parse("0 0 */10 * *").days, bits({1, 11, 21, 31}));
    EXPECT_EQ(parse("0 0 1 */3 *").months, bits({1, 4, 7, 10}));
    EXPECT_EQ(parse("0 0 * * *").weekdays, span(0, 6));
    EXPECT_EQ(parse("0 0 1 1 *").kind, Spec::Kind::kCron);
    // Spaces and tabs anywhere between and around fields.
    EXPECT_EQ(parse(" \t0\t 12  *  * *  ").hours, bits({12}));
}

TEST(ScheduleParseTest, MonthAndWeekdayNames) {
    EXPECT_EQ(parse("0 0 1 JAN *").months, bits({1}));
    EXPECT_EQ(parse("0 0 1 jan,Feb,mAr *").months, bits({1, 2, 3}));
    EXPECT_EQ(parse("0 0 1 APR-JUN *").months, bits({4, 5, 6}));
    EXPECT_EQ(parse("0 0 1 jul-dec/2 *").months, bits({7, 9, 11}));
    EXPECT_EQ(parse("0 0 1 AUG,SEP,OCT,NOV,DEC *").months, bits({8, 9, 10, 11, 12}));
    EXPECT_EQ(parse("0 0 * * MON-FRI").weekdays, bits({1, 2, 3, 4, 5}));
    EXPECT_EQ(parse("0 0 * * sun,sat").weekdays, bits({0, 6}));
    EXPECT_EQ(parse("0 0 * * TUE,wed,Thu").weekdays, bits({2, 3, 4}));
    // 0 and 7 are both Sunday.
    EXPECT_EQ(parse("0 0 * * 7").weekdays, bits({0}));
    EXPECT_EQ(parse("0 0 * * 0").weekdays, bits({0}));
    EXPECT_EQ(parse("0 0 * * 5-7").weekdays, bits({0, 5, 6}));
    EXPECT_EQ(parse("0 0 * * */2").weekdays, bits({0, 2, 4, 6}));
    EXPECT_EQ(parse("0 0 * * 1/2").weekdays, bits({0, 1, 3, 5}));  // 1-7/2: 7 is Sunday
    EXPECT_EQ(parse("0 0 * * FRI/1").weekdays, bits({0, 5, 6}));
}

TEST(ScheduleParseTest, MacrosAreTheirLines) {
    auto same = [](std::string_view a, std::string_view b) {
        const Spec x = parse(a), y = parse(b);
        return x.kind == y.kind && x.minutes == y.minutes && x.hours == y.hours &&
               x.days == y.days && x.months == y.months && x.weekdays == y.weekdays &&
               x.days_star == y.days_star && x.weekdays_star == y.weekdays_star &&
               x.wildcard == y.wildcard;
    };
    EXPECT_TRUE(same("@hourly", "0 * * * *"));
    EXPECT_TRUE(same("@daily", "0 0 * * *"));
    EXPECT_TRUE(same("@midnight", "0 0 * * *"));
    EXPECT_TRUE(same("@weekly", "0 0 * * 0"));
    EXPECT_TRUE(same("@monthly", "0 0 1 * *"));
    EXPECT_TRUE(same("@yearly", "0 0 1 1 *"));
    EXPECT_TRUE(same("@annually", "0 0 1 1 *"));
    EXPECT_TRUE(same("  @DAILY ", "0 0 * * *"));
    EXPECT_TRUE(parse("@hourly").wildcard);
    EXPECT_FALSE(parse("@daily").wildcard);
}

TEST(ScheduleParseTest, WildcardIsAMinuteOrHourBeginningWithStar) {
    EXPECT_TRUE(parse("* 2 * * *").wildcard);
    EXPECT_TRUE(parse("30 * * * *").wildcard);
    EXPECT_TRUE(parse("*/15 2 * * *").wildcard);
    EXPECT_TRUE(parse("0 */2 * * *").wildcard);
    EXPECT_FALSE(parse("30 2 * * *").wildcard);
    EXPECT_FALSE(parse("0-59 0-23 * * *").wildcard);
    EXPECT_FALSE(parse("0,30 1-3 * * *").wildcard);
}

TEST(ScheduleParseTest, Every) {
    auto usec = [](std::string_view s) { return parse(s).every_usec; };
    EXPECT_EQ(parse("@every 30 seconds").kind, Spec::Kind::kEvery);
    EXPECT_EQ(usec("@every 30 seconds"), 30 * kSec);
    EXPECT_EQ(usec("@every 1 second"), kSec);
    EXPECT_EQ(usec("@every 5 minutes"), 5 * kMin);
    EXPECT_EQ(usec("@every 5m"), 5 * kMin);
    EXPECT_EQ(usec("@every 2 hours"), 2 * kHour);
    EXPECT_EQ(usec("@every 2h"), 2 * kHour);
    EXPECT_EQ(usec("@every 1 day"), 24 * kHour);
    EXPECT_EQ(usec("@every 1 hour 30 minutes"), 90 * kMin);
    EXPECT_EQ(usec("@every 1h30m"), 90 * kMin);
    EXPECT_EQ(usec("@EVERY 1 WEEK"), 7 * 24 * kHour);
    EXPECT_EQ(usec("@every 90 secs"), 90 * kSec);
    EXPECT_EQ(usec("@every 3 hrs 2 mins 1 sec"), 3 * kHour + 2 * kMin + kSec);
    EXPECT_EQ(usec("@every 365 days"), 365 * 24 * kHour);
    EXPECT_EQ(usec("@every 52 weeks"), 52 * 7 * 24 * kHour);
    EXPECT_EQ(usec("@every\t001 d "), 24 * kHour);
}

TEST(ScheduleParseTest, EveryRefusals) {
    EXPECT_NE(refusal("@every").find("needs an interval"), std::string::npos);
    EXPECT_NE(refusal("@every 0 seconds").find("at least 1 second"), std::string::npos);
    EXPECT_NE(refusal("@every 0s 0m").find("at least 1 second"), std::string::npos);
    EXPECT_NE(refusal("@every 366 days").find("at most 365 days"), std::string::npos);
    EXPECT_NE(refusal("@every 53 weeks").find("at most 365 days"), std::string::npos);
    EXPECT_NE(refusal("@every 364 days 25 hours").find("at most 365 days"), std::string::npos);
    EXPECT_NE(refusal("@every 99999999999999999999999 s").find("at most 365 days"),
              std::string::npos);
    EXPECT_NE(refusal("@every 1.5 hours").find("whole number"), std::string::npos);
    EXPECT_NE(refusal("@every -5 minutes").find("whole number"), std::string::npos);
    EXPECT_NE(refusal("@every 5").find("no unit"), std::string::npos);
    EXPECT_NE(refusal("@every 5 fortnights").find("\"fortnights\""), std::string::npos);
    EXPECT_NE(refusal("@every 5 minutes!").find("nothing else"), std::string::npos);
    EXPECT_NE(refusal("@every minutes").find("whole number"), std::string::npos);
}

TEST(ScheduleParseTest, EachFieldSaysWhichAndWhy) {
    EXPECT_EQ(refusal("60 * * * *"), "Field 1 (minute) has 60; a minute is 0 to 59.");
    EXPECT_EQ(refusal("0 24 * * *"), "Field 2 (hour) has 24; an hour is 0 to 23.");
    EXPECT_EQ(refusal("0 0 0 * *"), "Field 3 (day of month) has 0; a day of month is 1 to 31.");
    EXPECT_EQ(refusal("0 0 32 * *"), "Field 3 (day of month) has 32; a day of month is 1 to 31.");
    EXPECT_EQ(refusal("0 0 * 13 *"), "Field 4 (month) has 13; a month is 1 to 12 or JAN to DEC.");
    EXPECT_EQ(refusal("0 0 * 0 *"), "Field 4 (month) has 0; a month is 1 to 12 or JAN to DEC.");
    EXPECT_EQ(refusal("0 0 * * 8"),
              "Field 5 (day of week) has 8; a day of week is 0 to 7 (0 and 7 are Sunday) or "
              "SUN to SAT.");
    EXPECT_EQ(refusal("0 0 * FOO *"),
              "Field 4 (month) has \"FOO\", which is not a month name (JAN to DEC).");
    EXPECT_EQ(refusal("0 0 * * MONDAY"),
              "Field 5 (day of week) has \"MONDAY\", which is not a day of week name (SUN to "
              "SAT).");
    EXPECT_EQ(refusal("MON * * * *"),
              "Field 1 (minute) has \"MON\"; a minute is 0 to 59 (names are only for months "
              "and days of week).");
    EXPECT_EQ(refusal("0 0 * JAN * "), "");
    EXPECT_EQ(refusal("30-10 * * * *"),
              "Field 1 (minute) has the range \"30-10\", which goes downwards; a range goes "
              "from its lower value to its higher.");
    EXPECT_EQ(refusal("0 0 * * FRI-MON").find("Field 5 (day of week) has the range"), 0u);
    EXPECT_EQ(refusal("*/0 * * * *"), "Field 1 (minute) has the step 0; a step is 1 to 59.");
    EXPECT_EQ(refusal("*/60 * * * *"), "Field 1 (minute) has the step 60; a step is 1 to 59.");
    EXPECT_EQ(refusal("0 */24 * * *"), "Field 2 (hour) has the step 24; a step is 1 to 23.");
    EXPECT_EQ(refusal("0 0 * */13 *"), "Field 4 (month) has the step 13; a step is 1 to 12.");
    EXPECT_EQ(refusal("0 0 * * */8"), "Field 5 (day of week) has the step 8; a step is 1 to 7.");
    EXPECT_EQ(refusal("0 0 1-5/x * *"),
              "Field 3 (day of month) has \"1-5/x\", whose step is not a number: a step is "
              "*/n, a-b/n or a/n.");
    EXPECT_EQ(refusal("5/ * * * *").find("Field 1 (minute) has \"5/\", whose step"), 0u);
    EXPECT_EQ(refusal("1,,2 * * * *"),
              "Field 1 (minute) has an empty item in the list \"1,,2\" (two commas, or a comma "
              "at an end).");
    EXPECT_EQ(refusal("0 1, * * *").find("Field 2 (hour) has an empty item"), 0u);
    EXPECT_EQ(refusal("0 0 -5 * *"),
              "Field 3 (day of month) has \"-5\", where a value is missing.");
    EXPECT_EQ(refusal("*x * * * *"),
              "Field 1 (minute) has \"*x\", which is not an item: a value, a range a-b, *, or "
              "a step */n, a-b/n or a/n.");
    EXPECT_EQ(refusal("0 0 1-2-3 * *").find("Field 3 (day of month) has \"1-2-3\""), 0u);
    EXPECT_EQ(refusal("0 0 1/2/3 * *").find("Field 3 (day of month) has \"1/2/3\""), 0u);
    EXPECT_EQ(refusal("0 99999999999999999999999 * * *"),
              "Field 2 (hour) has \"99999999999999999999999\"; an hour is 0 to 23.");
}

TEST(ScheduleParseTest, WholeSpecRefusals) {
    EXPECT_EQ(refusal("").find("spec is empty"), 0u);
    EXPECT_EQ(refusal(" \t ").find("spec is empty"), 0u);
    EXPECT_EQ(refusal("* * * *").find("spec has 4 fields; a cron line has five"), 0u);
    EXPECT_EQ(refusal("0 * * * * *").find("spec has 6 fields"), 0u);
    EXPECT_EQ(refusal("daily").find("spec has 1 field;"), 0u);
    EXPECT_EQ(refusal("@reboot").find("\"@reboot\" is not a macro"), 0u);
    EXPECT_EQ(refusal("@daily 5"),
              "\"@daily\" takes nothing after it; this spec has \"5\" after it.");
    EXPECT_EQ(refusal(std::string(201, ' ')), "spec has at most 200 bytes; this one has 201.");
    EXPECT_EQ(refusal("0 0 * * *" + std::string(191, ' ')), "");
    // Bytes that are not text are quoted, never copied into the detail.
    const std::string detail = refusal(std::string("0 0 \xff\x01 * *"));
    EXPECT_NE(detail.find("\\xff\\u0001"), std::string::npos) << detail;
    EXPECT_NE(refusal(std::string("0 0 * * 1\0", 10)).find("\\u0000"), std::string::npos);
}

TEST(ScheduleParseTest, NeverMatchingSpecsAreRefused) {
    const std::string never =
        "Field 3 (day of month) and field 4 (month) never meet: none of the days is in any of "
        "the months (February has 29 days at most; April, June, September and November 30), "
        "so the spec never matches.";
    EXPECT_EQ(refusal("0 0 30 2 *"), never);
    EXPECT_EQ(refusal("0 0 31 2 *"), never);
    EXPECT_EQ(refusal("0 0 30,31 FEB *"), never);
    EXPECT_EQ(refusal("0 0 31 4,6,9,11 *"), never);
    EXPECT_EQ(refusal("0 0 31 2,4 */7"), never);  // day of week unrestricted: both must match
    EXPECT_EQ(refusal("0 0 29 2 *"), "");
    EXPECT_EQ(refusal("0 0 31 1-2 *"), "");
    EXPECT_EQ(refusal("0 0 30 2 MON"), "");  // either rule: the Mondays of February
    EXPECT_EQ(refusal("0 0 29 2 */7"), "");  // 29 February on a Sunday: rare, but it happens
}

// ---- search in UTC and fixed offsets ---------------------------------------------------

TEST(ScheduleSearchTest, NextSlotIsStrictlyAfter) {
    const std::int64_t slot = utc(2026, 12, 2, 3, 0);
    EXPECT_EQ(next_iso("0 3 * * *", kUtc, slot - 1), "2026-12-02T03:00:00Z");
    EXPECT_EQ(next_iso("0 3 * * *", kUtc, slot), "2026-12-03T03:00:00Z");
    EXPECT_EQ(next_iso("0 3 * * *", kUtc, slot + 1), "2026-12-03T03:00:00Z");
    EXPECT_EQ(next_iso("* * * * *", kUtc, slot), "2026-12-02T03:01:00Z");
    EXPECT_EQ(next_iso("* * * * *", kUtc, slot + 59 * kSec), "2026-12-02T03:01:00Z");
    EXPECT_EQ(next_iso("* * * * *", kUtc, slot - kMin - 1), "2026-12-02T02:59:00Z");
}

TEST(ScheduleSearchTest, FieldsCarryIntoTheNextHourDayMonthYear) {
    EXPECT_EQ(slots("15,45 9-10 * * *", kUtc, utc(2026, 1, 1, 10, 50), 5),
              (std::vector<std::string>{"2026-01-02T09:15:00Z", "2026-01-02T09:45:00Z",
                                        "2026-01-02T10:15:00Z", "2026-01-02T10:45:00Z",
                                        "2026-01-03T09:15:00Z"}));
    EXPECT_EQ(next_iso("0 0 1 JAN *", kUtc, utc(2026, 1, 1)), "2027-01-01T00:00:00Z");
    EXPECT_EQ(next_iso("@yearly", kUtc, utc(2026, 6, 1)), "2027-01-01T00:00:00Z");
    EXPECT_EQ(next_iso("@monthly", kUtc, utc(2026, 12, 15)), "2027-01-01T00:00:00Z");
    EXPECT_EQ(next_iso("@weekly", kUtc, utc(2026, 12, 2)), "2026-12-06T00:00:00Z");  // Sunday
    EXPECT_EQ(next_iso("@daily", kUtc, utc(2026, 12, 31, 0, 0, 1)), "2027-01-01T00:00:00Z");
    EXPECT_EQ(next_iso("@hourly", kUtc, utc(2026, 12, 31, 23, 0)), "2027-01-01T00:00:00Z");
    EXPECT_EQ(next_iso("59 23 31 12 *", kUtc, utc(2026, 1, 1)), "2026-12-31T23:59:00Z");
}

TEST(ScheduleSearchTest, EitherDayRuleWhenBothAreRestricted) {
    // 2026-02-13 is a Friday, 2026-03-13 too; the 13ths and the Fridays of early 2026.
    EXPECT_EQ(slots("0 0 13 * FRI", kUtc, utc(2026, 1, 1), 6),
              (std::vector<std::string>{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z",
                                        "2026-01-13T00:00:00Z", "2026-01-16T00:00:00Z",
                                        "2026-01-23T00:00:00Z", "2026-01-30T00:00:00Z"}));
    EXPECT_EQ(slots("0 0 13 * *", kUtc, utc(2026, 1, 1), 2),
              (std::vector<std::string>{"2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z"}));
    EXPECT_EQ(slots("0 0 * * 5", kUtc, utc(2026, 1, 1), 2),
              (std::vector<std::string>{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"}));
    // A field beginning with * is unrestricted, so both must match: odd days that are
    // Mondays (2026-01-05, 2026-01-19; not 2026-01-12).
    EXPECT_EQ(slots("0 0 */2 * MON", kUtc, utc(2026, 1, 1), 2),
              (std::vector<std::string>{"2026-01-05T00:00:00Z", "2026-01-19T00:00:00Z"}));
    // The 1st, 15th, and weekends of a restricted month, in one list.
    EXPECT_EQ(slots("0 12 1,15 MAR SAT,SUN", kUtc, utc(2026, 2, 27), 4),
              (std::vector<std::string>{"2026-03-01T12:00:00Z", "2026-03-07T12:00:00Z",
                                        "2026-03-08T12:00:00Z", "2026-03-14T12:00:00Z"}));
    EXPECT_TRUE(matches_day(parse("0 0 13 * 5"), 2026, 1, 13));
    EXPECT_TRUE(matches_day(parse("0 0 13 * 5"), 2026, 1, 2));
    EXPECT_FALSE(matches_day(parse("0 0 13 * 5"), 2026, 1, 3));
    EXPECT_FALSE(matches_day(parse("0 0 * * *"), 2026, 2, 29));
}

TEST(ScheduleSearchTest, LeapYearsAndMonthEnds) {
    EXPECT_EQ(next_iso("0 12 29 2 *", kUtc, utc(2026, 1, 1)), "2028-02-29T12:00:00Z");
    EXPECT_EQ(next_iso("0 12 29 2 *", kUtc, utc(2096, 3, 1)), "2104-02-29T12:00:00Z");  // not 2100
    EXPECT_EQ(next_iso("0 12 29 2 *", kUtc, utc(2399, 1, 1)), "2400-02-29T12:00:00Z");
    EXPECT_EQ(latest_iso("0 12 29 2 *", kUtc, utc(2027, 1, 1)), "2024-02-29T12:00:00Z");
    EXPECT_EQ(latest_iso("0 12 29 2 *", kUtc, utc(2104, 1, 1)), "2096-02-29T12:00:00Z");
    EXPECT_EQ(slots("0 0 31 * *", kUtc, utc(2026, 1, 31), 4),
              (std::vector<std::string>{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z",
                                        "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}));
    EXPECT_EQ(slots("0 0 30 * *", kUtc, utc(2026, 1, 30), 2),
              (std::vector<std::string>{"2026-03-30T00:00:00Z", "2026-04-30T00:00:00Z"}));
    EXPECT_EQ(latest_iso("0 0 31 * *", kUtc, utc(2026, 5, 1)), "2026-03-31T00:00:00Z");
    // The rarest spec: a 29 February that is a Sunday, 40 years apart across 2100.
    EXPECT_EQ(next_iso("0 0 29 2 */7", kUtc, utc(2088, 3, 1)), "2128-02-29T00:00:00Z");
    EXPECT_EQ(latest_iso("0 0 29 2 */7", kUtc, utc(2128, 2, 28)), "2088-02-29T00:00:00Z");
}

TEST(ScheduleSearchTest, LatestSlotAtOrBefore) {
    const std::int64_t slot = utc(2026, 12, 2, 3, 0);
    EXPECT_EQ(latest_iso("0 3 * * *", kUtc, slot), "2026-12-02T03:00:00Z");
    EXPECT_EQ(latest_iso("0 3 * * *", kUtc, slot - 1), "2026-12-01T03:00:00Z");
    EXPECT_EQ(latest_iso("0 3 * * *", kUtc, slot + 5 * kHour), "2026-12-02T03:00:00Z");
    EXPECT_EQ(latest_iso("*/5 * * * *", kUtc, slot + 4 * kMin + 59 * kSec), "2026-12-02T03:00:00Z");
    EXPECT_EQ(latest_iso("0 0 1 1 *", kUtc, utc(2026, 12, 31)), "2026-01-01T00:00:00Z");
    EXPECT_EQ(latest_iso("@every 1 hour", kUtc, slot + 1), "2026-12-02T03:00:00Z");
    EXPECT_EQ(latest_iso("@every 1 hour", kUtc, slot - 1), "2026-12-02T02:00:00Z");
}

TEST(ScheduleSearchTest, DueSlotIsTheLatestMissedOne) {
    const Spec s = parse("*/10 * * * *");
    const std::int64_t fired = utc(2026, 12, 2, 3, 0);
    // After a pause of an hour only the latest missed slot is due.
    EXPECT_EQ(iso(due_slot(s, kUtc, fired, fired + kHour + 5 * kMin)), "2026-12-02T04:00:00Z");
    EXPECT_EQ(iso(due_slot(s, kUtc, fired, fired + 9 * kMin)), "none");
    EXPECT_EQ(iso(due_slot(s, kUtc, fired, fired)), "none");
    EXPECT_EQ(iso(due_slot(s, kUtc, fired - 1, fired)), "2026-12-02T03:00:00Z");
}

TEST(ScheduleSearchTest, FixedOffsets) {
    const FixedZone kolkata(19800);    // +05:30
    const FixedZone honolulu(-36000);  // -10:00
    EXPECT_EQ(next_iso("30 2 * * *", kolkata, utc(2026, 12, 1, 12)), "2026-12-01T21:00:00Z");
    EXPECT_EQ(next_iso("0 0 1 * *", kolkata, utc(2026, 12, 1)), "2026-12-31T18:30:00Z");
    EXPECT_EQ(next_iso("0 22 * * *", honolulu, utc(2026, 12, 31, 12)), "2027-01-01T08:00:00Z");
    // The day rule reads the local date: Friday 23:00 in Honolulu is Saturday in UTC.
    EXPECT_EQ(next_iso("0 23 * * FRI", honolulu, utc(2026, 12, 1)), "2026-12-05T09:00:00Z");
    EXPECT_EQ(latest_iso("30 2 * * *", kolkata, utc(2026, 12, 1, 20, 59)), "2026-11-30T21:00:00Z");
}

TEST(ScheduleSearchTest, EveryIsAnchoredAtTheUnixEpoch) {
    const auto ny = test::new_york();
    EXPECT_EQ(next_iso("@every 1 hour", kUtc, utc(2026, 12, 2, 3, 0)), "2026-12-02T04:00:00Z");
    EXPECT_EQ(next_iso("@every 1 hour", ny, utc(2026, 12, 2, 3, 0)), "2026-12-02T04:00:00Z");
    EXPECT_EQ(next_iso("@every 7 days", kUtc, utc(2026, 12, 2)), "2026-12-03T00:00:00Z");  // Thu
    EXPECT_EQ(next_iso("@every 7 minutes", kUtc, 0), "1970-01-01T00:07:00Z");
    EXPECT_EQ(next_iso("@every 30s", kUtc, -1), "1970-01-01T00:00:00Z");
    EXPECT_EQ(next_iso("@every 30s", kUtc, -30 * kSec), "1970-01-01T00:00:00Z");
    EXPECT_EQ(next_iso("@every 30s", kUtc, -31 * kSec), "1969-12-31T23:59:30Z");
    EXPECT_EQ(latest_iso("@every 30s", kUtc, -1), "1969-12-31T23:59:30Z");
    // Across the autumn change in New York: plain UTC hours, four in four hours.
    EXPECT_EQ(slots("@every 1h", ny, utc(2026, 11, 1, 4), 4),
              (std::vector<std::string>{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z",
                                        "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}));
}

TEST(ScheduleSearchTest, NoSlotOutsideTheRange) {
    const Spec s = parse("* * * * *");
    EXPECT_FALSE(next_slot(s, kUtc, kMaxUsec).has_value());
    EXPECT_FALSE(next_slot(s, kUtc, kMaxUsec - 30 * kSec).has_value());
    EXPECT_EQ(iso(next_slot(s, kUtc, kMaxUsec - 70 * kSec)), "9999-12-31T23:59:00Z");
    EXPECT_FALSE(next_slot(s, kUtc, kMinUsec - 1).has_value());
    EXPECT_FALSE(next_slot(s, kUtc, INT64_MIN).has_value());
    EXPECT_FALSE(latest_slot_at_or_before(s, kUtc, INT64_MAX).has_value());
    EXPECT_EQ(iso(latest_slot_at_or_before(s, kUtc, kMinUsec)), "0001-01-01T00:00:00Z");
    EXPECT_FALSE(next_slot(parse("@every 365 days"), kUtc, kMaxUsec - 1).has_value());
    // Civil times of the years 0 and 10000 that are slots within the range.
    const auto ny = test::new_york();
    EXPECT_EQ(iso(next_slot(s, ny, kMinUsec + 123)), "0001-01-01T00:01:00Z");
    EXPECT_EQ(iso(latest_slot_at_or_before(s, FixedZone(3600), kMaxUsec)),
              "9999-12-31T23:59:00Z");
}

// ---- daylight-saving time --------------------------------------------------------------

// New York, 2026: 2026-03-08 02:00 EST becomes 03:00 EDT (07:00 UTC); 2026-11-01 02:00
// EDT becomes 01:00 EST (06:00 UTC).
TEST(ScheduleDstTest, FixedTimeInTheSkippedHourFiresOnceAtTheJump) {
    const auto ny = test::new_york();
    EXPECT_EQ(slots("30 2 * * *", ny, utc(2026, 3, 7, 5), 3),
              (std::vector<std::string>{"2026-03-07T07:30:00Z",     // 02:30 EST
                                        "2026-03-08T07:00:00Z",     // 03:00 EDT, the jump
                                        "2026-03-09T06:30:00Z"}));  // 02:30 EDT
    // 02:00, 02:30 and 03:00 of the change day are one slot.
    EXPECT_EQ(slots("0,30 2,3 * * *", ny, utc(2026, 3, 8, 5), 3),
              (std::vector<std::string>{"2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z",
                                        "2026-03-09T06:00:00Z"}));
    // Found from inside the gap's UTC hour too, and never before the jump.
    EXPECT_EQ(next_iso("30 2 * * *", ny, utc(2026, 3, 8, 6, 59, 59)), "2026-03-08T07:00:00Z");
    EXPECT_EQ(next_iso("30 2 * * *", ny, utc(2026, 3, 8, 7)), "2026-03-09T06:30:00Z");
    EXPECT_EQ(latest_iso("30 2 * * *", ny, utc(2026, 3, 8, 7)), "2026-03-08T07:00:00Z");
    EXPECT_EQ(latest_iso("30 2 * * *", ny, utc(2026, 3, 8, 7) - 1), "2026-03-07T07:30:00Z");
}

TEST(ScheduleDstTest, FixedTimeInTheRepeatedHourFiresOnceAtTheFirst) {
    const auto ny = test::new_york();
    EXPECT_EQ(slots("30 1 * * *", ny, utc(2026, 10, 31, 12), 2),
              (std::vector<std::string>{"2026-11-01T05:30:00Z",     // 01:30 EDT
                                        "2026-11-02T06:30:00Z"}));  // not 01:30 EST on 11-01
    // After the first occurrence, in the second pass, the next slot is the next day's.
    EXPECT_EQ(next_iso("30 1 * * *", ny, utc(2026, 11, 1, 6, 15)), "2026-11-02T06:30:00Z");
    // The latest at 01:15 EST (second pass) is the 01:45 EDT of the first pass, whose
    // civil time is later than now's.
    EXPECT_EQ(latest_iso("45 1 * * *", ny, utc(2026, 11, 1, 6, 15)), "2026-11-01T05:45:00Z");
    EXPECT_EQ(latest_iso("30 1 * * *", ny, utc(2026, 11, 1, 6, 45)), "2026-11-01T05:30:00Z");
    EXPECT_EQ(latest_iso("30 1 * * *", ny, utc(2026, 11, 1, 5, 29)), "2026-10-31T05:30:00Z");
    // @daily is local midnight in both seasons.
    EXPECT_EQ(slots("@daily", ny, utc(2026, 10, 31, 12), 2),
              (std::vector<std::string>{"2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"}));
}

TEST(ScheduleDstTest, WildcardSpecsFollowTheNewTime) {
    const auto ny = test::new_york();
    // Spring: no slot in the gap; 01:30 EST, then 03:30 EDT, an hour later in real time.
    EXPECT_EQ(slots("30 * * * *", ny, utc(2026, 3, 8, 6), 3),
              (std::vector<std::string>{"2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z",
                                        "2026-03-08T08:30:00Z"}));
    EXPECT_EQ(slots("@hourly", ny, utc(2026, 3, 8, 5, 30), 3),
              (std::vector<std::string>{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z",
                                        "2026-03-08T08:00:00Z"}));
    // A wildcard job inside the skipped hour does not run that day.
    EXPECT_EQ(next_iso("*/15 2 * * *", ny, utc(2026, 3, 8, 5)), "2026-03-09T06:00:00Z");
    // Autumn: both occurrences, so @hourly stays hourly in real time.
    EXPECT_EQ(slots("@hourly", ny, utc(2026, 11, 1, 3, 30), 5),
              (std::vector<std::string>{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z",
                                        "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z",
                                        "2026-11-01T08:00:00Z"}));
    EXPECT_EQ(slots("*/20 1 * * *", ny, utc(2026, 11, 1, 5, 30), 5),
              (std::vector<std::string>{"2026-11-01T05:40:00Z",  // 01:40 EDT
                                        "2026-11-01T06:00:00Z",  // 01:00 EST
                                        "2026-11-01T06:20:00Z", "2026-11-01T06:40:00Z",
                                        "2026-11-02T06:00:00Z"}));
    // From the last second of the first pass, the next is the repeated 01:00.
    EXPECT_EQ(next_iso("*/20 1 * * *", ny, utc(2026, 11, 1, 5, 59, 59)), "2026-11-01T06:00:00Z");
    EXPECT_EQ(latest_iso("*/20 1 * * *", ny, utc(2026, 11, 1, 6, 30)), "2026-11-01T06:20:00Z");
    EXPECT_EQ(latest_iso("*/20 1 * * *", ny, utc(2026, 11, 1, 6, 10)), "2026-11-01T06:00:00Z");
    EXPECT_EQ(latest_iso("*/20 1 * * *", ny, utc(2026, 11, 1, 5, 59)), "2026-11-01T05:40:00Z");
}

TEST(ScheduleDstTest, Berlin) {
    const auto b = test::berlin();
    // 2026-03-29 02:00 CET becomes 03:00 CEST (01:00 UTC); 2026-10-25 03:00 CEST becomes
    // 02:00 CET (01:00 UTC).
    EXPECT_EQ(slots("30 2 * * *", b, utc(2026, 3, 28, 12), 2),
              (std::vector<std::string>{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}));
    EXPECT_EQ(slots("30 2 * * *", b, utc(2026, 10, 24, 12), 2),
              (std::vector<std::string>{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}));
    EXPECT_EQ(slots("30 * * * *", b, utc(2026, 10, 25, 0), 3),
              (std::vector<std::string>{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z",
                                        "2026-10-25T02:30:00Z"}));
}

TEST(ScheduleDstTest, HalfHourChangeAndWholeDays) {
    const auto lh = test::lord_howe();
    // 2026-10-04 02:00 (+10:30) becomes 02:30 (+11), 2026-10-03 15:30 UTC.
    EXPECT_EQ(next_iso("15 2 * * *", lh, utc(2026, 10, 3, 12)), "2026-10-03T15:30:00Z");
    EXPECT_EQ(next_iso("30 2 * * *", lh, utc(2026, 10, 3, 12)), "2026-10-03T15:30:00Z");
    EXPECT_EQ(next_iso("45 2 * * *", lh, utc(2026, 10, 3, 12)), "2026-10-03T15:45:00Z");
    // Apia skipped 2011-12-30: a fixed-time job of that day runs at the jump, a wildcard
    // one not at all.
    const auto apia = test::apia();
    EXPECT_EQ(slots("0 12 * * *", apia, utc(2011, 12, 29, 12), 3),
              (std::vector<std::string>{"2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z",
                                        "2011-12-30T22:00:00Z"}));
    // (then +14 for good: 2012-12-30 00:00 is 2012-12-29 10:00 UTC)
    EXPECT_EQ(next_iso("0 * 30 12 *", apia, utc(2011, 12, 29, 12)), "2012-12-29T10:00:00Z");
    // Its mirror repeats 2011-12-30 (then -10 for good): a fixed-time job once, a
    // wildcard one twice.
    const auto twice = test::apia_reversed();
    EXPECT_EQ(slots("0 12 30 12 *", twice, utc(2011, 12, 28), 2),
              (std::vector<std::string>{"2011-12-29T22:00:00Z", "2012-12-30T22:00:00Z"}));
    EXPECT_EQ(slots("0 12,13 30 12 *", twice, utc(2011, 12, 28), 3),
              (std::vector<std::string>{"2011-12-29T22:00:00Z", "2011-12-29T23:00:00Z",
                                        "2012-12-30T22:00:00Z"}));
    EXPECT_EQ(slots("0 */12 30 12 *", twice, utc(2011, 12, 28), 5),
              (std::vector<std::string>{"2011-12-29T10:00:00Z", "2011-12-29T22:00:00Z",
                                        "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z",
                                        "2012-12-30T10:00:00Z"}));
    EXPECT_EQ(latest_iso("0 */12 30 12 *", twice, utc(2011, 12, 30, 11)), "2011-12-30T10:00:00Z");
    EXPECT_EQ(latest_iso("0 12 30 12 *", twice, utc(2011, 12, 30, 23)), "2011-12-29T22:00:00Z");
}

TEST(ScheduleDstTest, SearchAgreesWithMinuteByMinute) {
    const auto ny = test::new_york(2020, 2030);
    const auto b = test::berlin(2020, 2030);
    const auto lh = test::lord_howe(2020, 2030);
    const auto apia = test::apia(), twice = test::apia_reversed();
    const Zone* zones[] = {&kUtc, &ny, &b, &lh, &apia, &twice};
    const std::int64_t windows[] = {
        utc(2026, 3, 7, 12), utc(2026, 10, 31, 12), utc(2026, 3, 28, 12), utc(2026, 10, 24, 12),
        utc(2026, 4, 4, 0),  utc(2026, 10, 3, 0),   utc(2011, 12, 28, 12)};
    const char* specs[] = {"30 2 * * *",   "0,30 2,3 * * *", "30 1 * * *",     "* * * * *",
                           "*/7 * * * *",  "0 * * * *",      "15 2 * * *",     "*/20 1 * * *",
                           "45 1,2 * * *", "0 12 * * *",     "0 */12 30 12 *", "0 0 * * SUN",
                           "59 23 * * *"};
    for (const char* text : specs) {
        const Spec s = parse(text);
        for (const Zone* z : zones) {
            for (std::int64_t w : windows) {
                const std::int64_t from = w, to = w + 3 * 86400 * kSec;
                const std::vector<std::int64_t> expect = test::brute_slots(s, *z, from, to);
                // From every half hour (and a second either side) of the window.
                for (std::int64_t a = from + 86400 * kSec / 2; a < to - 86400 * kSec;
                     a += 30 * kMin) {
                    for (std::int64_t d : {-kSec, std::int64_t{0}, kSec}) {
                        const std::int64_t after = a + d;
                        std::optional<std::int64_t> want_next, want_latest;
                        for (std::int64_t u : expect) {
                            if (u > after && !want_next)
                                want_next = u;
                            if (u <= after)
                                want_latest = u;
                        }
                        if (want_next) {
                            ASSERT_EQ(iso(next_slot(s, *z, after)), iso(want_next))
                                << text << " after " << format_utc(after);
                        }
                        if (want_latest) {
                            ASSERT_EQ(iso(latest_slot_at_or_before(s, *z, after)), iso(want_latest))
                                << text << " at " << format_utc(after);
                        }
                    }
                }
            }
        }
    }
}

// ---- formatting ------------------------------------------------------------------------

TEST(ScheduleFormatTest, IsoUtc) {
    EXPECT_EQ(format_utc(utc(2026, 12, 2, 3, 0)), "2026-12-02T03:00:00Z");
    EXPECT_EQ(format_utc(0), "1970-01-01T00:00:00Z");
    EXPECT_EQ(format_utc(-1), "1969-12-31T23:59:59.999999Z");
    EXPECT_EQ(format_utc(1500000), "1970-01-01T00:00:01.500000Z");
    EXPECT_EQ(format_utc(kMinUsec), "0001-01-01T00:00:00Z");
    EXPECT_EQ(format_utc(kMaxUsec), "9999-12-31T23:59:59.999999Z");
    EXPECT_EQ(format_utc(utc(2024, 2, 29, 23, 59, 59)), "2024-02-29T23:59:59Z");
    EXPECT_EQ(dedup_key("nightly", utc(2026, 12, 2, 3, 0)),
              "schedule:nightly:2026-12-02T03:00:00Z");
}

TEST(ScheduleFormatTest, CalendarArithmetic) {
    EXPECT_EQ(days_from_civil(1970, 1, 1), 0);
    EXPECT_EQ(days_from_civil(2000, 3, 1), 11017);
    EXPECT_EQ(weekday(1970, 1, 1), 4);
    EXPECT_EQ(weekday(2026, 12, 2), 3);
    EXPECT_EQ(weekday(1969, 12, 28), 0);
    EXPECT_EQ(days_in_month(2100, 2), 28);
    EXPECT_EQ(days_in_month(2000, 2), 29);
    EXPECT_EQ(days_in_month(2026, 4), 30);
    for (std::int64_t u : {kMinUsec, std::int64_t{-1} * kSec, std::int64_t{0},
                           utc(2026, 12, 2, 3, 4, 5), kMaxUsec - 999999}) {
        EXPECT_EQ(usec_from_civil(civil_from_usec(u)), u) << u;
    }
}

}  // namespace
}  // namespace baton::schedule
