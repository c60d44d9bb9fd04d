// What pg_baton's update scripts call for the data an update moves (their SQL declares
// and calls the function, then drops it: no logic in the scripts themselves).
#include "pg/citus.hpp"
#include "pg/lease_rows.hpp"
#include "pg/spi.hpp"

namespace baton::api {

namespace {

// baton.fill_leases(), during the update to 0.9.0: the leases the deliveries hold,
// written into the new baton.leases (pg/lease_rows.hpp). On a distributed install the
// update runs on every node, where the distributed baton.deliveries cannot be read from
// inside the script, and the table is not distributed yet: it does nothing there, and
// baton.distribute(), which the update procedure runs next, fills the distributed table.
Datum fill_leases(FunctionCallInfo, Oid) {
    if (pg::citus::distributed()) PG_RETURN_VOID();
    pg::Spi spi;
    pg::guard([] { pg::lease_rows::fill(); });
    PG_RETURN_VOID();
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_fill_leases, baton::api::fill_leases)
