// The statements of baton.purge, the one call that removes rows of several tables:
// settled deliveries outside any run, and terminal runs with everything that belongs to
// them. Each works on one tenant, oldest first, and skips rows others hold (SKIP LOCKED).
// Which arguments are accepted is src/core/retention.hpp's.
#pragma once

#include <cstdint>

#include "pg/runtime/spi.hpp"

namespace baton::pg::retention {

// A tenant with rows to purge, and the creation of its oldest purgeable delivery
// (DT_NOBEGIN when it has only runs among the oldest rows).
struct Candidate {
    pg_uuid_t* tenant;
    TimestampTz oldest_delivery;
};
// The active tenants among the oldest purgeable rows (at most max_rows of each kind;
// deliveries created at `from` or later), the tenant with the oldest row first;
// palloc'd, *n of them.
Candidate* tenants(Spi& spi, Interval* older_than, std::int32_t max_rows, TimestampTz from, std::uint64_t* n);
// Removes up to max_rows settled deliveries of the tenant outside any run, from its
// oldest purgeable one; how many.
std::int32_t purge_deliveries(Spi& spi, const Candidate& c, Interval* older_than, std::int32_t max_rows);
// Removes up to max_rows terminal runs of the tenant that have no delivery in flight; how many.
std::int32_t purge_runs(Spi& spi, pg_uuid_t* tenant, Interval* older_than, std::int32_t max_rows);

}  // namespace baton::pg::retention
