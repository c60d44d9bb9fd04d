// Every advisory lock pg_baton takes, in one registry.
//
// Each is a transaction-level lock (released at commit or abort) on an advisory LOCKTAG of
// this database: 64 bits of key in its first two fields and, in the fourth (objsubid), the
// purpose below. pg_advisory_lock() and its kind put only 1 or 2 there, so no key a user
// picks can name one of pg_baton's locks (docs/guide/security.md). The values are visible in
// pg_locks.objsubid; they must never be reused for another purpose.
#pragma once

#include "pg/runtime/postgres.hpp"

namespace baton::pg::locks {

enum class Purpose : uint16 {
    kFence = 0x0BA7,           // a tenant's write fence (fence.cpp): writers share, a state change excludes
    kDefineWorkflow = 0x0BA8,  // one definer of a workflow name at a time (define_workflow)
    kEnterStep = 0x0BA9,       // the entries of one (tenant, subject, step) numbered in turn (enter_step)
    kMarkInUse = 0x0BAA,       // the one transaction that adds baton.in_use's row (restore_load.cpp)
    kKeyLimits = 0x0BAB,       // a (tenant, target)'s key limits: admissions share, a change excludes (key_admission.cpp)
    kKeySettle = 0x0BAC,       // one key's settle at commit, one transaction at a time (key_admission.cpp)
};

// The lock tag of `purpose` for the 64-bit `key` in this database.
inline LOCKTAG tag(Purpose purpose, uint64 key) {
    LOCKTAG t;
    SET_LOCKTAG_ADVISORY(t, MyDatabaseId, static_cast<uint32>(key >> 32), static_cast<uint32>(key),
                         static_cast<uint16>(purpose));
    return t;
}

}  // namespace baton::pg::locks
