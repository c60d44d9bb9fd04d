// The views pg_baton grants to roles (baton.delivery_stats, baton.run_stats,
// baton.schedules) on a distributed install. On one node a view reads pg_baton's tables
// with its owner's rights, so a role granted the view reads it without any right on the
// tables. Through a Citus coordinator the view's shard queries run on the workers as
// the calling role, which has no right on the shards (42501). So baton.distribute()
// gives each such view, on the coordinator, a body that reads a function of its own
// (baton.delivery_stats_rows() and so on, like baton.health and health_checks()): the
// function reads the view's query as the extension's owner (every pg_baton entry point
// runs so), and Citus opens its connections to the workers as that user. The query is
// the one the install or update script gave the view, kept by distribute() as a view of
// its own (baton.delivery_stats_query and so on), readable by the owner alone. The view
// keeps its name, columns, grants and dependants; a role that may select it gets EXECUTE
// on its function. On one node nothing here runs and the views are as the scripts made
// them.
#include <string>

#include "pg/runtime/boundary.hpp"
#include "pg/citus/citus.hpp"
#include "pg/runtime/spi.hpp"

namespace baton::api {

namespace {

// A view served by a function on a distributed install: the view's name, and its
// function's and that function's C symbol.
struct ServedView {
    const char* view;
    const char* function;
    const char* symbol;
};

constexpr ServedView kDeliveryStats = {"delivery_stats", "delivery_stats_rows", "baton_delivery_stats_rows"};
constexpr ServedView kRunStats = {"run_stats", "run_stats_rows", "baton_run_stats_rows"};
constexpr ServedView kSchedules = {"schedules", "schedules_rows", "baton_schedules_rows"};

constexpr const ServedView* kServedViews[] = {&kDeliveryStats, &kRunStats, &kSchedules};

// The view that keeps a served view's query: baton.<view>_query.
std::string query_view(const ServedView& v) { return std::string("baton.") + v.view + "_query"; }

// The rows of the view's query, as the extension's owner (the entry point's switch).
// serve() declares the function with the columns of the query's view, in their order.
Datum view_rows(FunctionCallInfo fcinfo, const ServedView& view) {
    ReturnSetInfo* rsinfo = pg::materialize(fcinfo);
    pg::Spi spi;
    spi.exec(("SELECT * FROM " + query_view(view)).c_str());
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
              "ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass "
              "AND d.objid OPERATOR(pg_catalog.=) r.oid "
              "WHERE r.ev_class OPERATOR(pg_catalog.=) " + view_literal(v) +
              " AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass "
              "AND d.refobjid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('" + function_name(v) + "'))")
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

// Drops the extension's member `object` ("FUNCTION baton.f()", "VIEW baton.v") when it
// exists (`exists`: an expression that says so).
void drop_member(pg::Spi& spi, const std::string& object, const std::string& exists) {
    spi.exec(("SELECT " + exists + " IS NOT NULL").c_str());
    if (!spi.bool_at(0, 1)) return;
    spi.exec(("ALTER EXTENSION pg_baton DROP " + object).c_str());
    spi.exec(("DROP " + object).c_str());
}

// Creates the object `kind` `name` (`rest`: the remainder of its CREATE) as a member of
// the extension, so that DROP EXTENSION drops it with the view, and usable by its owner
// alone.
void create_member(pg::Spi& spi, const std::string& kind, const std::string& name, const std::string& rest) {
    spi.exec(("CREATE " + kind + " " + name + rest).c_str());
    spi.exec(("ALTER EXTENSION pg_baton ADD " + kind + " " + name).c_str());
    spi.exec(("REVOKE ALL ON " + std::string(kind == "VIEW" ? "TABLE " : "FUNCTION ") + name + " FROM PUBLIC").c_str());
}

// Keeps the view's query (its body as the scripts made it) as the view baton.<view>_query,
// declares the function (again) with the view's columns, and gives the view a body that
// reads the function. What an earlier distribute() left for an earlier definition of the
// view goes first.
void serve(pg::Spi& spi, const ServedView& v) {
    std::string function = function_name(v);
    std::string query = query_view(v);
    drop_member(spi, "FUNCTION " + function, "pg_catalog.to_regprocedure('" + function + "')");
    drop_member(spi, "VIEW " + query, "pg_catalog.to_regclass('" + query + "')");
    spi.exec(("SELECT pg_catalog.pg_get_viewdef(" + view_literal(v) + "), "
              "pg_catalog.string_agg(pg_catalog.format('%I %s', a.attname, "
              "pg_catalog.format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum), "
              "pg_catalog.string_agg('r.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(a.attname), ', ' "
              "ORDER BY a.attnum) "
              "FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) " + view_literal(v) +
              " AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped")
                 .c_str());
    std::string body = spi.cstring_at(0, 1);
    std::string declared = spi.cstring_at(0, 2);
    std::string columns = spi.cstring_at(0, 3);
    create_member(spi, "VIEW", query, " AS " + body);
    create_member(spi, "FUNCTION", function,
                  " RETURNS TABLE(" + declared + ") LANGUAGE C STABLE AS '$libdir/pg_baton', '" + v.symbol + "'");
    spi.exec(("CREATE OR REPLACE VIEW baton." + std::string(v.view) + " AS SELECT " + columns + " FROM " +
              function + " r, " + kOnCoordinator)
                 .c_str());
}

// Grants EXECUTE on the view's function to every role that may select the view (its
// ACL; the function's owner has it already), so that each keeps reading the view.
void grant_readers(pg::Spi& spi, const ServedView& v) {
    std::string function = function_name(v);
    spi.exec(("SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' "
              "ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END, ', ') "
              "FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a, pg_catalog.pg_proc p "
              "WHERE c.oid OPERATOR(pg_catalog.=) " + view_literal(v) + " AND p.oid OPERATOR(pg_catalog.=) '" + function +
              "'::pg_catalog.regprocedure AND a.privilege_type OPERATOR(pg_catalog.=) 'SELECT' AND a.grantee OPERATOR(pg_catalog.<>) p.proowner")
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
