// reap: the fleet-wide return of expired leases, tenant by tenant, each past the fence.
#include "core/claim_hint.hpp"
#include "core/delivery.hpp"
#include "core/tenant.hpp"
#include "pg/runtime/args.hpp"
#include "pg/deliveries/delivery_store.hpp"
#include "pg/access/fence.hpp"
#include "pg/access/read_only.hpp"
#include "pg/workers/reaper.hpp"

namespace baton::api {

namespace {

// baton.reap(max_rows): returns expired leases fleet-wide, oldest expiry first, bumping
// the generation; skips tenants that are not active or whose fence is changing. Each
// tenant's rows are reaped by a statement of their own (on Citus, on its node). The
// background reaper's call reads the leases from its scan floor up (core/scan_floor.hpp);
// a client's from the first.
Datum reap(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.reap");
    std::int32_t max_rows = pg::int32_arg(fcinfo, 0, "max_rows");
    delivery::check_reap_rows(max_rows);
    pg::DeliveryStore store;
    std::uint64_t n = 0;
    pg::DeliveryStore::ReapTenant* candidates = store.reap_tenants(max_rows, pg::reaper::scan_from(), &n);
    pg::reaper::scanned(n > 0 ? candidates[0].oldest : DT_NOEND, GetCurrentTransactionStartTimestamp());
    std::int32_t reaped = 0;
    for (std::uint64_t i = 0; i < n && reaped < max_rows; i++)
        if (pg::fence::try_writable(candidates[i].tenant)) reaped += store.reap(candidates[i], max_rows - reaped);
    PG_RETURN_INT32(reaped);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_reap, baton::api::reap)
