// The argument rules of baton.purge (see retention.hpp).
#include "core/retention.hpp"

#include <string>

#include "core/error.hpp"

namespace baton::retention {

void check_purge_rows(std::int64_t max_rows) {
    if (max_rows < 1 || max_rows > kMaxPurgeRows)
        throw_invalid_argument("max_rows", "max_rows is between 1 and " + std::to_string(kMaxPurgeRows) +
                                               ", not " + std::to_string(max_rows) + ".");
}

void check_older_than(std::int32_t months, std::int32_t days, std::int64_t usec) {
    if (months < 0 || days < 0 || usec < 0)
        throw_invalid_argument("older_than",
                               "older_than is an age: zero or more in each of its months, days and time.");
    // Months count 30 days, as Postgres' interval comparison does; in days, so nothing overflows.
    constexpr std::int64_t kUsecPerDay = 86400LL * 1000000LL;
    std::int64_t total_days = static_cast<std::int64_t>(months) * 30 + days + usec / kUsecPerDay;
    if (total_days > kMaxOlderThanDays)
        throw_invalid_argument("older_than", "older_than is at most 10000 years (3650000 days).");
}

}  // namespace baton::retention
