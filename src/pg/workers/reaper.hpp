// The background reaper: with shared_preload_libraries = 'pg_baton', one worker per
// database served (baton.reaper_databases: '*', the default, for every database in which
// pg_baton is installed, or a list of names), started by the launcher (launcher.hpp),
// calls baton.reap() and then baton.fire_schedules() every baton.reaper_interval, one
// transaction per batch of baton.reaper_batch rows. Without the preload nothing runs,
// and baton.reap() and baton.fire_schedules() from cron or a worker loop do the same job
// (docs/operations.md).
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::reaper {

// Defines the reaper's GUCs (from _PG_init, before the prefix is reserved).
// baton.reaper_databases is PGC_POSTMASTER when preloading (it decides which workers
// exist), and only informational otherwise.
void define_settings();

// Reads baton.reaper_databases: `*all` when it holds '*', else the names in `*names`
// (a List of C strings, in the current memory context). False, after a WARNING unless
// `quiet`, when the list cannot be read; names too long are skipped (WARNING unless
// `quiet`).
bool database_names(bool quiet, List** names, bool* all);

// Whether baton.reaper_databases serves the database `name` ('*' or named; quiet).
bool serves(const char* name);

// baton.reaper_interval, in milliseconds.
int interval_ms();

}  // namespace baton::pg::reaper
