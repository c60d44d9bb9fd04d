// The tenant write fence (see fence.hpp).
#include <cstdint>
#include <cstring>
#include <string>

#include "core/cause.hpp"
#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/access/fence.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/authz_cache.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/citus/citus_hold.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/runtime/locks.hpp"
#include "pg/access/restore_load.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg::fence {

namespace {

// States read under a share lock this transaction still holds: the lock has been held
// since the read that followed its acquisition, so no state change can have committed
// since and the read stands. An entry of another transaction is stale; all are
// forgotten (forget_all()) when this backend itself changes a tenant's state, or a
// subtransaction aborts (its locks are released). No invalidation touches them. At most
// kCacheSize tenants: the next new one empties the table.
struct CacheEntry {
    LocalTransactionId lxid;
    Check check;
};
constexpr long kCacheSize = 1024;
cache::Map<pg_uuid_t, CacheEntry> g_cache{"pg_baton fence reads", kCacheSize, cache::Forgets::kNothing};

// The advisory lock tag of a tenant's fence: 64 bits folded from the uuid.
LOCKTAG fence_tag(const pg_uuid_t* tenant) {
    uint64 a, b;
    std::memcpy(&a, tenant->data, 8);
    std::memcpy(&b, tenant->data + 8, 8);
    return locks::tag(locks::Purpose::kFence, a ^ b);
}

const Check* cached(const pg_uuid_t* tenant) {
    const CacheEntry* e = g_cache.find(*tenant);
    return e != nullptr && e->lxid == BATON_MY_LXID ? &e->check : nullptr;
}

// Overwrites this tenant's entry if there is one, so no older read can outlive it.
void remember(const pg_uuid_t* tenant, Check check) {
    guard([tenant, check] { *g_cache.enter(*tenant) = {BATON_MY_LXID, check}; });
}

// The state of a tenant, as a SQL statement: on a Citus install baton.tenants is an
// empty shell and its rows are in shards, which only a statement reaches (routed by the
// tenant to the shard of this node, or of the node that holds it).
KeptPlan g_state_sql = {"SELECT t.state FROM baton.tenants t WHERE t.tenant OPERATOR(pg_catalog.=) $1", 1, {UUIDOID},
                        nullptr};

// The state a stored text names, or kMissing when there is no row.
Check check_of(const pg_uuid_t* tenant, const char* stored) {
    if (stored == nullptr) return {Access::kMissing, tenant::State::kDeleted};
    auto state = tenant::parse_state(stored);
    if (!state)
        throw Error(SqlState::kInternal, "tenant " + std::string(tenant_text(tenant)) + " has an unknown state",
                    stored);
    return {tenant::writes_allowed(*state) ? Access::kAllowed : Access::kNotActive, *state};
}

// read_state() through g_state_sql, for a Citus install.
Check read_state_by_statement(const pg_uuid_t* tenant, bool latest) {
    Spi spi;
    Datum values[1] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant))};
    std::uint64_t n = latest ? spi.run_latest(g_state_sql, values, nullptr) : spi.run(g_state_sql, values, nullptr);
    return check_of(tenant, n == 0 ? nullptr : spi.cstring_at(0, 1));
}

// Reads the state through the tenants primary key, with the latest committed data and
// this transaction's own writes (latest) or the statement's snapshot. A direct index
// probe: the fence runs once per writing transaction, and an SPI statement costs
// more (docs/internals/performance.md). On a Citus
// install, a statement (read_state_by_statement). *mine (when not nullptr) tells
// whether this transaction wrote the row read (a create_tenant not yet committed), which
// pg/access/authz_cache must not keep.
Check read_state(const pg_uuid_t* tenant, bool latest, bool* mine = nullptr) {
    if (local_group::routed(tenant)) return read_state_by_statement(tenant, latest);
    char* stored = guard([tenant, latest, mine] {
        // The table locked first, then its index: see relations.hpp.
        Oid indexid = InvalidOid;
        Relation rel = relations::open_with_index("tenants", "tenants_pkey", AccessShareLock, &indexid);
        ScanKeyData key;
        ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_UUID_EQ, UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant)));
        if (latest) CommandCounterIncrement();
        Snapshot snapshot = RegisterSnapshot(latest ? GetLatestSnapshot() : GetActiveSnapshot());
        SysScanDesc scan = systable_beginscan(rel, indexid, true, snapshot, 1, &key);
        HeapTuple tuple = systable_getnext(scan);
        char* state = nullptr;
        if (HeapTupleIsValid(tuple)) {
            if (mine) *mine = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tuple->t_data));
            bool isnull = false;
            Datum d = heap_getattr(tuple, 2, RelationGetDescr(rel), &isnull);
            if (!isnull) state = TextDatumGetCString(d);
        }
        systable_endscan(scan);
        UnregisterSnapshot(snapshot);
        table_close(rel, AccessShareLock);
        return state;
    });
    return check_of(tenant, stored);
}

// Share-locks the fence (waiting or not) and reads the state unless a read under the
// same held lock is cached, or pg/access/authz_cache knows the tenant writable: its ticket is
// taken with the lock held, so a state change has either not committed (it waits for
// this lock) or sent its invalidation, which the ticket accepted. A read cached in this
// transaction was made with the lock taken and is answered before LockAcquire: the lock
// is held until the transaction ends, or until a subtransaction that took it aborts,
// which forgets every cached read (as this backend's own state change does). The fence trigger
// asks on every row a statement writes, and the lock table's look-up of a lock already
// held was most of its cost.
Check share_lock_and_read(const pg_uuid_t* tenant, bool wait) {
    restore_load::mark_in_use();  // a write through the fence: no restore window any more
    if (const Check* c = cached(tenant)) return *c;
    LOCKTAG tag = fence_tag(tenant);
    LockAcquireResult r = guard([&tag, wait] { return LockAcquire(&tag, ShareLock, false, !wait); });
    if (r == LOCKACQUIRE_NOT_AVAIL) return {Access::kBusy, tenant::State::kActive};
    authz_cache::Ticket ticket = authz_cache::begin();
    Check check{Access::kAllowed, tenant::State::kActive};
    if (!authz_cache::writable(ticket, tenant)) {
        bool mine = false;
        check = read_state(tenant, true, &mine);
        if (check.access == Access::kAllowed && !mine) authz_cache::remember_writable(ticket, tenant);
    }
    remember(tenant, check);
    return check;
}

// A subtransaction that aborts may have changed a tenant's state (rolled back now) or
// read one under a lock it has now released: forget every cached read.
void forget_on_subabort(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event == SUBXACT_EVENT_ABORT_SUB) g_cache.forget_all();
}

}  // namespace

void init() { RegisterSubXactCallback(forget_on_subabort, nullptr); }

void require_writable(const pg_uuid_t* tenant) {
    citus::hold_shard_group(tenant);
    require_row_writable(tenant);
}

void require_row_writable(const pg_uuid_t* tenant) {
    Check c = share_lock_and_read(tenant, true);
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
    restore_load::mark_in_use();
    LOCKTAG tag = fence_tag(tenant);
    guard([&tag] { (void)LockAcquire(&tag, ExclusiveLock, false, false); });
    g_cache.forget_all();
}

Check read(const pg_uuid_t* tenant) { return read_state(tenant, false); }

}  // namespace baton::pg::fence
