// Holding a tenant's shard group in place for a transaction (see citus_hold.hpp).
#include <cstring>

#include "core/error.hpp"
#include "pg/citus.hpp"
#include "pg/citus_hold.hpp"
#include "pg/compat.hpp"
#include "pg/spi.hpp"

namespace baton::pg::citus {

namespace {

// The shard of baton.tenants that holds the tenant: its shard group's (every tenant
// table is colocated with baton.tenants, and Citus' metadata lock names the group).
KeptPlan g_shard = {
    "SELECT pg_catalog.get_shard_id_for_distribution_column('baton.tenants'::pg_catalog.regclass, $1)", 1,
    {UUIDOID}, nullptr};

// Citus' LockShardDistributionMetadata(shard id, lock mode): the lock its executor takes
// before a write and a shard move takes exclusively.
using LockMetadata = void (*)(int64, LOCKMODE);

LockMetadata lock_metadata() {
    static LockMetadata fn = nullptr;
    if (fn == nullptr)
        fn = reinterpret_cast<LockMetadata>(guard([] {
            return load_external_function("$libdir/citus", "LockShardDistributionMetadata", false, nullptr);
        }));
    if (fn == nullptr)
        throw Error(SqlState::kInternal, "citus has no function LockShardDistributionMetadata",
                    "pg_baton holds a tenant's shards in place with it during a write call.",
                    "Install a Citus version pg_baton supports (docs/scale-out.md).");
    return fn;
}

// The tenant held last, in which transaction and subtransaction (a lock taken in a
// subtransaction that aborts is released with it).
pg_uuid_t g_tenant;
LocalTransactionId g_lxid = InvalidLocalTransactionId;
SubTransactionId g_subxact = InvalidSubTransactionId;

}  // namespace

void hold_shard_group(const pg_uuid_t* tenant) {
    if (!distributed()) return;
    if (g_lxid == BATON_MY_LXID && g_subxact == GetCurrentSubTransactionId() &&
        std::memcmp(&g_tenant, tenant, sizeof g_tenant) == 0)
        return;
    std::int64_t shard;
    {
        Spi spi;
        Datum values[1] = {UUIDPGetDatum(const_cast<pg_uuid_t*>(tenant))};
        spi.run(g_shard, values, nullptr);
        shard = spi.int64_at(0, 1);
    }
    LockMetadata lock = lock_metadata();
    guard([lock, shard] { lock(shard, ShareLock); });
    g_tenant = *tenant;
    g_lxid = BATON_MY_LXID;
    g_subxact = GetCurrentSubTransactionId();
}

}  // namespace baton::pg::citus
