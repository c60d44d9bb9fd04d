// Whether pg_baton is distributed by Citus (see citus.hpp).
#include "pg/citus/citus.hpp"

namespace baton::pg::citus {

namespace {

// -1: not known (look again); 0: not distributed; 1: distributed.
int g_distributed = -1;
// baton.deliveries' relation id when g_distributed was computed: its invalidation
// forgets the answer.
Oid g_deliveries = InvalidOid;

// Whether pg_dist_partition has a row for relid. Postgres calls only (inside guard()).
bool in_dist_partition(Oid relid) {
    bool found = false;
    scan_catalog("pg_dist_partition", "pg_dist_partition_logical_relid_index", 1, F_OIDEQ,
                 ObjectIdGetDatum(relid), [&](HeapTuple, TupleDesc) { return found = true; });
    return found;
}

}  // namespace

// The cached answer of distributed(), computed with Postgres calls only: a Postgres
// error longjmps out of it, so it is called from C++ through guard() (distributed())
// and directly from the planner hook, a Postgres frame that holds no C++ object.
bool distributed_unguarded() {
    if (g_distributed >= 0) return g_distributed == 1;
    // The table first, so that its invalidation forgets a "no" as well as a "yes".
    // Without the table (pg_baton not installed, or being dropped or created) the "no"
    // is not kept: no invalidation names the table created later, so a kept "no" would
    // outlive its install, distribute() and all (a session that created pg_baton, or
    // a worker's connection that Citus keeps across the coordinator's statements).
    Oid relid = InvalidOid;
    Oid nsp = get_namespace_oid("baton", true);
    if (OidIsValid(nsp)) relid = get_relname_relid("deliveries", nsp);
    if (!OidIsValid(relid)) return false;
    bool answer = OidIsValid(get_extension_oid("citus", true)) && in_dist_partition(relid);
    g_deliveries = relid;
    g_distributed = answer ? 1 : 0;
    return answer;
}

int set_until_restored(const char* name, const char* value) {
    int level = NewGUCNestLevel();
    (void)set_config_option(name, value, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
    return level;
}

void restore(int level) {
    AtEOXact_GUC(true, level);
}

bool installed() {
    return guard([] { return OidIsValid(get_extension_oid("citus", true)); });
}

// The cached answer without a call into Postgres; the first call after an
// invalidation reads the catalog under guard().
bool distributed() {
    if (g_distributed >= 0) return g_distributed == 1;
    return guard([] { return distributed_unguarded(); });
}

// Forgets the answer when baton.deliveries changes (Citus invalidates a table's entry
// when it distributes or undistributes it) or on a reset.
void forget(Oid relid) {
    if (relid == InvalidOid || relid == g_deliveries) g_distributed = -1;
}

}  // namespace baton::pg::citus
