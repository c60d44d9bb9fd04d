// A call served on the worker that holds its tenant's shards (see local_group.hpp).
#include <cstring>

#include "pg/citus/citus.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/runtime/cache.hpp"
#include "pg/runtime/relations.hpp"
#include "pg/runtime/settings.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::pg::local_group {

namespace {

// The tables of schema baton that Citus holds (api/distribute.cpp): the tenant tables,
// then the global ones. Every other table of the schema is each node's own.
constexpr const char* kTables[] = {"tenants", "runs",          "target_bindings", "stages",    "step_entries",
                                   "markers", "leases",        "ready",           "deliveries", "schedule_rows",
                                   "workflows", "wakeup_key", "paused_targets"};
constexpr int kTableCount = sizeof kTables / sizeof kTables[0];

// A shard group's shards on this node, by kTables' order.
struct Group {
    Oid shard[kTableCount];
};
bool group_depends(const std::int64_t&, const Group& g, Oid relid) {
    for (Oid shard : g.shard)
        if (shard == relid) return true;
    return false;
}
// Per backend, by the shard id of baton.tenants: a shard keeps its oid until Citus
// moves or splits it (a drop, whose invalidation forgets the group that names it).
cache::Map<std::int64_t, Group, cache::Blobs, group_depends> g_groups{"pg_baton local shard groups", 1024,
                                                                      cache::Forgets::kDependents};

// The shards of the group of tenants shard $1: of each tenant table, the shard with the
// same hash range; of each global table, its one shard.
KeptPlan g_shards = {
    "SELECT c.relname::pg_catalog.text, "
    "pg_catalog.to_regclass(pg_catalog.shard_name(l.logicalrelid, l.shardid))::pg_catalog.oid "
    "FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_shard l "
    "ON l.shardminvalue OPERATOR(pg_catalog.=) s.shardminvalue OR l.shardminvalue IS NULL "
    "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.logicalrelid "
    "AND c.relnamespace OPERATOR(pg_catalog.=) 'baton'::pg_catalog.regnamespace "
    "WHERE s.shardid OPERATOR(pg_catalog.=) $1",
    1, {INT8OID}, nullptr, true};

// The call served now, and its tenant and shards; call 0: none.
struct Served {
    std::uint64_t call;
    pg_uuid_t tenant;
    Group group;
};
Served g_served{};

// The transaction of the statement that runs at the top of the backend, and whether it is
// a block (top_statement_runs()).
LocalTransactionId g_top_lxid = InvalidLocalTransactionId;
bool g_top_block = true;

// The group of tenants_shard, read from Citus' metadata unless kept; false when a table
// has no shard here (which a move or an older schema on this node would explain).
bool group_of(std::int64_t tenants_shard, Group* out) {
    std::uint64_t generation = guard([] { return g_groups.generation(); });
    if (const Group* kept = g_groups.find(tenants_shard, generation)) {
        *out = *kept;
        return true;
    }
    Group found{};
    {
        Spi spi;
        Datum values[1] = {Int64GetDatum(tenants_shard)};
        std::uint64_t rows = spi.run(g_shards, values, nullptr);
        for (std::uint64_t r = 0; r < rows; r++) {
            const char* table = spi.cstring_at(r, 1);
            if (table == nullptr || spi.is_null(r, 2)) continue;
            for (int i = 0; i < kTableCount; i++)
                if (std::strcmp(kTables[i], table) == 0) found.shard[i] = spi.oid_at(r, 2);
        }
    }
    for (Oid shard : found.shard)
        if (!OidIsValid(shard)) return false;
    guard([tenants_shard, generation, &found] { *g_groups.enter(tenants_shard, generation) = found; });
    *out = found;
    return true;
}

// Whether Citus would run a statement on this node's shards in this backend.
bool local_execution() {
    return guard([] {
        const char* value = GetConfigOption("citus.enable_local_execution", true, false);
        return value == nullptr || std::strcmp(value, "on") == 0;
    });
}

// relations::ShardOf: the current call's shard of `table`, when it is served here.
Oid shard_of(const char* table) {
    if (g_served.call == 0 || g_served.call != current_call()) return InvalidOid;
    for (int i = 0; i < kTableCount; i++)
        if (std::strcmp(kTables[i], table) == 0) return g_served.group.shard[i];
    return InvalidOid;
}

}  // namespace

bool may_serve() {
    return settings::direct_access && g_top_lxid == BATON_MY_LXID && !g_top_block && local_execution();
}

void enter(const pg_uuid_t* tenant, std::int64_t tenants_shard, bool here) {
    g_served.call = 0;
    if (!here || !may_serve()) return;
    Group group;
    if (!group_of(tenants_shard, &group)) return;
    g_served = {current_call(), *tenant, group};
}

bool active(const pg_uuid_t* tenant) {
    return g_served.call != 0 && g_served.call == current_call() &&
           (tenant == nullptr || std::memcmp(&g_served.tenant, tenant, sizeof g_served.tenant) == 0);
}

void top_statement_runs() {
    g_top_lxid = BATON_MY_LXID;
    g_top_block = IsTransactionBlock();
}

bool routed(const pg_uuid_t* tenant) { return citus::distributed() && !active(tenant); }

void install() { relations::set_shard_of(shard_of); }

}  // namespace baton::pg::local_group
