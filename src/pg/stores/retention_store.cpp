// The statements of retention (see retention_store.hpp).
#include "pg/stores/retention_store.hpp"

namespace baton::pg::retention {

namespace {

#define CUTOFF "(pg_catalog.now() OPERATOR(pg_catalog.-) $1)"

// The purgeable deliveries: settled before the cutoff, outside any run. Read in order of
// creation, on the index deliveries_created (0.9.0; a delivery settles after it is
// created, so the created_at bound only narrows the scan): the index on settled_at it
// replaced was written by every finish, and kept the finish from being a HOT update.
#define PURGEABLE(D)                                                                                          \
    D ".created_at OPERATOR(pg_catalog.<) " CUTOFF " AND " D ".settled_at OPERATOR(pg_catalog.<) " CUTOFF " " \
    "AND " D ".status OPERATOR(pg_catalog.=) ANY ('{finished,failed,cancelled}'::pg_catalog.text[]) "         \
    "AND " D ".run_id IS NULL "

// The active tenants among the oldest purgeable rows (at most $2 of each kind), the
// tenant with the oldest row first, each with the creation of its oldest purgeable
// delivery (NULL when only runs brought it). A fenced tenant's rows never hide the
// others'.
KeptPlan g_tenants = {
    "SELECT e.tenant, pg_catalog.min(e.delivery_at) FROM ("
    "(SELECT d.tenant, d.created_at AS at, d.created_at AS delivery_at FROM baton.deliveries d "
    "JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) d.tenant "
    "WHERE t.state OPERATOR(pg_catalog.=) 'active' AND " PURGEABLE("d")
    "AND d.created_at OPERATOR(pg_catalog.>=) $3 ORDER BY d.created_at LIMIT $2) "
    "UNION ALL "
    "(SELECT r.tenant, r.finished_at, NULL::pg_catalog.timestamptz FROM baton.runs r "
    "JOIN baton.tenants t ON t.tenant OPERATOR(pg_catalog.=) r.tenant "
    "WHERE t.state OPERATOR(pg_catalog.=) 'active' AND r.finished_at OPERATOR(pg_catalog.<) " CUTOFF " "
    "AND r.status OPERATOR(pg_catalog.=) ANY ('{completed,failed,cancelled}'::pg_catalog.text[]) "
    "ORDER BY r.finished_at LIMIT $2)"
    ") e GROUP BY e.tenant ORDER BY pg_catalog.min(e.at) LIMIT 256",
    3, {INTERVALOID, INT4OID, TIMESTAMPTZOID}, nullptr};

// Up to $3 purgeable deliveries of tenant $2 created at $4 or later, oldest first,
// skipping rows others hold: read from the tenant's oldest purgeable delivery, not over
// the dead entries of the rows purged before it, which an old snapshot keeps.
KeptPlan g_deliveries = {
    "DELETE FROM baton.deliveries d WHERE d.tenant OPERATOR(pg_catalog.=) $2 "
    "AND d.id OPERATOR(pg_catalog.=) ANY (ARRAY("
    "SELECT c.id FROM baton.deliveries c WHERE c.tenant OPERATOR(pg_catalog.=) $2 AND " PURGEABLE("c")
    "AND c.created_at OPERATOR(pg_catalog.>=) $4 ORDER BY c.created_at LIMIT $3 FOR UPDATE SKIP LOCKED))",
    4, {INTERVALOID, UUIDOID, INT4OID, TIMESTAMPTZOID}, nullptr};

// Up to $3 terminal runs of tenant $2, oldest first, skipping runs others hold and runs
// that still have a delivery in flight (pending or claimed: a claimer may take it).
KeptPlan g_runs = {
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

}  // namespace

// Copied out at once: the fence check and the deletes that follow run queries of their own.
Candidate* tenants(Spi& spi, Interval* older_than, std::int32_t max_rows, TimestampTz from, std::uint64_t* n) {
    Datum args[3] = {IntervalPGetDatum(older_than), Int32GetDatum(max_rows), TimestampTzGetDatum(from)};
    std::uint64_t found = spi.run(g_tenants, args, nullptr);
    auto* out = guard([found] { return static_cast<Candidate*>(palloc(sizeof(Candidate) * (found + 1))); });
    for (std::uint64_t i = 0; i < found; i++) {
        bool isnull = false;
        out[i].tenant = DatumGetUUIDP(spi.copy_out(i, 1, &isnull));
        Datum oldest = spi.value(i, 2, &isnull);
        out[i].oldest_delivery = isnull ? DT_NOBEGIN : DatumGetTimestampTz(oldest);
    }
    *n = found;
    return out;
}

// One DELETE of the ids its subquery locked.
std::int32_t purge_deliveries(Spi& spi, const Candidate& c, Interval* older_than, std::int32_t max_rows) {
    Datum values[4] = {IntervalPGetDatum(older_than), UUIDPGetDatum(c.tenant), Int32GetDatum(max_rows),
                       TimestampTzGetDatum(c.oldest_delivery)};
    return static_cast<std::int32_t>(spi.run(g_deliveries, values, nullptr));
}

// The same for runs; their stages, markers and deliveries go by ON DELETE CASCADE.
std::int32_t purge_runs(Spi& spi, pg_uuid_t* tenant, Interval* older_than, std::int32_t max_rows) {
    Datum values[3] = {IntervalPGetDatum(older_than), UUIDPGetDatum(tenant), Int32GetDatum(max_rows)};
    return static_cast<std::int32_t>(spi.run(g_runs, values, nullptr));
}

}  // namespace baton::pg::retention
