// Time zones for schedules: a zone name read with Postgres' own time zone library
// (pg_tzset, the code behind SET TimeZone and AT TIME ZONE), and the core's
// schedule::Zone answered from it (pg_localtime, pg_next_dst_boundary), so that a
// schedule's civil times mean exactly what they mean to the server's timestamptz.
#pragma once

#include <cstdint>

#include "core/schedule.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/boundary.hpp"

namespace baton::pg::time_zone {

// The zone a name denotes, as SET TimeZone accepts it (a tz database name such as
// 'America/New_York', 'UTC', or a POSIX zone string), or nullptr when Postgres knows no
// such zone or refuses it as a time zone setting (leap-second zones).
const pg_tz* find(const char* name);

// Microseconds since the Unix epoch of a timestamptz, and back.
std::int64_t unix_usec(TimestampTz ts);
TimestampTz timestamptz(std::int64_t unix_usec);

// schedule::Zone over a Postgres zone. Civil times are resolved by trying the offsets
// the zone has within two days of them and, for a time in a gap, by finding the
// transition that jumps over it; the zone library raises no errors.
class PgZone final : public schedule::Zone {
public:
    explicit PgZone(const pg_tz* tz) : tz_(tz) {}
    schedule::Resolved resolve(const schedule::Civil& local) const override;
    schedule::Civil civil_of(std::int64_t utc_usec) const override;

private:
    const pg_tz* tz_;
};

}  // namespace baton::pg::time_zone
