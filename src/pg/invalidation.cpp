// pg_baton's one relcache and one schema callback (see invalidation.hpp).
#include "pg/invalidation.hpp"

#include "pg/citus.hpp"
#include "pg/notify.hpp"
#include "pg/owner.hpp"
#include "pg/relations.hpp"
#include "pg/restore_load.hpp"

namespace baton::pg::invalidation {

namespace {

// Relcache callback: relid changed (InvalidOid: a cache reset); each cache forgets what
// depends on it, the owner always (DROP EXTENSION drops its tables).
void on_relcache(Datum, Oid relid) {
    relations::forget(relid);
    restore_load::forget(relid);
    citus::forget_relation(relid);
    notify::forget_relation(relid);
    owner::forget();
}

// Syscache callback on schemas: a renamed or dropped schema may change what "baton"
// names, and REASSIGN OWNED changes the schema's owner with the extension's.
void on_schema(Datum, int, uint32) {
    relations::forget(InvalidOid);
    owner::forget();
}

}  // namespace

void init() {
    CacheRegisterRelcacheCallback(on_relcache, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, on_schema, 0);
}

}  // namespace baton::pg::invalidation
