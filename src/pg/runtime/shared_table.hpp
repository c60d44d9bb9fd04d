// A fixed-size hash table in shared memory with one lock of its own, for the modules that
// keep per-(database, tenant, target) state there (the claim hints, the event counts).
// Only while pg_baton is preloaded: reserve() registers it from _PG_init, and Postgres
// makes it at server start (shmem_request_hook, shmem_startup_hook); each backend then
// finds it at the same address. Without the preload `table` stays nullptr.
#pragma once

#include "core/limits.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/postgres.hpp"

namespace baton::pg::shared_table {

// A target is at most limits::kTargetMaxChars characters, 4 bytes each at most.
constexpr int kMaxTargetBytes = 4 * limits::kTargetMaxChars;

// The key of an entry of (database, tenant, target): the target by a 64-bit hash of its
// bytes (the entry keeps the bytes, to tell apart two targets of one hash).
struct TargetKey {
    Oid db;
    pg_uuid_t tenant;
    uint64 target_hash;
};

// This database's key of (tenant, target), its padding zeroed (it is hashed too).
TargetKey target_key(const pg_uuid_t* tenant, const char* target, int len);

struct Table {
    const char* name;  // of the hash table and of its lock's tranche
    Size key_size;
    Size entry_size;
    const int* entries;  // the setting that sizes it (read at server start)
    HTAB* table;         // set at server start
    LWLock* lock;
};

// Registers `t` (static storage) to be made at server start, when preloading and
// *t->entries > 0. At most four tables.
void reserve(Table* t);

}  // namespace baton::pg::shared_table
