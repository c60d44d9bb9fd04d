// Recurring schedules: parsing a spec and searching its slots (see schedule.hpp).
#include "core/schedule.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json.hpp"

namespace baton::schedule {

namespace {

constexpr std::int64_t kUsecPerSecond = 1000000;
constexpr std::int64_t kUsecPerDay = 86400 * kUsecPerSecond;

// Floor division and its remainder: instants before 1970 are negative.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        --q;
    return q;
}

// True for a Gregorian leap year.
bool is_leap(std::int64_t y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

// ---- parsing --------------------------------------------------------------------------

// One field of a cron line: its place, how details name it, and its values.
struct Field {
    int number;        // 1-5, as details count
    const char* name;  // "minute"
    const char* what;  // "a minute is 0 to 59"
    int min;
    int max;
    const char* const* names;  // three-letter names of min, min+1, ... or nullptr
    int name_count;
};

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

constexpr Field kFields[5] = {
    {1, "minute", "a minute is 0 to 59", 0, 59, nullptr, 0},
    {2, "hour", "an hour is 0 to 23", 0, 23, nullptr, 0},
    {3, "day of month", "a day of month is 1 to 31", 1, 31, nullptr, 0},
    {4, "month", "a month is 1 to 12 or JAN to DEC", 1, 12, kMonthNames, 12},
    {5, "day of week", "a day of week is 0 to 7 (0 and 7 are Sunday) or SUN to SAT", 0, 7,
     kDayNames, 7},
};

// Throws the 22023 of a bad spec.
[[noreturn]] void refuse(std::string detail) {
    throw_invalid_argument("spec", std::move(detail));
}

// "Field 2 (hour)", the start of every field's detail.
std::string field_label(const Field& f) {
    return "Field " + std::to_string(f.number) + " (" + f.name + ")";
}

// The separators of fields and terms: a space or a tab (no other whitespace).
bool is_space(char c) {
    return c == ' ' || c == '\t';
}

// ASCII character classes, independent of the C locale.
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// ASCII upper case, for names and macros, which are case-insensitive.
char upper(char c) {
    return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}

// True when two texts are equal ignoring ASCII case.
bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (upper(a[i]) != upper(b[i]))
            return false;
    return true;
}

// A run of decimal digits as a number, saturated at a value larger than any field's or
// interval's (so a long run of digits never overflows).
std::int64_t digits_value(std::string_view digits) {
    std::int64_t v = 0;
    for (char c : digits) {
        v = v * 10 + (c - '0');
        if (v > 1000000000000LL)
            return 1000000000000LL;
    }
    return v;
}

// The text of a value for a detail: digits as written (clipped), anything else quoted.
std::string shown(std::string_view text) {
    bool digits = !text.empty() && text.size() <= 20;
    for (char c : text)
        digits = digits && is_digit(c);
    return digits ? std::string(text) : json::excerpt(text, 32);
}

// One value of a field: a number in range, or (month and day of week) a name.
int parse_value(const Field& f, std::string_view text, std::string_view item) {
    if (text.empty())
        refuse(field_label(f) + " has " + json::excerpt(item, 32) + ", where a value is missing.");
    bool digits = true, letters = true;
    for (char c : text) {
        digits = digits && is_digit(c);
        letters = letters && is_alpha(c);
    }
    if (digits) {
        std::int64_t v = digits_value(text);
        if (v < f.min || v > f.max)
            refuse(field_label(f) + " has " + shown(text) + "; " + f.what + ".");
        return static_cast<int>(v);
    }
    if (letters && f.names != nullptr) {
        for (int k = 0; k < f.name_count; ++k)
            if (iequals(text, f.names[k]))
                return f.min + k;
        refuse(field_label(f) + " has " + json::excerpt(text, 32) + ", which is not a " + f.name +
               " name (" + (f.number == 4 ? "JAN to DEC" : "SUN to SAT") + ").");
    }
    if (letters)
        refuse(field_label(f) + " has " + json::excerpt(text, 32) + "; " + f.what +
               " (names are only for months and days of week).");
    refuse(field_label(f) + " has " + json::excerpt(item, 32) +
           ", which is not an item: a value, a range a-b, *, or a step */n, a-b/n or a/n.");
}

// The bits of one field, the whole comma-separated list; `star` is set when the field
// begins with `*` (Vixie cron's rule for the day fields and for wildcard jobs).
std::uint64_t parse_field(const Field& f, std::string_view text, bool& star) {
    star = !text.empty() && text[0] == '*';
    std::uint64_t bits = 0;
    std::size_t pos = 0;
    for (;;) {
        std::size_t comma = text.find(',', pos);
        std::string_view item = text.substr(
            pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        if (item.empty())
            refuse(field_label(f) + " has an empty item in the list " + json::excerpt(text, 64) +
                   " (two commas, or a comma at an end).");
        std::string_view base = item, step_text;
        std::size_t slash = item.find('/');
        if (slash != std::string_view::npos) {
            base = item.substr(0, slash);
            step_text = item.substr(slash + 1);
            bool digits = !step_text.empty();
            for (char c : step_text)
                digits = digits && is_digit(c);
            if (!digits)
                refuse(field_label(f) + " has " + json::excerpt(item, 32) +
                       ", whose step is not a number: a step is */n, a-b/n or a/n.");
        }
        int lo, hi;
        if (base == "*") {
            lo = f.min;
            hi = f.max;
        } else if (std::size_t dash = base.find('-'); dash != std::string_view::npos) {
            lo = parse_value(f, base.substr(0, dash), item);
            hi = parse_value(f, base.substr(dash + 1), item);
            if (lo > hi)
                refuse(field_label(f) + " has the range " + json::excerpt(base, 32) +
                       ", which goes downwards; a range goes from its lower value to its higher.");
        } else {
            lo = parse_value(f, base, item);
            hi = step_text.empty() ? lo : f.max;  // a/n is a-max/n
        }
        int step = 1;
        if (!step_text.empty()) {
            std::int64_t s = digits_value(step_text);
            if (s < 1 || s > f.max)
                refuse(field_label(f) + " has the step " + shown(step_text) + "; a step is 1 to " +
                       std::to_string(f.max) + ".");
            step = static_cast<int>(s);
        }
        for (int v = lo; v <= hi; v += step)
            bits |= std::uint64_t{1} << v;
        if (comma == std::string_view::npos)
            break;
        pos = comma + 1;
    }
    return bits;
}

// True when some day the fields allow exists: under the either-or rule any month has
// every day of the week; otherwise a day of month must fit in one of the months (29 in
// February). The day of week then falls on it in some year within kSearchYears.
bool can_fire(const Spec& s) {
    if (!s.days_star && !s.weekdays_star)
        return true;
    constexpr int kLongest[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (int m = 1; m <= 12; ++m)
        if (s.months & (1u << m))
            for (int d = 1; d <= kLongest[m]; ++d)
                if (s.days & (1u << d))
                    return true;
    return false;
}

// Reads "minute hour day month weekday" into a Spec.
Spec parse_cron(std::string_view text) {
    std::vector<std::string_view> fields;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && is_space(text[i]))
            ++i;
        std::size_t start = i;
        while (i < text.size() && !is_space(text[i]))
            ++i;
        if (i > start)
            fields.push_back(text.substr(start, i - start));
    }
    if (fields.size() != 5)
        refuse("spec has " + std::to_string(fields.size()) +
               (fields.size() == 1 ? " field" : " fields") +
               "; a cron line has five: minute, hour, day of month, month and day of week "
               "(or use @hourly, @daily, @weekly, @monthly, @yearly or @every <interval>).");
    Spec s;
    s.kind = Spec::Kind::kCron;
    bool star[5];
    std::uint64_t bits[5];
    for (int k = 0; k < 5; ++k)
        bits[k] = parse_field(kFields[k], fields[static_cast<std::size_t>(k)], star[k]);
    s.minutes = bits[0];
    s.hours = static_cast<std::uint32_t>(bits[1]);
    s.days = static_cast<std::uint32_t>(bits[2]);
    s.months = static_cast<std::uint32_t>(bits[3]);
    // Day of week 7 is Sunday, like 0.
    s.weekdays = static_cast<std::uint32_t>((bits[4] & 0x7F) | ((bits[4] >> 7) & 1));
    s.wildcard = star[0] || star[1];
    s.days_star = star[2];
    s.weekdays_star = star[4];
    if (!can_fire(s))
        refuse(
            "Field 3 (day of month) and field 4 (month) never meet: none of the days is in "
            "any of the months (February has 29 days at most; April, June, September and "
            "November 30), so the spec never matches.");
    return s;
}

// The seconds of one @every unit, or 0 for an unknown unit.
std::int64_t unit_seconds(std::string_view unit) {
    struct Unit {
        const char* name;
        std::int64_t seconds;
    };
    static constexpr Unit kUnits[] = {
        {"s", 1},         {"sec", 1},     {"secs", 1},     {"second", 1},  {"seconds", 1},
        {"m", 60},        {"min", 60},    {"mins", 60},    {"minute", 60}, {"minutes", 60},
        {"h", 3600},      {"hr", 3600},   {"hrs", 3600},   {"hour", 3600}, {"hours", 3600},
        {"d", 86400},     {"day", 86400}, {"days", 86400}, {"w", 604800},  {"week", 604800},
        {"weeks", 604800}};
    for (const Unit& u : kUnits)
        if (iequals(unit, u.name))
            return u.seconds;
    return 0;
}

// Reads the interval of "@every <interval>" into a Spec.
Spec parse_every(std::string_view text) {
    const std::string units =
        "a unit is s, sec, second(s), m, min, minute(s), h, hr, hour(s), d, day(s), w or week(s)";
    std::size_t i = 0;
    std::int64_t total = 0;
    int terms = 0;
    while (true) {
        while (i < text.size() && is_space(text[i]))
            ++i;
        if (i == text.size())
            break;
        std::size_t start = i;
        while (i < text.size() && is_digit(text[i]))
            ++i;
        std::string_view number = text.substr(start, i - start);
        if (number.empty() || (i < text.size() && text[i] == '.'))
            refuse("@every has " + json::excerpt(text.substr(start), 32) +
                   ", where a whole number of units is expected (\"@every 30 seconds\", "
                   "\"@every 1 hour 30 minutes\").");
        while (i < text.size() && is_space(text[i]))
            ++i;
        std::size_t ustart = i;
        while (i < text.size() && is_alpha(text[i]))
            ++i;
        std::string_view unit = text.substr(ustart, i - ustart);
        std::int64_t seconds = unit_seconds(unit);
        if (seconds == 0)
            refuse("@every has " +
                   (unit.empty() ? std::string("no unit") : json::excerpt(unit, 32)) + " after " +
                   shown(number) + "; " + units + ".");
        if (i < text.size() && !is_space(text[i]) && !is_digit(text[i]))
            refuse("@every has " + json::excerpt(text.substr(i), 32) + " after " +
                   json::excerpt(text.substr(start, i - start), 32) +
                   "; an interval is terms like \"5 minutes\" or \"2h\", and nothing else.");
        std::int64_t n = digits_value(number);
        total += n > kMaxEverySeconds ? kMaxEverySeconds + 1 : n * seconds;
        if (total > kMaxEverySeconds)
            total = kMaxEverySeconds + 1;
        ++terms;
    }
    if (terms == 0)
        refuse("@every needs an interval, e.g. \"@every 5 minutes\".");
    if (total < kMinEverySeconds)
        refuse("@every has an interval of 0 seconds; an interval is at least 1 second.");
    if (total > kMaxEverySeconds)
        refuse("@every has an interval longer than 365 days; an interval is at most 365 days.");
    Spec s;
    s.kind = Spec::Kind::kEvery;
    s.every_usec = total * kUsecPerSecond;
    return s;
}

// ---- searching ------------------------------------------------------------------------

// A civil minute, the position of a search.
using Minute = Civil;

// The lowest set bit of mask in [from, to], or -1.
int next_bit(std::uint64_t mask, int from, int to) {
    for (int k = from; k <= to; ++k)
        if (mask & (std::uint64_t{1} << k))
            return k;
    return -1;
}

// The highest set bit of mask in [to, from], or -1.
int prev_bit(std::uint64_t mask, int from, int to) {
    for (int k = from; k >= to; --k)
        if (mask & (std::uint64_t{1} << k))
            return k;
    return -1;
}

// The first minute of the next day.
void next_day(Minute& t) {
    t.hour = 0;
    t.minute = 0;
    if (++t.day > days_in_month(t.year, t.month)) {
        t.day = 1;
        if (++t.month > 12) {
            t.month = 1;
            ++t.year;
        }
    }
}

// The last minute of the previous day.
void prev_day(Minute& t) {
    t.hour = 23;
    t.minute = 59;
    if (--t.day < 1) {
        if (--t.month < 1) {
            t.month = 12;
            --t.year;
        }
        t.day = days_in_month(t.year, t.month);
    }
}

// The earliest minute at or after t that the cron spec matches, skipping by whole months,
// days and hours; nullopt once past last_year.
std::optional<Minute> first_match(const Spec& s, Minute t, int last_year) {
    t.second = 0;
    for (;;) {
        if (t.year > last_year)
            return std::nullopt;
        if (!(s.months & (1u << t.month))) {
            int m = next_bit(s.months, t.month + 1, 12);
            if (m < 0) {
                ++t.year;
                m = next_bit(s.months, 1, 12);
            }
            t.month = m;
            t.day = 1;
            t.hour = 0;
            t.minute = 0;
        } else if (!matches_day(s, t.year, t.month, t.day)) {
            next_day(t);
        } else if (!(s.hours & (1u << t.hour))) {
            int h = next_bit(s.hours, t.hour + 1, 23);
            if (h < 0) {
                next_day(t);
            } else {
                t.hour = h;
                t.minute = 0;
            }
        } else if (!(s.minutes & (std::uint64_t{1} << t.minute))) {
            int mi = next_bit(s.minutes, t.minute + 1, 59);
            if (mi >= 0) {
                t.minute = mi;
            } else if (t.hour < 23) {
                ++t.hour;
                t.minute = 0;
            } else {
                next_day(t);
            }
        } else {
            return t;
        }
    }
}

// The latest minute at or before t that the cron spec matches; nullopt once before
// first_year.
std::optional<Minute> last_match(const Spec& s, Minute t, int first_year) {
    t.second = 0;
    for (;;) {
        if (t.year < first_year)
            return std::nullopt;
        if (!(s.months & (1u << t.month))) {
            int m = prev_bit(s.months, t.month - 1, 1);
            if (m < 0) {
                --t.year;
                m = prev_bit(s.months, 12, 1);
            }
            t.month = m;
            t.day = days_in_month(t.year, t.month);
            t.hour = 23;
            t.minute = 59;
        } else if (!matches_day(s, t.year, t.month, t.day)) {
            prev_day(t);
        } else if (!(s.hours & (1u << t.hour))) {
            int h = prev_bit(s.hours, t.hour - 1, 0);
            if (h < 0) {
                prev_day(t);
            } else {
                t.hour = h;
                t.minute = 59;
            }
        } else if (!(s.minutes & (std::uint64_t{1} << t.minute))) {
            int mi = prev_bit(s.minutes, t.minute - 1, 0);
            if (mi >= 0) {
                t.minute = mi;
            } else if (t.hour > 0) {
                --t.hour;
                t.minute = 59;
            } else {
                prev_day(t);
            }
        } else {
            return t;
        }
    }
}

// The minute after t.
Minute plus_minute(Minute t) {
    if (++t.minute > 59) {
        t.minute = 0;
        if (++t.hour > 23)
            next_day(t);
    }
    return t;
}

// The minute before t.
Minute minus_minute(Minute t) {
    if (--t.minute < 0) {
        t.minute = 59;
        if (--t.hour < 0)
            prev_day(t);
    }
    return t;
}

// The slots of one matching civil minute, earliest first (0, 1 or 2 of them): the rule
// of daylight-saving time in schedule.hpp, in one place.
struct Instants {
    int count = 0;
    std::int64_t at[2] = {0, 0};
};

// The slots of the civil minute c (which the spec matches) in the zone.
Instants instants_of(const Spec& s, const Zone& zone, const Minute& c) {
    const Resolved r = zone.resolve(c);
    Instants out;
    switch (r.kind) {
        case Resolved::Kind::kOnce:
            out.count = 1;
            out.at[0] = r.first;
            break;
        case Resolved::Kind::kGap:
            // Fixed-time: once, at the jump. Wildcard: not in the gap.
            if (!s.wildcard) {
                out.count = 1;
                out.at[0] = r.first;
            }
            break;
        case Resolved::Kind::kTwice:
            // Fixed-time: the first occurrence. Wildcard: both.
            out.count = s.wildcard ? 2 : 1;
            out.at[0] = r.first;
            out.at[1] = r.second;
            break;
    }
    return out;
}

// How far (in microseconds) a civil time repeats: the later minus the earlier instant
// when it exists twice, else 0. Bounded by a day, as Zone promises.
std::int64_t repeat_span(const Zone& zone, const Civil& c) {
    const Resolved r = zone.resolve(c);
    if (r.kind != Resolved::Kind::kTwice || r.second <= r.first)
        return 0;
    return r.second - r.first < kUsecPerDay ? r.second - r.first : kUsecPerDay;
}

// A civil time moved by a duration, read as if in UTC (civil arithmetic).
Civil shifted(const Civil& c, std::int64_t usec) {
    return civil_from_usec(usec_from_civil(c) + usec);
}

// True for an instant a slot may be (kMinUsec..kMaxUsec).
bool in_range(std::int64_t usec) {
    return usec >= kMinUsec && usec <= kMaxUsec;
}

}  // namespace

