// A tenant's targets: pause, resume, set_weight and limit_key of a binding, and a target
// paused in every tenant (pause_everywhere, resume_everywhere). Admin functions
// (grant_admin).
#include <string>

#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/tenant.hpp"
#include "core/fair_share.hpp"
#include "core/key_limit.hpp"
#include "pg/runtime/args.hpp"
#include "pg/citus/citus.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/notify.hpp"
#include "pg/stores/binding_store.hpp"

namespace baton::api {

namespace {

// DU008 for a change of a binding that does not exist: weights and pauses are a
// binding's, and a target is bound with bind_target() first.
void require_bound(pg::bindings::Change c, const pg_uuid_t* tenant, const text* target,
                   const char* hint = "Bind it with baton.bind_target(tenant, target, role), or pause it in every "
                                      "tenant with baton.pause_everywhere(target).") {
    if (c != pg::bindings::Change::kUnbound) return;
    throw Error(SqlState::kNotFound,
                "target \"" + std::string(pg::text_view(target)) + "\" is not bound in tenant " +
                    std::string(pg::tenant_text(tenant)),
                "Weights, pauses and key limits belong to a target's binding.", hint);
}

text* target_arg(FunctionCallInfo fcinfo, int n) {
    text* target = pg::text_arg(fcinfo, n, "target");
    delivery::check_target_chars(pg::text_chars(target));
    return target;
}

// pause and resume of one binding: true when it changed. A resume wakes the workers
// listening on the target's channel, as an enqueue does.
Datum set_paused(FunctionCallInfo fcinfo, const char* function, bool paused) {
    pg::require_read_write(function);
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = target_arg(fcinfo, 1);
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    pg::bindings::Change c = pg::bindings::set_paused(spi, tenant, target, paused);
    require_bound(c, tenant, target);
    if (c == pg::bindings::Change::kChanged && !paused) pg::notify::enqueued(tenant, target);
    PG_RETURN_BOOL(c == pg::bindings::Change::kChanged);
}

// baton.pause(tenant, target): claims of the target in the tenant return nothing until
// resume(); enqueues go on and leases in flight end as usual.
Datum pause(FunctionCallInfo fcinfo, Oid) { return set_paused(fcinfo, "baton.pause", true); }

// baton.resume(tenant, target).
Datum resume(FunctionCallInfo fcinfo, Oid) { return set_paused(fcinfo, "baton.resume", false); }

// baton.pause_everywhere(target) and resume_everywhere(target): the target in every
// tenant, those bound later included; true when it changed. Workers of a resumed
// target find its work at their next claim or poll. A pause of a target no tenant binds
// or has pending work of is DU008 (a misspelt name); a resume of one not paused is false.
Datum set_paused_everywhere(FunctionCallInfo fcinfo, const char* function, bool paused) {
    pg::require_read_write(function);
    text* target = target_arg(fcinfo, 0);
    pg::Spi spi;
    pg::bindings::Change c = pg::bindings::set_paused_everywhere(spi, target, paused);
    if (c == pg::bindings::Change::kUnbound)
        throw Error(SqlState::kNotFound, "target \"" + std::string(pg::text_view(target)) + "\" is unknown",
                    "No tenant binds the target or has a pending delivery of it.",
                    "Check the name; a target is paused in every tenant once one binds it or enqueues to it.");
    PG_RETURN_BOOL(c == pg::bindings::Change::kChanged);
}

Datum pause_everywhere(FunctionCallInfo fcinfo, Oid) {
    return set_paused_everywhere(fcinfo, "baton.pause_everywhere", true);
}

Datum resume_everywhere(FunctionCallInfo fcinfo, Oid) {
    return set_paused_everywhere(fcinfo, "baton.resume_everywhere", false);
}

// baton.set_weight(tenant, target, weight): the binding's share of the fair claim's
// turns (items a turn gives the tenant).
Datum set_weight(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.set_weight");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = target_arg(fcinfo, 1);
    std::int32_t weight = pg::int32_arg(fcinfo, 2, "weight");
    fair_share::check_weight(weight);
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    require_bound(pg::bindings::set_weight(spi, tenant, target, weight), tenant, target);
    PG_RETURN_VOID();
}

// The key argument of limit_key and unlimit_key, as baton.key_limits stores it: '' for
// NULL, every key of the target without a limit of its own.
text* limited_key(FunctionCallInfo fcinfo, int n) {
    text* key = pg::optional_text_arg(fcinfo, n);
    if (key != nullptr) delivery::check_key_chars(pg::text_chars(key));
    return key != nullptr ? key : pg::guard([] { return cstring_to_text(""); });
}

// A change of the limits of (tenant, target) by `change`, once the arguments are checked:
// on a single server (docs/guide/limits.md), of a writable tenant, of a bound target.
template <typename Change>
pg::bindings::Change change_limits(pg_uuid_t* tenant, text* target, Change change) {
    if (pg::citus::distributed())
        throw Error(SqlState::kFeatureNotSupported, "key limits are not available on a distributed install",
                    "The admission of a key's deliveries is kept on a single server.",
                    "Limit keys on a single server; see docs/guide/limits.md.");
    pg::fence::require_writable(tenant);
    pg::Spi spi;
    pg::bindings::Change c = change(spi);
    require_bound(c, tenant, target, "Bind it with baton.bind_target(tenant, target, role) first.");
    return c;
}

// baton.limit_key(tenant, target, max_leased, key, ordered): at most max_leased
// deliveries of the key (NULL: of every key without a limit of its own) admitted at
// once, pending in the claim order or leased; ordered: one at a time, in enqueue order.
// The deliveries the change covers are admitted afresh (pg/deliveries/key_admission.hpp).
Datum limit_key(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.limit_key");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = target_arg(fcinfo, 1);
    std::int32_t max_leased = pg::int32_arg(fcinfo, 2, "max_leased");
    key_limit::check_max_leased(max_leased);
    text* key = limited_key(fcinfo, 3);
    pg::require(fcinfo, 4, "ordered");
    bool ordered = PG_GETARG_BOOL(4);
    if (ordered && max_leased != 1)
        throw_invalid_argument("max_leased", "An ordered key has one delivery admitted at a time: max_leased is 1 "
                                             "with ordered; got " + std::to_string(max_leased) + ".");
    change_limits(tenant, target, [&](pg::Spi& spi) {
        return pg::bindings::set_key_limit(spi, tenant, target, key, max_leased, ordered);
    });
    PG_RETURN_VOID();
}

// baton.rate_limit_key(tenant, target, rate, per, burst, key): at most `rate` claims of
// the key's deliveries per `per`, `burst` (NULL: rate) at once; the key's concurrency
// limit, if any, stays (core/key_limit.hpp).
Datum rate_limit_key(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.rate_limit_key");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = target_arg(fcinfo, 1);
    std::int32_t rate = pg::int32_arg(fcinfo, 2, "rate");
    key_limit::check_rate(rate);
    Interval* per = pg::interval_arg(fcinfo, 3, "per");
    if (per->month != 0) throw_invalid_argument("per", "per is longer than zero and at most one day.");
    key_limit::check_per_usec(pg::interval_usec(per));
    std::int32_t burst = PG_ARGISNULL(4) ? rate : PG_GETARG_INT32(4);
    key_limit::check_burst(burst);
    text* key = limited_key(fcinfo, 5);
    change_limits(tenant, target, [&](pg::Spi& spi) {
        return pg::bindings::set_key_rate(spi, tenant, target, key, rate, per, burst);
    });
    PG_RETURN_VOID();
}

// baton.unlimit_key(tenant, target, key): removes the limits; the key's waiting
// deliveries enter the claim order (or the target's limit for every key applies to
// them). True when there was a limit.
Datum unlimit_key(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.unlimit_key");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = target_arg(fcinfo, 1);
    text* key = limited_key(fcinfo, 2);
    pg::bindings::Change c = change_limits(
        tenant, target, [&](pg::Spi& spi) { return pg::bindings::set_key_limit(spi, tenant, target, key, 0, false); });
    PG_RETURN_BOOL(c == pg::bindings::Change::kChanged);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_pause, baton::api::pause)
BATON_FUNCTION(baton_resume, baton::api::resume)
BATON_FUNCTION(baton_pause_everywhere, baton::api::pause_everywhere)
BATON_FUNCTION(baton_resume_everywhere, baton::api::resume_everywhere)
BATON_FUNCTION(baton_set_weight, baton::api::set_weight)
BATON_FUNCTION(baton_limit_key, baton::api::limit_key)
BATON_FUNCTION(baton_unlimit_key, baton::api::unlimit_key)
BATON_FUNCTION(baton_rate_limit_key, baton::api::rate_limit_key)
