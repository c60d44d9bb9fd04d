// Who may write, kept across transactions (see authz_cache.hpp).
#include <cstring>

#include "pg/access/authz_cache.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/citus/citus.hpp"
#include "pg/runtime/settings.hpp"

namespace baton::pg::authz_cache {

namespace {

// A tenant found writable.
struct TenantEntry {
    std::uint64_t generation;  // 0: empty
    pg_uuid_t tenant;
};

// A binding: the target's bytes (at most kTargetBytes; a longer target is not kept).
constexpr int kTargetBytes = 256;
struct BindingEntry {
    std::uint64_t generation;  // 0: empty
    pg_uuid_t tenant;
    Oid role;
    int target_len;
    char target[kTargetBytes];
};

constexpr int kEntries = 16;
TenantEntry g_tenants[kEntries];
BindingEntry g_bindings[kEntries];
int g_next_tenant = 0;
int g_next_binding = 0;
// The current generation; entries of an older one are stale. Starts at 1 (0 is empty).
std::uint64_t g_generation = 1;
// The transaction that changed a tenant's state or a binding (changed()).
LocalTransactionId g_changed_lxid = InvalidLocalTransactionId;

bool same_tenant(const pg_uuid_t& a, const pg_uuid_t* b) { return std::memcmp(&a, b, sizeof a) == 0; }

// The slot for a key: its own entry if there is one (so that no older entry outlives
// the new one), else the next one round robin.
template <typename Entry, typename Match>
Entry& slot(Entry (&entries)[kEntries], int& next, Match match) {
    for (Entry& e : entries)
        if (match(e)) return e;
    Entry& e = entries[next];
    next = (next + 1) % kEntries;
    return e;
}

}  // namespace

// The setting, the install and this transaction's own changes decide; the
// invalidations are accepted whatever they decide (a REVOKE of a role's membership
// reaches Postgres' own cache of memberships the same way).
Ticket begin() {
    guard([] { AcceptInvalidationMessages(); });
    bool usable = settings::authorization_cache && g_changed_lxid != BATON_MY_LXID && !citus::distributed();
    return {usable, g_generation};
}

bool writable(const Ticket& t, const pg_uuid_t* tenant) {
    if (!t.usable) return false;
    for (const TenantEntry& e : g_tenants)
        if (e.generation == t.generation && same_tenant(e.tenant, tenant)) return true;
    return false;
}

void remember_writable(const Ticket& t, const pg_uuid_t* tenant) {
    if (!t.usable) return;
    TenantEntry& e = slot(g_tenants, g_next_tenant, [tenant](const TenantEntry& x) { return same_tenant(x.tenant, tenant); });
    e.tenant = *tenant;
    e.generation = t.generation;
}

bool bound_role(const Ticket& t, const pg_uuid_t* tenant, const char* target, int target_len, Oid* role) {
    if (!t.usable) return false;
    for (const BindingEntry& e : g_bindings)
        if (e.generation == t.generation && e.target_len == target_len && same_tenant(e.tenant, tenant) &&
            std::memcmp(e.target, target, target_len) == 0) {
            *role = e.role;
            return true;
        }
    return false;
}

void remember_bound_role(const Ticket& t, const pg_uuid_t* tenant, const char* target, int target_len, Oid role) {
    if (!t.usable || target_len > kTargetBytes) return;
    BindingEntry& e = slot(g_bindings, g_next_binding, [tenant, target, target_len](const BindingEntry& x) {
        return x.target_len == target_len && same_tenant(x.tenant, tenant) &&
               std::memcmp(x.target, target, target_len) == 0;
    });
    e.tenant = *tenant;
    e.role = role;
    e.target_len = target_len;
    std::memcpy(e.target, target, target_len);
    e.generation = t.generation;
}

// The invalidation is transactional: discarded if the writer aborts, sent at its commit.
void changed(Relation rel) {
    Oid relid = RelationGetRelid(rel);
    guard([relid] { CacheInvalidateRelcacheByRelid(relid); });
    g_changed_lxid = BATON_MY_LXID;
}

void forget(Oid) { g_generation++; }

}  // namespace baton::pg::authz_cache