bool operator==(const Civil& a, const Civil& b) {
    return a.year == b.year && a.month == b.month && a.day == b.day && a.hour == b.hour &&
           a.minute == b.minute && a.second == b.second;
}

// A fixed offset: every civil time exists once.
Resolved FixedZone::resolve(const Civil& local) const {
    return Resolved::once(usec_from_civil(local) - offset_usec_);
}

Civil FixedZone::civil_of(std::int64_t utc_usec) const {
    return civil_from_usec(utc_usec + offset_usec_);
}

Spec parse(std::string_view spec) {
    if (spec.size() > kMaxSpecBytes)
        refuse("spec has at most " + std::to_string(kMaxSpecBytes) + " bytes; this one has " +
               std::to_string(spec.size()) + ".");
    std::size_t b = 0, e = spec.size();
    while (b < e && is_space(spec[b]))
        ++b;
    while (e > b && is_space(spec[e - 1]))
        --e;
    std::string_view text = spec.substr(b, e - b);
    if (text.empty())
        refuse(
            "spec is empty; it is a cron line such as \"30 2 * * *\", a macro such as "
            "@daily, or @every <interval>.");
    if (text[0] != '@')
        return parse_cron(text);
    std::size_t end = 1;
    while (end < text.size() && !is_space(text[end]))
        ++end;
    std::string_view macro = text.substr(0, end);
    std::string_view rest = text.substr(end);
    if (iequals(macro, "@every"))
        return parse_every(rest);
    const char* line = nullptr;
    if (iequals(macro, "@hourly"))
        line = "0 * * * *";
    else if (iequals(macro, "@daily") || iequals(macro, "@midnight"))
        line = "0 0 * * *";
    else if (iequals(macro, "@weekly"))
        line = "0 0 * * 0";
    else if (iequals(macro, "@monthly"))
        line = "0 0 1 * *";
    else if (iequals(macro, "@yearly") || iequals(macro, "@annually"))
        line = "0 0 1 1 *";
    if (line == nullptr)
        refuse(json::excerpt(macro, 32) +
               " is not a macro; the macros are @hourly, @daily, @midnight, @weekly, @monthly, "
               "@yearly, @annually and @every <interval>.");
    if (!rest.empty())
        refuse(json::excerpt(macro, 32) + " takes nothing after it; this spec has " +
               json::excerpt(rest.substr(rest.find_first_not_of(" \t")), 32) + " after it.");
    return parse_cron(line);
}

