// The reaper's vacuum of the tables every delivery writes (baton.deliveries, baton.ready,
// baton.leases).
//
// Every delivery adds a row to each side table and removes it soon after (a claim takes
// its ready row, a finish its lease's row), and leaves two versions of its own row that
// no later call reads again (a claim's and a finish's, HOT updates on a page that no
// insert fills): under load these tables gather dead rows far faster than their live
// ones change, and autovacuum, which visits a database once per autovacuum_naptime,
// comes too late for them. So the reaper, which runs every baton.reaper_interval,
// vacuums such a table when autovacuum would vacuum it, by the same rule (pg_stat's dead
// rows above autovacuum_vacuum_threshold plus autovacuum_vacuum_scale_factor times its
// rows, capped by autovacuum_vacuum_max_threshold where the server has it; each the
// table's own setting, else the server's), without waiting for autovacuum's turn. Where
// autovacuum would not vacuum it (autovacuum off for the server or the table), neither
// does the reaper. A table whose horizon has not moved since its last vacuum here is
// left alone: the rows that died since then are still visible to a snapshot open then,
// and another vacuum would remove nothing.
//
// Not on a distributed install: the tables there are shells, and their shards live on
// the nodes, where autovacuum vacuums them.
//
// Plain Postgres code, like the reaper: no C++ object with a destructor lives in it.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::delivery_vacuum {

// Vacuums each of the three tables that is due (VACUUM (SKIP_LOCKED, TRUNCATE false): a
// table another holds is left for the next round), as the bootstrap superuser, as
// autovacuum does. Outside a transaction: it starts and ends its own. Returns the number
// of tables vacuumed.
int run();

}  // namespace baton::pg::delivery_vacuum
