// Authorization: bind_target and the grant_* helpers.
//
// No privilege on the tables goes to anyone: the functions run as the extension's
// owner and check the caller themselves. The helpers give a role USAGE on the schema
// and EXECUTE on the functions of its kind, nothing more.
#include <string>

#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/auth.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/stores/binding_store.hpp"

namespace baton::api {

namespace {

// What producers and workers may execute (beyond USAGE on the schema), as function
// names. Admins may execute every function but the grant_* helpers and the trigger
// functions.
constexpr const char* kProducerFunctions =
    "enqueue, enqueue_keyed, enqueue_batch, delivery, cancel_delivery, tenant_write_allowed, "
    "submit, inputs_digest, run, run_history, schedule, unschedule";
constexpr const char* kWorkerFunctions =
    "claim, claim_fair, renew, finish, finish_batch, retry, reap, delivery, "
    "tenant_write_allowed, acquire_run, acquire_next_run, renew_run, "
    "release_run, transition_stage, start_stage, complete_stage, "
    "fail_stage, run, run_history, enter_step, claim_marker, "
    "complete_marker, marker, markers_in_doubt, resolve_marker, wakeup_channel";
// Reads the role argument of a grant_* helper (22004, 22023 for no such role).
Oid role_arg(FunctionCallInfo fcinfo) {
    pg::require(fcinfo, 0, "role");
    Oid role = PG_GETARG_OID(0);
    pg::auth::require_role_exists(role);
    return role;
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
    pg::bindings::bind(spi, tenant, target, role);
    PG_RETURN_VOID();
}

// baton.grant_producer(role): USAGE on the schema and EXECUTE on what producers call.
Datum grant_producer(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.grant_producer");
    pg::auth::grant(role_arg(fcinfo), kProducerFunctions);
    PG_RETURN_VOID();
}

// baton.grant_worker(role): USAGE on the schema and EXECUTE on what workers call.
Datum grant_worker(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.grant_worker");
    pg::auth::grant(role_arg(fcinfo), kWorkerFunctions);
    PG_RETURN_VOID();
}

// baton.grant_admin(role): every function but the grant_* helpers and the triggers,
// and SELECT on the views.
Datum grant_admin(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.grant_admin");
    pg::auth::grant_admin(role_arg(fcinfo));
    PG_RETURN_VOID();
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_bind_target, baton::api::bind_target)
BATON_FUNCTION(baton_grant_producer, baton::api::grant_producer)
BATON_FUNCTION(baton_grant_worker, baton::api::grant_worker)
BATON_FUNCTION(baton_grant_admin, baton::api::grant_admin)
