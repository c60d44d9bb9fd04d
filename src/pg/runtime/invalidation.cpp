// pg_baton's invalidation callbacks (see invalidation.hpp).
// The core's headers first, before Postgres' (pg/deliveries/delivery_direct.hpp needs them).
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "pg/runtime/invalidation.hpp"

#include "pg/access/authz_cache.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/access/owner.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/access/restore_load.hpp"
#include "pg/deliveries/delivery_direct.hpp"

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
    delivery_direct::forget(relid);
    notify::forget_relation(relid);
    owner::forget();
}

// Syscache callback on schemas: a renamed or dropped schema may change what "baton"
// names, and REASSIGN OWNED changes the schema's owner with the extension's.
void on_schema(Datum, int, uint32) {
    relations::forget(InvalidOid);
    side_rows::forget(InvalidOid);
    authz_cache::forget();
    owner::forget();
}

// Syscache callback on roles and their memberships: a privilege held through a role, or
// a superuser's, may have changed.
void on_roles(Datum, int, uint32) { delivery_direct::forget(InvalidOid); }

}  // namespace

void init() {
    CacheRegisterRelcacheCallback(on_relcache, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, on_schema, 0);
    CacheRegisterSyscacheCallback(AUTHOID, on_roles, 0);
    CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, on_roles, 0);
}

}  // namespace baton::pg::invalidation
