// Whether this database's pg_baton is distributed by Citus. On a distributed install
// baton.deliveries, baton.tenants and the other tenant tables are empty shells on every
// node: their rows live in shards (deliveries_102008, ...), which only SQL statements
// reach, through Citus' planner. The paths that read a table by its relation id (the
// direct heap and index access, the fence's index probe, the binding probe) ask here
// first and take their SQL statements instead when it says yes.
#pragma once

#include "pg/runtime/boundary.hpp"

namespace baton::pg::citus {

// True when the Citus extension exists in this database and baton.deliveries is one of
// its tables (pg_dist_partition), on the coordinator and, once Citus has synced its
// metadata, on every worker. The answer is cached per backend and forgotten when
// baton.deliveries' relation cache entry is invalidated (create_distributed_table and
// undistribute_table invalidate it) or the whole cache is reset; while baton.deliveries
// does not exist the answer (false) is not cached. The first call after that reads the
// catalog: it must run inside a transaction.
bool distributed();

// distributed() with Postgres calls only: a Postgres error longjmps out of it. For a
// Postgres frame that holds no C++ object (the planner hook); C++ code calls distributed().
bool distributed_unguarded();

// The statement to run: `single` on a single node, `on_citus` on a Citus install, where
// Citus cannot plan `single` (a subquery inside an INSERT, FOR UPDATE with a subquery)
// or crashes on it (now() inside a CASE of an UPDATE).
template <typename Plan>
Plan& pick(Plan& single, Plan& on_citus) {
    return distributed() ? on_citus : single;
}

// True when the Citus extension is installed in this database (pg_extension).
bool installed();



// Calls visit(tuple, descriptor) for each row of the Citus catalog table `table`
// (pg_dist_partition, pg_dist_shard, ...) whose column `column` equals key by the
// equality procedure `equal` (F_OIDEQ, F_INT8EQ), through the index `index` when it
// exists, or for every row when column is 0; visit returns true to stop. Without
// Citus' own caches, which pg_baton cannot call; nothing when the table is absent.
// Postgres calls only (inside guard()).
template <typename Visit>
void scan_catalog(const char* table, const char* index, AttrNumber column, RegProcedure equal, Datum key,
                  Visit visit) {
    Oid relid = get_relname_relid(table, PG_CATALOG_NAMESPACE);
    if (!OidIsValid(relid)) return;
    Oid index_id = index != nullptr ? get_relname_relid(index, PG_CATALOG_NAMESPACE) : InvalidOid;
    Relation rel = table_open(relid, AccessShareLock);
    ScanKeyData scan_key;
    if (column != 0) ScanKeyInit(&scan_key, column, BTEqualStrategyNumber, equal, key);
    SysScanDesc scan =
        systable_beginscan(rel, index_id, OidIsValid(index_id), nullptr, column != 0 ? 1 : 0, &scan_key);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan)))
        if (visit(tuple, RelationGetDescr(rel))) break;
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
}

// Sets a setting until restore() with the level returned (a GUC nesting level of its
// own, like a function's SET clause). Postgres calls only: call it inside guard() from
// C++ code.
int set_until_restored(const char* name, const char* value);
void restore(int level);

}  // namespace baton::pg::citus
