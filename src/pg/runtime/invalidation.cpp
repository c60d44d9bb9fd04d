// pg_baton's one relcache and one schema callback (see invalidation.hpp).
#include "pg/runtime/invalidation.hpp"

namespace baton::pg::invalidation {

namespace {

Forget g_subscribers[kMaxSubscribers];
int g_count = 0;

// Relcache callback: relid changed (InvalidOid: a cache reset).
void on_relcache(Datum, Oid relid) {
    for (int i = 0; i < g_count; i++) g_subscribers[i](relid);
}

// Syscache callback on schemas, roles and role memberships: every cache forgets
// everything (a privilege held through a role, or a superuser's, may have changed).
void on_catalog(Datum, int, uint32) { on_relcache(0, InvalidOid); }

}  // namespace

void init() {
    CacheRegisterRelcacheCallback(on_relcache, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, on_catalog, 0);
    CacheRegisterSyscacheCallback(AUTHOID, on_catalog, 0);
    CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, on_catalog, 0);
}

void subscribe(Forget forget) {
    if (g_count == kMaxSubscribers) elog(ERROR, "pg_baton has too many caches to invalidate");
    g_subscribers[g_count++] = forget;
}

}  // namespace baton::pg::invalidation
