// A fixed-size hash table in shared memory with one lock of its own, for the modules that
// keep per-(database, tenant, target) state there (the claim hints, the event counts).
// Only while pg_baton is preloaded: reserve() registers it from _PG_init, and Postgres
// makes it at server start (shmem_request_hook, shmem_startup_hook); each backend then
// finds it at the same address. Without the preload `table` stays nullptr.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::shared_table {

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
