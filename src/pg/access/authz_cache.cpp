// Who may write, kept across transactions (see authz_cache.hpp).
#include <cstddef>
#include <cstring>

#include "pg/access/authz_cache.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/citus_hold.hpp"
#include "pg/runtime/settings.hpp"

namespace baton::pg::authz_cache {

namespace {

// A binding's key: the tenant and the target's bytes (at most 256; a longer target is
// not kept).
using BindingKey = cache::TenantTarget<256>;
struct Present {};

// The tenants found writable and the bindings found, each entry kept under the
// generation of the ticket of its read: any invalidation moves the generation, and
// entries of an older one are not used. At most kEntries of each: the next new one
// empties the table (a backend keeps the tenants it met last, whatever their number).
constexpr long kEntries = 1024;
cache::Map<pg_uuid_t, Present> g_tenants{"pg_baton writable tenants", kEntries, cache::Forgets::kEverything};
cache::Map<BindingKey, Binding, BindingKey> g_bindings{"pg_baton bindings", kEntries, cache::Forgets::kEverything};
// The transaction that changed a tenant's state or a binding (changed()).
LocalTransactionId g_changed_lxid = InvalidLocalTransactionId;

// Whether an answer just read about tenant may be kept. On one node, always. On a
// distributed install, only where the tenant's rows live (the invalidations of their
// writes are sent on that node alone), and only from a read of a statement snapshot
// (a read under a transaction snapshot may predate a change whose invalidation the
// ticket accepted already). A shard move changes Citus' metadata here, whose
// invalidation forgets every entry: an entry of a tenant that moved away is not used.
bool keepable(const pg_uuid_t* tenant) {
    if (!citus::distributed()) return true;
    return !IsolationUsesXactSnapshot() && citus::shard_group_here(tenant);
}

}  // namespace

// The setting, the install and this transaction's own changes decide; the
// invalidations are accepted whatever they decide (a REVOKE of a role's membership
// reaches Postgres' own cache of memberships the same way).
Ticket begin() {
    guard([] { AcceptInvalidationMessages(); });
    bool usable = settings::authorization_cache && g_changed_lxid != BATON_MY_LXID;
    return {usable, g_tenants.generation(), g_bindings.generation()};
}

bool writable(const Ticket& t, const pg_uuid_t* tenant) {
    return t.usable && g_tenants.find(*tenant, t.tenants) != nullptr;
}

void remember_writable(const Ticket& t, const pg_uuid_t* tenant) {
    if (!t.usable || !keepable(tenant)) return;
    guard([&t, tenant] { (void)g_tenants.enter(*tenant, t.tenants); });
}

bool binding(const Ticket& t, const pg_uuid_t* tenant, const char* target, int target_len, Binding* binding) {
    BindingKey key;
    if (!t.usable || !BindingKey::make(&key, tenant, target, target_len)) return false;
    const Binding* kept = g_bindings.find(key, t.bindings);
    if (kept == nullptr) return false;
    *binding = *kept;
    return true;
}

void remember_binding(const Ticket& t, const pg_uuid_t* tenant, const char* target, int target_len,
                      const Binding& binding) {
    BindingKey key;
    if (!t.usable || !BindingKey::make(&key, tenant, target, target_len) || !keepable(tenant)) return;
    guard([&t, &key, &binding] { *g_bindings.enter(key, t.bindings) = binding; });
}

// The invalidation is transactional: discarded if the writer aborts, sent at its commit.
void changed(Relation rel) {
    Oid relid = RelationGetRelid(rel);
    guard([relid] { CacheInvalidateRelcacheByRelid(relid); });
    g_changed_lxid = BATON_MY_LXID;
}

}  // namespace baton::pg::authz_cache
