// pg_baton's relations, found in an order that survives maintenance, and their column
// numbers (see relations.hpp).
#include <cstring>

#include "pg/runtime/relations.hpp"

namespace baton::pg::relations {

namespace {

// What open_with_index() or open() found for one (table, index) pair of names (index
// nullptr for open() and relid()): kept across calls and transactions, forgotten by the
// invalidation callbacks below. The pairs are the string literals of the callers, so a
// handful of slots is enough.
struct Found {
    const char* table;
    const char* index;
    Oid relid;      // InvalidOid: resolve the table's name again
    Oid index_oid;  // InvalidOid: look the index up again (after the lock)
};
constexpr int kSlots = 16;
Found g_found[kSlots];
int g_used = 0;

// What attnums() found for one list of column names in one relation.
struct Columns {
    const char* const* names;  // the caller's static array: the key
    int n;
    Oid relid;  // InvalidOid: find the numbers again
    AttrNumber num[kMaxColumns];
};
constexpr int kColumnLists = 8;
Columns g_columns[kColumnLists];
int g_columns_used = 0;

}  // namespace

// A change to a table (its columns and its index list included: REINDEX CONCURRENTLY
// invalidates the table when it swaps the index) or to an index forgets what was found
// for it; InvalidOid (a cache reset, or a schema changed) forgets everything.
void forget(Oid relid) {
    for (int i = 0; i < g_used; i++) {
        Found& f = g_found[i];
        if (relid == InvalidOid || relid == f.relid || relid == f.index_oid) f.relid = f.index_oid = InvalidOid;
    }
    for (int i = 0; i < g_columns_used; i++)
        if (relid == InvalidOid || relid == g_columns[i].relid) g_columns[i].relid = InvalidOid;
}

namespace {

// True when two of the callers' names are the same (either may be nullptr).
bool same_name(const char* a, const char* b) {
    return a == b || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
}

// The slot of (table, index), taken on first use.
Found& slot(const char* table, const char* index) {
    for (int i = 0; i < g_used; i++)
        if (same_name(g_found[i].table, table) && same_name(g_found[i].index, index)) return g_found[i];
    if (g_used == kSlots) elog(ERROR, "pg_baton: too many relations in pg/runtime/relations");
    g_found[g_used] = {table, index, InvalidOid, InvalidOid};
    return g_found[g_used++];
}

// The oid of baton.`table` from the slot, resolved by name when the slot has none
// (InvalidOid when there is no such table; the slot then stays unresolved).
Oid resolve(Found& f, const char* table) {
    if (OidIsValid(f.relid)) return f.relid;
    Oid nsp = get_namespace_oid("baton", true);
    return OidIsValid(nsp) ? get_relname_relid(table, nsp) : InvalidOid;
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

// The attribute number of a column by name in a descriptor, 0 when absent or dropped.
AttrNumber attnum_of(TupleDesc desc, const char* name) {
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        if (!att->attisdropped && std::strcmp(NameStr(att->attname), name) == 0) return att->attnum;
    }
    return 0;
}

}  // namespace

// Locks the table before it resolves the index: see relations.hpp for why the other
// order fails after REINDEX CONCURRENTLY ("could not open relation with OID"). The
// table's oid and the index's come from the cache when nothing has invalidated them; the
// lock processes pending invalidations before the index's oid is read from it.
Relation open_with_index(const char* table, const char* index, LOCKMODE lock, Oid* index_oid) {
    Found& f = slot(table, index);
    Oid relid = resolve(f, table);
    if (!OidIsValid(relid)) elog(ERROR, "pg_baton cannot find baton.%s", table);
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

// Opens the table by its cached oid (resolved by name when there is none), remembering
// the oid once the table is open: the lock has processed pending invalidations, so an
// oid that survived them is the table's current one.
Relation open(const char* table, LOCKMODE lock) {
    Found& f = slot(table, nullptr);
    Oid relid = resolve(f, table);
    if (!OidIsValid(relid)) elog(ERROR, "pg_baton cannot find baton.%s", table);
    Relation rel = table_open(relid, lock);
    f.relid = relid;
    return rel;
}

// The cached oid, resolved by name when there is none, for callers that only compare
// it with a relation they already hold open (a trigger's).
Oid relid(const char* table) {
    Found& f = slot(table, nullptr);
    f.relid = resolve(f, table);
    return f.relid;
}

// The numbers of the slot of `names`, found again when the slot was forgotten or was
// found for another relation.
const AttrNumber* attnums(Relation rel, const char* const* names, int n) {
    if (n > kMaxColumns) elog(ERROR, "pg_baton: too many columns in one pg/runtime/relations list");
    Columns* c = nullptr;
    for (int i = 0; i < g_columns_used && c == nullptr; i++)
        if (g_columns[i].names == names) c = &g_columns[i];
    if (c == nullptr) {
        if (g_columns_used == kColumnLists) elog(ERROR, "pg_baton: too many column lists in pg/runtime/relations");
        c = &g_columns[g_columns_used++];
        c->names = names;
        c->n = n;
        c->relid = InvalidOid;
    }
    Oid relid = RelationGetRelid(rel);
    if (c->relid != relid || c->n != n) {
        TupleDesc desc = RelationGetDescr(rel);
        for (int i = 0; i < n; i++) c->num[i] = attnum_of(desc, names[i]);
        c->n = n;
        c->relid = relid;
    }
    return c->num;
}

namespace {

// True for the name of one of pg_baton's triggers, fence or fence_truncate, or of Citus'
// copy of one on a shard: the name, "_" and the shard id (fence_102008).
bool own_trigger_name(const char* name) {
    const char* const owns[] = {"fence_truncate", "fence"};
    for (const char* own : owns) {
        std::size_t n = std::strlen(own);
        if (std::strncmp(name, own, n) != 0) continue;
        const char* rest = name + n;
        if (*rest == '\0') return true;
        if (*rest != '_' || rest[1] == '\0') continue;
        bool shard_id = true;
        for (const char* c = rest + 1; *c != '\0'; c++)
            if (*c < '0' || *c > '9') shard_id = false;
        if (shard_id) return true;
    }
    return false;
}

}  // namespace

// Each trigger that is not internal must be named as pg_baton's and call a function of
// the table's schema: a name alone could be a user's trigger on a table that lacks
// pg_baton's (no two triggers of a table share a name).
bool only_own_triggers(Relation rel) {
    TriggerDesc* triggers = rel->trigdesc;
    if (triggers == nullptr) return true;
    Oid nsp = RelationGetNamespace(rel);
    for (int i = 0; i < triggers->numtriggers; i++) {
        const Trigger* tg = &triggers->triggers[i];
        if (tg->tgisinternal) continue;
        if (!own_trigger_name(tg->tgname) || get_func_namespace(tg->tgfoid) != nsp) return false;
    }
    return true;
}

}  // namespace baton::pg::relations
