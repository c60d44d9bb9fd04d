// This node's own shards of pg_baton's tables on a distributed install, named from
// Citus' metadata (pg_dist_shard, pg_dist_placement, pg_dist_local_group). Citus hides
// shards from catalog queries, and a statement on a distributed table covers every node
// (a worker has the metadata too), so a node that means its own rows only (reap's and
// fire_schedules' candidates on a worker, the dead_rows and reaper rows of baton.health)
// names its shards here and reads them directly.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "pg/runtime/spi.hpp"

// A subquery of this node's placements of the tables of schema baton, columns worker
// (the node is not the coordinator, group 0), table_name ("deliveries") and shard (its
// quoted, schema-qualified name, "baton.deliveries_102008"; NULL when the node holds no
// placement). One row at least: a node with no placement has one, with a NULL shard.
// For a statement that reads the placements' statistics (pg/stores/health_store) as well as for
// run_on_own_shards() below.
#define BATON_LOCAL_PLACEMENTS                                                                            \
    "(SELECT g.groupid OPERATOR(pg_catalog.<>) 0, c.relname::pg_catalog.text, "                           \
    "pg_catalog.shard_name(s.logicalrelid, s.shardid) "                                                   \
    "FROM pg_catalog.pg_dist_local_group g LEFT JOIN (pg_catalog.pg_dist_placement p "                    \
    "JOIN pg_catalog.pg_dist_shard s ON s.shardid OPERATOR(pg_catalog.=) p.shardid "                      \
    "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.logicalrelid "                          \
    "AND c.relnamespace OPERATOR(pg_catalog.=) 'baton'::pg_catalog.regnamespace) "                        \
    "ON p.groupid OPERATOR(pg_catalog.=) g.groupid) lp(worker, table_name, shard)"

namespace baton::pg::local_shards {

// On a worker of a distributed install (a group other than the coordinator's, 0): runs
// `plan`'s statement over this node's own shards, each "baton.TABLE " of its text, for
// each TABLE of `tables` ("deliveries"), read as the node's shards of TABLE (a UNION ALL
// of them), planned for this call with plan's parameters and `values`; sets *rows to its
// row count (0, without running it, when the node holds no shard of one of the tables)
// and returns true. The shards of colocated tables (every tenant table) hold the same
// tenants, so such a statement's joins on the tenant stay whole. Elsewhere, on one node
// (without a look at any catalog) and on the coordinator, returns false: the caller runs
// `plan` itself, over the tables.
bool run_on_own_shards(Spi& spi, const KeptPlan& plan, const Datum* values, std::initializer_list<std::string_view> tables,
                       std::uint64_t* rows);

}  // namespace baton::pg::local_shards
