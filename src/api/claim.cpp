// claim: leases up to max_items claimable deliveries of a target, starting where the
// claim hints say no claimable row can be before.
#include <string>

#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/error.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/access/auth.hpp"
#include "pg/citus/citus.hpp"
#include "pg/deliveries/claim_hints.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// baton.claim(tenant, target, lease, max_items, expected): leases up to max_items
// pending deliveries of the target, highest priority then oldest first, skipping rows
// other claimers hold; each gets generation + 1 and attempts + 1.
//
// With claim hints (pg/deliveries/claim_hints.hpp) the scan starts where no claimable row can be
// before, not over the dead entries of rows claimed before; if that finds fewer rows
// than asked for, the claim scans again from the top (once a second per target at most),
// so a hint never hides a row for long.
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
    // A claim filtered by `expected` passes over rows others may claim: it uses no hint.
    // Nor does a claim on a Citus install: the rows' writes are told to the hints of the
    // node that holds their shard, not to this node's.
    bool use_hint = expected == nullptr && !pg::citus::distributed();
    pg::claim_hints::Scan scan = pg::claim_hints::begin(tenant, target_chars, target_len, use_hint);
    pg::ClaimCall call{tenant, target, lease, expected, scan.now, rsinfo};
    std::int64_t got = 0;
    claim_hint::Position start = scan.ticket.start;
    bool hinted = scan.entry != nullptr && start.priority <= PG_INT32_MAX && start.priority >= PG_INT32_MIN;
    if (hinted) {
        // The rest of the hint's priority level, then the levels below it.
        pg::Claimed level = store.claim(call, pg::ClaimRange::kLevel, start, max_items);
        got = level.n;
        claim_hint::Position last = level.last;
        if (got < max_items) {
            pg::Claimed below = store.claim(call, pg::ClaimRange::kBelow, start, max_items - got);
            got += below.n;
            if (below.n > 0) last = below.last;
        }
        pg::claim_hints::raise(scan, got < max_items ? claim_hint::kEnd : last);
    }
    if (got < max_items && (!hinted || pg::claim_hints::may_scan_from_top(scan))) {
        // From the top: without a hint, or behind it (a row the hint cannot see, or one
        // put back while this claim ran, which only a later claim would otherwise see).
        pg::Claimed top = store.claim(call, pg::ClaimRange::kAll, claim_hint::kTop, max_items - got);
        if (!hinted && scan.entry != nullptr) {
            scan.ticket.start = claim_hint::kTop;
            pg::claim_hints::raise(scan, top.n < max_items - got ? claim_hint::kEnd : top.last);
        }
        got += top.n;
    }
    store.close();
    return static_cast<Datum>(0);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_claim, baton::api::claim)
