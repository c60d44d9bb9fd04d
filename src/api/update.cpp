// What pg_baton's update scripts call for what an update writes (their SQL declares
// and calls the function, then drops it: no logic in the scripts themselves).
#include <string>

#include "api/update.hpp"
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

// baton.fence_side_tables_for_update(), during the update to 0.12.0: the side tables'
// fence triggers (fence_side_tables()), created as the role that runs the script (the
// tables' owner, the bootstrap superuser for a trusted extension), not as the
// extension's owner every call runs as, who may not add triggers to them; the boundary
// restores the user when the call ends, on every way out. On a distributed install it
// does nothing there: baton.distribute(), which the update procedure runs next, creates
// them once it has filled the distributed side tables.
Datum fence_side_tables_for_update(FunctionCallInfo, Oid caller) {
    if (pg::citus::distributed()) PG_RETURN_VOID();
    pg::guard([caller] {
        Oid current = InvalidOid;
        int context = 0;
        GetUserIdAndSecContext(&current, &context);
        SetUserIdAndSecContext(caller, context);
    });
    pg::Spi spi;
    fence_side_tables(spi);
    PG_RETURN_VOID();
}

}  // namespace

void fence_side_tables(pg::Spi& spi) {
    struct Trigger {
        const char* table;
        const char* name;
        const char* definition;
    };
    const Trigger triggers[] = {
        {"leases", "fence", "BEFORE INSERT OR UPDATE OR DELETE ON baton.leases FOR EACH ROW "
                            "EXECUTE FUNCTION baton.fence_row('leases')"},
        {"ready", "fence", "BEFORE INSERT OR UPDATE OR DELETE ON baton.ready FOR EACH ROW "
                           "EXECUTE FUNCTION baton.fence_row('ready')"},
        {"leases", "fence_truncate", "BEFORE TRUNCATE ON baton.leases FOR EACH STATEMENT "
                                     "EXECUTE FUNCTION baton.refuse_truncate()"},
        {"ready", "fence_truncate", "BEFORE TRUNCATE ON baton.ready FOR EACH STATEMENT "
                                    "EXECUTE FUNCTION baton.refuse_truncate()"}};
    for (const Trigger& t : triggers) {
        std::string table = std::string("pg_catalog.to_regclass('baton.") + t.table + "')";
        spi.exec(("SELECT 1 WHERE " + table + " IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g "
                  "WHERE g.tgrelid OPERATOR(pg_catalog.=) " + table + " AND g.tgname OPERATOR(pg_catalog.=) '" +
                  t.name + "')")
                     .c_str());
        if (SPI_processed == 1) spi.exec((std::string("CREATE TRIGGER ") + t.name + " " + t.definition).c_str());
    }
}

}  // namespace baton::api

BATON_FUNCTION(baton_fill_side_tables, baton::api::fill_side_tables)
BATON_FUNCTION(baton_fence_side_tables_for_update, baton::api::fence_side_tables_for_update)
