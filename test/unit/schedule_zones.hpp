// Time zones for the schedule tests (unit and fuzz): a zone given by a table of offset
// changes, and simplified daylight-saving rules built into such tables: America/New_York
// (US rules since 2007), Europe/Berlin (EU rules), Australia/Lord_Howe (a 30-minute
// change, southern hemisphere) and Pacific/Apia's skipped day of 2011 with its mirror, a
// repeated day. And brute_slots(), the slots of a spec found minute by minute, the oracle
// the field-skipping search is checked against.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/schedule.hpp"

namespace test {

using baton::schedule::Civil;
using baton::schedule::Resolved;

// A zone whose offset (seconds east of UTC) is `initial` before the first transition and
// each transition's offset from its instant (UTC microseconds) on.
class TableZone final : public baton::schedule::Zone {
public:
    struct Transition {
        std::int64_t at;
        std::int64_t offset;
    };

    TableZone(std::int64_t initial, std::vector<Transition> transitions)
        : initial_(initial), t_(std::move(transitions)) {}

    Resolved resolve(const Civil& local) const override {
        const std::int64_t l = baton::schedule::usec_from_civil(local);
        constexpr std::int64_t kTwoDays = 2 * 86400LL * 1000000;
        const std::size_t lo = period(l - kTwoDays), hi = period(l + kTwoDays);
        std::vector<std::int64_t> found;
        for (std::size_t k = lo; k <= hi; ++k) {
            const std::int64_t u = l - offset(k) * 1000000;
            if ((k == 0 || u >= t_[k - 1].at) && (k == t_.size() || u < t_[k].at))
                found.push_back(u);
        }
        if (found.size() == 1)
            return Resolved::once(found[0]);
        if (found.size() >= 2)
            return Resolved::twice(found.front(), found.back());
        // A gap: the transition whose jump the local time falls in.
        for (std::size_t k = lo; k < hi && k < t_.size(); ++k) {
            const std::int64_t end = t_[k].at;
            if (l >= end + offset(k) * 1000000 && l < end + offset(k + 1) * 1000000)
                return Resolved::gap(end);
        }
        return Resolved::once(l - offset(lo) * 1000000);  // unreachable for a sane table
    }

    Civil civil_of(std::int64_t u) const override {
        return baton::schedule::civil_from_usec(u + offset(period(u)) * 1000000);
    }

    // The offset in force at an instant, in seconds.
    std::int64_t offset_at(std::int64_t u) const { return offset(period(u)); }

private:
    // The period of an instant: how many transitions are at or before it.
    std::size_t period(std::int64_t u) const {
        return static_cast<std::size_t>(
            std::upper_bound(t_.begin(), t_.end(), u,
                             [](std::int64_t v, const Transition& t) { return v < t.at; }) -
            t_.begin());
    }
    std::int64_t offset(std::size_t k) const { return k == 0 ? initial_ : t_[k - 1].offset; }

    std::int64_t initial_;
    std::vector<Transition> t_;
};

// The UTC instant of a date and time read in UTC.
inline std::int64_t utc(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
    return baton::schedule::usec_from_civil(Civil{y, mo, d, h, mi, s});
}

// The day of the month of the n-th Sunday (n = 1...), or of the last one (n = 0).
inline int sunday(int y, int m, int n) {
    using baton::schedule::days_in_month;
    using baton::schedule::weekday;
    if (n == 0) {
        const int last = days_in_month(y, m);
        return last - weekday(y, m, last);
    }
    return 1 + (7 - weekday(y, m, 1)) % 7 + 7 * (n - 1);
}

// America/New_York with today's rules in every year: EST (-5) and EDT (-4), from the
// second Sunday of March 02:00 EST to the first Sunday of November 02:00 EDT.
inline TableZone new_york(int first_year = 1900, int last_year = 2500) {
    std::vector<TableZone::Transition> t;
    for (int y = first_year; y <= last_year; ++y) {
        t.push_back({utc(y, 3, sunday(y, 3, 2), 7), -4 * 3600});
        t.push_back({utc(y, 11, sunday(y, 11, 1), 6), -5 * 3600});
    }
    return TableZone(-5 * 3600, std::move(t));
}

// Europe/Berlin: CET (+1) and CEST (+2), from the last Sunday of March 01:00 UTC to the
// last Sunday of October 01:00 UTC.
inline TableZone berlin(int first_year = 1900, int last_year = 2500) {
    std::vector<TableZone::Transition> t;
    for (int y = first_year; y <= last_year; ++y) {
        t.push_back({utc(y, 3, sunday(y, 3, 0), 1), 2 * 3600});
        t.push_back({utc(y, 10, sunday(y, 10, 0), 1), 1 * 3600});
    }
    return TableZone(3600, std::move(t));
}

// Australia/Lord_Howe: +10:30, and +11 from the first Sunday of October 02:00 (+10:30)
// to the first Sunday of April 02:00 (+11): a 30-minute gap and repetition.
inline TableZone lord_howe(int first_year = 1900, int last_year = 2500) {
    std::vector<TableZone::Transition> t;
    for (int y = first_year; y <= last_year; ++y) {
        // 02:00 local is 15:00 UTC (+11) or 15:30 UTC (+10:30) the day before.
        t.push_back({utc(y, 4, sunday(y, 4, 1), 2) - 11 * 3600LL * 1000000, 37800});
        t.push_back({utc(y, 10, sunday(y, 10, 1), 2) - 37800LL * 1000000, 39600});
    }
    return TableZone(37800, std::move(t));
}

// Pacific/Apia at the end of 2011: -10 until 2011-12-30 10:00 UTC, then +14: the local
// day 2011-12-30 never happens.
inline TableZone apia() {
    return TableZone(-10 * 3600, {{utc(2011, 12, 30, 10), 14 * 3600}});
}

// The mirror of apia(): +14 until 2011-12-30 10:00 UTC, then -10: the local day
// 2011-12-30 (00:00 to 24:00) happens twice.
inline TableZone apia_reversed() {
    return TableZone(14 * 3600, {{utc(2011, 12, 30, 10), -10 * 3600}});
}

// The slots of a spec in [from, to], found minute by minute in civil time (from two
// days before to two days after) with the rule of daylight-saving time in schedule.hpp
// written out again.
inline std::vector<std::int64_t> brute_slots(const baton::schedule::Spec& s,
                                             const baton::schedule::Zone& zone, std::int64_t from,
                                             std::int64_t to) {
    using namespace baton::schedule;
    constexpr std::int64_t kMinute = 60LL * 1000000;
    constexpr std::int64_t kDay = 86400LL * 1000000;
    std::vector<std::int64_t> out;
    const std::int64_t first = usec_from_civil(zone.civil_of(from - 2 * kDay));
    const std::int64_t last = usec_from_civil(zone.civil_of(to + 2 * kDay));
    for (std::int64_t l = first - (first % kMinute + kMinute) % kMinute; l <= last; l += kMinute) {
        const Civil c = civil_from_usec(l);
        if (!matches(s, c))
            continue;
        const Resolved r = zone.resolve(c);
        std::vector<std::int64_t> at;
        if (r.kind == Resolved::Kind::kOnce)
            at = {r.first};
        else if (r.kind == Resolved::Kind::kGap && !s.wildcard)
            at = {r.first};
        else if (r.kind == Resolved::Kind::kTwice)
            at = s.wildcard ? std::vector<std::int64_t>{r.first, r.second}
                            : std::vector<std::int64_t>{r.first};
        for (std::int64_t u : at)
            if (u >= from && u <= to)
                out.push_back(u);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace test
