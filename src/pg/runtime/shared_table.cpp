// Fixed-size hash tables in shared memory (see shared_table.hpp).
#include <cstring>

#include "core/limits.hpp"
#include "pg/runtime/shared_table.hpp"

namespace baton::pg::shared_table {

namespace {

constexpr int kMaxTables = 4;
Table* g_tables[kMaxTables];
int g_ntables = 0;
shmem_request_hook_type g_prev_request = nullptr;
shmem_startup_hook_type g_prev_startup = nullptr;

void request_shmem() {
    if (g_prev_request) g_prev_request();
    for (int i = 0; i < g_ntables; i++) {
        Table* t = g_tables[i];
        RequestAddinShmemSpace(hash_estimate_size(*t->entries, t->entry_size));
        RequestNamedLWLockTranche(t->name, 1);
    }
}

void startup_shmem() {
    if (g_prev_startup) g_prev_startup();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < g_ntables; i++) {
        Table* t = g_tables[i];
        HASHCTL info;
        std::memset(&info, 0, sizeof info);
        info.keysize = t->key_size;
        info.entrysize = t->entry_size;
        t->table = ShmemInitHash(t->name, *t->entries, *t->entries, &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
        t->lock = &(GetNamedLWLockTranche(t->name))->lock;
    }
    LWLockRelease(AddinShmemInitLock);
}

}  // namespace

TargetKey target_key(const pg_uuid_t* tenant, const char* target, int len) {
    TargetKey key;
    std::memset(&key, 0, sizeof key);
    key.db = MyDatabaseId;
    key.tenant = *tenant;
    // Any fixed seed: the tables are made anew at each server start.
    key.target_hash = hash_bytes_extended(reinterpret_cast<const unsigned char*>(target), len, 0x5EED);
    return key;
}

void reserve(Table* t) {
    if (!process_shared_preload_libraries_in_progress || *t->entries <= 0) return;
    if (g_ntables == kMaxTables) elog(ERROR, "pg_baton reserves at most %d shared tables", kMaxTables);
    if (g_ntables == 0) {
        g_prev_request = shmem_request_hook;
        shmem_request_hook = request_shmem;
        g_prev_startup = shmem_startup_hook;
        shmem_startup_hook = startup_shmem;
    }
    g_tables[g_ntables++] = t;
}

}  // namespace baton::pg::shared_table
