// The deliveries' counters: baton.flush_counts(), which moves the counts committed
// transactions left in shared memory into baton.event_counts (the rows the view
// baton.delivery_counters sums). The reaper calls it each round and when it stops;
// without a reaper (baton.reaper_databases leaves the database out) whoever stands in
// for it calls it with reap() and fire_schedules().
#include <cstdint>

#include "core/event_count.hpp"
#include "pg/deliveries/event_counts.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// baton.flush_counts(): returns how many (tenant, target) rows it wrote.
Datum flush_counts(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.flush_counts");
    std::int64_t written = 0;
    {
        pg::Spi spi;  // flush() writes through this connection
        written = pg::event_counts::flush();
    }
    PG_RETURN_INT32(static_cast<std::int32_t>(written));
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_flush_counts, baton::api::flush_counts)
