// The extension's owner, cached (see owner.hpp).
#include "pg/runtime/owner.hpp"
#include "pg/runtime/cache.hpp"

namespace baton::pg::owner {

namespace {

cache::Value<Oid> g_owner;  // forgotten by any invalidation (see owner.hpp)

// What read makes of pg_baton's pg_extension row (nullptr when it is not installed),
// found by the catalog's name index (pg_extension has no syscache).
template <typename Read>
auto read_row(Read read) {
    Relation rel = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum("pg_baton"));
    SysScanDesc scan = systable_beginscan(rel, ExtensionNameIndexId, true, nullptr, 1, &key);
    HeapTuple tup = systable_getnext(scan);
    auto answer = read(HeapTupleIsValid(tup) ? tup : nullptr);
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return answer;
}

// pg_extension.extowner of pg_baton; InvalidOid when it is not installed.
Oid lookup() {
    return read_row([](HeapTuple tup) {
        return tup ? reinterpret_cast<Form_pg_extension>(GETSTRUCT(tup))->extowner : InvalidOid;
    });
}

}  // namespace

Oid of_extension(bool missing_ok) {
    if (const Oid* kept = g_owner.get()) return *kept;
    Oid owner = lookup();
    if (!OidIsValid(owner) && missing_ok) return InvalidOid;
    if (!OidIsValid(owner))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("extension \"pg_baton\" is not installed"),
                        errhint("Run CREATE EXTENSION pg_baton in this database.")));
    g_owner.set(owner);
    return owner;
}

// Whether this transaction (or one of its subtransactions) wrote pg_baton's
// pg_extension row: CREATE EXTENSION, ALTER EXTENSION UPDATE or OWNER ran in it.
bool changed_in_this_transaction() {
    return read_row(
        [](HeapTuple tup) { return tup && TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)); });
}

}  // namespace baton::pg::owner
