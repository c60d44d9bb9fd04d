// The reaper's vacuum of the side tables of deliveries (baton.ready, baton.leases).
//
// Every delivery adds a row to each side table and removes it soon after (a claim takes
// its ready row, a finish its lease's row): under load the tables gather dead rows far
// faster than their live ones change, and autovacuum, which visits a database once per
// autovacuum_naptime, comes too late for them. So the reaper, which runs every
// baton.reaper_interval, vacuums a side table when autovacuum would vacuum it, by the
// same rule (pg_stat's dead rows above autovacuum_vacuum_threshold plus
// autovacuum_vacuum_scale_factor times its rows, capped by
// autovacuum_vacuum_max_threshold where the server has it; each the table's own setting,
// else the server's), without waiting for autovacuum's turn. Where autovacuum would not
// vacuum it (autovacuum off for the server or the table), neither does the reaper. A
// table whose horizon has not moved since its last vacuum here is left alone: the rows
// that died since then are still visible to a snapshot open then, and another vacuum
// would remove nothing. A table larger than a quick vacuum (kMaxPages, side_vacuum.cpp)
// is left to autovacuum, so that the reaper's round stays short.
//
// Not on a distributed install: the side tables there are shells, and their shards live
// on the nodes, where autovacuum vacuums them.
//
// Plain Postgres code, like the reaper: no C++ object with a destructor lives in it.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::side_vacuum {

// Vacuums each side table that is due (VACUUM (SKIP_LOCKED, TRUNCATE false): a
// table another holds is left for the next round), as the bootstrap superuser, as
// autovacuum does. Outside a transaction: it starts and ends its own. Returns the number
// of tables vacuumed.
int run();

}  // namespace baton::pg::side_vacuum
