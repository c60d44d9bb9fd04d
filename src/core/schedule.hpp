// Recurring schedules: the `spec` of baton.schedule read into a Spec, and the instants
// ("slots") a Spec fires at, computed in a time zone's civil (wall-clock) time through the
// Zone interface, which the Postgres layer implements with the server's time zone data.
//
// Instants are microseconds since 1970-01-01 00:00:00 UTC (the Unix epoch, not Postgres'
// 2000-01-01: the Postgres layer adds the difference). Slots lie between kMinUsec
// (0001-01-01) and kMaxUsec (9999-12-31); outside it there is no slot.
//
// The spec is one of (case-insensitive, at most kMaxSpecBytes bytes, spaces or tabs
// between fields and around the whole):
//   - a five-field cron line "minute hour day-of-month month day-of-week":
//       minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC,
//       day of week 0-7 (0 and 7 are Sunday) or SUN-SAT;
//     each field a comma-separated list of items: `*`, `a`, `a-b`, `*/n`, `a-b/n` and
//     `a/n` (which means a-max/n, as in Vixie cron; for the day of week max is 7, so
//     `1/2` is Monday, Wednesday, Friday and Sunday). A range goes upwards (`5-1` is
//     refused); a step n is 1 to the field's largest value.
//     Day of month and day of week: when both fields are restricted, a day matches when
//     EITHER matches (`0 0 13 * FRI` is every 13th and every Friday). As in Vixie cron a
//     field counts as unrestricted when it begins with `*` (so `*/2`, too): then a day
//     must match both fields (`0 0 */2 * MON` is an odd day that is a Monday).
//   - a macro: @hourly `0 * * * *`, @daily and @midnight `0 0 * * *`, @weekly
//     `0 0 * * 0`, @monthly `0 0 1 * *`, @yearly and @annually `0 0 1 1 *`. Each is
//     exactly the cron line it abbreviates.
//   - `@every <interval>`: one or more terms `<n> <unit>` (the space is optional), summed:
//     n a decimal integer, unit s/sec/secs/second/seconds, m/min/mins/minute/minutes,
//     h/hr/hrs/hour/hours, d/day/days, w/week/weeks. `@every 30 seconds`, `@every 5m`,
//     `@every 1 hour 30 minutes`, `@every 1d`. The sum is 1 second to 365 days.
// Anything else is refused with 22023 "invalid value for argument "spec"" and a detail
// naming the field and why, e.g. "Field 2 (hour) has 24; an hour is 0 to 23.". A cron
// line that can never fire (`0 0 30 2 *`, `0 0 31 4,6,9,11 *`) is refused the same way,
// its detail saying that it never matches.
//
// Daylight-saving time (docs/guide/schedules.md, "Daylight-saving time"). A cron line is read
// in the zone's civil time. Its fixed-time jobs and its wildcard jobs differ, as in
// Vixie/ISC cron: a spec whose minute and hour fields both do not begin with `*` is
// fixed-time (`30 2 * * *`, @daily, @weekly, @monthly, @yearly); one whose minute or
// hour field begins with `*` is a wildcard spec (`*/15 * * * *`, `0 * * * *`, @hourly).
//   - A civil time that does not exist (the clocks jump over it, e.g. 02:30 on a day when
//     02:00 becomes 03:00): a fixed-time spec fires once at the instant of the jump
//     (03:00 new time); every time it names in the gap gives that one slot, and so does
//     a 03:00 of its own. A wildcard spec has no slot in the gap: it goes on at the new
//     time (its next matching time after the jump).
//   - A civil time that exists twice (the clocks go back, e.g. 01:30 on a day when 02:00
//     becomes 01:00): a fixed-time spec fires once, at the first occurrence (before the
//     clocks go back). A wildcard spec fires at both occurrences, so `0 * * * *` stays
//     hourly in real time.
//   - `@every` ignores time zones: its slots are the multiples of the interval since
//     1970-01-01 00:00:00 UTC (`@every 1 hour` fires on the hour UTC, `@every 7 days`
//     on Thursdays at 00:00 UTC), the same on every day of the year.
// Unlike Vixie cron there is no 3-hour threshold: every transition of the zone's rules,
// however large, is treated this way.
//
// The search skips by fields (month, then day, hour, minute; never minute by minute over
// years) and covers at most kSearchYears years from its start, which every spec parse()
// accepts fires within; so next_slot() and latest_slot_at_or_before() always end.
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::schedule {

// The longest spec accepted, in bytes.
constexpr std::size_t kMaxSpecBytes = 200;
// The bounds of an @every interval, in seconds.
constexpr std::int64_t kMinEverySeconds = 1;
constexpr std::int64_t kMaxEverySeconds = 365LL * 86400;
// How many years a search covers. The rarest spec parse() accepts, a 29 February on one
// day of the week (`0 0 29 2 */7`: a 29 February that is a Sunday), fires every 28 years
// but for 40 years across a century that is not a leap year (2088, then 2128).
constexpr int kSearchYears = 41;
// The instants slots lie between: 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z.
constexpr std::int64_t kMinUsec = -62135596800LL * 1000000;
constexpr std::int64_t kMaxUsec = 253402300800LL * 1000000 - 1;

// A civil (wall-clock) time in some zone, to the second: proleptic Gregorian calendar,
// month 1-12, day 1-31, hour 0-23, minute 0-59, second 0-59.
struct Civil {
    int year = 1970;
    int month = 1;
    int day = 1;
    int hour = 0;
    int minute = 0;
    int second = 0;
};

// True when two civil times are the same second.
bool operator==(const Civil& a, const Civil& b);

// What a civil time is in a zone: one instant, none (it falls in a gap the clocks jump
// over), or two (the clocks go back over it).
struct Resolved {
    enum class Kind { kOnce, kGap, kTwice };
    Kind kind = Kind::kOnce;
    // kOnce: the instant. kTwice: the earlier instant (before the clocks go back).
    // kGap: the instant the clocks jumped, i.e. the first instant after the gap.
    std::int64_t first = 0;
    // kTwice: the later instant; otherwise equal to first.
    std::int64_t second = 0;

    // The three answers, spelled once.
    static Resolved once(std::int64_t instant) { return {Kind::kOnce, instant, instant}; }
    static Resolved gap(std::int64_t jump) { return {Kind::kGap, jump, jump}; }
    static Resolved twice(std::int64_t earlier, std::int64_t later) {
        return {Kind::kTwice, earlier, later};
    }
};

// A time zone as the schedule search needs it; the Postgres layer implements it over the
// server's zone data, the tests with fixed offsets and simplified daylight-saving rules.
// An implementation must be consistent: civil_of(u) resolves to u (once, or as one of
// two), civil times resolve in order (a later civil time never to an earlier instant,
// taking first occurrences), a gap's jump instant is the first instant whose civil time
// is past the gap, and no gap or repetition is longer than a day. The search may ask
// about civil times in the years 0 and 10000, which an offset brings into range.
class Zone {
public:
    virtual ~Zone() = default;
    // The instant(s) of a civil time in this zone.
    virtual Resolved resolve(const Civil& local) const = 0;
    // The civil time of an instant in this zone, truncated to the second.
    virtual Civil civil_of(std::int64_t utc_usec) const = 0;

protected:
    Zone() = default;
    Zone(const Zone&) = default;
    Zone& operator=(const Zone&) = default;
};

// A zone with one fixed offset from UTC (east positive), such as UTC itself.
class FixedZone final : public Zone {
public:
    explicit FixedZone(std::int64_t offset_seconds) : offset_usec_(offset_seconds * 1000000) {}
    Resolved resolve(const Civil& local) const override;
    Civil civil_of(std::int64_t utc_usec) const override;

private:
    std::int64_t offset_usec_;
};

// A parsed spec. For a cron line bit k of each mask stands for the value k.
struct Spec {
    enum class Kind { kCron, kEvery };
    Kind kind = Kind::kCron;
    std::uint64_t minutes = 0;    // bits 0-59
    std::uint32_t hours = 0;      // bits 0-23
    std::uint32_t days = 0;       // bits 1-31 (day of month)
    std::uint32_t months = 0;     // bits 1-12
    std::uint32_t weekdays = 0;   // bits 0-6, 0 = Sunday (a 7 written in the spec is bit 0)
    bool days_star = false;       // the day-of-month field begins with `*`
    bool weekdays_star = false;   // the day-of-week field begins with `*`
    bool wildcard = false;        // the minute or the hour field begins with `*`
    std::int64_t every_usec = 0;  // kEvery: the interval
};

// Reads a spec (see the top of this file); 22023 naming `spec` when it is not one.
Spec parse(std::string_view spec);

// True when a cron spec's day fields accept this date (the either-or rule above).
bool matches_day(const Spec& spec, int year, int month, int day);

// True when a cron spec matches a civil time: second 0 and every field. False for @every.
bool matches(const Spec& spec, const Civil& local);

// The first slot strictly after `after_utc_usec`, or nullopt when there is none between
// kMinUsec and kMaxUsec within kSearchYears (or `after` is outside them).
std::optional<std::int64_t> next_slot(const Spec& spec, const Zone& zone,
                                      std::int64_t after_utc_usec);

// The latest slot at or before `now_utc_usec`, or nullopt as for next_slot(). After a
// pause the scheduler fires only this one, not every slot it missed.
std::optional<std::int64_t> latest_slot_at_or_before(const Spec& spec, const Zone& zone,
                                                     std::int64_t now_utc_usec);

// The slot due now: the latest slot in (last_fired, now], or nullopt when none is.
std::optional<std::int64_t> due_slot(const Spec& spec, const Zone& zone,
                                     std::int64_t last_fired_utc_usec, std::int64_t now_utc_usec);

// An instant in ISO 8601 UTC, "2026-12-02T03:00:00Z"; with ".ffffff" before the Z when
// it is not a whole second (no slot of a cron line or an @every is).
std::string format_utc(std::int64_t utc_usec);

// The dedup key of a schedule's delivery for one slot: "schedule:<name>:<slot>", the slot
// as format_utc writes it (a name of 200 characters gives 230, within the 256 of a key).
std::string dedup_key(std::string_view name, std::int64_t slot_utc_usec);

// Calendar arithmetic (proleptic Gregorian), for the zones and the Postgres layer.
// Days since 1970-01-01 of a date.
std::int64_t days_from_civil(std::int64_t year, int month, int day);
// The number of days of a month: 28 to 31.
int days_in_month(std::int64_t year, int month);
// The day of the week of a date, 0 = Sunday to 6 = Saturday.
int weekday(std::int64_t year, int month, int day);
// The civil time of an instant read in UTC, truncated to the second.
Civil civil_from_usec(std::int64_t utc_usec);
// The instant of a civil time read in UTC.
std::int64_t usec_from_civil(const Civil& utc);

}  // namespace baton::schedule
