// pg_baton's one relcache and one schema callback (see invalidation.hpp).
#include "pg/runtime/invalidation.hpp"

namespace baton::pg::invalidation {

namespace {

// The registry: every subscribed cache, the last subscribed first.
Subscriber* g_first = nullptr;

// Relcache callback: relid changed (InvalidOid: a cache reset).
void on_relcache(Datum, Oid relid) {
    for (Subscriber* s = g_first; s != nullptr; s = s->next) s->forget(s, relid);
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

void subscribe(Subscriber* s) {
    if (s->subscribed) return;
    s->next = g_first;
    s->subscribed = true;
    g_first = s;
}

}  // namespace baton::pg::invalidation
