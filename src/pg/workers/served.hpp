// Which databases the background reapers serve, read from baton.reaper_databases (a
// setting of pg/runtime/settings.hpp): by the launcher, which starts their workers, by
// each reaper, and by baton.health's reaper row.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::served {

// Reads baton.reaper_databases: `*all` when it holds '*', else the names in `*names`
// (a List of C strings, in the current memory context). False, after a WARNING unless
// `quiet`, when the list cannot be read; names too long are skipped (WARNING unless
// `quiet`).
bool database_names(bool quiet, List** names, bool* all);

// Whether baton.reaper_databases serves the database `name` ('*' or named; quiet).
bool serves(const char* name);

}  // namespace baton::pg::served
