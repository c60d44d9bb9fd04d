// baton.health_checks(), the rows of the view baton.health: one per check, each read by
// pg/stores/health_store and judged by core/health under the session's thresholds
// (baton.health_*). Reads only; runs on a standby and in a read-only transaction.
#include "core/health.hpp"
// (core headers before Postgres headers)
#include "pg/stores/health_store.hpp"
#include "pg/runtime/settings.hpp"

namespace baton::api {

namespace {

// baton.health_checks(): xmin_horizon, dead_rows, reaper, expired_leases, stuck_runs,
// markers_in_doubt, schedules_behind, paused, oldest_pending, in that order.
Datum health_checks(FunctionCallInfo fcinfo, Oid) {
    namespace store = pg::health_store;
    using namespace settings;
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    health::ExpiredLeases expired = store::expired_leases(spi);
    const health::Check checks[] = {
        health::xmin_horizon(store::xmin_holders(spi), {double(health_xmin_warn), double(health_xmin_critical)}),
        health::dead_rows(store::baton_tables(spi), {health_dead_rows_warn, health_dead_rows_min}),
        health::reaper(store::reaper_state(store::expired_here(spi, expired.count))),
        health::expired_leases(expired, health_expired_warn),
        health::stuck_runs(store::stuck_runs(spi, health_stuck_after), health_stuck_after),
        health::markers_in_doubt(store::markers_in_doubt(spi)),
        health::schedules_behind(store::schedules_behind(spi, health_schedules_warn), health_schedules_warn),
        health::paused(store::paused(spi)),
        health::waiting_on_limits(store::waiting_on_limits(spi)),
        health::oldest_pending(store::oldest_pending(spi), health_pending_warn),
    };
    for (const health::Check& c : checks) store::emit(rsinfo, c);
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_health_checks, baton::api::health_checks)
