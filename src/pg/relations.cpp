// pg_baton's relations, found in an order that survives maintenance (see relations.hpp).
#include <cstring>

#include "pg/relations.hpp"

namespace baton::pg::relations {

namespace {

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
// order fails after REINDEX CONCURRENTLY ("could not open relation with OID").
Relation open_with_index(const char* table, const char* index, LOCKMODE lock, Oid* index_oid) {
    Oid nsp = get_namespace_oid("baton", false);
    Oid relid = get_relname_relid(table, nsp);
    if (!OidIsValid(relid)) elog(ERROR, "pg_baton cannot find baton.%s", table);
    Relation rel = table_open(relid, lock);
    *index_oid = index_named(rel, index);
    if (!OidIsValid(*index_oid)) elog(ERROR, "pg_baton cannot find index baton.%s", index);
    return rel;
}

}  // namespace baton::pg::relations
