// pg_baton's invalidation callbacks: one relcache callback, and one syscache callback on
// schemas, roles and role memberships, which pass each invalidation on to every
// per-backend cache that subscribed. The caches of pg/runtime/cache (cache::Map,
// cache::Value) subscribe themselves when they first keep something: the relations and
// column numbers of pg/runtime/relations, the extension's owner, the in-use mark of
// pg/access/restore_load, pg/citus/citus' answer to "is this install distributed", who
// may write in pg/access/authz_cache, what pg/deliveries/delivery_direct decided about
// baton.deliveries and the privileges it found, and the others.
//
// One callback of each, not one per cache: Postgres 15 has room for ten relcache
// callbacks in a backend, for every preloaded library together, and a full table is a
// FATAL error. Citus takes seven in every backend that reads its metadata; a walsender
// that decodes a Citus shard move for pgoutput needs one more, and three of pg_baton's
// made that walsender fail ("out of relcache_callback_list slots"): a shard move with
// shard_transfer_mode 'force_logical' under writes never finished (test/citus/fault.sh).
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::invalidation {

// A cache that forgets what an invalidation touches: what depends on relid, after a
// relcache invalidation of relid; everything, when relid is InvalidOid (a cache reset; a
// change of a schema: a renamed or dropped schema may change what "baton" names, and
// REASSIGN OWNED changes the schema's owner with the extension's; a change of a role or
// a membership). Lives as long as the backend (a static object); linked into the
// registry by subscribe(), never unlinked.
struct Subscriber {
    void (*forget)(Subscriber* self, Oid relid);
    Subscriber* next;
    bool subscribed;
};

// Registers the two callbacks, once per backend (from _PG_init: every backend of a
// preloaded library inherits them).
void init();

// Adds a cache to the registry, once (a second call does nothing). Allocates nothing and
// raises no error: a cache subscribes when it first keeps something, before that it has
// nothing to forget.
void subscribe(Subscriber* s);

}  // namespace baton::pg::invalidation
