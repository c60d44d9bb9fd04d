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

// Syscache callback on schemas: every cache forgets everything.
void on_schema(Datum, int, uint32) { on_relcache(0, InvalidOid); }

}  // namespace

void init() {
    CacheRegisterRelcacheCallback(on_relcache, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, on_schema, 0);
}

void subscribe(Forget forget) {
    if (g_count == kMaxSubscribers) elog(ERROR, "pg_baton has too many caches to invalidate");
    g_subscribers[g_count++] = forget;
}

}  // namespace baton::pg::invalidation
