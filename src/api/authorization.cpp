// Authorization: bind_target and the grant_* helpers.
//
// No privilege on the tables goes to anyone: the functions run as the extension's
// owner and check the caller themselves. The helpers give a role USAGE on the schema
// and EXECUTE on the functions of its kind, nothing more.
#include <string>

#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/auth.hpp"
#include "pg/fence.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"

namespace baton::api {

namespace {

pg::KeptPlan g_bind = {
    "INSERT INTO baton.target_bindings AS b (tenant, target, role) VALUES ($1, $2, $3) "
    "ON CONFLICT (tenant, target) DO UPDATE SET role = EXCLUDED.role",
    3, {UUIDOID, TEXTOID, REGROLEOID}, nullptr};

// What producers and workers may execute (beyond USAGE on the schema). Admins may
// execute every function but the grant_* helpers and the trigger functions.
constexpr const char* kProducerFunctions =
    "baton.enqueue, baton.enqueue_batch, baton.delivery, baton.tenant_write_allowed, "
    "baton.submit, baton.inputs_digest, baton.run, baton.run_history";
constexpr const char* kWorkerFunctions =
    "baton.claim, baton.renew, baton.finish, baton.finish_batch, baton.retry, baton.reap, baton.delivery, "
    "baton.tenant_write_allowed, baton.acquire_run, baton.acquire_next_run, baton.renew_run, "
    "baton.release_run, baton.transition_stage, baton.start_stage, baton.complete_stage, "
    "baton.fail_stage, baton.run, baton.run_history, baton.enter_step, baton.claim_marker, "
    "baton.complete_marker, baton.marker, baton.markers_in_doubt, baton.resolve_marker";
// Every function of the schema an admin gets, read from the catalog so that a function
// added later cannot be forgotten.
constexpr const char* kAdminFunctions =
    "SELECT pg_catalog.string_agg(p.oid::pg_catalog.regprocedure::pg_catalog.text, ', ') "
    "FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) "
    "'baton'::pg_catalog.regnamespace "
    "AND p.prorettype OPERATOR(pg_catalog.<>) 'pg_catalog.trigger'::pg_catalog.regtype "
    "AND NOT p.proname OPERATOR(pg_catalog.~~) 'grant\\_%'";
// Every view of the schema, read from the catalog like the functions.
constexpr const char* kAdminViews =
    "SELECT pg_catalog.string_agg(c.oid::pg_catalog.regclass::pg_catalog.text, ', ') "
    "FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) "
    "'baton'::pg_catalog.regnamespace AND c.relkind OPERATOR(pg_catalog.=) 'v'";

// Grants USAGE on the schema, EXECUTE on functions and SELECT on views to role.
// `functions` is a list, or (for admins) a query that returns one; `views` (nullptr:
// none) is always a query that returns a list, as the views differ between versions.
void grant(FunctionCallInfo fcinfo, const char* functions, bool list_is_query, const char* views) {
    pg::require(fcinfo, 0, "role");
    Oid role = PG_GETARG_OID(0);
    pg::auth::require_role_exists(role);
    const char* name = pg::guard([role] { return quote_identifier(GetUserNameFromId(role, false)); });
    std::string to = std::string(" TO ") + name;
    pg::Spi spi;
    if (list_is_query) {
        spi.exec(functions);
        functions = spi.cstring_at(0, 1);
        if (functions == nullptr) throw Error(SqlState::kInternal, "pg_baton found none of its functions");
    }
    const char* view_list = nullptr;
    if (views) {
        spi.exec(views);
        view_list = spi.cstring_at(0, 1);
    }
    std::string usage = "GRANT USAGE ON SCHEMA baton" + to;
    std::string execute = std::string("GRANT EXECUTE ON FUNCTION ") + functions + to;
    std::string select = view_list ? std::string("GRANT SELECT ON ") + view_list + to : std::string();
    spi.exec(usage.c_str());
    spi.exec(execute.c_str());
    if (view_list) spi.exec(select.c_str());
}

// baton.bind_target(tenant, target, role): only members of role may claim, renew,
// finish or retry the target's deliveries from now on. Rebinding replaces the role.
Datum bind_target(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.bind_target");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = pg::text_arg(fcinfo, 1, "target");
    pg::require(fcinfo, 2, "role");
    Oid role = PG_GETARG_OID(2);
    delivery::check_target_chars(pg::text_chars(target));
    pg::auth::require_role_exists(role);
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    Datum values[3] = {UUIDPGetDatum(tenant), PointerGetDatum(target), ObjectIdGetDatum(role)};
    spi.run(g_bind, values, nullptr);
    PG_RETURN_VOID();
}

Datum grant_producer(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.grant_producer");
    grant(fcinfo, kProducerFunctions, false, nullptr);
    PG_RETURN_VOID();
}

Datum grant_worker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.grant_worker");
    grant(fcinfo, kWorkerFunctions, false, nullptr);
    PG_RETURN_VOID();
}

Datum grant_admin(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.grant_admin");
    grant(fcinfo, kAdminFunctions, true, kAdminViews);
    PG_RETURN_VOID();
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_bind_target, baton::api::bind_target)
BATON_FUNCTION(baton_grant_producer, baton::api::grant_producer)
BATON_FUNCTION(baton_grant_worker, baton::api::grant_worker)
BATON_FUNCTION(baton_grant_admin, baton::api::grant_admin)
