// Whether pg_baton is distributed by Citus (see citus.hpp).
#include "pg/citus/citus.hpp"
#include "pg/runtime/cache.hpp"

namespace baton::pg::citus {

namespace {

// The answer, kept until an invalidation of baton.deliveries (the relation it was
// computed for) or a reset.
cache::Value<bool> g_distributed;

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
    if (const bool* kept = g_distributed.get()) return *kept;
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
    g_distributed.set(answer, relid);
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
    if (const bool* kept = g_distributed.get()) return *kept;
    return guard([] { return distributed_unguarded(); });
}

}  // namespace baton::pg::citus
