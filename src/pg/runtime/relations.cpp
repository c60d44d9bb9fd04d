// pg_baton's relations, found in an order that survives maintenance, and their column
// numbers (see relations.hpp).
#include <cstdint>
#include <cstring>

#include "pg/runtime/cache.hpp"
#include "pg/runtime/relations.hpp"

namespace baton::pg::relations {

namespace {

// The (table, index) pair of names of open_with_index(), or (table, nullptr) of open()
// and relid(): the callers' string literals, keyed by their addresses (hashed as bytes,
// no string read). A name at two addresses is two entries, each found and forgotten
// alike.
struct Names {
    const char* table;
    const char* index;
};

// What open_with_index(), open() or relid() found for one pair of names: the table's
// oid, and the index's (InvalidOid for open() and relid()).
struct Found {
    Oid relid;
    Oid index_oid;
};
bool found_depends(const Names&, const Found& f, Oid relid) { return relid == f.relid || relid == f.index_oid; }

// What attnums() found for one list of column names (the caller's static array, by its
// address) in one relation: on Citus each shard is a relation of its own, whose column
// numbers may differ from its table's (a shard made after a column was dropped has no
// hole for it).
struct ColumnsKey {
    const char* const* names;
    std::uint64_t relid;  // an Oid, widened: the key is hashed as bytes, with no padding
};
struct Columns {
    int n;
    AttrNumber num[kMaxColumns];
};
bool columns_depend(const ColumnsKey& k, const Columns&, Oid relid) { return relid == k.relid; }

// Kept across calls and transactions. A change to a table (its columns and its index
// list included: REINDEX CONCURRENTLY invalidates the table when it swaps the index) or
// to an index forgets what was found for it; a reset or a change of schema forgets
// everything. The keys are the callers' literals and static arrays, a few dozen at most,
// times the relations they are read in: on a Citus worker, every shard of a table (the
// cap empties the table when reached).
constexpr long kEntries = 64;
constexpr long kShardEntries = 1024;
cache::Map<Names, Found, cache::Blobs, found_depends> g_found{"pg_baton relations", kEntries,
                                                              cache::Forgets::kDependents};
cache::Map<ColumnsKey, Columns, cache::Blobs, columns_depend> g_columns{"pg_baton column numbers", kShardEntries,
                                                                        cache::Forgets::kDependents};

// What only_own_triggers() found for a relation, with the address of the trigger list it
// read: a relcache rebuild makes a new list, and the invalidation that rebuilds the
// relation forgets the entry.
struct OwnTriggers {
    const TriggerDesc* triggers;
    bool own;
};
bool own_triggers_depend(const Oid& key, const OwnTriggers&, Oid relid) { return relid == key; }
cache::Map<Oid, OwnTriggers, cache::Blobs, own_triggers_depend> g_own_triggers{"pg_baton own triggers", kShardEntries,
                                                                              cache::Forgets::kDependents};

ShardOf g_shard_of = nullptr;

// The index of a shard found by open_with_index(): the shard's oid and the index's name
// (the caller's literal, by its address).
struct ShardIndex {
    const char* index;
    std::uint64_t shard;  // an Oid, widened: the key is hashed as bytes, with no padding
};
bool shard_index_depends(const ShardIndex& k, const Oid& index, Oid relid) { return k.shard == relid || index == relid; }
cache::Map<ShardIndex, Oid, cache::Blobs, shard_index_depends> g_shard_indexes{"pg_baton shard indexes", kShardEntries,
                                                                               cache::Forgets::kDependents};

// The oid of baton.`table` by its name, InvalidOid when there is no such table.
Oid by_name(const char* table) {
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
// lock processes pending invalidations, so the cache is asked again after it before its
// index's oid is used.
Relation open_with_index(const char* table, const char* index, LOCKMODE lock, Oid* index_oid) {
    if (Oid shard = g_shard_of != nullptr ? g_shard_of(table) : InvalidOid; OidIsValid(shard)) {
        // The shard locked first too; its index is named with the shard's suffix.
        Relation rel = table_open(shard, lock);
        ShardIndex key{index, shard};
        if (const Oid* found = g_shard_indexes.find(key)) {
            *index_oid = *found;
            return rel;
        }
        std::uint64_t generation = g_shard_indexes.generation();
        const char* suffix = std::strrchr(RelationGetRelationName(rel), '_');
        char* name = psprintf("%s%s", index, suffix != nullptr ? suffix : "");
        Oid found = index_named(rel, name);
        if (!OidIsValid(found)) elog(ERROR, "pg_baton cannot find index baton.%s", name);
        pfree(name);
        *g_shard_indexes.enter(key, generation) = found;
        *index_oid = found;
        return rel;
    }
    Names key{table, index};
    const Found* f = g_found.find(key);
    Oid relid = f != nullptr ? f->relid : by_name(table);
    if (!OidIsValid(relid)) elog(ERROR, "pg_baton cannot find baton.%s", table);
    Relation rel = table_open(relid, lock);
    f = g_found.find(key);
    if (f == nullptr || f->relid != relid) {
        Oid found = index_named(rel, index);
        if (!OidIsValid(found)) elog(ERROR, "pg_baton cannot find index baton.%s", index);
        *g_found.enter(key) = {relid, found};
        *index_oid = found;
        return rel;
    }
    *index_oid = f->index_oid;
    return rel;
}

// Opens the table by its cached oid (resolved by name when there is none), remembering
// the oid once the table is open: the lock has processed pending invalidations, so an
// oid that survived them is the table's current one.
Relation open(const char* table, LOCKMODE lock) {
    if (Oid shard = g_shard_of != nullptr ? g_shard_of(table) : InvalidOid; OidIsValid(shard))
        return table_open(shard, lock);
    Names key{table, nullptr};
    const Found* f = g_found.find(key);
    Oid relid = f != nullptr ? f->relid : by_name(table);
    if (!OidIsValid(relid)) elog(ERROR, "pg_baton cannot find baton.%s", table);
    Relation rel = table_open(relid, lock);
    if (g_found.find(key) == nullptr) *g_found.enter(key) = {relid, InvalidOid};
    return rel;
}

void set_shard_of(ShardOf shard_of) { g_shard_of = shard_of; }

Oid opened(const char* table) {
    Oid shard = g_shard_of != nullptr ? g_shard_of(table) : InvalidOid;
    return OidIsValid(shard) ? shard : relid(table);
}

// The cached oid, resolved by name when there is none, for callers that only compare
// it with a relation they already hold open (a trigger's).
Oid relid(const char* table) {
    Names key{table, nullptr};
    if (const Found* f = g_found.find(key)) return f->relid;
    Oid relid = by_name(table);
    if (OidIsValid(relid)) *g_found.enter(key) = {relid, InvalidOid};
    return relid;
}

// The numbers of the entry of `names`, found again when the entry was forgotten or was
// found for another relation.
const AttrNumber* attnums(Relation rel, const char* const* names, int n) {
    if (n > kMaxColumns) elog(ERROR, "pg_baton: too many columns in one pg/runtime/relations list");
    ColumnsKey key{names, RelationGetRelid(rel)};
    Columns* c = g_columns.find(key);
    if (c == nullptr || c->n != n) {
        c = g_columns.enter(key);
        TupleDesc desc = RelationGetDescr(rel);
        for (int i = 0; i < n; i++) c->num[i] = attnum_of(desc, names[i]);
        c->n = n;
    }
    return c->num;
}

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

// Each trigger that is not internal must be named as pg_baton's and call a function of
// the table's schema: a name alone could be a user's trigger on a table that lacks
// pg_baton's (no two triggers of a table share a name).
// The answer is kept per relation (g_own_triggers): a claim asks it of each side table.
bool only_own_triggers(Relation rel) {
    TriggerDesc* triggers = rel->trigdesc;
    if (triggers == nullptr) return true;
    Oid relid = RelationGetRelid(rel);
    if (const OwnTriggers* kept = g_own_triggers.find(relid); kept != nullptr && kept->triggers == triggers)
        return kept->own;
    std::uint64_t generation = g_own_triggers.generation();
    Oid nsp = RelationGetNamespace(rel);
    // A copy, as the executor takes one (InitResultRelInfo): get_func_namespace() may
    // accept an invalidation of rel, whose rebuild frees the relation's trigger list (and
    // moves the generation, so that the answer is not kept for the list read above).
    TriggerDesc* copy = CopyTriggerDesc(triggers);
    bool own = true;
    for (int i = 0; i < copy->numtriggers && own; i++) {
        const Trigger* tg = &copy->triggers[i];
        if (tg->tgisinternal) continue;
        own = own_trigger_name(tg->tgname) && get_func_namespace(tg->tgfoid) == nsp;
    }
    FreeTriggerDesc(copy);
    *g_own_triggers.enter(relid, generation) = {triggers, own};
    return own;
}

}  // namespace baton::pg::relations
