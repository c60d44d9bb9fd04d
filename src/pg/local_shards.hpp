// This node's own shards of pg_baton's tables on a distributed install, named from
// Citus' metadata (pg_dist_shard, pg_dist_placement, pg_dist_local_group). Citus hides
// shards from catalog queries, and a statement on a distributed table covers every node
// (a worker has the metadata too), so a node that means its own rows only (reap and
// fire_schedules on a worker, the dead_rows check of baton.health) names its shards
// here and reads them directly.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pg/spi.hpp"

// A subquery of this node's placements of the tables of schema baton, columns worker
// (the node is not the coordinator, group 0), table_name ("deliveries") and shard (its
// quoted, schema-qualified name, "baton.deliveries_102008"; NULL when the node holds no
// placement). One row at least: a node with no placement has one, with a NULL shard.
// For a statement that reads the placements' statistics (pg/health_store) as well as for
// read() below.
#define BATON_LOCAL_PLACEMENTS                                                                            \
    "(SELECT g.groupid OPERATOR(pg_catalog.<>) 0, c.relname::pg_catalog.text, "                           \
    "pg_catalog.shard_name(s.logicalrelid, s.shardid) "                                                   \
    "FROM pg_catalog.pg_dist_local_group g LEFT JOIN (pg_catalog.pg_dist_placement p "                    \
    "JOIN pg_catalog.pg_dist_shard s ON s.shardid OPERATOR(pg_catalog.=) p.shardid "                      \
    "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.logicalrelid "                          \
    "AND c.relnamespace OPERATOR(pg_catalog.=) 'baton'::pg_catalog.regnamespace) "                        \
    "ON p.groupid OPERATOR(pg_catalog.=) g.groupid) lp(worker, table_name, shard)"

namespace baton::pg::local_shards {

// This node's placements, copied out of SPI memory.
struct Placements {
    bool worker = false;  // a worker (a group other than the coordinator's, 0)
    std::vector<std::pair<std::string, std::string>> shards;  // (table_name, shard), by name

    // The node's shards of `table` ("deliveries") as one relation for a FROM clause,
    // "(SELECT * FROM baton.deliveries_102008 UNION ALL ...)"; "" when it holds none.
    // The shards of colocated tables (every tenant table) hold the same tenants, so
    // two such relations join every tenant of this node.
    std::string relation(std::string_view table) const;
};

// Reads this node's placements. Call only on a distributed install (citus::distributed()):
// the catalogs read are Citus'.
Placements read(Spi& spi);

}  // namespace baton::pg::local_shards
