// Retention: baton.purge(older_than, max_rows).
//
// Removes settled deliveries (finished, failed or cancelled, not part of a run) and terminal runs
// (completed, failed, cancelled; with their stages, markers and deliveries, by the
// foreign keys' ON DELETE CASCADE) whose settled_at / finished_at is older than
// now() - older_than. Like reap, it works tenant by tenant, oldest first, and never
// waits: rows locked by anyone are skipped (SKIP LOCKED), and so are tenants that are
// not active or whose fence is being changed right now (fence::try_writable). Claimers
// never touch settled rows, so a purge in flight never blocks them.
#include <cstdint>

#include "core/retention.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/retention_store.hpp"
#include "pg/workers/launcher.hpp"

namespace baton::api {

namespace {

// baton.purge(older_than, max_rows): removes up to max_rows settled deliveries and
// terminal runs older than older_than and returns how many it removed (the rows of a
// removed run's stages, markers and deliveries go with it and are not counted).
Datum purge(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.purge");
    Interval* older_than = pg::interval_arg(fcinfo, 0, "older_than");
    std::int32_t max_rows = pg::int32_arg(fcinfo, 1, "max_rows");
    retention::check_older_than(older_than->month, older_than->day, older_than->time);
    retention::check_purge_rows(max_rows);
    pg::Spi spi;
    // Deliveries are read in order of creation from the database's scan floor: the oldest
    // purgeable delivery the previous call found, or its cutoff when it found none. Under
    // a snapshot held open, the entries of every delivery purged since stay in
    // deliveries_created, and a read from the first entry would walk them all in each
    // call. A delivery behind the floor that becomes purgeable later waits for the next
    // full scan (launcher::purge_scan_from()).
    TimestampTz now = GetCurrentTimestamp();
    TimestampTz from = pg::launcher::purge_scan_from(now);
    std::uint64_t n = 0;
    pg::retention::Candidate* candidates = pg::retention::tenants(spi, older_than, max_rows, from, &n);
    TimestampTz floor = pg::guard([older_than] {
        return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
                                                       TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
                                                       IntervalPGetDatum(older_than)));
    });
    for (std::uint64_t i = 0; i < n; i++)
        if (candidates[i].oldest_delivery != DT_NOBEGIN && candidates[i].oldest_delivery < floor)
            floor = candidates[i].oldest_delivery;
    std::int32_t removed = 0;
    for (std::uint64_t i = 0; i < n && removed < max_rows; i++) {
        if (!pg::fence::try_writable(candidates[i].tenant)) continue;
        removed += pg::retention::purge_deliveries(spi, candidates[i], older_than, max_rows - removed);
        if (removed >= max_rows) break;
        removed += pg::retention::purge_runs(spi, candidates[i].tenant, older_than, max_rows - removed);
    }
    pg::launcher::purge_scanned(floor, now);
    PG_RETURN_INT32(removed);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_purge, baton::api::purge)
