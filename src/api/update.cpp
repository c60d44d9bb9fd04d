// What pg_baton's update scripts call for the data an update moves (their SQL declares
// and calls the function, then drops it: no logic in the scripts themselves).
#include "pg/citus/citus.hpp"
#include "pg/deliveries/side_rows.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// baton.fill_side_tables(), during the update to 0.9.0: the leases the deliveries hold
// and their pending rows, written into the new baton.leases and baton.ready
// (pg/deliveries/side_rows.hpp). On a distributed install the update runs on every node, where the
// distributed baton.deliveries cannot be read from inside the script, and the tables
// are not distributed yet: it does nothing there, and baton.distribute(), which the
// update procedure runs next, fills the distributed tables.
Datum fill_side_tables(FunctionCallInfo, Oid) {
    if (pg::citus::distributed()) PG_RETURN_VOID();
    pg::Spi spi;
    pg::guard([] { pg::side_rows::fill(); });
    PG_RETURN_VOID();
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_fill_side_tables, baton::api::fill_side_tables)
