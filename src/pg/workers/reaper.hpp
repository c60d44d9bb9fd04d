// The background reaper: with shared_preload_libraries = 'pg_baton', one worker per
// database served (baton.reaper_databases: '*', the default, for every database in which
// pg_baton is installed, or a list of names), started by the launcher (launcher.hpp),
// calls baton.reap() and then baton.fire_schedules() every baton.reaper_interval, one
// transaction per batch of baton.reaper_batch rows. Without the preload nothing runs,
// and baton.reap() and baton.fire_schedules() from cron or a worker loop do the same job
// (docs/guide/operations.md).
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::reaper {

// For reap: the lease expiry its scan of baton.leases starts at. In the reaper's own
// call, the scan floor (core/scan_floor.hpp); in every other backend DT_NOBEGIN, the
// first entry.
TimestampTz scan_from();

// For reap, once it has read the expired leases: the oldest it found (DT_NOEND when
// none), as of `now`, the time it compared expiries with. Moves the floor in the
// reaper's own call; nothing elsewhere.
void scanned(TimestampTz oldest, TimestampTz now);

}  // namespace baton::pg::reaper

// The worker's entry point, which the launcher registers by name (launcher.cpp). The
// reaper reports to the launcher (launcher.hpp); the launcher knows it only by this
// name, and both read which databases are served from served.hpp.
extern "C" PGDLLEXPORT void baton_reaper_main(Datum arg);