bool matches_day(const Spec& s, int year, int month, int day) {
    if (day < 1 || day > days_in_month(year, month))
        return false;
    const bool dom = s.days & (1u << day);
    const bool dow = s.weekdays & (1u << weekday(year, month, day));
    // Both restricted: either. One unrestricted (begins with `*`): both, as in Vixie cron.
    return (s.days_star || s.weekdays_star) ? (dom && dow) : (dom || dow);
}

bool matches(const Spec& s, const Civil& c) {
    if (s.kind != Spec::Kind::kCron || c.second != 0 || c.month < 1 || c.month > 12 || c.hour < 0 ||
        c.hour > 23 || c.minute < 0 || c.minute > 59)
        return false;
    return (s.months & (1u << c.month)) && matches_day(s, c.year, c.month, c.day) &&
           (s.hours & (1u << c.hour)) && (s.minutes & (std::uint64_t{1} << c.minute));
}

std::optional<std::int64_t> next_slot(const Spec& s, const Zone& zone, std::int64_t after) {
    if (!in_range(after))
        return std::nullopt;
    if (s.kind == Spec::Kind::kEvery) {
        const std::int64_t slot = (floor_div(after, s.every_usec) + 1) * s.every_usec;
        return in_range(slot) ? std::optional<std::int64_t>(slot) : std::nullopt;
    }
    // Every minute before the civil time of `after` has its slots at or before it, but
    // for the later occurrences of a repeated time: start that much earlier.
    const Civil at = zone.civil_of(after);
    // (Civil years 0 and 10000 are searched too: a zone's offset moves them into range.)
    const Civil start = shifted(at, -repeat_span(zone, at));
    const int last_year = start.year + kSearchYears;
    std::optional<std::int64_t> best;
    // First occurrences never decrease along civil time: the first minute whose earliest
    // slot is after `after` ends the search; an earlier minute's later occurrence may
    // still be the answer.
    for (std::optional<Minute> c = first_match(s, start, last_year); c;
         c = first_match(s, plus_minute(*c), last_year)) {
        const Instants in = instants_of(s, zone, *c);
        for (int k = 0; k < in.count; ++k)
            if (in.at[k] > after && (!best || in.at[k] < *best))
                best = in.at[k];
        if (in.count > 0 && in.at[0] > after)
            break;
    }
    if (best && !in_range(*best))
        return std::nullopt;
    return best;
}

