// claim: leases up to max_items claimable deliveries of one tenant's target.
#include <string>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/auth.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/deliveries/claim_take.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// baton.claim(tenant, target, lease, max_items, expected): leases up to max_items
// pending deliveries of the target, highest priority then oldest first, skipping rows
// other claimers hold; each gets generation + 1 and attempts + 1
// (pg/deliveries/claim_take.hpp). Nothing while the target is paused.
Datum claim(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.claim");
    pg_uuid_t* tenant = pg::uuid_arg(fcinfo, 0, "tenant");
    text* target = pg::text_arg(fcinfo, 1, "target");
    Interval* lease = pg::interval_arg(fcinfo, 2, "lease");
    std::int32_t max_items = pg::int32_arg(fcinfo, 3, "max_items");
    Jsonb* expected = PG_ARGISNULL(4) ? nullptr : pg::jsonb_arg(fcinfo, 4, "expected");
    delivery::check_target_chars(pg::text_chars(target));
    delivery::check_lease_usec(pg::interval_usec(lease));
    delivery::check_max_items(max_items);
    if (expected != nullptr) {
        pg::check_object_argument("expected", expected);
        if (pg::jsonb_is_empty_object(expected))
            throw_invalid_argument("expected", "expected is NULL or an object with at least one field.");
    }
    pg::fence::require_writable(tenant);
    // A caller who may not work on the target learns nothing, not even that it is empty.
    pg::DeliveryStore store;
    const char* target_chars = VARDATA_ANY(target);
    int target_len = static_cast<int>(VARSIZE_ANY_EXHDR(target));
    pg::auth::require_member(caller, store.bound_role(tenant, target_chars, target_len), pg::text_view(target));

    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    // A paused target gives nothing; enqueues go on, leases in flight end as usual.
    if (store.binding(tenant, target_chars, target_len).paused) return static_cast<Datum>(0);
    // A claim filtered by `expected` passes over rows others may claim: it uses no hint.
    // Nor does a claim on a Citus install that is not served from the tenant's shards
    // here (pg/deliveries/claim_take.hpp).
    bool use_hint = expected == nullptr && !pg::local_group::routed(tenant);
    pg::ClaimCall call{tenant, target, lease, expected, 0, rsinfo, false};
    pg::claim_take(store, call, target_chars, target_len, max_items, use_hint);
    store.close();
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_claim, baton::api::claim)
