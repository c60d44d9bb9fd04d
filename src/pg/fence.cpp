// The tenant write fence (see fence.hpp).
#include <cstring>

#include "core/error.hpp"
#include "pg/fence.hpp"
#include "pg/spi.hpp"

namespace baton::pg::fence {

namespace {

KeptPlan g_read_state = {
    "SELECT t.state FROM baton.tenants t WHERE t.tenant OPERATOR(pg_catalog.=) $1",
    1, {UUIDOID}, nullptr};

// States read under a share lock this transaction still holds. A share lock that is
// already held (LOCKACQUIRE_ALREADY_HELD) has been held since the read that followed
// its acquisition, so no state change can have committed since: the read stands. The
// epoch moves when this backend itself changes a tenant's state.
struct CacheEntry {
    pg_uuid_t tenant;
    LocalTransactionId lxid;
    uint32 epoch;
    Check check;
};
constexpr int kCacheSize = 16;
CacheEntry g_cache[kCacheSize];
int g_cache_next = 0;
uint32 g_epoch = 1;

// The advisory lock tag of a tenant's fence: 64 bits folded from the uuid.
LOCKTAG fence_tag(const pg_uuid_t* tenant) {
    uint64 a, b;
    std::memcpy(&a, tenant->data, 8);
    std::memcpy(&b, tenant->data + 8, 8);
    uint64 k = a ^ b;
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(k >> 32), static_cast<uint32>(k),
                         kFenceLockKey);
    return tag;
}

const Check* cached(const pg_uuid_t* tenant) {
    LocalTransactionId lxid = BATON_MY_LXID;
    for (const CacheEntry& e : g_cache)
        if (e.lxid == lxid && e.epoch == g_epoch && std::memcmp(&e.tenant, tenant, sizeof *tenant) == 0)
            return &e.check;
    return nullptr;
}

void remember(const pg_uuid_t* tenant, Check check) {
    // Overwrite this tenant's entry if there is one, so no older read can outlive it.
    CacheEntry* slot = nullptr;
    for (CacheEntry& e : g_cache)
        if (std::memcmp(&e.tenant, tenant, sizeof *tenant) == 0) slot = &e;
    if (slot == nullptr) {
        slot = &g_cache[g_cache_next];
        g_cache_next = (g_cache_next + 1) % kCacheSize;
    }
    CacheEntry& e = *slot;
    e.tenant = *tenant;
    e.lxid = BATON_MY_LXID;
    e.epoch = g_epoch;
    e.check = check;
}

// Reads the state with the given snapshot choice.
Check read_state(const pg_uuid_t* tenant, bool latest) {
    Spi spi;
    Datum values[1] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant))};
    std::uint64_t n = latest ? spi.run_latest(g_read_state, values, nullptr)
                             : spi.run(g_read_state, values, nullptr, 1);
    if (n == 0) return {Access::kMissing, tenant::State::kDeleted};
    char* text = spi.cstring_at(0, 1);
    auto state = tenant::parse_state(text ? text : "");
    if (!state) throw Error(SqlState::kInternal, "tenant has an unknown state", text ? text : "");
    return {tenant::writes_allowed(*state) ? Access::kAllowed : Access::kNotActive, *state};
}

// Share-locks the fence (waiting or not) and reads the state unless a read under the
// same held lock is cached.
Check share_lock_and_read(const pg_uuid_t* tenant, bool wait) {
    LOCKTAG tag = fence_tag(tenant);
    LockAcquireResult r = guard([&tag, wait] { return LockAcquire(&tag, ShareLock, false, !wait); });
    if (r == LOCKACQUIRE_NOT_AVAIL) return {Access::kBusy, tenant::State::kActive};
    if (r != LOCKACQUIRE_OK) {
        if (const Check* c = cached(tenant)) return *c;
    }
    Check check = read_state(tenant, true);
    remember(tenant, check);
    return check;
}

// A subtransaction that aborts may have changed a tenant's state (rolled back now) or
// read one under a lock it has now released: forget every cached read.
void forget_on_subabort(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event == SUBXACT_EVENT_ABORT_SUB) g_epoch++;
}

}  // namespace

void init() { RegisterSubXactCallback(forget_on_subabort, nullptr); }

char* tenant_text(const pg_uuid_t* tenant) {
    return guard([tenant] {
        return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant))));
    });
}

Check share(const pg_uuid_t* tenant) { return share_lock_and_read(tenant, true); }

void require_writable(const pg_uuid_t* tenant) {
    Check c = share(tenant);
    if (c.access == Access::kAllowed) return;
    std::string id = tenant_text(tenant);
    if (c.access == Access::kMissing)
        throw Error(SqlState::kTenantFenced, "tenant " + id + " does not exist",
                    "Writes go only to tenants that exist and are active.",
                    "Create it with baton.create_tenant().");
    throw Error(SqlState::kTenantFenced, "tenant " + id + " is " + tenant::state_name(c.state),
                "Writes go only to active tenants.");
}

bool try_writable(const pg_uuid_t* tenant) {
    return share_lock_and_read(tenant, false).access == Access::kAllowed;
}

void lock_exclusive(const pg_uuid_t* tenant) {
    LOCKTAG tag = fence_tag(tenant);
    guard([&tag] { (void)LockAcquire(&tag, ExclusiveLock, false, false); });
    g_epoch++;
}

Check read(const pg_uuid_t* tenant) { return read_state(tenant, false); }

}  // namespace baton::pg::fence
