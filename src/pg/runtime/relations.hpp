// pg_baton's own relations, found in an order that survives maintenance, and their
// column numbers, looked up once per backend. REINDEX ...
// CONCURRENTLY gives a rebuilt index a new oid (and the old name) and drops the old one;
// a backend whose transaction began before that still resolves the index's name to the
// old oid from its catalog cache, which it refreshes only when it takes a lock it did not
// hold. So the table is locked first, and its index looked up after, in the table's own
// index list: the lock brings the cache up to date, and while it is held the index found
// cannot be dropped. (VACUUM FULL, CLUSTER, REINDEX and pg_repack keep every oid and give
// new relfilenodes, which the relation cache follows by itself.)
//
// Everything found here is kept in pg/runtime/cache tables and forgotten by relcache
// and schema invalidation callbacks: an ALTER TABLE, a DROP or a re-created
// table sends a relcache invalidation of the table, which this backend processes when it
// next locks the table (or, for its own changes, at the end of the command that made
// them, and again if its transaction aborts).
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::relations {

// The table of schema baton named `table`, opened with `lock`, and in *index_oid the oid of
// its index named `index`. Both oids are cached per backend and forgotten by relcache and
// schema invalidations, so the names are resolved again only after a change. `table` and
// `index` must be string literals (the cache keeps the pointers). Postgres calls only
// (call it inside guard()): raises an error when either is missing.
Relation open_with_index(const char* table, const char* index, LOCKMODE lock, Oid* index_oid);

// The table of schema baton named `table`, opened with `lock`; its oid cached as
// open_with_index() caches it. `table` must be a string literal. Postgres calls only:
// raises an error when it is missing.
Relation open(const char* table, LOCKMODE lock);

// The oid of the table of schema baton named `table`, InvalidOid when there is none;
// cached as open() caches it (no lock taken). `table` must be a string literal.
// Postgres calls only.
Oid relid(const char* table);

// Where a call reads and writes a table through one of its shards instead (a Citus
// worker's own shard of the call's tenant: pg/citus/local_group.hpp): the shard's oid for
// baton.`table`, InvalidOid for the table itself. open_with_index() and open() ask it
// first; the shard's index is the table's index name with the shard's suffix, as Citus
// names it ("deliveries_pkey_102008"). relid() does not ask: it names the table itself.
// Set once from _PG_init; Postgres calls only.
using ShardOf = Oid (*)(const char* table);
void set_shard_of(ShardOf shard_of);

// The oid of what open() opens for `table` now: its shard (above) or the table (relid()).
Oid opened(const char* table);

// True for the name of one of pg_baton's triggers, fence or fence_truncate, or of Citus'
// copy of one on a shard: the name, "_" and the shard id (fence_102008).
bool own_trigger_name(const char* name);

// The most columns one attnums() list may name.
constexpr int kMaxColumns = 24;

// The attribute numbers of the `n` columns `names` of the open relation `rel`, in the
// order of `names`, 0 for a column it does not have (or has dropped). Found by name once
// per backend for each (list, relation) and kept until a relcache invalidation of the
// relation (a column added, dropped or renamed, the table dropped) or a cache reset; a
// relation of another oid (the table re-created) is looked at afresh. `names` must be a
// static array: the cache is keyed by its address. The answer stands until the next
// attnums() call (copy it out to keep it). Postgres calls only.
const AttrNumber* attnums(Relation rel, const char* const* names, int n);

// True when every trigger on the open relation `rel` (a table of schema baton, or on
// Citus one of its shards) is pg_baton's own (named fence or fence_truncate, on a shard
// with its shard id appended, its function in the table's schema) or internal (a
// foreign key's): none that a write by
// heap access, which fires no trigger, would pass by. A user's trigger or pg_repack's
// (which logs the writes made while it copies a table) makes it false. Postgres calls
// only.
bool only_own_triggers(Relation rel);

}  // namespace baton::pg::relations
