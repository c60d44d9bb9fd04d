// The views pg_baton grants to roles (baton.delivery_stats, baton.run_stats,
// baton.schedules) on a distributed install. On one node a view reads pg_baton's tables
// with its owner's rights, so a role granted the view reads it without any right on the
// tables. Through a Citus coordinator the view's shard queries run on the workers as
// the calling role, which has no right on the shards (42501). So baton.distribute()
// gives each such view, on the coordinator, a body that reads a function of its own
// (baton.delivery_stats_rows() and so on, like baton.health and health_checks()): the
// function runs the view's one-node query as the extension's owner (every pg_baton
// entry point does), and Citus opens its connections to the workers as that user. The
// view keeps its name, columns, grants and dependants; a role that may select it gets
// EXECUTE on its function. On one node nothing here runs and the views are as the
// scripts made them.
#include <string>

#include "core/delivery.hpp"
#include "pg/runtime/boundary.hpp"
#include "pg/citus/citus.hpp"
#include "pg/runtime/spi.hpp"

// The operators of the queries below, schema-qualified.
#define EQ " OPERATOR(pg_catalog.=) "
#define LT " OPERATOR(pg_catalog.<) "
#define GT " OPERATOR(pg_catalog.>) "
#define GE " OPERATOR(pg_catalog.>=) "
#define MINUS " OPERATOR(pg_catalog.-) "
#define SINCE(INTERVAL) GE "(pg_catalog.now()" MINUS "'" INTERVAL "'::pg_catalog.interval)"

