// pg_baton's one relcache and one schema callback (see invalidation.hpp).
#include "pg/runtime/invalidation.hpp"

#include "pg/access/authz_cache.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/access/owner.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/access/restore_load.hpp"
#include "pg/access/schema_version.hpp"

namespace baton::pg::invalidation {

namespace {

// Relcache callback: relid changed (InvalidOid: a cache reset); each cache forgets what
// depends on it, the owner and who may write always (DROP EXTENSION drops its tables;
// a change of a tenant's state or of a binding invalidates its table, or its shard).
void on_relcache(Datum, Oid relid) {
    authz_cache::forget();
    relations::forget(relid);
    restore_load::forget(relid);
    citus::forget_relation(relid);
    side_rows::forget(relid);
    notify::forget_relation(relid);
    owner::forget();
    schema_version::forget();
}

// Syscache callback on schemas: a renamed or dropped schema may change what "baton"
// names, and REASSIGN OWNED changes the schema's owner with the extension's.
void on_schema(Datum, int, uint32) {
    relations::forget(InvalidOid);
    side_rows::forget(InvalidOid);
    authz_cache::forget();
    owner::forget();
    schema_version::forget();
}

}  // namespace

void init() {
    CacheRegisterRelcacheCallback(on_relcache, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, on_schema, 0);
}

}  // namespace baton::pg::invalidation
