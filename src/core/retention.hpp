// Retention: the argument rules of baton.purge (src/api/purge.cpp).
#pragma once
#ifdef POSTGRES_H
#error "core headers are included before postgres.h (its macros rename libc functions)"
#endif

#include <cstdint>

namespace baton::retention {

// The most top-level rows (settled deliveries plus terminal runs) one purge call removes.
constexpr std::int64_t kMaxPurgeRows = 100000;

// Throws 22023 unless 1 <= max_rows <= kMaxPurgeRows.
void check_purge_rows(std::int64_t max_rows);

// The oldest bound purge takes, in days (10,000 years): now() - older_than stays a
// timestamp Postgres can hold.
constexpr std::int64_t kMaxOlderThanDays = 3650000;

// Throws 22023 unless older_than (an interval's three fields) is not negative in any
// field (a bound in the future would purge rows that settle from now on) and at most
// kMaxOlderThanDays.
void check_older_than(std::int32_t months, std::int32_t days, std::int64_t usec);

}  // namespace baton::retention
