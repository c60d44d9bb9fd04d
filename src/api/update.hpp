// What an update's script writes that baton.distribute() writes instead on a distributed
// install, once the tables are distributed (update.cpp).
#pragma once

#include "pg/runtime/spi.hpp"

namespace baton::api {

// The fence triggers of the side tables of deliveries, baton.leases and baton.ready
// (fence and fence_truncate, as every other tenant table has), where they lack them. On
// a distributed install distribute() runs it after side_rows::fill(), whose rows of every
// tenant, fenced ones too, go into the shards on the workers (where the trigger would
// refuse them); Citus creates each on the workers' tables, and the row trigger on every
// shard (a TRUNCATE fires the logical table's).
void fence_side_tables(pg::Spi& spi);

}  // namespace baton::api
