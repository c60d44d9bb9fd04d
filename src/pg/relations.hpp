// pg_baton's own relations, found in an order that survives maintenance. REINDEX ...
// CONCURRENTLY gives a rebuilt index a new oid (and the old name) and drops the old one;
// a backend whose transaction began before that still resolves the index's name to the
// old oid from its catalog cache, which it refreshes only when it takes a lock it did not
// hold. So the table is locked first, and its index looked up after, in the table's own
// index list: the lock brings the cache up to date, and while it is held the index found
// cannot be dropped. (VACUUM FULL, CLUSTER, REINDEX and pg_repack keep every oid and give
// new relfilenodes, which the relation cache follows by itself.)
#pragma once

#include "pg/postgres.hpp"

namespace baton::pg::relations {

// The table of schema baton named `table`, opened with `lock`, and in *index_oid the oid of
// its index named `index`. Both oids are cached per backend and forgotten by relcache and
// schema invalidations, so the names are resolved again only after a change. `table` and
// `index` must be string literals (the cache keeps the pointers). Postgres calls only
// (call it inside guard()): raises an error when either is missing.
Relation open_with_index(const char* table, const char* index, LOCKMODE lock, Oid* index_oid);

// Registers the invalidation callbacks (from _PG_init).
void init();

}  // namespace baton::pg::relations
