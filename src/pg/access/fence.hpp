// The tenant write fence.
//
// Every write to a tenant's rows first holds the tenant's fence lock in share mode,
// then reads the tenant's state from the latest committed data; a state change holds
// the same lock exclusively. Share locks do not conflict, so writers of one tenant
// never wait for each other; a state change waits for the writers in flight, and
// writers arriving after it wait for it and then read the new state. The lock is a
// transaction-level advisory lock (locks::Purpose::kFence), visible in pg_locks.
#pragma once

#include "core/tenant.hpp"
// (core headers before Postgres headers)
#include "pg/runtime/boundary.hpp"

namespace baton::pg::fence {

// What a writer found.
enum class Access { kAllowed, kNotActive, kMissing, kBusy };

struct Check {
    Access access;
    tenant::State state;  // meaningful for kAllowed and kNotActive
};

// Takes the share lock (waiting behind a state change in progress), reads the state and
// throws DU002 unless the tenant exists and is active; the lock is held until commit.
// For a call that goes on to read and write the tenant's rows: on a Citus install it
// first holds the tenant's shard group in place (pg/citus/citus_hold.hpp).
void require_writable(const pg_uuid_t* tenant);
// The same check for a row trigger, which runs where the row is, in a statement whose
// placement is fixed: without holding the shard group (on a worker that runs a shard
// query for another node, that would wait on a move the other node's call holds up).
void require_row_writable(const pg_uuid_t* tenant);
// The same without waiting: false when the tenant is not writable or its state is being
// changed right now. For reap, which skips such tenants rather than wait or fail.
bool try_writable(const pg_uuid_t* tenant);
// Takes the lock exclusively, for a change of the tenant's state; this backend forgets
// the states it had read.
void lock_exclusive(const pg_uuid_t* tenant);
// The tenant's state as this transaction's snapshot sees it (no lock); kMissing if absent.
Check read(const pg_uuid_t* tenant);
// Registers the callback that keeps the cache of reads honest (from _PG_init).
void init();

}  // namespace baton::pg::fence