std::optional<std::int64_t> latest_slot_at_or_before(const Spec& s, const Zone& zone,
                                                     std::int64_t now) {
    if (!in_range(now))
        return std::nullopt;
    if (s.kind == Spec::Kind::kEvery) {
        const std::int64_t slot = floor_div(now, s.every_usec) * s.every_usec;
        return in_range(slot) ? std::optional<std::int64_t>(slot) : std::nullopt;
    }
    // The mirror of next_slot: every minute after the civil time of `now` has its slots
    // after it, but for the earlier occurrences of a repeated time: start that much later.
    const Civil at = zone.civil_of(now);
    const Civil start = shifted(at, repeat_span(zone, at));
    const int first_year = start.year - kSearchYears;
    std::optional<std::int64_t> best;
    for (std::optional<Minute> c = last_match(s, start, first_year); c;
         c = last_match(s, minus_minute(*c), first_year)) {
        const Instants in = instants_of(s, zone, *c);
        for (int k = 0; k < in.count; ++k)
            if (in.at[k] <= now && (!best || in.at[k] > *best))
                best = in.at[k];
        if (in.count > 0 && in.at[in.count - 1] <= now)
            break;
    }
    if (best && !in_range(*best))
        return std::nullopt;
    return best;
}

std::optional<std::int64_t> due_slot(const Spec& s, const Zone& zone, std::int64_t last_fired,
                                     std::int64_t now) {
    std::optional<std::int64_t> latest = latest_slot_at_or_before(s, zone, now);
    if (latest && *latest > last_fired)
        return latest;
    return std::nullopt;
}