namespace baton::api {

namespace {

// A view served by a function on a distributed install: the function's name and C
// symbol, and the view's query as its latest update script defines it (the function
// returns the columns it is declared with, by name: one declared for an earlier
// definition of the view, before distribute() declares it again, has fewer).
struct ServedView {
    const char* view;
    const char* function;
    const char* symbol;
    const char* query;
};

constexpr ServedView kDeliveryStats = {
    "delivery_stats", "delivery_stats_rows", "baton_delivery_stats_rows",
    "SELECT d.tenant, d.target, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_PENDING "') AS pending, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_CLAIMED "') AS claimed, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_FINISHED "') AS finished, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_FAILED "') AS failed, "
    "pg_catalog.now()" MINUS "pg_catalog.min(d.created_at) FILTER (WHERE d.status" EQ "'" BATON_STATUS_PENDING "') "
    "AS oldest_pending_age, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_CLAIMED "' AND d.lease_until" LT "pg_catalog.now()) "
    "AS expired_leases, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_FINISHED "' AND d.settled_at" SINCE("1 minute") ") "
    "AS finished_last_1m, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_FINISHED "' AND d.settled_at" SINCE("5 minutes") ") "
    "AS finished_last_5m, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_FAILED "' AND d.settled_at" SINCE("5 minutes") ") "
    "AS failed_last_5m, "
    "pg_catalog.count(*) FILTER (WHERE d.status" EQ "'" BATON_STATUS_CANCELLED "') AS cancelled "
    "FROM baton.deliveries d GROUP BY d.tenant, d.target"};

// The statuses of a run that is not over.
#define ACTIVE "('{approved,running}'::pg_catalog.text[])"
constexpr ServedView kRunStats = {
    "run_stats", "run_stats_rows", "baton_run_stats_rows",
    "SELECT r.tenant, r.workflow, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'submitted') AS submitted, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'approved') AS approved, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'running') AS running, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'completed') AS completed, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'failed') AS failed, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'cancelled') AS cancelled, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "ANY " ACTIVE " AND s.status" EQ "'failed' "
    "AND s.attempt" LT "s.max_attempts AND s.retry_at" GT "pg_catalog.now()) AS waiting_retry, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "ANY " ACTIVE " AND r.owner IS NOT NULL "
    "AND r.lease_until" LT "pg_catalog.now()) AS stuck, "
    "pg_catalog.now()" MINUS "pg_catalog.min(r.created_at) FILTER (WHERE r.status" EQ
    "ANY ('{submitted,approved,running}'::pg_catalog.text[])) AS oldest_unfinished_age, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'completed' AND r.finished_at" SINCE("5 minutes") ") "
    "AS completed_last_5m, "
    "pg_catalog.count(*) FILTER (WHERE r.status" EQ "'failed' AND r.finished_at" SINCE("5 minutes") ") "
    "AS failed_last_5m "
    "FROM baton.runs r LEFT JOIN baton.stages s ON s.tenant" EQ "r.tenant AND s.run_id" EQ "r.id "
    "AND s.is_current GROUP BY r.tenant, r.workflow"};

constexpr ServedView kSchedules = {
    "schedules", "schedules_rows", "baton_schedules_rows",
    "SELECT s.tenant, s.name, s.target, s.spec, s.time_zone, s.next_fire_at, s.last_fired_at, "
    "s.last_delivery_id FROM baton.schedule_rows s"};

constexpr const ServedView* kServedViews[] = {&kDeliveryStats, &kRunStats, &kSchedules};

// The rows of view.query, as the extension's owner (the entry point's switch), in the
// columns the function declares (those of its view).
Datum view_rows(FunctionCallInfo fcinfo, const ServedView& view) {
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    std::string columns;
    for (int i = 0; i < rsinfo->setDesc->natts; i++) {
        const char* name = NameStr(TupleDescAttr(rsinfo->setDesc, i)->attname);
        columns += std::string(i ? ", " : "") + "v." + pg::guard([name] { return quote_identifier(name); });
    }
    pg::Spi spi;
    spi.exec(("SELECT " + columns + " FROM (" + view.query + ") v").c_str());
    for (std::uint64_t row = 0; row < SPI_processed; row++) spi.emit_row(rsinfo, row);
    return static_cast<Datum>(0);
}

Datum delivery_stats_rows(FunctionCallInfo fcinfo, Oid) { return view_rows(fcinfo, kDeliveryStats); }
Datum run_stats_rows(FunctionCallInfo fcinfo, Oid) { return view_rows(fcinfo, kRunStats); }
Datum schedules_rows(FunctionCallInfo fcinfo, Oid) { return view_rows(fcinfo, kSchedules); }

// The view's name and its function's, as SQL literals of regclass and regprocedure.
std::string view_literal(const ServedView& v) { return std::string("'baton.") + v.view + "'::pg_catalog.regclass"; }
std::string function_name(const ServedView& v) { return std::string("baton.") + v.function + "()"; }

// Whether the view's body reads its function already (a previous distribute()); an
// update script that redefines the view gives it a body over the tables again.
bool served(pg::Spi& spi, const ServedView& v) {
    spi.exec(("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_depend d "
              "ON d.classid" EQ "'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.objid" EQ "r.oid "
              "WHERE r.ev_class" EQ + view_literal(v) +
              " AND d.refclassid" EQ "'pg_catalog.pg_proc'::pg_catalog.regclass "
              "AND d.refobjid" EQ "pg_catalog.to_regprocedure('" + function_name(v) + "'))")
                 .c_str());
    return spi.bool_at(0, 1);
}

// What a served view's body joins its function's rows with: pg_baton's row of the
// catalog pg_extension, a local table to Citus. A query that reads the view and a
// distributed table with a filter on one tenant would otherwise be sent whole to the
// tenant's worker (Citus' router planner takes a table function for rows every node
// computes alike), where the function does not exist; with a local table in it Citus
// computes the view's rows on the coordinator first, as it does for a query over every
// shard. One row, so the join keeps the function's rows as they are.
constexpr const char* kOnCoordinator =
    "(SELECT e.extname FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'pg_baton') coordinator";

// Gives the view a body that reads its function, declared (again) with the view's
// columns: a function left from an earlier version of the view is dropped first. The
// function is a member of the extension, so that DROP EXTENSION drops it with the view.
void serve(pg::Spi& spi, const ServedView& v) {
    std::string function = function_name(v);
    spi.exec(("SELECT pg_catalog.to_regprocedure('" + function + "') IS NOT NULL").c_str());
    if (spi.bool_at(0, 1)) {
        spi.exec(("ALTER EXTENSION pg_baton DROP FUNCTION " + function).c_str());
        spi.exec(("DROP FUNCTION " + function).c_str());
    }
    spi.exec(("SELECT pg_catalog.string_agg(pg_catalog.format('%I %s', a.attname, "
              "pg_catalog.format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum), "
              "pg_catalog.string_agg('r.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(a.attname), ', ' "
              "ORDER BY a.attnum) "
              "FROM pg_catalog.pg_attribute a WHERE a.attrelid" EQ + view_literal(v) +
              " AND a.attnum" GT "0 AND NOT a.attisdropped")
                 .c_str());
    std::string declared = spi.cstring_at(0, 1);
    std::string columns = spi.cstring_at(0, 2);
    spi.exec(("CREATE FUNCTION " + function + " RETURNS TABLE(" + declared +
              ") LANGUAGE C STABLE AS '$libdir/pg_baton', '" + v.symbol + "'")
                 .c_str());
    spi.exec(("ALTER EXTENSION pg_baton ADD FUNCTION " + function).c_str());
    spi.exec(("REVOKE ALL ON FUNCTION " + function + " FROM PUBLIC").c_str());
    spi.exec(("CREATE OR REPLACE VIEW baton." + std::string(v.view) + " AS SELECT " + columns + " FROM " +
              function + " r, " + kOnCoordinator)
                 .c_str());
}

// Grants EXECUTE on the view's function to every role that may select the view (its
// ACL; the function's owner has it already), so that each keeps reading the view.
void grant_readers(pg::Spi& spi, const ServedView& v) {
    std::string function = function_name(v);
    spi.exec(("SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee" EQ "0 THEN 'PUBLIC' "
              "ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END, ', ') "
              "FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a, pg_catalog.pg_proc p "
              "WHERE c.oid" EQ + view_literal(v) + " AND p.oid" EQ "'" + function +
              "'::pg_catalog.regprocedure AND a.privilege_type" EQ "'SELECT' AND a.grantee OPERATOR(pg_catalog.<>) p.proowner")
                 .c_str());
    if (spi.is_null(0, 1)) return;
    std::string grantees = spi.cstring_at(0, 1);
    spi.exec(("GRANT EXECUTE ON FUNCTION " + function + " TO " + grantees).c_str());
}

}  // namespace

// See views.hpp.
void serve_views_by_functions(pg::Spi& spi) {
    int level = pg::guard([] { return pg::citus::set_until_restored("citus.enable_ddl_propagation", "off"); });
    for (const ServedView* v : kServedViews) {
        if (!served(spi, *v)) serve(spi, *v);
        grant_readers(spi, *v);
    }
    pg::guard([level] { pg::citus::restore(level); });
}

}  // namespace baton::api

BATON_FUNCTION(baton_delivery_stats_rows, baton::api::delivery_stats_rows)
BATON_FUNCTION(baton_run_stats_rows, baton::api::run_stats_rows)
BATON_FUNCTION(baton_schedules_rows, baton::api::schedules_rows)
