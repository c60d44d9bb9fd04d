// claim_fair: leases deliveries of a target from every tenant the caller may serve, in
// turns of each binding's weight (core/fair_share.hpp, docs/guide/fairness.md).
#include <cstring>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/fair_share.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/auth.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/citus/citus_hold.hpp"
#include "pg/citus/local_group.hpp"
#include "pg/deliveries/claim_take.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/deliveries/fair_turns.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// Whether the caller may take work of (tenant, target) now: the target is bound there
// to a role the caller is a member of, not paused, and the tenant is active (its fence
// lock taken without waiting, as reap takes it: a tenant whose state is changing right
// now is passed over, not waited for).
bool may_serve(pg::DeliveryStore& store, Oid caller, const pg_uuid_t* tenant, const char* target, int target_len,
               std::int32_t* weight) {
    const pg::authz_cache::Binding& b = store.binding(tenant, target, target_len);
    *weight = b.weight;
    if (b.role == InvalidOid || b.paused) return false;
    if (!pg::guard([caller, &b] { return is_member_of_role(caller, b.role); })) return false;
    pg::citus::hold_shard_group(tenant);
    return pg::fence::try_writable(tenant);
}

// baton.claim_fair(target, lease, max_items): up to max_items deliveries of the target,
// each row with its tenant. The caller's place in the round over the tenants with work
// (pg/deliveries/fair_turns.hpp) says which tenant is served: it takes up to what is
// left of its weight (in its own claim order: priority, then age; all that is asked
// when it is the only tenant with pending work), and the turn passes to the next tenant
// by id once it had its weight or ran dry. A call stops at max_items, when no tenant has
// work, after a whole round that gave nothing, or after fair_share::kMaxVisits tenants.
Datum claim_fair(FunctionCallInfo fcinfo, Oid caller) {
    pg::require_read_write("baton.claim_fair");
    text* target = pg::text_arg(fcinfo, 0, "target");
    Interval* lease = pg::interval_arg(fcinfo, 1, "lease");
    std::int32_t max_items = pg::int32_arg(fcinfo, 2, "max_items");
    delivery::check_target_chars(pg::text_chars(target));
    delivery::check_lease_usec(pg::interval_usec(lease));
    delivery::check_max_items(max_items);
    const char* target_chars = VARDATA_ANY(target);
    int target_len = static_cast<int>(VARSIZE_ANY_EXHDR(target));

    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::DeliveryStore store;
    pg::fair_turns::Place local{};
    pg::fair_turns::Place* place = pg::fair_turns::place(caller, target_chars, target_len);
    if (place == nullptr) place = &local;
    std::int64_t got = 0;
    int visits = 0;
    bool idle_from_known = false;  // the tenant where the current run of visits that gave nothing began
    pg_uuid_t idle_from{};
    while (got < max_items && visits < fair_share::kMaxVisits) {
        bool alone = false;
        if (!place->turn.open) {
            pg_uuid_t next;
            if (!place->known || !store.tenant_with_pending(target, &place->tenant, &next)) {
                if (!store.tenant_with_pending(target, nullptr, &next)) {
                    place->known = false;
                    break;
                }
                // Round from the end to the tenant just served: it is the only one.
                alone = place->known && std::memcmp(&next, &place->tenant, sizeof next) == 0;
            }
            // Back at the first tenant that gave nothing: a whole round gave nothing.
            if (idle_from_known && std::memcmp(&next, &idle_from, sizeof next) == 0) break;
            place->tenant = next;
            place->known = true;
            fair_share::open(place->turn);
        }
        // The rows name their tenant by this copy: the place moves on.
        auto* tenant = static_cast<pg_uuid_t*>(pg::guard([] { return palloc(sizeof(pg_uuid_t)); }));
        *tenant = place->tenant;
        visits++;
        std::int32_t weight = fair_share::kMinWeight;
        std::int64_t taken = 0;
        if (may_serve(store, caller, tenant, target_chars, target_len, &weight)) {
            std::int64_t asked = fair_share::quota(place->turn, weight, max_items - got, alone);
            pg::ClaimCall call{tenant, target, lease, nullptr, 0, rsinfo, true};
            taken = pg::claim_take(store, call, target_chars, target_len, asked, !pg::local_group::routed(tenant));
            fair_share::took(place->turn, weight, asked, taken);
        } else {
            fair_share::pass(place->turn);
        }
        if (taken > 0) {
            got += taken;
            idle_from_known = false;
        } else if (!idle_from_known) {
            idle_from = *tenant;
            idle_from_known = true;
        }
    }
    store.close();
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_claim_fair, baton::api::claim_fair)
