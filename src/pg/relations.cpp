// pg_baton's relations, found in an order that survives maintenance (see relations.hpp).
#include <cstring>

#include "pg/relations.hpp"

namespace baton::pg::relations {

namespace {

// What open_with_index() found for one (table, index) pair of names: kept across calls
// and transactions, forgotten by the invalidation callbacks below. The pairs are the
// string literals of the callers, so a handful of slots is enough.
struct Found {
    const char* table;
    const char* index;
    Oid relid;      // InvalidOid: resolve the table's name again
    Oid index_oid;  // InvalidOid: look the index up again (after the lock)
};
constexpr int kSlots = 8;
Found g_found[kSlots];
int g_used = 0;

// Relcache callback: a change to a table (its index list included: REINDEX CONCURRENTLY
// invalidates the table when it swaps the index) or to an index forgets what was found
// for it; InvalidOid (a cache reset) forgets everything.
void forget_relation(Datum, Oid relid) {
    for (int i = 0; i < g_used; i++) {
        Found& f = g_found[i];
        if (relid == InvalidOid || relid == f.relid || relid == f.index_oid) f.relid = f.index_oid = InvalidOid;
    }
}

// Syscache callback on schemas: a renamed or dropped schema may change what "baton" names.
void forget_schemas(Datum, int, uint32) { forget_relation(0, InvalidOid); }

// The slot of (table, index), taken on first use.
Found& slot(const char* table, const char* index) {
    for (int i = 0; i < g_used; i++)
        if (std::strcmp(g_found[i].table, table) == 0 && std::strcmp(g_found[i].index, index) == 0) return g_found[i];
    if (g_used == kSlots) elog(ERROR, "pg_baton: too many relations in relations::open_with_index");
    g_found[g_used] = {table, index, InvalidOid, InvalidOid};
    return g_found[g_used++];
}

// The index of `rel` named `name`, from the relation's index list (read after the lock,
// so it is the current one), InvalidOid when it has none by that name.
Oid index_named(Relation rel, const char* name) {
    List* indexes = RelationGetIndexList(rel);
    Oid found = InvalidOid;
    ListCell* cell = nullptr;
    foreach (cell, indexes) {
        Oid oid = lfirst_oid(cell);
        char* relname = get_rel_name(oid);
        bool same = relname != nullptr && std::strcmp(relname, name) == 0;
        if (relname != nullptr) pfree(relname);
        if (same) {
            found = oid;
            break;
        }
    }
    list_free(indexes);
    return found;
}

}  // namespace

// Locks the table before it resolves the index: see relations.hpp for why the other
// order fails after REINDEX CONCURRENTLY ("could not open relation with OID"). The
// table's oid and the index's come from the cache when nothing has invalidated them; the
// lock processes pending invalidations before the index's oid is read from it.
Relation open_with_index(const char* table, const char* index, LOCKMODE lock, Oid* index_oid) {
    Found& f = slot(table, index);
    Oid relid = f.relid;
    if (!OidIsValid(relid)) {
        Oid nsp = get_namespace_oid("baton", false);
        relid = get_relname_relid(table, nsp);
        if (!OidIsValid(relid)) elog(ERROR, "pg_baton cannot find baton.%s", table);
    }
    Relation rel = table_open(relid, lock);
    if (f.relid != relid || !OidIsValid(f.index_oid)) {
        Oid found = index_named(rel, index);
        if (!OidIsValid(found)) elog(ERROR, "pg_baton cannot find index baton.%s", index);
        f.relid = relid;
        f.index_oid = found;
    }
    *index_oid = f.index_oid;
    return rel;
}

void init() {
    CacheRegisterRelcacheCallback(forget_relation, 0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, forget_schemas, 0);
}

}  // namespace baton::pg::relations
