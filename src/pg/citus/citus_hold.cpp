// Holding a tenant's shard group in place for a transaction (see citus_hold.hpp).
#include <cstring>

#include "core/error.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/citus_hold.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/runtime/compat.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg::citus {

namespace {

// The shard of baton.tenants that holds the tenant: its shard group's (every tenant
// table is colocated with baton.tenants, and Citus' metadata lock names the group).
KeptPlan g_shard = {
    "SELECT pg_catalog.get_shard_id_for_distribution_column('baton.tenants'::pg_catalog.regclass, $1)", 1,
    {UUIDOID}, nullptr, true};

// Whether this node (its group, pg_dist_local_group) holds a placement of shard $1.
#define PLACED_HERE(SHARD)                                                                             \
    "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_placement p JOIN pg_catalog.pg_dist_local_group g " \
    "ON p.groupid OPERATOR(pg_catalog.=) g.groupid WHERE p.shardid OPERATOR(pg_catalog.=) " SHARD ")"
KeptPlan g_placed_here = {PLACED_HERE("$1"), 1, {INT8OID}, nullptr, true};
KeptPlan g_tenant_here = {
    PLACED_HERE("pg_catalog.get_shard_id_for_distribution_column('baton.tenants'::pg_catalog.regclass, $1)"), 1,
    {UUIDOID}, nullptr, true};

// Citus' lock_shard_metadata(lock mode, shard ids), the SQL-callable function around
// LockShardDistributionMetadata: the lock Citus' executor takes before a write and a
// shard move takes exclusively (on the coordinator and on every worker). Called by its
// C entry point, which every Citus build exports; Citus' own C functions are hidden
// where the server builds extensions with hidden symbols (PostgreSQL 16 and later).
// It checks that the current user owns the shard's table: pg_baton's
// calls run as the extension's owner, who owns pg_baton's tables.
PGFunction lock_shard_metadata() {
    static PGFunction fn = nullptr;
    if (fn == nullptr)
        fn = reinterpret_cast<PGFunction>(guard([] {
            return load_external_function("$libdir/citus", "lock_shard_metadata", false, nullptr);
        }));
    if (fn == nullptr)
        throw Error(SqlState::kInternal, "citus has no function lock_shard_metadata",
                    "pg_baton holds a tenant's shards in place with it during a write call.",
                    "Install a Citus version pg_baton supports (docs/guide/scale-out.md).");
    return fn;
}

// The tenant held last, its shard and whether it is here, in which transaction and
// subtransaction (a lock taken in a subtransaction that aborts is released with it).
pg_uuid_t g_tenant;
std::int64_t g_held_shard = 0;
bool g_held_here = false;
LocalTransactionId g_lxid = InvalidLocalTransactionId;
SubTransactionId g_subxact = InvalidSubTransactionId;

}  // namespace

void hold_shard_group(const pg_uuid_t* tenant) {
    if (!distributed()) return;
    if (g_lxid == BATON_MY_LXID && g_subxact == GetCurrentSubTransactionId() &&
        std::memcmp(&g_tenant, tenant, sizeof g_tenant) == 0) {
        local_group::enter(tenant, g_held_shard, g_held_here);
        return;
    }
    std::int64_t shard;
    {
        Spi spi;
        Datum values[1] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant))};
        spi.run(g_shard, values, nullptr);
        shard = spi.int64_at(0, 1);
    }
    PGFunction lock = lock_shard_metadata();
    guard([lock, shard] {
        Datum id = Int64GetDatum(shard);
        ArrayType* ids = construct_array(&id, 1, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
        DirectFunctionCall2(lock, Int32GetDatum(ShareLock), PointerGetDatum(ids));
    });
    // Where the group is, read once it is held (a move that ended before the lock is
    // seen), and only for a call that could be served from shards here.
    bool here = false;
    if (local_group::may_serve()) {
        Spi spi;
        Datum values[1] = {Int64GetDatum(shard)};
        spi.run(g_placed_here, values, nullptr);
        here = spi.bool_at(0, 1);
    }
    g_tenant = *tenant;
    g_held_shard = shard;
    g_held_here = here;
    g_lxid = BATON_MY_LXID;
    g_subxact = GetCurrentSubTransactionId();
    local_group::enter(tenant, shard, here);
}

bool shard_group_here(const pg_uuid_t* tenant) {
    if (!distributed()) return false;
    if (local_group::active(tenant)) return true;
    Spi spi;
    Datum values[1] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant))};
    spi.run(g_tenant_here, values, nullptr);
    return spi.bool_at(0, 1);
}

}  // namespace baton::pg::citus
