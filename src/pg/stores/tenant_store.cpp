// The statements of baton.tenants (see tenant_store.hpp).
#include <string>

#include "core/cause.hpp"
#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/fence.hpp"
#include "pg/stores/tenant_store.hpp"

namespace baton::pg::tenants {

namespace {

KeptPlan g_insert = {"INSERT INTO baton.tenants (tenant) VALUES ($1) ON CONFLICT (tenant) DO NOTHING", 1, {UUIDOID},
                     nullptr};

KeptPlan g_lock = {"SELECT t.state FROM baton.tenants t WHERE t.tenant OPERATOR(pg_catalog.=) $1 FOR UPDATE", 1,
                   {UUIDOID}, nullptr};

KeptPlan g_set_state = {
    "UPDATE baton.tenants t SET state = $2, state_changed_at = pg_catalog.now() "
    "WHERE t.tenant OPERATOR(pg_catalog.=) $1",
    2, {UUIDOID, TEXTOID}, nullptr};

}  // namespace

// ON CONFLICT DO NOTHING: a concurrent create of the same tenant waits and finds it.
bool insert(Spi& spi, pg_uuid_t* tenant) {
    Datum values[1] = {UUIDPGetDatum(tenant)};
    return spi.run(g_insert, values, nullptr) == 1;
}

// The row lock orders two state changes of one tenant.
std::optional<tenant::State> lock(Spi& spi, pg_uuid_t* tenant) {
    Datum values[1] = {UUIDPGetDatum(tenant)};
    if (spi.run(g_lock, values, nullptr) == 0) return std::nullopt;
    const char* stored = spi.cstring_at(0, 1);
    auto state = tenant::parse_state(stored ? stored : "");
    if (!state) throw Error(SqlState::kInternal, "tenant " + std::string(tenant_text(tenant)) + " has an unknown state");
    return state;
}

// The caller holds the fence exclusively (fence::lock_exclusive).
void set_state(Spi& spi, pg_uuid_t* tenant, tenant::State to) {
    Datum values[2] = {UUIDPGetDatum(tenant), text_datum(tenant::state_name(to))};
    spi.run(g_set_state, values, nullptr);
}

}  // namespace baton::pg::tenants
