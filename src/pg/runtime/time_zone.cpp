// Time zones for schedules (see time_zone.hpp).
#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "pg/runtime/time_zone.hpp"

namespace baton::pg::time_zone {

namespace {

constexpr std::int64_t kUsecPerSec = 1000000;
// Postgres' epoch (2000-01-01) after the Unix epoch, in microseconds.
constexpr std::int64_t kEpochShift =
    static_cast<std::int64_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
// How far around a civil time its offsets are looked for: more than any offset (±26 h)
// and any gap or repetition (a day) together need.
constexpr pg_time_t kWindowSec = 2 * 86400;
// The most transitions looked at in that window (real zones have at most two).
constexpr int kMaxTransitions = 16;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// The broken-down local time of a second; the zone library only fails on overflow,
// which no slot (years 1 to 9999, and a day around them) reaches.
const struct pg_tm* local_tm(pg_time_t t, const pg_tz* tz) {
    const struct pg_tm* tm = pg_localtime(&t, tz);
    if (tm == nullptr)
        throw Error(SqlState::kInternal, "pg_baton could not read the time zone at second " + std::to_string(t));
    return tm;
}

// A transition of the zone: the offset in force from second `at` on.
struct Transition {
    pg_time_t at;
    long offset;
};

// The zone's offset at second `from` (*first_offset) and its transitions in (from, to],
// at most kMaxTransitions, in order (changes[k]: the offset from second changes[k].at on).
// Returns how many.
int transitions(const pg_tz* tz, pg_time_t from, pg_time_t to, long* first_offset, Transition* changes) {
    *first_offset = local_tm(from, tz)->tm_gmtoff;
    int n = 0;
    pg_time_t t = from;
    while (n < kMaxTransitions) {
        long before_off = 0, after_off = 0;
        int before_dst = 0, after_dst = 0;
        pg_time_t boundary = 0;
        if (pg_next_dst_boundary(&t, &before_off, &before_dst, &boundary, &after_off, &after_dst, tz) != 1) break;
        if (boundary > to || boundary <= t) break;
        changes[n++] = {boundary, after_off};
        t = boundary;
    }
    return n;
}

}  // namespace

const pg_tz* find(const char* name) {
    return guard([name]() -> const pg_tz* {
        pg_tz* tz = pg_tzset(name);
        return (tz != nullptr && pg_tz_acceptable(tz)) ? tz : nullptr;
    });
}

std::int64_t unix_usec(TimestampTz ts) { return ts + kEpochShift; }

TimestampTz timestamptz(std::int64_t unix_usec) { return unix_usec - kEpochShift; }

// The candidates are the civil time minus each offset the zone has near it; one that
// the zone reads back at that offset is an instant of it. None: a gap, whose jump is the
// transition the civil time falls across.
schedule::Resolved PgZone::resolve(const schedule::Civil& local) const {
    const pg_time_t l = schedule::usec_from_civil(local) / kUsecPerSec;  // whole seconds
    long offsets[kMaxTransitions + 1];
    Transition changes[kMaxTransitions];
    int n = transitions(tz_, l - kWindowSec, l + kWindowSec, &offsets[0], changes);
    for (int k = 0; k < n; k++) offsets[k + 1] = changes[k].offset;
    pg_time_t found[kMaxTransitions + 1];
    int count = 0;
    for (int k = 0; k <= n; k++) {
        pg_time_t u = l - offsets[k];
        // u lies in period k: at or after its start, before the next transition.
        if ((k == 0 || u >= changes[k - 1].at) && (k == n || u < changes[k].at)) found[count++] = u;
    }
    std::sort(found, found + count);
    if (count == 1) return schedule::Resolved::once(found[0] * kUsecPerSec);
    if (count >= 2) return schedule::Resolved::twice(found[0] * kUsecPerSec, found[count - 1] * kUsecPerSec);
    for (int k = 0; k < n; k++) {
        pg_time_t end = changes[k].at;
        if (l >= end + offsets[k] && l < end + offsets[k + 1]) return schedule::Resolved::gap(end * kUsecPerSec);
    }
    throw Error(SqlState::kInternal, "pg_baton found no instant for a civil time in a time zone",
                "The zone's transitions near " + std::to_string(l) + " are inconsistent.");
}

schedule::Civil PgZone::civil_of(std::int64_t utc_usec) const {
    const struct pg_tm* tm = local_tm(floor_div(utc_usec, kUsecPerSec), tz_);
    return {tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min, tm->tm_sec};
}

}  // namespace baton::pg::time_zone
