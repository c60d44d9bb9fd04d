// Retention: baton.purge(older_than, max_rows).
//
// Removes settled deliveries (finished or failed, not part of a run) and terminal runs
// (completed, failed, cancelled; with their stages, markers and deliveries, by the
// foreign keys' ON DELETE CASCADE) whose settled_at / finished_at is older than
// now() - older_than. Like reap, it works tenant by tenant, oldest first, and never
// waits: rows locked by anyone are skipped (SKIP LOCKED), and so are tenants that are
// not active or whose fence is being changed right now (fence::try_writable). Claimers
// never touch settled rows, so a purge in flight never blocks them.
#include <cstdint>

#include "core/retention.hpp"
#include "core/tenant.hpp"
#include "pg/args.hpp"
#include "pg/fence.hpp"
#include "pg/read_only.hpp"
#include "pg/spi.hpp"

namespace baton::api {

namespace {

#define CUTOFF "(pg_catalog.now() OPERATOR(pg_catalog.-) $1)"

// The active tenants among the oldest purgeable rows (at most $2 of each kind), the
// tenant with the oldest row first. A fenced tenant's rows never hide the others'.
pg::KeptPlan g_purge_tenants = {
    "SELECT e.tenant FROM ("
    "(SELECT d.tenant, d.settled_at AS at FROM baton.deliveries d "
    "JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) d.tenant "
    "WHERE t.state OPERATOR(pg_catalog.=) 'active' AND d.settled_at OPERATOR(pg_catalog.<) " CUTOFF " "
    "AND d.status OPERATOR(pg_catalog.=) ANY ('{finished,failed}'::pg_catalog.text[]) AND d.run_id IS NULL "
    "ORDER BY d.settled_at LIMIT $2) "
    "UNION ALL "
    "(SELECT r.tenant, r.finished_at FROM baton.runs r "
    "JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) r.tenant "
    "WHERE t.state OPERATOR(pg_catalog.=) 'active' AND r.finished_at OPERATOR(pg_catalog.<) " CUTOFF " "
    "AND r.status OPERATOR(pg_catalog.=) ANY ('{completed,failed,cancelled}'::pg_catalog.text[]) "
    "ORDER BY r.finished_at LIMIT $2)"
    ") e GROUP BY e.tenant ORDER BY pg_catalog.min(e.at) LIMIT 256",
    2, {INTERVALOID, INT4OID}, nullptr};

// Up to $3 settled deliveries of tenant $2 outside any run, oldest first, skipping rows
// others hold.
pg::KeptPlan g_purge_deliveries = {
    "DELETE FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $2 "
    "AND d.id OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT c.id FROM baton.deliveries c WHERE c.tenant OPERATOR(pg_catalog.=) $2 "
    "AND c.settled_at OPERATOR(pg_catalog.<) " CUTOFF " "
    "AND c.status OPERATOR(pg_catalog.=) ANY ('{finished,failed}'::pg_catalog.text[]) AND c.run_id IS NULL "
    "ORDER BY c.settled_at LIMIT $3 FOR UPDATE SKIP LOCKED))",
    3, {INTERVALOID, UUIDOID, INT4OID}, nullptr};

// Up to $3 terminal runs of tenant $2, oldest first, skipping runs others hold and runs
// that still have a delivery in flight (pending or claimed: a claimer may take it).
pg::KeptPlan g_purge_runs = {
    "DELETE FROM baton.runs r WHERE r.tenant OPERATOR(pg_catalog.=) $2 "
    "AND r.id OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT x.id FROM baton.runs x WHERE x.tenant OPERATOR(pg_catalog.=) $2 "
    "AND x.finished_at OPERATOR(pg_catalog.<) " CUTOFF " "
    "AND x.status OPERATOR(pg_catalog.=) ANY ('{completed,failed,cancelled}'::pg_catalog.text[]) "
    "AND NOT EXISTS (SELECT 1 FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) x.tenant "
    "AND d.run_id OPERATOR(pg_catalog.=) x.id "
    "AND d.status OPERATOR(pg_catalog.=) ANY ('{pending,claimed}'::pg_catalog.text[])) "
    "ORDER BY x.finished_at LIMIT $3 FOR UPDATE SKIP LOCKED))",
    3, {INTERVALOID, UUIDOID, INT4OID}, nullptr};

// baton.purge(older_than, max_rows): removes up to max_rows settled deliveries and
// terminal runs older than older_than and returns how many it removed (the rows of a
// removed run's stages, markers and deliveries go with it and are not counted).
Datum purge(FunctionCallInfo fcinfo, Oid) {
    pg::require_read_write("baton.purge");
    Interval* older_than = pg::interval_arg(fcinfo, 0, "older_than");
    std::int32_t max_rows = pg::int32_arg(fcinfo, 1, "max_rows");
    retention::check_older_than(older_than->month, older_than->day, older_than->time);
    retention::check_purge_rows(max_rows);
    pg::Spi spi;
    Datum args[2] = {IntervalPGetDatum(older_than), Int32GetDatum(max_rows)};
    std::uint64_t n = spi.run(g_purge_tenants, args, nullptr);
    // Copy the candidates out first: try_writable and the deletes run queries of their own.
    pg_uuid_t** candidates =
        pg::guard([n] { return static_cast<pg_uuid_t**>(palloc(sizeof(pg_uuid_t*) * (n + 1))); });
    for (std::uint64_t i = 0; i < n; i++) {
        bool isnull = false;
        candidates[i] = DatumGetUUIDP(spi.copy_out(i, 1, &isnull));
    }
    std::int32_t removed = 0;
    for (std::uint64_t i = 0; i < n && removed < max_rows; i++) {
        if (!pg::fence::try_writable(candidates[i])) continue;
        Datum values[3] = {IntervalPGetDatum(older_than), UUIDPGetDatum(candidates[i]),
                           Int32GetDatum(max_rows - removed)};
        removed += static_cast<std::int32_t>(spi.run(g_purge_deliveries, values, nullptr));
        if (removed >= max_rows) break;
        values[2] = Int32GetDatum(max_rows - removed);
        removed += static_cast<std::int32_t>(spi.run(g_purge_runs, values, nullptr));
    }
    PG_RETURN_INT32(removed);
}

}  // namespace

}  // namespace baton::api

BATON_FUNCTION(baton_purge, baton::api::purge)
