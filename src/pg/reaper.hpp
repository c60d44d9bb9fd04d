// The background reaper: with shared_preload_libraries = 'pg_baton', one worker per
// database named in baton.reaper_databases calls baton.reap() every
// baton.reaper_interval, one transaction per batch of baton.reaper_batch rows.
// Without the preload nothing runs, and baton.reap() from cron or a worker loop does
// the same job (docs/operations.md).
#pragma once

namespace baton::pg::reaper {

// Defines the reaper's GUCs (from _PG_init, before the prefix is reserved).
// baton.reaper_databases is PGC_POSTMASTER when preloading (it decides which workers
// exist), and only informational otherwise.
void define_settings();

// Registers one background worker per listed database (from _PG_init, only while
// shared_preload_libraries is being processed).
void register_workers();

}  // namespace baton::pg::reaper
