// pg_baton's invalidation callbacks: one relcache callback and one syscache callback on
// schemas, which forget every per-backend cache of pg_baton (the relations and column
// numbers of pg/runtime/relations, the extension's owner, the in-use mark of pg/access/restore_load,
// pg/citus/citus' answer to "is this install distributed", who may write in pg/access/authz_cache,
// what pg/deliveries/delivery_direct decided about baton.deliveries), and one on roles and
// their memberships, which forgets the privileges delivery_direct found.
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

// Registers the callbacks, once per backend (from _PG_init: every backend of a
// preloaded library inherits them).
void init();

}  // namespace baton::pg::invalidation
