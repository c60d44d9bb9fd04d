// Who may write, kept across transactions in each backend: the tenants the fence found
// writable, and what binds each (tenant, target): its role (none included), weight and
// pause. Without it, every writing call read baton.tenants and baton.target_bindings
// again.
//
// What makes an entry stale is a committed change of a tenant's state or of a binding.
// Each such write fires a trigger of pg_baton (tenant_state_guard, fence_row) that
// registers a relcache invalidation of the table written (changed()): Postgres sends it
// at the writer's COMMIT, not before, and every backend, the writer's included, runs
// pg_baton's relcache callback when it accepts it, which moves this cache's generation
// (pg/runtime/cache: entries of an older generation are not used). A lookup accepts the
// pending invalidations first (begin()), so a change committed before a call began is
// seen by that call, inside an open transaction too.
//
// Why a fence is never missed: a state change holds the tenant's fence lock exclusively
// from before its write to its end, and a transaction's invalidations are sent before
// its locks are released; the fence takes its share lock before it calls begin(), so
// either the change has not committed (and waits for this writer) or its invalidation
// is in the queue. An entry is read with the latest snapshot, taken after the generation
// it is stored under, so a change not visible to the read moves the generation after it.
//
// On a Citus install an answer is kept only on the node that holds the tenant's shards
// (citus::shard_group_here()): a change commits there, whatever node it was sent from,
// and its trigger's invalidation is sent there, to every backend of that node. A call
// run elsewhere (on the coordinator inside a transaction, or a worker reading another
// node's shard) reads every time. A shard move changes Citus' metadata on every node,
// whose invalidation forgets every entry.
//
// Not used (every call reads): when baton.authorization_cache is off, and in a
// transaction that itself changed a tenant's state or a binding (its reads see its own
// uncommitted writes, which must not outlive it).
#pragma once

#include <cstdint>

#include "pg/runtime/postgres.hpp"

namespace baton::pg::authz_cache {

// One call's use of the cache: whether it may use it, and the generations of its two
// tables it reads at.
struct Ticket {
    bool usable;
    std::uint64_t tenants;
    std::uint64_t bindings;
};

// Accepts pending invalidations and returns the ticket of a lookup.
Ticket begin();

// True when the tenant was found writable at the ticket's generation.
bool writable(const Ticket& t, const pg_uuid_t* tenant);
// Records that the tenant was found writable (a read with the latest snapshot, after begin()).
void remember_writable(const Ticket& t, const pg_uuid_t* tenant);

// What binds (tenant, target): the role (InvalidOid: not bound), the binding's weight in
// the fair claim (1 when not bound), and whether its claims are paused (the binding's
// own pause, or the target's in every tenant, baton.paused_targets).
struct Binding {
    Oid role;
    std::int32_t weight;
    bool paused;
};

// True, with *binding set, when the binding of (tenant, target) is known.
bool binding(const Ticket& t, const pg_uuid_t* tenant, const char* target, int target_len, Binding* binding);
// Records the binding read with the latest snapshot, after begin().
void remember_binding(const Ticket& t, const pg_uuid_t* tenant, const char* target, int target_len,
                      const Binding& binding);

// From the triggers: rel (baton.tenants, baton.target_bindings or a shard of them,
// baton.paused_targets) was
// written. Registers its relcache invalidation, sent at commit, and keeps this
// transaction off the cache.
void changed(Relation rel);

}  // namespace baton::pg::authz_cache
