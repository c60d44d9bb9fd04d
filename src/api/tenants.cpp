// Tenants: create_tenant, set_tenant_state, tenant_write_allowed.
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/citus/citus_hold.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/access/restore_load.hpp"
#include "pg/stores/tenant_store.hpp"

namespace baton::api {

namespace {

// baton.create_tenant(tenant): creates an active tenant; does nothing if it exists,
// unless it is deleted (DU007: deleted is final).
Datum create_tenant(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.create_tenant");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    pg::restore_load::mark_in_use();  // a write that passes no fence lock
    pg::Spi spi;
    if (!pg::tenants::insert(spi, tenant)) {
        pg::fence::Check c = pg::fence::read(tenant);
        if (c.access != pg::fence::Access::kMissing && c.state == tenant::State::kDeleted)
            throw Error(SqlState::kInvalidState, "tenant " + std::string(pg::tenant_text(tenant)) + " is deleted",
                        "A deleted tenant cannot be created again.", "Use a new tenant id.");
    }
    PG_RETURN_VOID();
}

// baton.set_tenant_state(tenant, state): moves the tenant to a state. Takes the fence
// exclusively, so writers in flight commit before the change and later writers see
// it. Unknown tenant: DU002; leaving deleted: DU007; the same state: nothing.
Datum set_tenant_state(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.set_tenant_state");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* state_text = pg::text_arg(fcinfo, 1, "state");
    tenant::State to = tenant::parse_state_argument(pg::text_view(state_text));

    // The row first, then the fence: a direct UPDATE of baton.tenants locks in that
    // order too (its trigger takes the fence), so the two never deadlock. On Citus the
    // row stays where it was read until the write (pg/citus/citus_hold.hpp).
    pg::citus::hold_shard_group(tenant);
    pg::Spi spi;
    std::optional<tenant::State> from = pg::tenants::lock(spi, tenant);
    if (!from)
        throw Error(SqlState::kTenantFenced, "tenant " + std::string(pg::tenant_text(tenant)) + " does not exist",
                    "Only an existing tenant has a state.", "Create it with baton.create_tenant().");
    tenant::check_move(*from, to, pg::tenant_text(tenant));
    if (*from == to) PG_RETURN_VOID();
    pg::fence::lock_exclusive(tenant);
    pg::tenants::set_state(spi, tenant, to);
    PG_RETURN_VOID();
}

// baton.tenant_write_allowed(tenant): true iff the tenant exists and is active.
Datum tenant_write_allowed(FunctionCallInfo fcinfo, Oid) {
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    PG_RETURN_BOOL(pg::fence::read(tenant).access == pg::fence::Access::kAllowed);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_create_tenant, baton::api::create_tenant)
BATON_FUNCTION(baton_set_tenant_state, baton::api::set_tenant_state)
BATON_FUNCTION(baton_tenant_write_allowed, baton::api::tenant_write_allowed)