std::string format_utc(std::int64_t utc_usec) {
    const Civil c = civil_from_usec(utc_usec);
    const std::int64_t frac = utc_usec - floor_div(utc_usec, kUsecPerSecond) * kUsecPerSecond;
    char buf[64];
    if (frac == 0)
        std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", c.year, c.month, c.day,
                      c.hour, c.minute, c.second);
    else
        std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", c.year, c.month,
                      c.day, c.hour, c.minute, c.second, static_cast<int>(frac));
    return buf;
}

std::string dedup_key(std::string_view name, std::int64_t slot_utc_usec) {
    std::string key = "schedule:";
    key.append(name);
    key += ':';
    key += format_utc(slot_utc_usec);
    return key;
}

std::int64_t days_from_civil(std::int64_t y, int m, int d) {
    // Howard Hinnant's algorithm: years counted from March, in 400-year eras.
    y -= m <= 2;
    const std::int64_t era = floor_div(y, 400);
    const std::int64_t yoe = y - era * 400;
    const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int days_in_month(std::int64_t y, int m) {
    constexpr int kDays[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : kDays[m];
}

int weekday(std::int64_t y, int m, int d) {
    // 1970-01-01 was a Thursday (4).
    const std::int64_t n = days_from_civil(y, m, d) + 4;
    return static_cast<int>(n - floor_div(n, 7) * 7);
}

Civil civil_from_usec(std::int64_t usec) {
    const std::int64_t secs = floor_div(usec, kUsecPerSecond);
    const std::int64_t days = floor_div(secs, 86400);
    const std::int64_t sod = secs - days * 86400;
    // Hinnant's inverse.
    const std::int64_t z = days + 719468;
    const std::int64_t era = floor_div(z, 146097);
    const std::int64_t doe = z - era * 146097;
    const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const std::int64_t mp = (5 * doy + 2) / 153;
    const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    const std::int64_t y = yoe + era * 400 + (m <= 2);
    Civil c;
    c.year = static_cast<int>(y);
    c.month = m;
    c.day = d;
    c.hour = static_cast<int>(sod / 3600);
    c.minute = static_cast<int>(sod / 60 % 60);
    c.second = static_cast<int>(sod % 60);
    return c;
}

std::int64_t usec_from_civil(const Civil& c) {
    return (days_from_civil(c.year, c.month, c.day) * 86400 + c.hour * 3600LL + c.minute * 60LL +
            c.second) *
           kUsecPerSecond;
}

}  // namespace baton::schedule
