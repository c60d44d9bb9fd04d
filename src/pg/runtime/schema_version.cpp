// The installed schema's version against the library's (see schema_version.hpp).
#include "core/version.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/cache.hpp"
#include "pg/runtime/schema_version.hpp"

#ifndef BATON_VERSION
#error "BATON_VERSION, pg_baton.control's default_version, is defined by the build (Makefile, CMakeLists.txt)"
#endif

namespace baton::pg::schema_version {

namespace {

// This database's pg_baton was found at the library's version or later; forgotten by any
// invalidation (see schema_version.hpp).
cache::Value<bool> g_current;

}  // namespace

const char* library() { return BATON_VERSION; }

// pg_baton's pg_extension row, found by the catalog's name index (pg_extension has no
// syscache): its oid and extversion.
const char* older_installed() {
    if (g_current.get() != nullptr) return nullptr;
    Relation rel = table_open(ExtensionRelationId, AccessShareLock);
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum("pg_baton"));
    SysScanDesc scan = systable_beginscan(rel, ExtensionNameIndexId, true, nullptr, 1, &key);
    HeapTuple tup = systable_getnext(scan);
    Oid extension = InvalidOid;
    char* installed = nullptr;
    if (HeapTupleIsValid(tup)) {
        extension = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tup))->oid;
        bool isnull = false;
        Datum d = heap_getattr(tup, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);
        if (!isnull) installed = TextDatumGetCString(d);
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    if (!OidIsValid(extension) || installed == nullptr) return nullptr;
    // Its own script runs: the schema is being built, and nothing is kept.
    if (creating_extension && CurrentExtensionObject == extension) return nullptr;
    if (version::compare(installed, BATON_VERSION) < 0) return installed;
    g_current.set(true);
    return nullptr;
}

bool current() { return g_current.get() != nullptr; }

}  // namespace baton::pg::schema_version
