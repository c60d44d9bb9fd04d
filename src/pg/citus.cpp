// Whether pg_baton is distributed by Citus (see citus.hpp).
#include "pg/citus.hpp"

namespace baton::pg::citus {

namespace {

// -1: not known (look again); 0: not distributed; 1: distributed.
int g_distributed = -1;
// baton.deliveries' relation id when g_distributed was computed: its invalidation
// forgets the answer.
Oid g_deliveries = InvalidOid;

// Whether pg_dist_partition has a row for relid: a heap scan keyed on logicalrelid
// (its first column), without Citus' own caches, which pg_baton cannot call. Postgres
// calls only (inside guard()).
bool in_dist_partition(Oid relid) {
    Oid partition = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
    if (!OidIsValid(partition)) return false;
    Relation rel = table_open(partition, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 1, &key);
    bool found = HeapTupleIsValid(systable_getnext(scan));
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return found;
}

}  // namespace

bool installed() {
    return guard([] { return OidIsValid(get_extension_oid("citus", true)); });
}

bool distributed() {
    if (g_distributed >= 0) return g_distributed == 1;
    Oid relid = InvalidOid;
    bool answer = guard([&relid] {
        // The table first, so that its invalidation forgets a "no" as well as a "yes".
        Oid nsp = get_namespace_oid("baton", true);
        if (!OidIsValid(nsp)) return false;
        relid = get_relname_relid("deliveries", nsp);
        if (!OidIsValid(relid) || !OidIsValid(get_extension_oid("citus", true))) return false;
        return in_dist_partition(relid);
    });
    g_deliveries = relid;
    g_distributed = answer ? 1 : 0;
    return answer;
}

// Forgets the answer when baton.deliveries changes (Citus invalidates a table's entry
// when it distributes or undistributes it) or on a reset.
void forget_relation(Oid relid) {
    if (relid == InvalidOid || relid == g_deliveries) g_distributed = -1;
}

}  // namespace baton::pg::citus
